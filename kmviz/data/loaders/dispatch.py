"""The one entry point for a path: :func:`detect_format` picks the reader, :func:`load_path`
calls it with the options it takes."""

from __future__ import annotations

from pathlib import Path

from ...exceptions import FileFormatError, InvalidParameterError, MissingFileError
from ..ratings import Ratings
from .archives import load_gzip, load_zip
from .checks import _GZIP_MAGIC
from .delimited import load_delimited
from .matrix_market import load_matrix_market
from .movielens import load_movielens_100k, load_movielens_csv, load_movielens_dat


_LOADERS = {
    "movielens-100k": load_movielens_100k,
    "movielens-dat": load_movielens_dat,
    "movielens-csv": load_movielens_csv,
    "delimited": load_delimited,
    "matrix-market": load_matrix_market,
    "zip": load_zip,
    "gzip": load_gzip,
}


def detect_format(path) -> str:
    """The loader key for ``path``: one of "movielens-100k", "movielens-dat", "movielens-csv",
    "delimited", "matrix-market", "zip" or "gzip", from the name and the first bytes.

    Raises
    ------
    MissingFileError
    """
    path = Path(path)
    if not path.exists():
        raise MissingFileError("file or directory not found", path=path,
                               expected="an existing file, directory or dataset name",
                               fix="check the path, or see kmviz.data.list_datasets()")
    if path.is_dir():
        for marker, fmt in (("u.data", "movielens-100k"), ("ratings.dat", "movielens-dat"),
                            ("ratings.csv", "movielens-csv")):
            if (path / marker).is_file():
                return fmt
        raise FileFormatError(
            "holds no u.data, ratings.dat or ratings.csv", path=path,
            expected="a MovieLens directory", fix="point to a ratings file instead")
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PK\x03\x04") or path.suffix.lower() == ".zip":
        return "zip"
    if head.startswith(_GZIP_MAGIC) or path.suffix.lower() == ".gz":
        return "gzip"
    if head.lstrip().startswith(b"%%MatrixMarket") or path.suffix.lower() == ".mtx":
        return "matrix-market"
    if path.name == "u.data":
        return "movielens-100k"
    if path.suffix.lower() == ".dat" and b"::" in head:
        return "movielens-dat"
    if head.lstrip(b"\xef\xbb\xbf").startswith(b"userId,movieId,rating"):
        return "movielens-csv"
    return "delimited"


def load_path(path, **options) -> Ratings:
    """Load a file, directory or archive of any supported format, detected by
    :func:`detect_format`.

    Parameters
    ----------
    path : str or Path
    **options
        Keyword options of the chosen loader (for example ``duplicates="mean"``,
        ``delimiter=";"``, ``max_bytes=...``; ``max_expanded_bytes=...`` limits what an
        archive expands to and is ignored for other files).

    Raises
    ------
    InvalidParameterError
        If an option is not taken by the chosen loader.
    """
    fmt = detect_format(path)
    loader = _LOADERS[fmt]
    if fmt not in ("zip", "gzip"):
        options.pop("max_expanded_bytes", None)  # a plain file does not expand
        _check_options(loader, options, fmt)
    return loader(path, **options)


def _check_options(func, options, what):
    import inspect

    accepted = [p.name for p in inspect.signature(func).parameters.values()
                if p.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise InvalidParameterError(
            f"option {unknown[0]!r} is not taken by the {what} loader; it takes "
            f"{', '.join(accepted) or 'no options'}.")
