"""The one entry point for a path: :func:`detect_format` picks the reader, :func:`load_path`
calls it with the options it takes."""

from __future__ import annotations

from pathlib import Path

from ...exceptions import FileFormatError, InvalidParameterError, MissingFileError
from ..ratings import Ratings
from .archives import gunzipped, unzipped
from .basket import load_basket
from .bounds import check_load_memory
from .checks import _GZIP_MAGIC, refuse_special_file
from .delimited import load_delimited
from .layout import detect_layout
from .matrix_market import load_matrix_market
from .movielens import load_movielens_100k, load_movielens_csv, load_movielens_dat
from .wide import load_table


def load_gzip(path, *, max_bytes=None, max_expanded_bytes=None, max_expansion_ratio=None,
              **options) -> Ratings:
    """Decompress a gzip file (``ratings.csv.gz``, ``x.mtx.gz`` ...) and load what it holds.

    The uncompressed bytes are capped by ``max_expanded_bytes`` (counted while
    decompressing, so a forged or misleading header does not help); they go to a temporary
    file, removed afterwards, whose format is detected from the name without ``.gz``.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        Limit for the compressed file (and for the text loaded from it).
    max_expanded_bytes : int, optional
        Limit for its uncompressed size, nested archives included; default
        :data:`~kmviz.data.loaders.checks.EXPANSION_FACTOR` times the file size limit
        (``$KMVIZ_MAX_EXPANDED_MB`` if set).
    max_expansion_ratio : float, optional
        Most bytes the archive may expand to per byte of its own, once it has expanded past
        :data:`~kmviz.data.loaders.bounds.RATIO_GRACE_BYTES`; default
        :data:`~kmviz.data.loaders.bounds.MAX_EXPANSION_RATIO`. The expanded bytes are
        also held to the memory their parse would need (the load limit).
    **options
        Passed to the loader chosen for the contents (see :func:`load_path`).

    Returns
    -------
    Ratings
    """
    with gunzipped(path, max_bytes=max_bytes, max_expanded_bytes=max_expanded_bytes,
                   max_expansion_ratio=max_expansion_ratio) as unpacked:
        ratings = load_path(unpacked.target, max_bytes=unpacked.limit, **options)
    return unpacked.finish(ratings, Path(path))


def load_zip(path, *, max_bytes=None, max_expanded_bytes=None, max_expansion_ratio=None,
             **options) -> Ratings:
    """Extract a zip (MovieLens directory or one data file) safely, then load what it holds.

    Before anything is extracted, the archive is refused if a member has an absolute path,
    ``..`` components or is a symbolic link, is encrypted, has a name longer than 255 bytes,
    is both a file and a folder (``d`` beside ``d/r.csv``) or appears twice, or if the
    declared sizes exceed the limit; extraction then counts the bytes actually written, so
    forged size fields do not help, and a damaged member (bad CRC, truncated data) is
    reported by name. The temporary directory is removed afterwards.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        Limit for the archive (and for each file loaded from it).
    max_expanded_bytes : int, optional
        Limit for its total uncompressed size, nested archives included; default
        :data:`~kmviz.data.loaders.checks.EXPANSION_FACTOR` times the file size limit
        (``$KMVIZ_MAX_EXPANDED_MB`` if set).
    max_expansion_ratio : float, optional
        Most bytes the archive may expand to per byte of its own, once it has expanded past
        :data:`~kmviz.data.loaders.bounds.RATIO_GRACE_BYTES`; default
        :data:`~kmviz.data.loaders.bounds.MAX_EXPANSION_RATIO`. The expanded bytes are
        also held to the memory their parse would need (the load limit).
    **options
        Passed to the loader chosen for the contents (see :func:`load_path`).

    Returns
    -------
    Ratings
    """
    with unzipped(path, max_bytes=max_bytes, max_expanded_bytes=max_expanded_bytes,
                  max_expansion_ratio=max_expansion_ratio) as unpacked:
        ratings = load_path(unpacked.target, max_bytes=unpacked.limit, **options)
    return unpacked.finish(ratings, Path(path))


_LOADERS = {
    "movielens-100k": load_movielens_100k,
    "movielens-dat": load_movielens_dat,
    "movielens-csv": load_movielens_csv,
    "delimited": load_delimited,
    "basket": load_basket,
    "table": load_table,
    "matrix-market": load_matrix_market,
    "zip": load_zip,
    "gzip": load_gzip,
}
#: Other names accepted by ``format=``.
FORMAT_ALIASES = {"triplets": "delimited", "csv": "delimited", "wide": "table",
                  "baskets": "basket", "transactions": "basket"}
#: What ``format=`` may name, for messages and forms.
FORMATS = tuple(_LOADERS)


def detect_format(path) -> str:
    """The loader key for ``path``: one of "movielens-100k", "movielens-dat", "movielens-csv",
    "delimited" (triplets), "basket", "table" (users x items), "matrix-market", "zip" or
    "gzip", from the name and the first bytes; for delimited text, by the rule of
    :mod:`kmviz.data.loaders.layout`.

    Raises
    ------
    MissingFileError
    """
    path = Path(path)
    if not path.exists():
        raise MissingFileError("file or directory not found", path=path,
                               expected="an existing file, directory or dataset name",
                               fix="check the path, or see kmviz.data.list_datasets()")
    refuse_special_file(path)  # a named pipe would block the read below
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
    return detect_layout(path)


def load_path(path, *, format=None, **options) -> Ratings:
    """Load a file, directory or archive of any supported format, detected by
    :func:`detect_format` unless ``format`` names it.

    Parameters
    ----------
    path : str or Path
    format : str, optional
        The reader: one of :data:`FORMATS` ("delimited" or "triplets", "basket", "table"
        or "wide", "matrix-market" ...). Default: detected. Inside a zip or gzip archive it
        chooses the reader of the file the archive holds.
    **options
        Keyword options of the chosen loader (for example ``duplicates="mean"``,
        ``delimiter=";"``, ``max_bytes=...``; ``max_expanded_bytes=...`` and
        ``max_expansion_ratio=...`` limit what an archive expands to and are ignored for
        other files). A file whose parse would need more memory than the load limit
        (:func:`kmviz._memory.load_memory_limit`) is refused before it is read.

    Raises
    ------
    InvalidParameterError
        If an option is not taken by the chosen loader.
    """
    chosen = _format_key(format)
    fmt = detect_format(path)
    if fmt in ("zip", "gzip"):
        if chosen is not None and chosen not in ("zip", "gzip"):
            options["format"] = chosen  # for the file inside
        return _LOADERS[fmt](path, **options)
    if chosen is not None and not Path(path).is_dir():
        fmt = chosen
    loader = _LOADERS[fmt]
    options.pop("max_expanded_bytes", None)  # a plain file does not expand
    options.pop("max_expansion_ratio", None)
    _check_options(loader, options, fmt, detected=chosen is None)
    if Path(path).is_file():  # its parse must fit in memory: refused before it starts
        check_load_memory(Path(path), fmt, Path(path).stat().st_size)
    return loader(path, **options)


def _format_key(format) -> str | None:
    if format is None or format == "auto":
        return None
    key = FORMAT_ALIASES.get(format, format) if isinstance(format, str) else None
    if key not in _LOADERS:
        raise InvalidParameterError(
            f"The 'format' parameter must be one of {', '.join(map(repr, FORMATS))} (or "
            f"'auto' to detect it). Got {format!r} instead.")
    return key


def _check_options(func, options, what, detected=False):
    import inspect

    accepted = [p.name for p in inspect.signature(func).parameters.values()
                if p.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        hint = (f" The file was detected as {what!r}; pass format='basket', 'table' or "
                "'delimited' to choose the reader." if detected else "")
        raise InvalidParameterError(
            f"option {unknown[0]!r} is not taken by the {what} loader; it takes "
            f"{', '.join(accepted) or 'no options'}.{hint}")
