"""Fixtures for the data-layer tests: every file is written here, in tmp_path."""

from pathlib import Path

import pytest

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample_data"

GENRE_FLAGS_ACTION_COMEDY = "|".join(["0", "1", "0", "0", "0", "1"] + ["0"] * 13)
GENRE_FLAGS_DRAMA = "|".join(["0"] * 8 + ["1"] + ["0"] * 10)


@pytest.fixture
def write(tmp_path):
    """write(name, text_or_bytes, encoding="utf-8") -> Path of the new file in tmp_path."""

    def _write(name, content, encoding="utf-8"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding=encoding, newline="\n")
        return path

    return _write


@pytest.fixture
def ml100k_dir(write):
    """A tiny MovieLens-100K-format folder: 3 users, 3 items, latin-1 titles."""
    data = write("ml/u.data", "1\t10\t5\t881250949\n1\t20\t3 \t881250950\n2\t10\t1\t881250951\n"
                              "3\t30\t4\t881250952\n2\t30\t2\t881250953\n")
    write("ml/u.item",
          f"10|Café Society (1995)|01-Jan-1995||http://x|{GENRE_FLAGS_ACTION_COMEDY}\n"
          f"20|Heat (1995)|15-Dec-1995||http://y|{GENRE_FLAGS_DRAMA}\n"
          f"30|unknown|||http://z|{GENRE_FLAGS_DRAMA}\n", encoding="latin-1")
    write("ml/u.user", "1|24|M|technician|85711\n2|53|F|other|94043\n3|23|M|writer|32067\n")
    return data.parent


@pytest.fixture
def sample_dir():
    """The committed sample_data/ folder of the repository."""
    return SAMPLE_DIR
