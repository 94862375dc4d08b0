"""Readers for rating files: MovieLens (100K, 1M/10M, latest), delimited triplets, Matrix Market,
gzip-compressed files and zip archives of any of these.

Every reader checks the file before parsing it (exists, size under the limit, not empty, not
binary, decodable) and reports bad content with the real 1-based file line, what was found,
what was expected and how to fix it (see :class:`kmviz.exceptions.DataError`).

Memory: a file is never held whole in memory. It is checked in 1 MB blocks, then parsed in
chunks of at most about :data:`_CHUNK_FIELDS` fields, each converted at once to compact
arrays (int64 ids, float64 values, codes into one table of distinct string ids), so the peak
of a load stays within a few times the file's text plus the final arrays. Sizes declared
inside a file (Matrix Market headers, zip members, gzip streams) are checked against the
file and the size limit before anything is allocated or extracted.

Ids: a user or item column is read as integers when every id in it is a plain integer (an
optional ``-`` and at most 18 digits, without leading zeros: ``0``, ``7``, ``-12``);
otherwise every id of that column is kept as text, so ``007`` and ``7`` are two different
users and ``+7`` is not ``7``.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import csv
import errno
import gzip
import io
import itertools
import os
import re
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

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

#: Bytes read at a time when checking a file.
_BLOCK = 1 << 20
#: Most fields (rows x columns) parsed at a time. A field costs about 60-80 bytes while its
#: chunk is converted (Arrow string, then a Python str), so a chunk also holds at most one
#: field per :data:`_BYTES_PER_CHUNK_FIELD` bytes of the file: small files stay small.
_CHUNK_FIELDS = 200_000
_BYTES_PER_CHUNK_FIELD = 64
#: Most members a zip archive may hold, and most nested archives (a zip in a zip ...).
_MAX_MEMBERS = 10_000
_MAX_NESTING = 3
#: Longest file or folder name in an archive (bytes of UTF-8, as most file systems allow).
_MAX_NAME_BYTES = 255
#: Most distinct genres read from a movies file (MovieLens has about 20).
_MAX_GENRES = 100
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
# The nesting depth of archives being unpacked in this context (zip in gz in zip ...).
_NESTING = contextvars.ContextVar("kmviz_archive_nesting", default=0)


# --------------------------------------------------------------------------- file checks
def max_upload_bytes(max_bytes=None) -> int:
    """The size limit in bytes: ``max_bytes`` if given, else ``$KMVIZ_MAX_UPLOAD_MB``, else 500 MB.

    The same limit caps a file on disk, the uncompressed size of a gzip stream and the total
    uncompressed size of a zip archive's members.

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


def _too_large(what: str, size: int, limit: int, path) -> FileTooLargeError:
    return FileTooLargeError(
        f"{what} {_format_size(size)}, over the limit of {_format_size(limit)}", path=path,
        expected=f"at most {_format_size(limit)}",
        fix=f"pass a larger max_bytes= or set {MAX_MB_ENV}, or use a smaller sample")


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
        raise _too_large("the file is", size, limit, path)
    if size == 0:
        raise EmptyDataError("the file is empty (0 bytes)", path=path,
                             expected="one rating per line", fix="choose the right file")
    return path


def _check_encoding(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise InvalidParameterError(
            f"The 'encoding' parameter must name a text encoding such as 'utf-8' or "
            f"'latin-1'. Got {encoding!r} instead.") from None


class _Text:
    """A checked text file, read in pieces: it is never held whole in memory.

    ``encoding`` is the one that decodes the whole file; ``replace_colons`` turns MovieLens'
    ``::`` separators into :data:`_UNIT_SEP` on the fly.
    """

    def __init__(self, path: Path, encoding: str, size: int, replace_colons: bool = False):
        self.path = path
        self.encoding = encoding
        self.size = size
        self.replace_colons = replace_colons

    @property
    def pandas_encoding(self) -> str:
        return "utf-8-sig" if self.encoding == "utf-8" else self.encoding

    def open_binary(self):
        raw = open(self.path, "rb")
        if not self.replace_colons:
            return raw
        return io.BufferedReader(_ColonsReader(raw), buffer_size=_BLOCK)

    def lines(self, start: int = 0, *, raw: bool = False):
        """Yield (1-based line number, line) lazily, from line ``start + 1`` on."""
        with open(self.path, encoding=self.pandas_encoding, errors="replace",
                  newline=None) as f:
            for k, line in enumerate(f):
                if k >= start:
                    line = line.rstrip("\r\n")
                    if self.replace_colons and not raw:
                        line = line.replace("::", _UNIT_SEP)
                    yield k + 1, line

    def nonblank(self, start: int = 0, limit: int | None = None, *, raw: bool = False):
        """The first ``limit`` non-blank lines after line ``start``, with their numbers."""
        found = ((n, ln) for n, ln in self.lines(start, raw=raw) if ln.strip())
        return list(itertools.islice(found, limit))

    def line(self, number: int) -> str:
        """The text of line ``number`` (1-based); only needed to explain an error."""
        return next((ln for _, ln in self.lines(number - 1)), "")


class _ColonsReader(io.RawIOBase):
    """A binary stream with every ``::`` replaced by the unit separator, block by block.

    A trailing run of ``:`` is held back until the next block, so no pair is split.
    """

    def __init__(self, raw):
        self._raw = raw
        self._out = b""
        self._tail = b""
        self._eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._out and not self._eof:
            data = self._raw.read(_BLOCK)
            if not data:
                self._eof = True
                data, self._tail = self._tail, b""
            else:
                data = self._tail + data
                body = data.rstrip(b":")
                data, self._tail = body, data[len(body):]
            self._out = data.replace(b"::", _UNIT_SEP.encode())
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def close(self):
        self._raw.close()
        super().close()


def _scan(path, *, encoding="utf-8", fallback=None, max_bytes=None) -> _Text:
    """Check a text file in 1 MB blocks: size, binary content, decoding, not blank.

    NUL bytes mean binary content (a spreadsheet, an archive, an image) and are reported
    with their line before any parsing; so are bytes that ``encoding`` cannot decode, unless
    a ``fallback`` encoding is given (then the whole file is read with it).
    """
    path = check_file(path, max_bytes=max_bytes)
    enc = _check_encoding(encoding)
    decoding = True
    content = False
    newlines = 0  # newlines in the bytes checked so far
    carry = b""   # the last, unfinished line
    first = True
    with open(path, "rb") as f:
        while True:
            block = f.read(_BLOCK)
            nul = block.find(b"\x00")
            if nul >= 0:
                raise FileFormatError(
                    f"found binary content (a NUL byte at offset {f.tell() - len(block) + nul})",
                    path=path, line=newlines + block.count(b"\n", 0, nul) + 1,
                    expected="a plain-text file",
                    fix="export the data as CSV/TSV text (spreadsheets and archives are not "
                        "read directly; zip and gzip files are, by their .zip and .gz names)")
            if block:
                data = carry + block
                cut = data.rfind(b"\n") + 1
                piece, carry = data[:cut], data[cut:]
            else:
                piece, carry = carry, b""
            if first and piece.startswith(_BOM):
                piece = piece[len(_BOM):]
            if piece:
                first = False
            if decoding and piece:
                try:
                    piece.decode(enc)
                except UnicodeDecodeError as e:
                    if fallback is None:
                        raise FileFormatError(
                            f"found bytes that are not valid {encoding} text "
                            f"({piece[e.start:e.start + 4]!r})", path=path,
                            line=newlines + piece.count(b"\n", 0, e.start) + 1,
                            expected=f"a {encoding} text file",
                            fix="save the file as UTF-8, or pass encoding='latin-1'") from None
                    enc = _check_encoding(fallback)
                    decoding = False  # a single-byte fallback decodes everything
            if not content and piece.strip():
                content = True
            newlines += piece.count(b"\n")
            if not block and not carry:
                break
    if not content:
        raise EmptyDataError("the file holds only blank lines", path=path,
                             expected="one rating per line")
    return _Text(path, enc, os.path.getsize(path))


def read_text(path, *, encoding="utf-8", max_bytes=None) -> str:
    """Read a small text file whole after checking it (see :func:`check_file`).

    The loaders stream their files instead; this is for callers that want the text.
    A UTF-8 byte-order mark is dropped.

    Raises
    ------
    MissingFileError, FileTooLargeError, EmptyDataError, FileFormatError
    """
    src = _scan(path, encoding=encoding, max_bytes=max_bytes)
    text = Path(src.path).read_bytes().decode(src.encoding)
    return text[1:] if text.startswith("\ufeff") else text


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == _GZIP_MAGIC
    except OSError:
        return False


# --------------------------------------------------------------------------- table parsing
def _split(line: str, sep: str) -> list[str]:
    """The fields of one line (for diagnostics and sniffing, not for bulk parsing)."""
    if sep == " ":
        return line.split()
    if sep == _UNIT_SEP:
        return line.split(sep)
    return next(csv.reader([line], delimiter=sep)) if line else [""]


def _describe_sep(sep: str) -> str:
    if sep == _UNIT_SEP:
        return "'::'"
    return f"{_DELIMITER_NAMES.get(sep, repr(sep))} ({sep!r})" if sep != " " else "spaces"


def _missing_field(src: _Text, sep: str, line: int, col: int, label: str):
    """Raise the error for an empty field: a short line or an empty value."""
    raw = src.line(line)
    found = len(_split(raw, sep))
    if found <= col:
        raise FileFormatError(
            f"found {found} field(s) ({raw[:80]!r}) but column {label!r} is field {col + 1}",
            path=src.path, line=line,
            expected=f"at least {col + 1} fields separated by {_describe_sep(sep)}",
            fix="complete or remove the line")
    raise FileFormatError(f"empty value in column {label!r}", path=src.path, line=line,
                          expected="a value in every row", fix="fill or remove the line")


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


def _plain_ints(arr: np.ndarray) -> np.ndarray | None:
    """``arr`` (str objects) as int64 when every entry is a plain integer, else None.

    Plain: an optional ``-`` and 1 to 18 digits without a leading zero (``0`` itself is
    plain; ``007``, ``+7``, ``-0``, ``7.0`` and ``1e3`` are not). Checked on a byte matrix,
    without a regular expression per value.
    """
    n = arr.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int64)
    lens = np.fromiter(map(len, arr), dtype=np.int64, count=n)
    width = int(lens.max())
    if width > 19 or lens.min() == 0:
        return None
    try:
        m = arr.astype(f"S{width}").view(np.uint8).reshape(n, width)
    except UnicodeEncodeError:  # not ASCII, so not digits
        return None
    neg = m[:, 0] == ord("-")
    digit = m - ord("0")  # uint8: non-digits wrap above 9
    is_digit = digit <= 9
    ok = is_digit | (m == 0)  # zero bytes pad the shorter entries on the right
    ok[:, 0] |= neg
    if not ok.all():
        return None
    n_digits = lens - neg
    lead = np.where(neg, m[:, 1] if width > 1 else 0, m[:, 0])
    if (n_digits < 1).any() or (n_digits > 18).any() or \
            ((lead == ord("0")) & ((n_digits > 1) | neg)).any():
        return None
    value = np.zeros(n, dtype=np.int64)
    for j in range(width):
        value = np.where(is_digit[:, j], value * 10 + digit[:, j], value)
    return np.where(neg, -value, value)


class _IdColumn:
    """Ids of one column, gathered chunk by chunk in compact form.

    int64 while every id is a plain integer; from the first other id on, int32/int64 codes
    into one dictionary of distinct strings (the integers seen before become their text,
    which plain integers spell in exactly one way).
    """

    def __init__(self):
        self._ints = []
        self._codes = None
        self._index = None

    def add(self, arr: np.ndarray) -> None:
        if self._codes is None:
            ints = _plain_ints(arr)
            if ints is not None:
                self._ints.append(ints)
                return
            self._to_strings()
        self._codes.append(self._encode(arr))

    def _to_strings(self) -> None:
        self._index, self._codes = {}, []
        if self._ints:
            ints = np.concatenate(self._ints)
            self._ints = []
            uniq, inv = np.unique(ints, return_inverse=True)
            for x in uniq.tolist():
                self._index[str(x)] = len(self._index)
            self._codes.append(inv.reshape(-1).astype(np.int64, copy=False))

    def _encode(self, arr: np.ndarray) -> np.ndarray:
        local, uniq = pd.factorize(arr)
        index = self._index
        glob = np.fromiter((index.setdefault(x, len(index)) for x in uniq), dtype=np.int64,
                           count=len(uniq))
        return glob[local]

    def result(self, *, categorical: bool = False):
        """int64 ids, or the string ids: sorted categories with codes, or an object array."""
        if self._codes is None:
            return np.concatenate(self._ints) if self._ints else np.empty(0, np.int64)
        keys = np.empty(len(self._index), dtype=object)
        keys[:] = list(self._index)
        self._index = None
        order = np.argsort(keys, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0])
        codes = rank[np.concatenate(self._codes)]
        self._codes = []
        cats = keys[order]
        if categorical:
            return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object),
                                             validate=False)
        return cats[codes]


class _Parsed:
    """What :func:`_parse` read: converted columns and the file line of every row."""

    def __init__(self, src, sep, columns, lines, n_fields):
        self.src = src
        self.path = src.path
        self.sep = sep
        self.columns = columns
        self.lines = lines
        self.n_fields = n_fields

    def __len__(self) -> int:
        return int(self.lines.shape[0])


def _parse(src: _Text, *, sep: str, want: dict, skip: int = 0,
           quoting=csv.QUOTE_MINIMAL, n_fields: int | None = None,
           categorical: bool = False) -> _Parsed:
    """Parse ``src`` (after its first ``skip`` lines) in chunks, converting as it goes.

    ``want`` maps a 0-based column to ``(kind, label)``, kind one of ``"id"`` (see
    :class:`_IdColumn`), ``"number"`` (finite float64; the first bad value is reported with
    the count of bad values in the whole column) or ``"text"`` (stripped str objects).
    Blank lines are skipped; row k keeps its file line in ``lines``. ``sep=" "`` means runs
    of whitespace.
    """
    # pandas takes the column count from the first row, so start at a non-blank line
    first = src.nonblank(skip, 1)
    if not first:
        raise EmptyDataError("no data lines" + (" after the header" if skip else ""),
                             path=src.path, expected="one rating per line")
    skip = first[0][0] - 1
    width = len(_split(first[0][1], sep))
    last = max(want)
    fields = min(_CHUNK_FIELDS, max(5_000, src.size // _BYTES_PER_CHUNK_FIELD))
    chunk_rows = max(100, fields // max(1, width))
    ids = {c: _IdColumn() for c, (kind, _) in want.items() if kind == "id"}
    parts = {c: [] for c, (kind, _) in want.items() if kind != "id"}
    bad = {}  # number column -> [first line, found, count]
    line_parts = []
    row0 = 0
    ncols = None
    try:
        with src.open_binary() as handle:
            reader = pd.read_csv(
                handle, sep=r"\s+" if sep == " " else sep, header=None, skiprows=skip,
                dtype=object, na_filter=False, keep_default_na=False, skip_blank_lines=False,
                index_col=False, quoting=quoting, engine="c", encoding=src.pandas_encoding,
                chunksize=chunk_rows)
            for chunk in reader:
                n = len(chunk)
                lines = np.arange(row0, row0 + n, dtype=np.int64) + skip + 1
                row0 += n
                if ncols is None:
                    ncols = chunk.shape[1]
                    if n_fields is not None and ncols < n_fields:
                        raise FileFormatError(
                            f"found {ncols} field(s): {first[0][1][:80]!r}", path=src.path,
                            line=int(lines[0]),
                            expected=f"{n_fields} fields separated by {_describe_sep(sep)}",
                            fix="check that this is the right file and format")
                    if ncols <= last:  # no line reaches the last wanted column
                        _missing_field(src, sep, int(lines[0]), last, want[last][1])
                _consume(chunk, lines, src, sep, want, ids, parts, bad, line_parts)
                del chunk
    except pd.errors.EmptyDataError:
        raise EmptyDataError("no data lines after the header", path=src.path,
                             expected="one rating per line") from None
    except pd.errors.ParserError as e:
        if bad:
            _raise_bad(src, want, bad)
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(e))
        if m is None:
            raise FileFormatError(f"could not be parsed ({e})", path=src.path,
                                  expected="one record per line") from None
        expect, line, saw = (int(g) for g in m.groups())
        raise FileFormatError(
            f"found {saw} fields", path=src.path, line=line,
            expected=f"{expect} fields separated by {_describe_sep(sep)}, like the lines above",
            fix="remove the extra fields or quote values that contain the delimiter") from None
    if bad:
        _raise_bad(src, want, bad)
    lines = np.concatenate(line_parts) if line_parts else np.empty(0, np.int64)
    if lines.shape[0] == 0:
        raise EmptyDataError("no data lines", path=src.path, expected="one rating per line")
    if lines[-1] < np.iinfo(np.int32).max:
        lines = lines.astype(np.int32)
    columns = {c: acc.result(categorical=categorical) for c, acc in ids.items()}
    for c in list(parts):
        columns[c] = np.concatenate(parts.pop(c))
    return _Parsed(src, sep, columns, lines, ncols)


def _consume(chunk, lines, src, sep, want, ids, parts, bad, line_parts) -> None:
    """Convert one chunk of string fields into the accumulators (see :func:`_parse`)."""
    stripped = {c: chunk[c].str.strip().to_numpy(dtype=object) for c in want}
    blank = np.ones(len(chunk), dtype=bool)
    for s in stripped.values():
        blank &= s == ""
    if blank.any():  # blank only if the other fields are empty too
        for c in chunk.columns:
            rows = np.flatnonzero(blank)
            if rows.size == 0:
                break
            if c not in want:
                blank[rows] = chunk[c].iloc[rows].str.strip().to_numpy(dtype=object) == ""
        if blank.any():
            keep = ~blank
            lines = lines[keep]
            stripped = {c: s[keep] for c, s in stripped.items()}
    if lines.shape[0] == 0:
        return
    for c, (kind, label) in want.items():
        s = stripped[c]
        if kind == "id":
            empty = s == ""
            if empty.any():
                _missing_field(src, sep, int(lines[np.flatnonzero(empty)[0]]), c, label)
            ids[c].add(s)
        elif kind == "number":
            values = pd.to_numeric(s, errors="coerce")
            values = np.asarray(values, dtype=np.float64)
            not_finite = ~np.isfinite(values)
            if not_finite.any():
                k = int(np.flatnonzero(not_finite)[0])
                if c in bad:
                    bad[c][2] += int(not_finite.sum())
                elif bad:
                    pass  # an earlier line already has a bad value in another column
                elif s[k] == "":
                    _missing_field(src, sep, int(lines[k]), c, label)
                else:
                    bad[c] = [int(lines[k]), s[k], int(not_finite.sum())]
            if not bad:
                parts[c].append(values)
        else:
            parts[c].append(s)
    if not bad:
        line_parts.append(lines)


def _raise_bad(src, want, bad):
    c, (line, found, count) = min(bad.items(), key=lambda kv: kv[1][0])
    raise _non_number(src.path, line, found, want[c][1], count)


# --------------------------------------------------------------------------- MovieLens helpers
def _year_from_title(titles: pd.Series) -> pd.Series:
    return pd.to_numeric(titles.str.extract(_YEAR, expand=False), errors="coerce")


def _one_hot_genres(ids, genres: np.ndarray, path) -> pd.DataFrame:
    """'Action|Comedy' strings -> one int8 column per genre (without '(no genres listed)').

    Each distinct genre string is split once; more than :data:`_MAX_GENRES` distinct genres
    is refused (it is not a genre column).
    """
    codes, combos = pd.factorize(np.asarray(genres, dtype=object))
    tags: dict[str, int] = {}
    split = []
    for combo in combos:
        cols = []
        for tag in str(combo).split("|"):
            if not tag or tag.startswith("(no genres"):
                continue
            if tag not in tags:
                if len(tags) == _MAX_GENRES:
                    raise FileFormatError(
                        f"found more than {_MAX_GENRES} distinct genres", path=path,
                        expected="a genres column of a few '|'-separated names",
                        fix="check that this is a MovieLens movies file")
                tags[tag] = len(tags)
            cols.append(tags[tag])
        split.append(cols)
    names = sorted(tags)
    table = np.zeros((len(combos), len(names)), dtype=np.int8)
    position = {t: k for k, t in enumerate(names)}
    remap = np.array([position[t] for t in tags], dtype=np.int64)
    for r, cols in enumerate(split):
        table[r, remap[cols]] = 1
    return pd.DataFrame(table[codes], index=ids, columns=names)


def _find(directory: Path, *names: str) -> Path | None:
    for n in names:
        p = directory / n
        if p.is_file():
            return p
    return None


_RATING_COLUMNS = {0: ("id", "user id"), 1: ("id", "item id"), 2: ("number", "rating")}


def _ml_ratings(table: _Parsed, path, *, r_min, r_max, duplicates, name, **extra) -> Ratings:
    cols = table.columns
    return Ratings.from_arrays(cols.pop(0), cols.pop(1), cols.pop(2), r_min=r_min,
                               r_max=r_max, duplicates=duplicates, line_numbers=table.lines,
                               name=name, source=str(path), **extra)


def _format_name(folder: str, fmt: str) -> str:
    """The name of data read from a MovieLens layout: its folder, and the format.

    Never "MovieLens ..." alone: the layout says nothing about where the values come from
    (``sample_data/planted-ml100k`` is a planted model in MovieLens 100K format).
    """
    return f"{folder} ({fmt} format)" if folder else f"data in {fmt} format"


def _side_text(path, max_bytes) -> _Text:
    """A MovieLens side file: UTF-8, or latin-1 (the older releases) when UTF-8 fails."""
    return _scan(path, encoding="utf-8", fallback="latin-1", max_bytes=max_bytes)


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
        ``gender`` and ``occupation``. Side files are read as UTF-8, or as latin-1 (the
        encoding of GroupLens's release) when they are not valid UTF-8.
    """
    path = Path(path)
    directory = path if path.is_dir() else path.parent
    data = _find(directory, "u.data") if path.is_dir() else path
    if data is None:
        raise MissingFileError("no u.data file in this directory", path=directory,
                               expected="a MovieLens 100K directory with u.data",
                               fix="point to the folder that holds u.data")
    src = _scan(data, max_bytes=max_bytes)
    first = src.nonblank(0, 1)
    sep = "\t" if first and "\t" in first[0][1] else " "
    table = _parse(src, sep=sep, quoting=csv.QUOTE_NONE, n_fields=3, want=_RATING_COLUMNS,
                   categorical=True)
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
    lines = _side_text(f, max_bytes).nonblank(0, len(ML100K_GENRES) + 1)
    rows = [ln.split("|") for _, ln in lines]
    names = [r[0] for r in sorted(rows, key=lambda r: int(r[1]) if r[1:] and r[1].isdigit()
                                  else 0)]
    return names if len(names) == len(ML100K_GENRES) else list(ML100K_GENRES)


def _read_u_item(path: Path, directory: Path, max_bytes) -> dict:
    """Titles, genre flags and release years from ``u.item`` ('|'-separated)."""
    genres = _genre_names(directory, max_bytes)
    want = {0: ("id", "movie id"), 1: ("text", "title"), 2: ("text", "release date")}
    want.update({5 + k: ("number", g) for k, g in enumerate(genres)})
    table = _parse(_side_text(path, max_bytes), sep="|", quoting=csv.QUOTE_NONE,
                   n_fields=5 + 19, want=want)
    cols = table.columns
    ids = cols[0]
    flags = pd.DataFrame({g: cols[5 + k].astype(np.int8) for k, g in enumerate(genres)},
                         index=ids)
    titles = pd.Series(cols[1], dtype=object)
    # The release date looks like 01-Jan-1995; fall back to the "(1995)" in the title.
    year = pd.to_numeric(pd.Series(cols[2], dtype=object).str[-4:], errors="coerce")
    year = year.fillna(_year_from_title(titles))
    flags["year"] = year.to_numpy(dtype=np.float64)
    return {"item_names": dict(zip(ids.tolist(), titles.tolist())), "item_features": flags}


def _read_u_user(path: Path, max_bytes) -> pd.DataFrame:
    table = _parse(_side_text(path, max_bytes), sep="|", quoting=csv.QUOTE_NONE, n_fields=4,
                   want={0: ("id", "user id"), 1: ("number", "age"), 2: ("text", "gender"),
                         3: ("text", "occupation")})
    cols = table.columns
    return pd.DataFrame({
        "age": cols[1].astype(np.int64),
        "gender": pd.Categorical(cols[2]),
        "occupation": pd.Categorical(cols[3]),
    }, index=cols[0])


# --------------------------------------------------------------------------- MovieLens 1M / 10M
def load_movielens_dat(path, *, r_min=None, r_max=5.0, duplicates="error",
                       max_bytes=None) -> Ratings:
    """Read MovieLens 1M/10M ``ratings.dat`` (``user::movie::rating::timestamp``).

    ``movies.dat`` (``movie::title::Genre1|Genre2``) and ``users.dat``
    (``user::gender::age::occupation::zip``) next to it are read when present. Files are
    read as UTF-8, or as latin-1 (GroupLens's encoding) when they are not valid UTF-8.

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
    src = _side_text(data, max_bytes)
    _require_separator(src, "::")
    src.replace_colons = True
    table = _parse(src, sep=_UNIT_SEP, quoting=csv.QUOTE_NONE, n_fields=3,
                   want=_RATING_COLUMNS, categorical=True)
    if r_min is None:
        values = table.columns[2]
        r_min = 1.0 if np.all(values == np.round(values)) and values.min() >= 1 else 0.5
    extra = {}
    movies = _find(directory, "movies.dat")
    if movies is not None:
        msrc = _side_text(movies, max_bytes)
        msrc.replace_colons = True
        mt = _parse(msrc, sep=_UNIT_SEP, quoting=csv.QUOTE_NONE, n_fields=3,
                    want={0: ("id", "movie id"), 1: ("text", "title"), 2: ("text", "genres")})
        extra.update(_titles_and_genres(mt.columns[0], mt.columns[1], mt.columns[2], movies))
    users = _find(directory, "users.dat")
    if users is not None:
        usrc = _side_text(users, max_bytes)
        usrc.replace_colons = True
        ut = _parse(usrc, sep=_UNIT_SEP, quoting=csv.QUOTE_NONE, n_fields=4,
                    want={0: ("id", "user id"), 1: ("text", "gender"), 2: ("number", "age"),
                          3: ("number", "occupation")})
        extra["user_features"] = pd.DataFrame({
            "gender": pd.Categorical(ut.columns[1]),
            "age": ut.columns[2].astype(np.int64),
            "occupation": ut.columns[3].astype(np.int64),
        }, index=ut.columns[0])
    return _ml_ratings(table, data, r_min=r_min, r_max=r_max, duplicates=duplicates,
                       name=_format_name(directory.name or data.name, "MovieLens 1M/10M"),
                       **extra)


def _require_separator(src: _Text, sep: str):
    number, line = src.nonblank(0, 1, raw=True)[0]
    if sep not in line:
        raise FileFormatError(f"found no {sep!r} separator in {line[:80]!r}", path=src.path,
                              line=number, expected=f"fields separated by {sep!r}",
                              fix="check the format; for other delimiters use load_delimited")


def _titles_and_genres(ids, titles: np.ndarray, genres: np.ndarray, path) -> dict:
    titles = pd.Series(titles, dtype=object)
    features = _one_hot_genres(ids, genres, path)
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
    src = _scan(data, max_bytes=max_bytes)
    header = _check_header(src, ("userId", "movieId", "rating"))
    table = _parse(src, sep=",", skip=header, n_fields=3, want=_RATING_COLUMNS,
                   categorical=True)
    extra = {}
    movies = _find(data.parent, "movies.csv")
    if movies is not None:
        msrc = _scan(movies, max_bytes=max_bytes)
        mh = _check_header(msrc, ("movieId", "title", "genres"))
        mt = _parse(msrc, sep=",", skip=mh, n_fields=3,
                    want={0: ("id", "movieId"), 1: ("text", "title"), 2: ("text", "genres")})
        extra.update(_titles_and_genres(mt.columns[0], mt.columns[1], mt.columns[2], movies))
    return _ml_ratings(table, data, r_min=r_min, r_max=r_max, duplicates=duplicates,
                       name=_format_name(data.parent.name or data.name, "MovieLens latest"),
                       **extra)


def _check_header(src: _Text, names) -> int:
    """Check the header line starts with ``names``; return the number of lines up to it."""
    number, line = src.nonblank(0, 1)[0]
    found = [f.strip() for f in _split(line, ",")]
    if found[:len(names)] != list(names):
        raise FileFormatError(f"found header {line[:80]!r}", path=src.path, line=number,
                              expected="a header starting with " + ",".join(names),
                              fix="for other column layouts use load_delimited")
    return number


# --------------------------------------------------------------------------- delimited triplets
def load_delimited(path, *, delimiter=None, header=None, user_col=None, item_col=None,
                   value_col="auto", implicit=None, r_min=None, r_max=None, duplicates="error",
                   encoding="utf-8", max_bytes=None, name=None) -> Ratings:
    """Read (user, item[, value]) rows from a CSV/TSV or other delimited text file.

    The file may be gzip-compressed (``ratings.csv.gz``). A user or item column is read as
    integers when every id in it is a plain integer (``7``, ``-12``; no leading zeros, no
    ``+``, at most 18 digits), otherwise as text: ``007`` and ``7`` are two users.

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
        The size limit of the file (of its uncompressed text for a gzip file).
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
    if _is_gzip(path):
        return load_gzip(path, delimiter=delimiter, header=header, user_col=user_col,
                         item_col=item_col, value_col=value_col, implicit=implicit,
                         r_min=r_min, r_max=r_max, duplicates=duplicates, encoding=encoding,
                         max_bytes=max_bytes, name=name)
    src = _scan(path, encoding=encoding, max_bytes=max_bytes)
    sample = src.nonblank(0, 50)
    sep = _choose_delimiter(sample, path, delimiter)
    rows = [_split(ln, sep) for _, ln in sample]
    if header is None:
        header = _looks_like_header(rows)
    first_line = sample[0][0]
    names = [f.strip() for f in rows[0]] if header else None
    ncols = len(rows[0]) if header else max(len(r) for r in rows)
    ucol, icol, vcol = _resolve_columns(names, ncols, user_col, item_col, value_col, path,
                                        first_line)
    want = {ucol: ("id", _label(names, ucol)), icol: ("id", _label(names, icol))}
    if vcol is not None:
        want[vcol] = ("number", _label(names, vcol))
    table = _parse(src, sep=sep, skip=first_line if header else 0, want=want,
                   categorical=True)
    cols = table.columns
    users, items = cols.pop(ucol), cols.pop(icol)
    values = None if vcol is None else cols.pop(vcol)
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
_MM_FORMATS = ("coordinate", "array")
_MM_FIELDS = ("real", "double", "integer", "unsigned-integer", "pattern", "complex")
_MM_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")


def load_matrix_market(path, *, r_min=None, r_max=None, implicit=None,
                       max_bytes=None) -> Ratings:
    """Read a Matrix Market ``.mtx`` file: rows are users, columns items.

    In coordinate format the stored entries (explicit nonzeros, and explicit zeros) are the
    observed ratings; a ``pattern`` matrix is read as 0/1 interactions; a symmetric or
    skew-symmetric matrix gets its mirrored entries. In dense ``array`` format every entry
    is observed. Ids are the 1-based row and column numbers of the entries present (users
    and items without an entry are not in the index space).

    The size line is checked against the file before anything is allocated: the declared
    entries must fit in the bytes that follow it, and the file must hold exactly as many
    entries as declared, each within the declared rows and columns.

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
    if _is_gzip(path):
        return load_gzip(path, r_min=r_min, r_max=r_max, implicit=implicit,
                         max_bytes=max_bytes)
    src = _scan(path, max_bytes=max_bytes)
    fmt, field, symmetry, sizes, size_line, consumed = _mm_header(src)
    room = src.size - consumed
    if fmt == "coordinate":
        n_rows, n_cols, nnz = sizes
        per_entry = 4 if field == "pattern" else 6  # "1 1\n", "1 1 1\n"
    else:
        n_rows, n_cols = sizes
        nnz, per_entry = n_rows * n_cols, 2         # "1\n"
    if nnz * per_entry > room:
        raise FileFormatError(
            f"the size line declares {nnz:,} entries ({n_rows:,} x {n_cols:,} matrix), but "
            f"the {room:,} bytes after it can hold at most {room // per_entry:,}",
            path=path, line=size_line, expected="a size line that matches the entries below it",
            fix="correct the size line (rows columns entries) or re-export the matrix")
    if nnz == 0:
        raise EmptyDataError("the size line declares no entries", path=path, line=size_line,
                             expected="at least one entry")
    if fmt == "coordinate":
        want = {0: ("number", "row"), 1: ("number", "column")}
        if field != "pattern":
            want[2] = ("number", "value")
        table = _parse(src, sep=" ", skip=size_line, want=want, n_fields=len(want))
    else:
        table = _parse(src, sep=" ", skip=size_line, want={0: ("number", "value")},
                       n_fields=1)
    if len(table) != nnz:
        raise FileFormatError(
            f"the size line declares {nnz:,} entries but the file holds {len(table):,}",
            path=path, line=size_line, expected="as many entry lines as declared",
            fix="correct the size line (rows columns entries) or re-export the matrix")
    cols = table.columns
    lines = table.lines
    if fmt == "coordinate":
        u = _mm_index(cols.pop(0), n_rows, "row", table)
        i = _mm_index(cols.pop(1), n_cols, "column", table)
        v = cols.pop(2, None)
        if symmetry != "general":
            off = np.flatnonzero(u != i)
            u, i = np.concatenate([u, i[off]]), np.concatenate([i, u[off]])
            if v is not None:
                v = np.concatenate([v, -v[off] if symmetry == "skew-symmetric" else v[off]])
            lines = np.concatenate([lines, lines[off]])
    else:
        v = cols.pop(0)
        k = np.arange(nnz, dtype=np.int64)
        u, i = k % n_rows + 1, k // n_rows + 1  # column-major order
    one_class = field == "pattern" if implicit is None else bool(implicit)
    return Ratings.from_arrays(
        u, i, None if one_class else v, r_min=r_min, r_max=r_max, line_numbers=lines,
        name=path.name, source=str(path))


def _mm_header(src: _Text):
    """(format, field, symmetry, sizes, line of the size line, bytes up to its end)."""
    path = src.path
    lines = src.lines(raw=True)
    first = next(((n, ln) for n, ln in lines if ln.strip()), None)
    if first is None:
        raise EmptyDataError("no data lines", path=path, expected="a Matrix Market file")
    number, banner = first
    tokens = banner.split()
    if not banner.lstrip().startswith("%%MatrixMarket"):
        raise FileFormatError(f"found {banner.strip()[:80]!r}", path=path, line=number,
                              expected="a '%%MatrixMarket matrix ...' banner",
                              fix="load other text formats as delimited triplets")
    spec = [t.lower() for t in tokens[1:]]
    if len(spec) != 4 or spec[0] != "matrix" or spec[1] not in _MM_FORMATS or \
            spec[2] not in _MM_FIELDS or spec[3] not in _MM_SYMMETRIES:
        raise FileFormatError(
            f"found the banner {banner.strip()[:120]!r}", path=path, line=number,
            expected="'%%MatrixMarket matrix coordinate|array real|integer|pattern "
                     "general|symmetric|skew-symmetric'",
            fix="correct the first line, or load the file as delimited triplets")
    _, fmt, field, symmetry = spec
    if field == "complex" or symmetry == "hermitian":
        raise FileFormatError("holds complex values", path=path, line=number,
                              expected="real values", fix="store the real part only")
    if fmt == "array" and (field == "pattern" or symmetry != "general"):
        raise FileFormatError(
            f"is a {field} {symmetry} matrix in array format, which is not read", path=path,
            line=number, expected="a general array, or coordinate format",
            fix="re-export the matrix in coordinate format")
    consumed = len(banner.encode("utf-8", "replace")) + 1
    for number, line in lines:
        consumed += len(line.encode("utf-8", "replace")) + 1
        if not line.strip() or line.lstrip().startswith("%"):
            continue
        parts = line.split()
        n = 3 if fmt == "coordinate" else 2
        if len(parts) != n or not all(re.fullmatch(r"\d{1,18}", p) for p in parts):
            raise FileFormatError(
                f"found the size line {line.strip()[:80]!r}", path=path, line=number,
                expected="'rows columns entries'" if n == 3 else "'rows columns'",
                fix="correct the size line below the comments")
        sizes = tuple(int(p) for p in parts)
        if sizes[0] < 1 or sizes[1] < 1:
            raise EmptyDataError(f"the size line declares a {sizes[0]} x {sizes[1]} matrix",
                                 path=path, line=number, expected="at least one row and column")
        return fmt, field, symmetry, sizes, number, consumed
    raise FileFormatError("has no size line after its banner", path=path,
                          expected="a line 'rows columns entries' after the comments",
                          fix="complete the file")


def _mm_index(values: np.ndarray, bound: int, label: str, table: _Parsed) -> np.ndarray:
    """1-based row or column numbers as int64, each an integer from 1 to ``bound``."""
    bad = ~((values >= 1) & (values <= bound) & (values == np.floor(values)))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DataValueError(
            f"found {label} number {values[k]:g} ({int(bad.sum())} such entries in all)",
            path=table.path, line=int(table.lines[k]),
            expected=f"an integer from 1 to {bound:,} (the size line's {label}s)",
            fix="correct the entry, or the size line")
    return values.astype(np.int64)


# --------------------------------------------------------------------------- archives
@contextlib.contextmanager
def _nested(path: Path):
    """Count archives unpacked inside one another (a zip in a zip ...), refusing deep ones."""
    depth = _NESTING.get()
    if depth >= _MAX_NESTING:
        raise FileFormatError(
            f"is an archive nested more than {_MAX_NESTING} deep in other archives", path=path,
            expected="an archive of data files", fix="unpack the inner archives first")
    token = _NESTING.set(depth + 1)
    try:
        yield
    finally:
        _NESTING.reset(token)


def _relocate(e: DataError, tmp: str, shown: str, single: Path | None = None) -> DataError:
    """``e`` with a path inside the temporary folder ``tmp`` named after the archive."""
    inner = e.path
    if e.path and e.path.startswith(tmp):
        if single is not None and Path(e.path) == single:
            inner = shown
        else:
            inner = f"{shown}:{Path(e.path).relative_to(tmp).as_posix()}"
    elif not e.path:
        inner = shown
    return type(e)(e.problem, path=inner, line=e.line, expected=e.expected, fix=e.fix)


def load_gzip(path, *, max_bytes=None, **options) -> Ratings:
    """Decompress a gzip file (``ratings.csv.gz``, ``x.mtx.gz`` ...) and load what it holds.

    The uncompressed bytes are capped by the same limit as files (counted while
    decompressing, so a forged or misleading header does not help); they go to a temporary
    file, removed afterwards, whose format is detected from the name without ``.gz``.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        Limit for the compressed file and for its uncompressed size.
    **options
        Passed to the loader chosen for the contents (see :func:`load_path`).

    Returns
    -------
    Ratings
    """
    path = check_file(path, max_bytes=max_bytes)
    limit = max_upload_bytes(max_bytes)
    inner = path.name[:-3] if path.name.lower().endswith(".gz") else path.name + ".txt"
    with _nested(path), tempfile.TemporaryDirectory(prefix="kmviz-gz-") as tmp:
        target = Path(tmp) / (inner or "data")
        _gunzip(path, target, limit)
        try:
            ratings = load_path(target, max_bytes=max_bytes, **options)
        except DataError as e:
            raise _relocate(e, tmp, str(path), single=target) from None
    if ratings.name == target.name:
        ratings.name = path.name
    else:
        ratings.name = str(ratings.name).replace(Path(tmp).name, path.stem)
    ratings.source = str(path)
    return ratings


def _gunzip(path: Path, target: Path, limit: int) -> None:
    written = 0
    try:
        with gzip.open(path, "rb") as src, open(target, "wb") as out:
            while chunk := src.read(_BLOCK):
                written += len(chunk)
                if written > limit:
                    raise FileTooLargeError(
                        f"decompresses to more than {_format_size(limit)}, the size limit",
                        path=path, expected=f"at most {_format_size(limit)} of uncompressed data",
                        fix=f"pass a larger max_bytes= or set {MAX_MB_ENV}, or use a smaller "
                            "sample")
                out.write(chunk)
    except (OSError, EOFError, zlib.error) as e:
        reason = "it is truncated" if isinstance(e, EOFError) else str(e) or type(e).__name__
        raise FileFormatError(f"is not a readable gzip file ({reason})", path=path,
                              expected="a complete .gz file",
                              fix="compress the file again (gzip FILE), or upload it "
                                  "uncompressed") from None


def load_zip(path, *, max_bytes=None, **options) -> Ratings:
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
        Limit for the archive and for its total uncompressed size.
    **options
        Passed to the loader chosen for the contents (see :func:`load_path`).

    Returns
    -------
    Ratings
    """
    path = check_file(path, max_bytes=max_bytes)
    limit = max_upload_bytes(max_bytes)
    with _nested(path), tempfile.TemporaryDirectory(prefix="kmviz-zip-") as tmp:
        _extract(path, Path(tmp), limit)
        target = _pick_zip_target(Path(tmp), path)
        try:
            ratings = load_path(target, max_bytes=max_bytes, **options)
        except DataError as e:
            raise _relocate(e, tmp, str(path)) from None
    # files at the archive's top level: name the data after the archive, not the temp folder
    ratings.name = str(ratings.name).replace(Path(tmp).name, path.stem)
    ratings.source = str(path)
    return ratings


_ZIP_FIX = "re-create the archive from the data folder (for example with zip -r), " \
           "without a password"


def _extract(path: Path, dest: Path, limit: int):
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
            NotImplementedError) as e:
        raise FileFormatError(f"is not a valid zip archive ({e})", path=path,
                              expected="a .zip file", fix="re-create the archive") from None
    with archive:
        members = archive.infolist()
        if len(members) > _MAX_MEMBERS:
            raise FileFormatError(f"holds {len(members):,} members", path=path,
                                  expected=f"at most {_MAX_MEMBERS:,} files",
                                  fix="zip only the data files")
        targets = _check_members(members, dest, path, limit)
        written = 0
        for m, target in targets:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(m) as src, open(target, "wb") as out:
                    while chunk := src.read(_BLOCK):
                        written += len(chunk)
                        if written > limit:
                            raise FileTooLargeError(
                                f"the archive extracts to more than {_format_size(limit)}",
                                path=path, expected=f"at most {_format_size(limit)}",
                                fix=f"pass a larger max_bytes= or set {MAX_MB_ENV}")
                        out.write(chunk)
            except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError,
                    NotImplementedError, ValueError) as e:
                raise FileFormatError(
                    f"member {m.filename!r} cannot be read ({e})", path=path,
                    expected="an intact, unencrypted zip archive", fix=_ZIP_FIX) from None
            except OSError as e:
                if e.errno == errno.ENOSPC:
                    raise DataError(f"no disk space left to extract member {m.filename!r}",
                                    path=path, fix="free disk space, or unpack the archive "
                                                   "and load its data file") from None
                raise FileFormatError(
                    f"member {m.filename!r} cannot be extracted "
                    f"({e.strerror or type(e).__name__})", path=path,
                    expected="plain file and folder names", fix=_ZIP_FIX) from None


def _check_members(members, dest: Path, path: Path, limit: int) -> list:
    """(member, target) pairs to extract, after every check that needs no extraction."""
    declared = 0
    targets, files, folders = [], {}, set()
    for m in members:
        target = _safe_member(m, dest, path)
        if target is None:
            continue
        if m.flag_bits & 0x1:
            raise FileFormatError(f"member {m.filename!r} is encrypted", path=path,
                                  expected="an archive without a password", fix=_ZIP_FIX)
        parts = target.relative_to(dest).parts
        longest = max(parts, key=lambda p: len(p.encode("utf-8", "replace")))
        if len(longest.encode("utf-8", "replace")) > _MAX_NAME_BYTES:
            raise FileFormatError(
                f"member {m.filename[:60]!r}... has a name of {len(longest)} characters",
                path=path, expected=f"file and folder names of at most {_MAX_NAME_BYTES} "
                                    "bytes", fix="shorten the names and re-create the archive")
        key = "/".join(parts)
        if key in files:
            raise FileFormatError(f"member {m.filename!r} appears twice", path=path,
                                  expected="each file once", fix=_ZIP_FIX)
        files[key] = m
        folders.update("/".join(parts[:k]) for k in range(1, len(parts)))
        declared += m.file_size
        targets.append((m, target))
    clash = sorted(set(files) & folders)
    if clash:
        raise FileFormatError(
            f"member {clash[0]!r} is both a file and a folder", path=path,
            expected="each name either a file or a folder", fix=_ZIP_FIX)
    if declared > limit:
        raise FileTooLargeError(
            f"the archive would extract to {_format_size(declared)}, over the limit of "
            f"{_format_size(limit)}", path=path, expected=f"at most {_format_size(limit)}",
            fix=f"pass a larger max_bytes= or set {MAX_MB_ENV}")
    return targets


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
    parts = [p for p in pure.parts if p not in ("", ".")]
    if member.is_dir() or not parts or parts[0] == "__MACOSX" or parts[-1].startswith("."):
        return None
    return dest.joinpath(*parts)


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
        ``delimiter=";"``, ``max_bytes=...``).

    Raises
    ------
    InvalidParameterError
        If an option is not taken by the chosen loader.
    """
    fmt = detect_format(path)
    loader = _LOADERS[fmt]
    if fmt not in ("zip", "gzip"):
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
