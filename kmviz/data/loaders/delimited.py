"""Delimited triplets (user, item, value) in any text table: the delimiter is sniffed and
the header and columns recognised when not given."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...exceptions import DataValueError, FileFormatError, InvalidParameterError
from ..ratings import Ratings
from .archives import gunzipped
from .checks import _is_gzip, _scan
from .tables import _describe_sep, _parse, _split


# Header names recognised for the three triplet columns (compared case-insensitively).
USER_NAMES = ("user", "userid", "user_id", "uid", "u", "customer", "customer_id", "reviewer")
ITEM_NAMES = ("item", "itemid", "item_id", "iid", "i", "movie", "movieid", "movie_id",
              "product", "product_id", "asin", "song", "artist")
VALUE_NAMES = ("rating", "ratings", "value", "score", "stars", "r", "weight", "count")

_SNIFF_DELIMITERS = (",", "\t", ";", "|", " ")


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
        with gunzipped(path, max_bytes=max_bytes) as unpacked:
            ratings = load_delimited(
                unpacked.target, delimiter=delimiter, header=header, user_col=user_col,
                item_col=item_col, value_col=value_col, implicit=implicit, r_min=r_min,
                r_max=r_max, duplicates=duplicates, encoding=encoding,
                max_bytes=unpacked.limit, name=name)
        return unpacked.finish(ratings, path)
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
