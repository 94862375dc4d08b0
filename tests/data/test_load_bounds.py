"""Inputs bounded by what they expand to (issue 24, item 3): archives counted while they
stream, nested ones together; long lines refused with their line and the limit."""

import gzip
import io
import time
import tracemalloc
import zipfile

import pytest

from kmviz.data import load
from kmviz.data.loaders import checks
from kmviz.exceptions import FileFormatError, FileTooLargeError, KmvizError

MB = 1024 * 1024


def _zip_bytes(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _ratings_text(n: int) -> bytes:
    return b"".join(b"%d,%d,%d\n" % (k % 997, k // 997, 1 + k % 5) for k in range(n))


def test_an_archive_is_refused_once_it_expands_past_the_limit_while_streaming(tmp_path):
    # 12 MB of text in a few KB, the sizes in the header forged small: counted as written
    text = b"1,1,3\n" * (2 * MB)
    path = tmp_path / "bomb.zip"
    path.write_bytes(_zip_bytes({"big.csv": text}))
    assert path.stat().st_size < 100_000
    t0 = time.perf_counter()
    with pytest.raises(FileTooLargeError) as e:
        load(path, max_expanded_bytes=1 * MB)
    assert time.perf_counter() - t0 < 5
    message = str(e.value)
    assert "bomb.zip" in message and "1.0 MB" in message and "max_expanded_bytes" in message
    assert "Fix:" in message


def test_the_expansion_limit_defaults_to_the_file_limit_and_has_an_environment_variable(
        tmp_path, monkeypatch):
    monkeypatch.delenv(checks.MAX_EXPANDED_ENV, raising=False)
    assert checks.max_expanded_bytes(3 * MB) == 3 * MB
    assert checks.max_expanded_bytes(3 * MB, 5 * MB) == 5 * MB
    monkeypatch.setenv(checks.MAX_EXPANDED_ENV, "2")
    assert checks.max_expanded_bytes(3 * MB) == 2 * MB
    path = tmp_path / "r.csv.gz"
    path.write_bytes(gzip.compress(_ratings_text(400_000)))  # about 4.5 MB of text
    with pytest.raises(FileTooLargeError, match=r"decompresses to more than 2\.0 MB"):
        load(path)
    monkeypatch.setenv(checks.MAX_EXPANDED_ENV, "lots")
    with pytest.raises(KmvizError, match="KMVIZ_MAX_EXPANDED_MB must be a positive number"):
        load(path)


def test_an_archive_may_expand_beyond_the_file_limit_when_allowed(tmp_path):
    text = _ratings_text(20_000)
    path = tmp_path / "r.zip"
    path.write_bytes(_zip_bytes({"r.csv": text}))
    limit = path.stat().st_size + 1  # the zip fits; its text does not
    with pytest.raises(FileTooLargeError):
        load(path, max_bytes=limit)
    r = load(path, max_bytes=limit, max_expanded_bytes=4 * len(text))
    assert r.n_ratings == 20_000
    # a plain file ignores the option
    plain = tmp_path / "r.csv"
    plain.write_bytes(text)
    assert load(plain, max_expanded_bytes=10).n_ratings == 20_000


def test_nested_archives_share_one_budget(tmp_path):
    text = _ratings_text(60_000)  # about 650 KB
    inner = _zip_bytes({"r.csv": text})
    middle = _zip_bytes({"inner.zip": inner})
    path = tmp_path / "outer.zip"
    path.write_bytes(_zip_bytes({"middle.zip": middle}))
    assert load(path).n_ratings == 60_000
    # each level alone is under 700 KB, all three together are not
    budget = len(text) + len(inner) // 2
    with pytest.raises(FileTooLargeError) as e:
        load(path, max_expanded_bytes=budget)
    message = str(e.value)
    assert "outer.zip" in message and "over the limit" in message or "more than" in message


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_long_line_is_refused_with_its_line_number_and_the_limit(tmp_path, where):
    lines = [b"user,item,rating"] + [b"%d,%d,4" % (k, k) for k in range(1, 2000)]
    k = {"first": 1, "middle": 1000, "last": len(lines)}[where]
    lines.insert(k, b"7,8," + b"9" * 200_000)  # a 200 KB line, as in the issue
    path = tmp_path / "long.csv"
    path.write_bytes(b"\n".join(lines) + (b"\n" if where != "last" else b""))
    with pytest.raises(FileFormatError) as e:
        load(path)
    message = str(e.value)
    assert f"long.csv, line {k + 1}:" in message
    assert "131,072 bytes per line" in message and "Fix:" in message
    assert "_csv.Error" not in message and "field larger" not in message


def test_a_long_line_inside_an_archive_names_the_member(tmp_path):
    path = tmp_path / "in.zip"
    path.write_bytes(_zip_bytes({"d/r.csv": b"1,1,3\n2,2," + b"4" * 300_000 + b"\n"}))
    with pytest.raises(FileFormatError, match=r"in\.zip:d/r\.csv, line 2: the line is "
                                              r"300,004 bytes long"):
        load(path)


def test_a_file_without_line_breaks_is_refused_after_one_block(tmp_path):
    path = tmp_path / "one.csv"
    path.write_bytes(b"1,2,3," * (2 * MB))
    tracemalloc.start()
    try:
        with pytest.raises(FileFormatError, match=r"line 1: the line is more than"):
            load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MB


def test_an_upload_may_expand_to_a_multiple_of_the_upload_limit(monkeypatch):
    from kmviz.ui import datasets

    monkeypatch.setattr(datasets, "upload_limit_mb", lambda: 1)
    small = _ratings_text(250_000)   # about 2.4 MB: under 4 x 1 MB
    big = b"1,1,3\n" * 1_100_000    # 6.6 MB in a few KB: over it
    assert len(small) < checks.EXPANSION_FACTOR * MB < len(big)
    loaded = datasets._load_upload("small.zip", _zip_bytes({"r.csv": small}), ())
    assert loaded.n_ratings == 250_000 and loaded.source == "upload: small.zip"
    with pytest.raises(ValueError, match=r"big\.zip: the archive would extract to 6\.3 MB, "
                                         r"over the limit of 4\.0 MB"):
        datasets._load_upload("big.zip", _zip_bytes({"r.csv": big}), ())
