"""Readers for rating files: MovieLens (100K, 1M/10M, latest), delimited triplets, Matrix Market
and zip archives of any of these.

Every reader checks the file before parsing it (exists, size under the limit, not empty, not
binary, decodable) and reports bad content with the real 1-based file line, what was found,
what was expected and how to fix it (see :class:`kmviz.exceptions.DataError`).
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import re
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
import scipy.io

from ..exceptions import (
    DataError,
    DataValueError,
    EmptyDataError,
    FileFormatError,
    FileTooLargeError,
    InvalidParameterError,
    MissingFileError,
)
from .ratings import Ratings

DEFAULT_MAX_MB = 500
MAX_MB_ENV = "KMVIZ_MAX_UPLOAD_MB"

#: The 19 genre flags of MovieLens 100K ``u.item``, used when ``u.genre`` is absent.
ML100K_GENRES = (
    "unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
    "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance",
    "Sci-Fi", "Thriller", "War", "Western",
)

# Header names recognised for the three triplet columns (compared case-insensitively).
USER_NAMES = ("user", "userid", "user_id", "uid", "u", "customer", "customer_id", "reviewer")
ITEM_NAMES = ("item", "itemid", "item_id", "iid", "i", "movie", "movieid", "movie_id",
              "product", "product_id", "asin", "song", "artist")
VALUE_NAMES = ("rating", "ratings", "value", "score", "stars", "r", "weight", "count")

_SNIFF_DELIMITERS = (",", "\t", ";", "|", " ")
_DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe", " ": "spaces"}
_NOT_FINITE = {"nan", "na", "n/a", "null", "none", "inf", "+inf", "-inf", "infinity",
               "-infinity", "+infinity"}
_YEAR = re.compile(r"\((\d{4})\)\s*$")
# ASCII unit separator: stands in for MovieLens' two-character '::' so pandas' C parser can
# read .dat files (multi-character separators force its much slower Python engine).
_UNIT_SEP = "\x1f"


# --------------------------------------------------------------------------- file checks
def max_upload_bytes(max_bytes=None) -> int:
    """The size limit in bytes: ``max_bytes`` if given, else ``$KMVIZ_MAX_UPLOAD_MB``, else 500 MB.

    Raises
    ------
    InvalidParameterError
        If the limit or the environment variable is not a positive number.
    """
    if max_bytes is not None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, float, np.number)) \
                or not max_bytes > 0:
            raise InvalidParameterError(
                f"The 'max_bytes' parameter must be a positive number. Got {max_bytes!r} instead.")
        return int(max_bytes)
    env = os.environ.get(MAX_MB_ENV)
    if env is None or env.strip() == "":
        return DEFAULT_MAX_MB * 1024 * 1024
    try:
        mb = float(env)
    except ValueError:
        mb = float("nan")
    if not mb > 0 or not np.isfinite(mb):
        raise InvalidParameterError(
            f"The environment variable {MAX_MB_ENV} must be a positive number of megabytes. "
            f"Got {env!r} instead.")
    return int(mb * 1024 * 1024)


def _format_size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n} bytes"


def check_file(path, *, max_bytes=None) -> Path:
    """Check that ``path`` is an existing, non-empty file under the size limit, before reading.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        The size limit (see :func:`max_upload_bytes`).

    Returns
    -------
    Path

    Raises
    ------
    MissingFileError, FileFormatError, FileTooLargeError, EmptyDataError
    """
    path = Path(path)
    if not path.exists():
        raise MissingFileError("file not found", path=path, expected="an existing file",
                               fix="check the path and the working directory")
    if not path.is_file():
        raise FileFormatError("is not a regular file", path=path, expected="a file")
    limit = max_upload_bytes(max_bytes)
    size = os.path.getsize(path)
    if size > limit:
        raise FileTooLargeError(
            f"the file is {_format_size(size)}, over the limit of {_format_size(limit)}",
            path=path, expected=f"at most {_format_size(limit)}",
            fix=f"pass a larger max_bytes= or set {MAX_MB_ENV}, or use a smaller sample")
    if size == 0:
        raise EmptyDataError("the file is empty (0 bytes)", path=path,
                             expected="one rating per line", fix="choose the right file")
    return path


def read_text(path, *, encoding="utf-8", max_bytes=None) -> str:
    """Read a text file after :func:`check_file`, refusing binary or undecodable content.

    A UTF-8 byte-order mark is dropped. NUL bytes mean binary content (a spreadsheet, an
    archive, an image) and are reported with their line before any parsing.

    Raises
    ------
    MissingFileError, FileTooLargeError, EmptyDataError, FileFormatError
    """
    path = check_file(path, max_bytes=max_bytes)
    raw = path.read_bytes()
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise FileFormatError(
            f"found binary content (a NUL byte at offset {nul})", path=path,
            line=raw.count(b"\n", 0, nul) + 1, expected="a plain-text file",
            fix="export the data as CSV/TSV text (spreadsheets and archives are not read "
                "directly; zip files are, by their .zip name)")
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise FileFormatError(
            f"found bytes that are not valid {encoding} text ({raw[e.start:e.start + 4]!r})",
            path=path, line=raw.count(b"\n", 0, e.start) + 1,
            expected=f"a {encoding} text file",
            fix="save the file as UTF-8, or pass encoding='latin-1'") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise EmptyDataError("the file holds only blank lines", path=path,
                             expected="one rating per line")
    return text


# --------------------------------------------------------------------------- table parsing
class _Table:
    """Fields of a delimited text as strings, with the 1-based file line of every row."""

    def __init__(self, frame: pd.DataFrame, lines: np.ndarray, path, sep: str, text: str):
        self.frame = frame
        self.lines = lines
        self.path = path
        self.sep = sep
        self._text = text

    def raw_line(self, line: int) -> str:
        """The text of file line ``line`` (1-based); only needed to explain an error."""
        return _line_at(self._text, line)


def _numbered_lines(text: str, start: int = 0):
    """Yield (1-based line number, line) lazily: big files are never split all at once."""
    for k, line in enumerate(io.StringIO(text, newline=None)):
        if k >= start:
            yield k + 1, line.rstrip("\r\n")


def _nonblank(text: str, start: int = 0, limit: int | None = None) -> list[tuple[int, str]]:
    """The first ``limit`` non-blank lines after line ``start``, with their numbers."""
    found = ((n, ln) for n, ln in _numbered_lines(text, start) if ln.strip())
    return list(itertools.islice(found, limit))


def _line_at(text: str, line: int) -> str:
    return next((ln for n, ln in _numbered_lines(text, line - 1)), "")


def _split(line: str, sep: str) -> list[str]:
    """The fields of one line (for diagnostics and sniffing, not for bulk parsing)."""
    if sep == " ":
        return line.split()
    if sep == _UNIT_SEP:
        return line.split(sep)
    return next(csv.reader([line], delimiter=sep)) if line else [""]


def _read_table(text: str, path, *, sep: str, skip: int = 0, quoting=csv.QUOTE_MINIMAL,
                n_fields: int | None = None) -> _Table:
    """Parse ``text`` (after its first ``skip`` lines) into string fields with line numbers.

    Blank lines are kept while parsing so that row k maps to file line ``skip + k + 1``, then
    dropped. ``sep=" "`` means runs of whitespace.
    """
    # pandas takes the column count from the first row, so start at a non-blank line
    first = _nonblank(text, skip, 1)
    if not first:
        raise EmptyDataError("no data lines", path=path, expected="one rating per line")
    skip = first[0][0] - 1
    try:
        frame = pd.read_csv(
            io.StringIO(text), sep=r"\s+" if sep == " " else sep, header=None, skiprows=skip,
            dtype=str, na_filter=False, keep_default_na=False, skip_blank_lines=False,
            index_col=False, quoting=quoting, engine="c")
    except pd.errors.EmptyDataError:
        raise EmptyDataError("no data lines after the header", path=path,
                             expected="one rating per line") from None
    except pd.errors.ParserError as e:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(e))
        if m is None:
            raise FileFormatError(f"could not be parsed ({e})", path=path,
                                  expected="one record per line") from None
        want, line, saw = (int(g) for g in m.groups())
        raise FileFormatError(
            f"found {saw} fields", path=path, line=line,
            expected=f"{want} fields separated by {_describe_sep(sep)}, like the lines above",
            fix="remove the extra fields or quote values that contain the delimiter") from None
    lines = np.arange(len(frame), dtype=np.int64) + skip + 1
    blank = np.ones(len(frame), dtype=bool)
    for c in frame.columns:
        blank &= frame[c].str.strip().to_numpy(dtype=object) == ""
    if blank.any():
        frame = frame.loc[~blank].reset_index(drop=True)
        lines = lines[~blank]
    if len(frame) == 0:
        raise EmptyDataError("no data lines", path=path, expected="one rating per line")
    if n_fields is not None and frame.shape[1] < n_fields:
        raise FileFormatError(
            f"found {frame.shape[1]} field(s): {first[0][1][:80]!r}", path=path,
            line=int(lines[0]), expected=f"{n_fields} fields separated by {_describe_sep(sep)}",
            fix="check that this is the right file and format")
    return _Table(frame, lines, path, sep, text)


def _describe_sep(sep: str) -> str:
    if sep == _UNIT_SEP:
        return "'::'"
    return f"{_DELIMITER_NAMES.get(sep, repr(sep))} ({sep!r})" if sep != " " else "spaces"


def _missing_field(table: _Table, k: int, col: int, label: str):
    """Raise the error for an empty field: a short line or an empty value."""
    line = int(table.lines[k])
    raw = table.raw_line(line)
    found = len(_split(raw, table.sep))
    if found <= col:
        raise FileFormatError(
            f"found {found} field(s) ({raw[:80]!r}) but column {label!r} is field {col + 1}",
            path=table.path, line=line,
            expected=f"at least {col + 1} fields separated by {_describe_sep(table.sep)}",
            fix="complete or remove the line")
    raise FileFormatError(f"empty value in column {label!r}", path=table.path, line=line,
                          expected="a value in every row", fix="fill or remove the line")


def _numbers(table: _Table, col: int, label: str) -> np.ndarray:
    """Column ``col`` as finite float64, or an error naming the first bad line and column."""
    s = table.frame[col].str.strip()
    values = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        found = s.iloc[k]
        if found == "":
            _missing_field(table, k, col, label)
        raise _non_number(table.path, int(table.lines[k]), found, label, int(bad.sum()))
    return values


def _non_number(path, line, found, label, count) -> DataValueError:
    """The error for a value that is not a finite number (text, empty, NaN or inf)."""
    if found.lower() in _NOT_FINITE:
        return DataValueError(
            f"found {found!r} in column {label!r}, which is not a finite number "
            f"({count} such value(s) in all)", path=path, line=line,
            expected="finite numbers", fix="remove or fill the missing ratings")
    return DataValueError(
        f"found {found!r} in column {label!r} ({count} non-numeric value(s) in all)",
        path=path, line=line, expected="a number",
        fix="correct the value, or choose the right columns (value_col=) and delimiter")


def _ids(table: _Table, col: int, label: str) -> np.ndarray:
    """Column ``col`` as ids: int64 when every id is an integer, else str."""
    s = table.frame[col].str.strip()
    empty = (s == "").to_numpy()
    if empty.any():
        _missing_field(table, int(np.flatnonzero(empty)[0]), col, label)
    if s.str.fullmatch(r"[+-]?\d{1,18}").all():
        return s.astype(np.int64).to_numpy()
    return s.to_numpy(dtype=object).astype(str)


# --------------------------------------------------------------------------- MovieLens helpers
def _year_from_title(titles: pd.Series) -> pd.Series:
    return pd.to_numeric(titles.str.extract(_YEAR, expand=False), errors="coerce")


def _one_hot_genres(ids, genres: pd.Series) -> pd.DataFrame:
    """'Action|Comedy' strings -> one int8 column per genre (without '(no genres listed)')."""
    flags = genres.fillna("").str.get_dummies(sep="|")
    flags = flags.drop(columns=[c for c in flags.columns if c.startswith("(no genres")])
    flags.index = ids
    return flags.astype(np.int8)


def _find(directory: Path, *names: str) -> Path | None:
    for n in names:
        p = directory / n
        if p.is_file():
            return p
    return None


def _ml_ratings(table: _Table, path, *, r_min, r_max, duplicates, name, **extra) -> Ratings:
    users = _ids(table, 0, "user id")
    items = _ids(table, 1, "item id")
    values = _numbers(table, 2, "rating")
    return Ratings.from_arrays(users, items, values, r_min=r_min, r_max=r_max,
                               duplicates=duplicates, line_numbers=table.lines, name=name,
                               source=str(path), **extra)


def _format_name(folder: str, fmt: str) -> str:
    """The name of data read from a MovieLens layout: its folder, and the format.

    Never "MovieLens ..." alone: the layout says nothing about where the values come from
    (``sample_data/planted-ml100k`` is a planted model in MovieLens 100K format).
    """
    return f"{folder} ({fmt} format)" if folder else f"data in {fmt} format"


# --------------------------------------------------------------------------- MovieLens 100K
def load_movielens_100k(path, *, duplicates="error", max_bytes=None) -> Ratings:
    """Read a MovieLens 100K directory (``u.data``, and ``u.item`` / ``u.user`` if present).

    Parameters
    ----------
    path : str or Path
        The directory, or its ``u.data`` file (siblings are then looked up beside it).
    duplicates : {"error", "mean", "first", "last"}, default="error"
        Policy for repeated (user, item) pairs, see :meth:`Ratings.from_arrays`.
    max_bytes : int, optional
        Size limit per file (see :func:`max_upload_bytes`).

    Returns
    -------
    Ratings
        Named after the folder, e.g. "ml-100k (MovieLens 100K format)": the layout does not
        tell GroupLens's data from other data in it. Scale 1-5. ``item_names`` are the
        titles; ``item_features`` the 19 genre flags (names from ``u.genre`` when present)
        plus ``year`` (release year, NaN when unknown); ``user_features`` are ``age``,
        ``gender`` and ``occupation``.
    """
    path = Path(path)
    directory = path if path.is_dir() else path.parent
    data = _find(directory, "u.data") if path.is_dir() else path
    if data is None:
        raise MissingFileError("no u.data file in this directory", path=directory,
                               expected="a MovieLens 100K directory with u.data",
                               fix="point to the folder that holds u.data")
    text = read_text(data, max_bytes=max_bytes)
    table = _read_table(text, data, sep="\t" if "\t" in text[:4096] else " ",
                        quoting=csv.QUOTE_NONE, n_fields=3)
    extra = {}
    item_file = _find(directory, "u.item")
    if item_file is not None:
        extra.update(_read_u_item(item_file, directory, max_bytes))
    user_file = _find(directory, "u.user")
    if user_file is not None:
        extra["user_features"] = _read_u_user(user_file, max_bytes)
    return _ml_ratings(table, data, r_min=1.0, r_max=5.0, duplicates=duplicates,
                       name=_format_name(directory.name, "MovieLens 100K"), **extra)


def _genre_names(directory: Path, max_bytes) -> list[str]:
    f = _find(directory, "u.genre")
    if f is None:
        return list(ML100K_GENRES)
    rows = [ln.split("|") for ln in read_text(f, encoding="latin-1",
                                              max_bytes=max_bytes).splitlines() if ln.strip()]
    names = [r[0] for r in sorted(rows, key=lambda r: int(r[1]) if r[1:] and r[1].isdigit()
                                  else 0)]
    return names if len(names) == len(ML100K_GENRES) else list(ML100K_GENRES)


def _read_u_item(path: Path, directory: Path, max_bytes) -> dict:
    """Titles, genre flags and release years from ``u.item`` (latin-1, '|'-separated)."""
    text = read_text(path, encoding="latin-1", max_bytes=max_bytes)
    table = _read_table(text, path, sep="|", quoting=csv.QUOTE_NONE, n_fields=5 + 19)
    ids = _ids(table, 0, "movie id")
    f = table.frame
    genres = _genre_names(directory, max_bytes)
    flags = pd.DataFrame({g: _numbers(table, 5 + k, g).astype(np.int8)
                          for k, g in enumerate(genres)}, index=ids)
    # The release date looks like 01-Jan-1995; fall back to the "(1995)" in the title.
    year = pd.to_numeric(f[2].str.strip().str[-4:], errors="coerce")
    year = year.fillna(_year_from_title(f[1]))
    flags["year"] = year.to_numpy(dtype=np.float64)
    titles = dict(zip(ids.tolist(), f[1].str.strip().tolist()))
    return {"item_names": titles, "item_features": flags}


def _read_u_user(path: Path, max_bytes) -> pd.DataFrame:
    text = read_text(path, encoding="latin-1", max_bytes=max_bytes)
    table = _read_table(text, path, sep="|", quoting=csv.QUOTE_NONE, n_fields=4)
    ids = _ids(table, 0, "user id")
    return pd.DataFrame({
        "age": _numbers(table, 1, "age").astype(np.int64),
        "gender": pd.Categorical(table.frame[2].str.strip()),
        "occupation": pd.Categorical(table.frame[3].str.strip()),
    }, index=ids)


# --------------------------------------------------------------------------- MovieLens 1M / 10M
def load_movielens_dat(path, *, r_min=None, r_max=5.0, duplicates="error",
                       max_bytes=None) -> Ratings:
    """Read MovieLens 1M/10M ``ratings.dat`` (``user::movie::rating::timestamp``).

    ``movies.dat`` (``movie::title::Genre1|Genre2``) and ``users.dat``
    (``user::gender::age::occupation::zip``) next to it are read when present.

    Parameters
    ----------
    path : str or Path
        The ``ratings.dat`` file or the directory holding it.
    r_min : float, optional
        Lower end of the scale. By default 1 when every rating is a whole star (1M) and 0.5
        otherwise (10M uses half stars).
    r_max : float, default=5.0
    duplicates : {"error", "mean", "first", "last"}, default="error"
    max_bytes : int, optional

    Returns
    -------
    Ratings
        ``item_names`` are titles; ``item_features`` one-hot genres plus ``year``;
        ``user_features`` (1M only) ``gender``, ``age`` (the dataset's age-group code) and
        ``occupation`` (its integer code).
    """
    path = Path(path)
    data = _find(path, "ratings.dat") if path.is_dir() else path
    if data is None:
        raise MissingFileError("no ratings.dat file in this directory", path=path,
                               expected="a MovieLens 1M/10M directory with ratings.dat")
    directory = data.parent
    text = read_text(data, encoding="latin-1", max_bytes=max_bytes)
    _require_separator(text, data, "::")
    table = _read_table(text.replace("::", _UNIT_SEP), data, sep=_UNIT_SEP,
                        quoting=csv.QUOTE_NONE, n_fields=3)
    if r_min is None:
        values = _numbers(table, 2, "rating")
        r_min = 1.0 if np.all(values == np.round(values)) and values.min() >= 1 else 0.5
    extra = {}
    movies = _find(directory, "movies.dat")
    if movies is not None:
        mt = _read_table(read_text(movies, encoding="latin-1", max_bytes=max_bytes)
                         .replace("::", _UNIT_SEP), movies, sep=_UNIT_SEP,
                         quoting=csv.QUOTE_NONE, n_fields=3)
        extra.update(_titles_and_genres(_ids(mt, 0, "movie id"), mt.frame[1], mt.frame[2]))
    users = _find(directory, "users.dat")
    if users is not None:
        ut = _read_table(read_text(users, encoding="latin-1", max_bytes=max_bytes)
                         .replace("::", _UNIT_SEP), users, sep=_UNIT_SEP,
                         quoting=csv.QUOTE_NONE, n_fields=4)
        extra["user_features"] = pd.DataFrame({
            "gender": pd.Categorical(ut.frame[1].str.strip()),
            "age": _numbers(ut, 2, "age").astype(np.int64),
            "occupation": _numbers(ut, 3, "occupation").astype(np.int64),
        }, index=_ids(ut, 0, "user id"))
    return _ml_ratings(table, data, r_min=r_min, r_max=r_max, duplicates=duplicates,
                       name=_format_name(directory.name or data.name, "MovieLens 1M/10M"),
                       **extra)


def _require_separator(text: str, path, sep: str):
    number, line = _nonblank(text, 0, 1)[0]
    if sep not in line:
        raise FileFormatError(f"found no {sep!r} separator in {line[:80]!r}", path=path,
                              line=number, expected=f"fields separated by {sep!r}",
                              fix="check the format; for other delimiters use load_delimited")


def _titles_and_genres(ids, titles: pd.Series, genres: pd.Series) -> dict:
    titles = titles.str.strip()
    features = _one_hot_genres(ids, genres.str.strip())
    features["year"] = _year_from_title(titles).to_numpy(dtype=np.float64)
    return {"item_names": dict(zip(ids.tolist(), titles.tolist())), "item_features": features}


# --------------------------------------------------------------------------- MovieLens latest
def load_movielens_csv(path, *, r_min=0.5, r_max=5.0, duplicates="error",
                       max_bytes=None) -> Ratings:
    """Read MovieLens "latest" ``ratings.csv`` (``userId,movieId,rating,timestamp`` header).

    ``movies.csv`` (``movieId,title,genres``) next to it is read when present.

    Parameters
    ----------
    path : str or Path
        The ``ratings.csv`` file or the directory holding it.
    r_min, r_max : float, default=0.5, 5.0
    duplicates : {"error", "mean", "first", "last"}, default="error"
    max_bytes : int, optional

    Returns
    -------
    Ratings
        ``item_names`` are titles; ``item_features`` one-hot genres plus ``year``.
    """
    path = Path(path)
    data = _find(path, "ratings.csv") if path.is_dir() else path
    if data is None:
        raise MissingFileError("no ratings.csv file in this directory", path=path,
                               expected="a MovieLens directory with ratings.csv")
    text = read_text(data, max_bytes=max_bytes)
    header = _check_header(text, data, ("userId", "movieId", "rating"))
    table = _read_table(text, data, sep=",", skip=header, n_fields=3)
    extra = {}
    movies = _find(data.parent, "movies.csv")
    if movies is not None:
        mtext = read_text(movies, max_bytes=max_bytes)
        mh = _check_header(mtext, movies, ("movieId", "title", "genres"))
        mt = _read_table(mtext, movies, sep=",", skip=mh, n_fields=3)
        extra.update(_titles_and_genres(_ids(mt, 0, "movieId"), mt.frame[1], mt.frame[2]))
    return _ml_ratings(table, data, r_min=r_min, r_max=r_max, duplicates=duplicates,
                       name=_format_name(data.parent.name or data.name, "MovieLens latest"),
                       **extra)


def _check_header(text: str, path, names) -> int:
    """Check the header line starts with ``names``; return the number of lines up to it."""
    number, line = _nonblank(text, 0, 1)[0]
    found = [f.strip() for f in _split(line, ",")]
    if found[:len(names)] != list(names):
        raise FileFormatError(f"found header {line[:80]!r}", path=path, line=number,
                              expected="a header starting with " + ",".join(names),
                              fix="for other column layouts use load_delimited")
    return number


# --------------------------------------------------------------------------- delimited triplets
def load_delimited(path, *, delimiter=None, header=None, user_col=None, item_col=None,
                   value_col="auto", implicit=None, r_min=None, r_max=None, duplicates="error",
                   encoding="utf-8", max_bytes=None, name=None) -> Ratings:
    """Read (user, item[, value]) rows from a CSV/TSV or other delimited text file.

    Parameters
    ----------
    path : str or Path
    delimiter : str, optional
        The field separator; ``" "`` means runs of whitespace. By default it is sniffed from
        the first lines among comma, tab, semicolon, pipe and spaces.
    header : bool, optional
        Whether the first non-blank line names the columns. By default it is detected: a
        header holds a known column name (user, userId, item, movieId, rating, ...) or text
        above a numeric column.
    user_col, item_col : str or int, optional
        Column by header name or 0-based position. Default: a column with a known name, else
        positions 0 and 1.
    value_col : str, int, None or "auto", default="auto"
        The rating column. None reads the file as 0/1 interactions (implicit data); "auto"
        picks a column with a known name, else the third column if there is one, else none.
    implicit : bool, optional
        With a value column, True keeps the rows whose value is 1 and drops those with 0 as
        one-class data (other values are an error). Default: implicit iff no value column.
    r_min, r_max : float, optional
        The declared rating scale; values outside it are refused. Default: observed range.
    duplicates : {"error", "mean", "first", "last"}, default="error"
    encoding : str, default="utf-8"
    max_bytes : int, optional
    name : str, optional
        Label of the dataset (default: the file name).

    Returns
    -------
    Ratings

    Raises
    ------
    FileFormatError
        Wrong delimiter (one column found), bad header, missing or unnamed columns.
    DataValueError
        Non-numeric, NaN/inf or out-of-scale values (with line and column).
    DuplicateRatingsError, EmptyDataError
    """
    path = Path(path)
    text = read_text(path, encoding=encoding, max_bytes=max_bytes)
    sample = _nonblank(text, 0, 50)
    sep = _choose_delimiter(sample, path, delimiter)
    rows = [_split(ln, sep) for _, ln in sample]
    if header is None:
        header = _looks_like_header(rows)
    first_line = sample[0][0]
    names = [f.strip() for f in rows[0]] if header else None
    ncols = len(rows[0]) if header else max(len(r) for r in rows)
    ucol, icol, vcol = _resolve_columns(names, ncols, user_col, item_col, value_col, path,
                                        first_line)
    table = _read_table(text, path, sep=sep, skip=first_line if header else 0)
    last = max(c for c in (ucol, icol, vcol) if c is not None)
    if table.frame.shape[1] <= last:  # no data line reaches the last chosen column
        _missing_field(table, 0, last, _label(names, last))
    users = _ids(table, ucol, _label(names, ucol))
    items = _ids(table, icol, _label(names, icol))
    values = None if vcol is None else _numbers(table, vcol, _label(names, vcol))
    line_numbers = table.lines
    if implicit and values is not None:
        users, items, line_numbers = _keep_positive(values, users, items, table, names, vcol)
        values = None
    elif implicit is False and values is None:
        raise InvalidParameterError("implicit=False needs a value column (value_col=...)")
    return Ratings.from_arrays(users, items, values, r_min=r_min, r_max=r_max,
                               duplicates=duplicates, line_numbers=line_numbers,
                               implicit=values is None, name=name or path.name,
                               source=str(path))


def _label(names, col) -> str:
    return names[col] if names is not None and col < len(names) else f"column {col + 1}"


def _keep_positive(values, users, items, table, names, vcol):
    bad = (values != 0) & (values != 1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DataValueError(f"found {values[k]:g} in column {_label(names, vcol)!r}",
                             path=table.path, line=int(table.lines[k]), expected="0 or 1",
                             fix="pass implicit=False to read the values as ratings")
    keep = values == 1
    return users[keep], items[keep], table.lines[keep]


def _count_fields(sample, sep) -> list[int]:
    return [len(_split(ln, sep)) for _, ln in sample]


def _sniff(sample) -> str | None:
    """The delimiter giving the same number (>= 2) of fields on every sampled line.

    Whitespace is tried last, because names such as movie titles hold spaces.
    """
    best, best_n = None, 1
    for sep in _SNIFF_DELIMITERS[:-1]:
        counts = _count_fields(sample, sep)
        if min(counts) >= 2 and len(set(counts)) == 1 and counts[0] > best_n:
            best, best_n = sep, counts[0]
    if best is None:
        counts = _count_fields(sample, " ")
        if min(counts) >= 2 and len(set(counts)) == 1:
            best = " "
    return best


def _choose_delimiter(sample, path, delimiter) -> str:
    first_line, first = sample[0]
    if delimiter is not None:
        if delimiter in ("\\s+", "whitespace"):
            delimiter = " "
        if len(_split(first, delimiter)) >= 2:
            return delimiter
        alt = _sniff(sample)
        fix = (f"the file seems to use {_describe_sep(alt)}; pass delimiter={alt!r}"
               if alt else "pass the delimiter the file uses")
        raise FileFormatError(
            f"found 1 column ({first[:80]!r}) when splitting on {_describe_sep(delimiter)}",
            path=path, line=first_line,
            expected="at least 2 columns (user, item[, value])", fix=fix)
    sep = _sniff(sample)
    if sep is None:
        # no consistent split: fall back to the separator that splits the first line at all
        sep = next((s for s in _SNIFF_DELIMITERS if len(_split(first, s)) >= 2), None)
    if sep is None:
        raise FileFormatError(
            f"found 1 column ({first[:80]!r})", path=path, line=first_line,
            expected="at least 2 columns (user, item[, value]) separated by commas, tabs, "
                     "semicolons, pipes or spaces",
            fix="check the file, or pass delimiter=")
    return sep


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _looks_like_header(rows) -> bool:
    first = [f.strip() for f in rows[0]]
    known = {n.lower() for n in USER_NAMES + ITEM_NAMES + VALUE_NAMES}
    if any(f.lower() in known for f in first):
        return True
    rest = rows[1:]
    if not rest:
        return False
    for c, f in enumerate(first):
        col = [r[c].strip() for r in rest if c < len(r)]
        if not _is_number(f) and col and all(_is_number(x) for x in col):
            return True
    return False


def _resolve_columns(names, ncols, user_col, item_col, value_col, path, line):
    def pick(spec, role, synonyms, default):
        if spec is None:
            if names is not None:
                lowered = [n.lower() for n in names]
                for s in synonyms:
                    if s in lowered:
                        return lowered.index(s)
            return default
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            if not 0 <= spec < ncols:
                raise FileFormatError(
                    f"{role}={spec} but the file has {ncols} column(s)", path=path, line=line,
                    expected=f"a 0-based position below {ncols}")
            return int(spec)
        if names is None:
            raise FileFormatError(
                f"{role}={spec!r} names a column but the file has no header", path=path,
                line=line, expected="a header line naming the columns",
                fix="choose columns by 0-based position, or pass header=True")
        if spec not in names:
            raise FileFormatError(
                f"no column named {spec!r}; found columns {', '.join(map(repr, names))}",
                path=path, line=line, expected=f"a header with a {spec!r} column",
                fix=f"pass {role}= with one of the names above or a 0-based position")
        return names.index(spec)

    ucol = pick(user_col, "user_col", USER_NAMES, 0)
    icol = pick(item_col, "item_col", ITEM_NAMES, 1)
    if value_col == "auto":
        vcol = pick(None, "value_col", VALUE_NAMES, None)
        if vcol is None and ncols >= 3:
            vcol = next(c for c in range(ncols) if c not in (ucol, icol))
    else:
        vcol = None if value_col is None else pick(value_col, "value_col", VALUE_NAMES, None)
    if len({ucol, icol, vcol} - {None}) < len([c for c in (ucol, icol, vcol) if c is not None]):
        raise FileFormatError(f"the user, item and value columns overlap "
                              f"(positions {ucol}, {icol}, {vcol})", path=path, line=line,
                              expected="three different columns",
                              fix="set user_col=, item_col= and value_col= explicitly")
    if names is not None:
        for role, c in (("user", ucol), ("item", icol), ("value", vcol)):
            if c is not None and (c >= len(names) or names[c] == ""):
                raise FileFormatError(
                    f"the {role} column (field {c + 1}) has no name in the header",
                    path=path, line=line, expected="a name for every column used",
                    fix="name the column in the header, or pass header=False and choose "
                        "columns by position")
    return ucol, icol, vcol


# --------------------------------------------------------------------------- Matrix Market
def load_matrix_market(path, *, r_min=None, r_max=None, implicit=None,
                       max_bytes=None) -> Ratings:
    """Read a Matrix Market ``.mtx`` file: rows are users, columns items.

    In coordinate format the stored entries (explicit nonzeros, and explicit zeros) are the
    observed ratings; a ``pattern`` matrix is read as 0/1 interactions. In dense ``array``
    format every entry is observed. Ids are the 1-based row and column numbers.

    Parameters
    ----------
    path : str or Path
    r_min, r_max : float, optional
        The declared scale (default: observed range).
    implicit : bool, optional
        Force one-class reading (values ignored). Default: True for ``pattern`` matrices.
    max_bytes : int, optional

    Returns
    -------
    Ratings
    """
    path = Path(path)
    text_head = read_text(path, max_bytes=max_bytes) if path.suffix != ".gz" else None
    if text_head is not None and not text_head.lstrip().startswith("%%MatrixMarket"):
        first = text_head.lstrip().splitlines()[0]
        raise FileFormatError(f"found {first[:80]!r}", path=path, line=1,
                              expected="a '%%MatrixMarket matrix ...' banner",
                              fix="load other text formats as delimited triplets")
    try:
        info = scipy.io.mminfo(str(path))
        m = scipy.io.mmread(str(path))
    except (ValueError, OSError, IndexError, TypeError) as e:
        raise FileFormatError(f"is not a readable Matrix Market file ({e})", path=path,
                              expected="a valid Matrix Market coordinate or array file") from None
    n_rows, n_cols, _, fmt, field, _ = info
    if fmt == "array":
        dense = np.asarray(m)
        u, i = np.indices(dense.shape)
        u, i, v = u.ravel(), i.ravel(), dense.ravel()
    else:
        coo = m.tocoo()
        u, i, v = coo.row, coo.col, coo.data
    if np.iscomplexobj(v):
        raise FileFormatError("holds complex values", path=path, expected="real values")
    one_class = field == "pattern" if implicit is None else bool(implicit)
    return Ratings.from_arrays(
        u + 1, i + 1, None if one_class else np.asarray(v, dtype=np.float64),
        r_min=r_min, r_max=r_max, user_ids=np.arange(1, n_rows + 1),
        item_ids=np.arange(1, n_cols + 1), name=path.name, source=str(path))


# --------------------------------------------------------------------------- zip archives
def load_zip(path, *, max_bytes=None, **options) -> Ratings:
    """Extract a zip (MovieLens directory or one data file) safely, then load what it holds.

    Members with absolute paths, ``..`` components or symbolic links are refused, and the
    total uncompressed size is capped by the same limit as files (counted while extracting,
    so a forged size header does not help). The temporary directory is removed afterwards.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        Limit for the archive and for its total uncompressed size.
    **options
        Passed to the loader chosen for the contents (see :func:`load_path`).

    Returns
    -------
    Ratings
    """
    path = check_file(path, max_bytes=max_bytes)
    limit = max_upload_bytes(max_bytes)
    with tempfile.TemporaryDirectory(prefix="kmviz-zip-") as tmp:
        _extract(path, Path(tmp), limit)
        target = _pick_zip_target(Path(tmp), path)
        try:
            ratings = load_path(target, max_bytes=max_bytes, **options)
        except DataError as e:
            inner = str(Path(e.path).relative_to(tmp)) if e.path and e.path.startswith(tmp) \
                else e.path
            raise type(e)(e.problem, path=f"{path}:{inner}" if inner else path, line=e.line,
                          expected=e.expected, fix=e.fix) from None
    # files at the archive's top level: name the data after the archive, not the temp folder
    ratings.name = str(ratings.name).replace(Path(tmp).name, path.stem)
    ratings.source = str(path)
    return ratings


def _extract(path: Path, dest: Path, limit: int):
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise FileFormatError("is not a valid zip archive", path=path,
                              expected="a .zip file", fix="re-create the archive") from None
    with archive:
        members = archive.infolist()
        declared = sum(m.file_size for m in members)
        if declared > limit:
            raise FileTooLargeError(
                f"the archive would extract to {_format_size(declared)}, over the limit of "
                f"{_format_size(limit)}", path=path, expected=f"at most {_format_size(limit)}",
                fix=f"pass a larger max_bytes= or set {MAX_MB_ENV}")
        written = 0
        for m in members:
            target = _safe_member(m, dest, path)
            if target is None:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(m) as src, open(target, "wb") as out:
                while chunk := src.read(1 << 20):
                    written += len(chunk)
                    if written > limit:
                        raise FileTooLargeError(
                            f"the archive extracts to more than {_format_size(limit)}",
                            path=path, expected=f"at most {_format_size(limit)}",
                            fix=f"pass a larger max_bytes= or set {MAX_MB_ENV}")
                    out.write(chunk)


def _safe_member(member: zipfile.ZipInfo, dest: Path, path: Path) -> Path | None:
    """The extraction target of ``member``, None for directories, or an error if unsafe."""
    name = member.filename
    pure = PurePosixPath(name.replace("\\", "/"))
    mode = member.external_attr >> 16
    if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", name) \
            or stat.S_ISLNK(mode):
        raise FileFormatError(f"member {name!r} points outside the archive", path=path,
                              expected="relative member paths without '..' or links",
                              fix="re-create the archive from the data folder")
    if member.is_dir() or pure.parts[0] == "__MACOSX" or pure.name.startswith("."):
        return None
    return dest.joinpath(*pure.parts)


def _pick_zip_target(root: Path, path: Path) -> Path:
    """The MovieLens directory or the single data file inside an extracted archive."""
    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    for marker in ("u.data", "ratings.dat", "ratings.csv"):
        hits = [p for p in files if p.name == marker]
        if hits:
            return hits[0].parent if marker == "u.data" else hits[0]
    data = [p for p in files if p.suffix.lower() not in (".txt", ".md", ".html", ".pdf")
            and p.name.lower() not in ("readme", "license")]
    if len(data) == 1:
        return data[0]
    listing = ", ".join(str(p.relative_to(root)) for p in files[:10]) or "nothing"
    raise FileFormatError(
        f"holds {listing}", path=path,
        expected="a MovieLens folder (u.data, ratings.dat or ratings.csv) or a single data file",
        fix="zip one ratings file, or the MovieLens folder")


# --------------------------------------------------------------------------- dispatch
_LOADERS = {
    "movielens-100k": load_movielens_100k,
    "movielens-dat": load_movielens_dat,
    "movielens-csv": load_movielens_csv,
    "delimited": load_delimited,
    "matrix-market": load_matrix_market,
    "zip": load_zip,
}


def detect_format(path) -> str:
    """The loader key for ``path``: one of "movielens-100k", "movielens-dat", "movielens-csv",
    "delimited", "matrix-market" or "zip", from the name and the first bytes.

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
    """Load a file, directory or zip of any supported format, detected by :func:`detect_format`.

    Parameters
    ----------
    path : str or Path
    **options
        Keyword options of the chosen loader (for example ``duplicates="mean"``,
        ``delimiter=";"``, ``max_bytes=...``).

    Raises
    ------
    InvalidParameterError
        If an option is not taken by the chosen loader.
    """
    fmt = detect_format(path)
    loader = _LOADERS[fmt]
    if fmt != "zip":
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

