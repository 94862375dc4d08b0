"""Users x items tables: a header row of item names, one row per user (an optional first
column of user ids), each cell a 0/1 flag or a rating; an empty cell is not rated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...exceptions import DataValueError, EmptyDataError, FileFormatError, InvalidParameterError
from ..ratings import Ratings
from .checks import _scan
from .layout import DELIMITERS, is_number, split_fields, table_delimiter
from .tables import _NOT_FINITE, _describe_sep, _plain_ints

#: Header names of a first column that holds user ids (compared case-insensitively).
USER_COLUMN_NAMES = ("user", "userid", "user_id", "uid", "id", "users", "customer",
                     "customer_id", "respondent", "name", "person")
#: Longest line of a table, in bytes: its header names every item (4 MB: some 300,000
#: names), and a row holds a cell for each.
TABLE_MAX_LINE_BYTES = 4 * 1024 * 1024
#: Most cells (rows x columns) converted at a time.
_CHUNK_CELLS = 100_000


def load_table(path, *, delimiter=None, user_col=None, implicit=None, missing=None,
               r_min=None, r_max=None, duplicates="error", encoding="utf-8", max_bytes=None,
               name=None) -> Ratings:
    """Read a users x items table: the first non-blank line names the items, each further
    line is one user's row.

    A cell holds a number or nothing: an empty cell is "not rated" (and so are the
    ``missing`` markers). A table of 0 and 1 only is read as 0/1 interactions (the 1s are
    the entries, a 0 is no interaction); any other numbers are ratings, 0 included.

    Parameters
    ----------
    path : str or Path
    delimiter : str, optional
        The cell separator (``" "``: runs of whitespace, where a cell cannot be empty).
        Default: detected, the one giving every line the same number of fields.
    user_col : int, str, False or None
        The column of user ids: a 0-based position or a header name; False (or "none"):
        no such column, user k is the k-th row (1-based). Default: the first column when
        its header is empty or a user-column name (user, id, customer ...), or when it holds
        a cell that is not a number; else none.
    implicit : bool, optional
        True: the cells must be 0 or 1 (interactions); False: read 0/1 as ratings too.
        Default: interactions iff every cell is 0 or 1.
    missing : str or list of str, optional
        Cell texts that mean "not rated" besides the empty cell, for example ``"NA"``.
    r_min, r_max : float, optional
        The declared rating scale (default: the observed range).
    duplicates : {"error", "mean", "first", "last"}, default="error"
        For a user id on several rows (a cell rated twice).
    encoding : str, default="utf-8"
    max_bytes : int, optional
        The size limit of the file.
    name : str, optional
        Label of the dataset (default: the file name).

    Returns
    -------
    Ratings
        Item ids and names are the header's names; ``info["format"] == "table"``. A
        column without a rated cell (all empty, or all 0 in a 0/1 table) has no entry, so
        no item; ``info["items_without_ratings"]`` counts them.

    Raises
    ------
    FileFormatError
        No header, empty or repeated item names, a row with more or fewer cells than the
        header, no delimiter that splits the header.
    DataValueError
        A cell that is not a number (named by line and item), NaN or inf, values other
        than 0/1 with ``implicit=True``.
    EmptyDataError
        An empty file, only a header, no rated cell.
    """
    path = Path(path)
    markers = _check_missing(missing)
    if implicit is not None and not isinstance(implicit, (bool, np.bool_)):
        raise InvalidParameterError(f"The 'implicit' parameter must be True, False or None. "
                                    f"Got {implicit!r} instead.")
    src = _scan(path, encoding=encoding, max_bytes=max_bytes, max_line=TABLE_MAX_LINE_BYTES,
                record="a header row of item names, then one row of cells per user")
    sample = src.nonblank(0, 50)
    header_line, header_text = sample[0]
    sep = _delimiter(delimiter, [ln for _, ln in sample], path, header_line, header_text)
    header = [h.strip() for h in split_fields(header_text, sep)]
    width = len(header)
    rows = [[c.strip() for c in split_fields(ln, sep)] for _, ln in sample[1:]]
    ucol = _user_column(user_col, header, rows, markers, path, header_line)
    item_cols = [c for c in range(width) if c != ucol]
    names = [header[c] for c in item_cols]
    _check_names(names, item_cols, path, header_line)
    if len(sample) < 2:
        raise EmptyDataError("holds only a header line", path=path,
                             expected="one row per user after the header of item names",
                             fix="add the users' rows")
    users, cols, values, lines = _read_cells(src, sep, header_line, width, ucol, item_cols,
                                             names, markers)
    if values.shape[0] == 0:
        raise EmptyDataError("has no rated cell (every cell is empty)", path=path,
                             expected="numbers in the cells", fix="check the file")
    binary = bool(np.all((values == 0) | (values == 1)))
    if implicit and not binary:
        k = int(np.flatnonzero((values != 0) & (values != 1))[0])
        raise DataValueError(f"found {values[k]:g} in column {names[cols[k]]!r}", path=path,
                             line=int(lines[k]), expected="0 or 1 (implicit=True)",
                             fix="pass implicit=False to read the values as ratings")
    as_flags = binary if implicit is None else bool(implicit)
    if as_flags:
        keep = values == 1
        users, cols, lines = users[keep], cols[keep], lines[keep]
        values = None
    items = pd.Categorical.from_codes(cols.astype(np.int64), validate=False,
                                      categories=pd.Index(names, dtype=object))
    ratings = Ratings.from_arrays(
        users, items, values, r_min=r_min, r_max=r_max, duplicates=duplicates,
        line_numbers=lines, implicit=as_flags, item_names={n: n for n in names},
        name=name or path.name, source=str(path))
    ratings.info.update(format="table", delimiter=_describe_sep(sep))
    if ratings.n_items < len(names):
        ratings.info["items_without_ratings"] = len(names) - ratings.n_items
    return ratings


def _check_missing(missing) -> set:
    if missing is None:
        return set()
    if isinstance(missing, str):
        missing = [missing]
    try:
        out = {str(m).strip() for m in missing}
    except TypeError:
        raise InvalidParameterError(f"The 'missing' parameter must be a text or a list of "
                                    f"texts. Got {missing!r} instead.") from None
    return out


def _delimiter(delimiter, lines, path, line, text) -> str:
    if delimiter is not None:
        if delimiter in ("\\s+", "whitespace"):
            delimiter = " "
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise InvalidParameterError(
                f"The 'delimiter' parameter must be one character "
                f"({', '.join(map(repr, DELIMITERS))}). Got {delimiter!r} instead.")
        if len(split_fields(text, delimiter)) < 2:
            raise FileFormatError(
                f"found 1 column ({text[:80]!r}) when splitting on {_describe_sep(delimiter)}",
                path=path, line=line, expected="a header row of item names",
                fix="pass the delimiter the file uses")
        return delimiter
    sep = table_delimiter(lines)
    if sep is None:
        # rows of unequal width: the header's delimiter, so the ragged row is reported
        sep = next((s for s in DELIMITERS if len(split_fields(text, s)) >= 2), None)
    if sep is None:
        raise FileFormatError(
            f"found 1 column ({text[:80]!r})", path=path, line=line,
            expected="a header row of item names separated by commas, tabs, semicolons, "
                     "pipes or spaces", fix="check the file, or pass delimiter=")
    return sep


def _user_column(user_col, header, rows, markers, path, line):
    width = len(header)
    if user_col is False or (isinstance(user_col, str) and user_col.lower() == "none"):
        return None
    if user_col is None:
        first = header[0].lower()
        cells = [r[0] for r in rows if r]
        text = any(c and c not in markers and not is_number(c) for c in cells)
        return 0 if (not first or first in USER_COLUMN_NAMES or text) else None
    if isinstance(user_col, (int, np.integer)) and not isinstance(user_col, bool):
        if not 0 <= user_col < width:
            raise FileFormatError(f"user_col={user_col} but the header has {width} column(s)",
                                  path=path, line=line,
                                  expected=f"a 0-based position below {width}")
        return int(user_col)
    if isinstance(user_col, str):
        if user_col not in header:
            raise FileFormatError(
                f"no column named {user_col!r} in the header", path=path, line=line,
                expected="the name of the user-id column",
                fix="pass user_col= with a header name, a 0-based position or False")
        return header.index(user_col)
    raise InvalidParameterError(f"The 'user_col' parameter must be a column name, a 0-based "
                                f"position, False or None. Got {user_col!r} instead.")


def _check_names(names, cols, path, line):
    if len(names) < 2:
        raise FileFormatError(f"the header names {len(names)} item(s)", path=path, line=line,
                              expected="a header row naming at least two items",
                              fix="check the delimiter, or read the file as triplets "
                                  "(format='delimited')")
    seen = {}
    for n, c in zip(names, cols):
        if not n:
            raise FileFormatError(f"column {c + 1} has no item name in the header", path=path,
                                  line=line, expected="a name for every item column",
                                  fix="name the column in the header")
        if n in seen:
            raise FileFormatError(f"the item name {n!r} is in columns {seen[n] + 1} and "
                                  f"{c + 1}", path=path, line=line,
                                  expected="each item named once",
                                  fix="rename one of the columns")
        seen[n] = c


def _read_cells(src, sep, header_line, width, ucol, item_cols, names, markers):
    """(user ids, item positions, values, file lines) of every rated cell, read in chunks
    of about :data:`_CHUNK_CELLS` cells (each row's fields counted: a short row is an
    error, not a row of empty cells)."""
    chunk_rows = max(50, _CHUNK_CELLS // width)
    out = {"ids": [], "rows": [], "cols": [], "values": [], "lines": []}
    rows, numbers = [], []
    n_rows = 0
    for number, line in src.lines(header_line):
        if not line.strip():
            continue
        fields = split_fields(line, sep)
        if len(fields) != width:
            if all(not f.strip() for f in fields):
                continue  # a row of empty cells: a user who rated nothing
            more = len(fields) > width
            raise FileFormatError(
                f"found {len(fields)} field(s), the header has {width}", path=src.path,
                line=number,
                expected=f"{width} fields separated by {_describe_sep(sep)} on every row "
                         "(an empty field for a cell not rated)",
                fix=("remove the extra fields, name their columns in the header, or quote "
                     "values that contain the delimiter") if more else
                    "complete the row with empty fields, or remove it")
        rows.append(fields)
        numbers.append(number)
        if len(rows) >= chunk_rows:
            n_rows = _convert(rows, numbers, n_rows, src, ucol, item_cols, names, markers,
                              out)
            rows, numbers = [], []
    if rows:
        _convert(rows, numbers, n_rows, src, ucol, item_cols, names, markers, out)
    if not out["ids"]:
        raise EmptyDataError("has no rows after the header", path=src.path,
                             expected="one row per user", fix="add the users' rows")
    ids, rows = np.concatenate(out["ids"]), np.concatenate(out["rows"])
    if ucol is None:
        users = ids[rows]
    else:  # one id a row: coded once, not once a cell
        ints = _plain_ints(ids)
        if ints is not None:
            users = ints[rows]
        else:
            codes, uniques = pd.factorize(ids)
            users = pd.Categorical.from_codes(codes[rows], categories=pd.Index(
                np.asarray(uniques, dtype=object), dtype=object), validate=False)
    return (users, np.concatenate(out["cols"]), np.concatenate(out["values"]),
            np.concatenate(out["lines"]))


def _convert(rows, numbers, n_rows, src, ucol, item_cols, names, markers, out) -> int:
    """Add the rated cells of a chunk of rows to ``out``; returns the rows read so far."""
    cells = np.array(rows, dtype=object)
    number = np.asarray(numbers, dtype=np.int64)
    cells = pd.Series(cells.ravel()).str.strip().to_numpy(dtype=object).reshape(cells.shape)
    if ucol is not None:
        uid = cells[:, ucol]
        empty = np.flatnonzero(uid == "")
        if empty.size:
            raise FileFormatError("empty user id", path=src.path, line=int(number[empty[0]]),
                                  expected="a user id in every row",
                                  fix="fill the id, or pass user_col=False")
    else:
        uid = np.arange(cells.shape[0], dtype=np.int64) + n_rows + 1
    grid = cells[:, item_cols]
    empty = grid == ""
    for m in markers:
        empty |= grid == m
    r, c = np.nonzero(~empty)
    found = grid[r, c]
    try:  # plain numbers: one C loop; anything else goes the slow way, to be reported
        flat = found.astype(np.float64)
    except ValueError:
        flat = pd.to_numeric(pd.Series(found), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(flat)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        _bad_cell(src.path, int(number[r[k]]), found[k], names[c[k]], int(bad.sum()),
                  markers)
    out["ids"].append(uid)
    out["rows"].append((r + n_rows).astype(np.int32))  # compact: under 2^31 rows and lines
    out["cols"].append(c.astype(np.int32))
    out["values"].append(flat)
    out["lines"].append(number[r].astype(np.int32))
    return n_rows + cells.shape[0]


def _bad_cell(path, line, found, item, count, markers):
    if found.lower() in _NOT_FINITE:
        fix = (f"empty the cell (an empty cell is not rated), or pass missing={found!r}"
               if not markers else f"empty the cell, or add {found!r} to missing=")
        raise DataValueError(f"found {found!r} in column {item!r}, which is not a finite "
                             f"number ({count} such cell(s) found so far)", path=path,
                             line=line, expected="a number or an empty cell", fix=fix)
    raise DataValueError(f"found {found!r} in column {item!r} ({count} non-numeric cell(s) "
                         "found so far)", path=path, line=line,
                         expected="a number, or an empty cell for not rated",
                         fix="correct the cell, or check the delimiter and that this is a "
                             "users x items table")
