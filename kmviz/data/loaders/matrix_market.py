"""Matrix Market coordinate (and small array) files as ratings."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ...exceptions import DataValueError, EmptyDataError, FileFormatError
from ..ratings import Ratings
from .archives import gunzipped
from .checks import _Text, _is_gzip, _scan
from .tables import _Parsed, _parse


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
        with gunzipped(path, max_bytes=max_bytes) as unpacked:
            ratings = load_matrix_market(unpacked.target, r_min=r_min, r_max=r_max,
                                         implicit=implicit, max_bytes=unpacked.limit)
        return unpacked.finish(ratings, path)
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
