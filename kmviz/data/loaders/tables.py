"""Table parsing: delimited text read in chunks of at most about :data:`_CHUNK_FIELDS`
fields into compact columns (integer or text ids, float values), with errors that name the
real 1-based file line."""

from __future__ import annotations

import csv
import re

import numpy as np
import pandas as pd

from ...exceptions import DataValueError, EmptyDataError, FileFormatError
from .checks import _Text, _UNIT_SEP


_DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe", " ": "spaces"}
_NOT_FINITE = {"nan", "na", "n/a", "null", "none", "inf", "+inf", "-inf", "infinity",
               "-infinity", "+infinity"}

#: Most fields (rows x columns) parsed at a time. A field costs about 60-80 bytes while its
#: chunk is converted (Arrow string, then a Python str), so a chunk also holds at most one
#: field per :data:`_BYTES_PER_CHUNK_FIELD` bytes of the file: small files stay small.
_CHUNK_FIELDS = 200_000
_BYTES_PER_CHUNK_FIELD = 64


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
