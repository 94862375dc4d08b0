"""Named tables saved with a run: what was computed from a run once (the stability of its
implications over refits, later its multi-item rules) kept beside it, so that it reopens with
the run after the page is left, after a restart, and from Python or the CLI.

A run's attachments live in its folder, so deleting the run deletes them::

    <root>/runs/<run_id>/attachments/<name>.json               the header
    <root>/runs/<run_id>/attachments/<name>.<token>.parquet    the rows (CSV without pyarrow)
    <root>/runs/<run_id>/attachments/<name>.<token>.npz        the table's array attributes

The header (JSON) names the files with their sizes and SHA-256, the columns and their types,
the number of rows, the table's other attributes (``DataFrame.attrs``: JSON values) and a
free ``meta`` dict. Nothing is pickled: rows are Parquet or CSV, array attributes go through
``np.savez`` and are read back member by member with ``allow_pickle=False``
(:func:`kmviz.runs.files._read_npz`), a column of tuples (a multi-item antecedent) is stored
as text ("3 7") and read back as tuples of ints.

Saving is atomic and private like the rest of the store: the data files get new names, the
header is written under a temporary name and renamed over the old one (so a reader sees the
old attachment or the new one, never half of one), then the old files go; directories are
0700, files 0600. :func:`read_table` never raises for a missing or damaged attachment: it
returns no table and a notice saying why (the caller treats it as "not computed"), while
:func:`load_table` raises :class:`kmviz.exceptions.RunStoreError`.
"""

from __future__ import annotations

import io
import json
import os
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import KmvizError, RunStoreError
from ._tables import (
    _KINDS,
    _NAME,
    ATTACHMENTS,
    TABLE_FORMAT,
    TABLE_VERSION,
    SavedTable,
    _old_files,
    ARRAYS_FORMAT,
    ARRAYS_VERSION,
    _sha,
    read_arrays_at,
    read_at,
)
from .files import (
    _TMP_PREFIX,
    _fsync_dir,
    _private_dirs,
    _to_json,
    _write_bytes_synced,
)

__all__ = ["SavedTable", "TableRead", "save_table", "load_table", "read_table",
           "list_tables", "delete_table", "ATTACHMENTS", "TABLE_FORMAT", "save_arrays",
           "load_arrays", "ARRAYS_FORMAT"]



@dataclass
class TableRead:
    """What :func:`read_table` found: the table (None when there is none to use) and, when
    there is none or it could not be read, a sentence saying so."""

    saved: SavedTable | None
    notice: str | None = None

    @property
    def table(self) -> pd.DataFrame | None:
        return None if self.saved is None else self.saved.table


def _store(store):
    from .store import RunStore

    return store if isinstance(store, RunStore) else RunStore(store)


def _check_name(name) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"an attached table's name must be 1-80 lower-case letters, digits, "
                         f"'_', '.' or '-' (not starting with '.', '_' or '-'); got {name!r}.")
    return name


def _folder(store, run_id: str) -> Path:
    return store._folder(run_id) / ATTACHMENTS


def _is_tuple_column(s: pd.Series) -> bool:
    return s.dtype == object and len(s) > 0 and any(isinstance(v, (tuple, list)) for v in s)


def _encode(table: pd.DataFrame):
    """The table as stored (tuple columns as text), the tuple columns, the column types."""
    out = table.reset_index(drop=True).copy()
    out.attrs = {}
    tuples, columns = [], []
    for col in out.columns:
        if not isinstance(col, str):
            raise ValueError(f"column names must be text to be saved; got {col!r}.")
        s = out[col]
        if _is_tuple_column(s):
            try:
                out[col] = [" ".join(str(int(x)) for x in (v if isinstance(v, (tuple, list))
                                                          else (v,))) for v in s]
            except (TypeError, ValueError):
                raise ValueError(f"column {col!r} mixes tuples with values that are not "
                                 "item indices; only tuples of ints can be saved.") from None
            tuples.append(col)
            kind = "tuple"
        elif s.dtype.kind in _KINDS:
            kind = _KINDS[s.dtype.kind]
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            bad = [v for v in s if v is not None and not isinstance(v, str)
                   and not (isinstance(v, float) and v != v)]
            if bad:
                raise ValueError(f"column {col!r} holds {type(bad[0]).__name__} values; only "
                                 "numbers, booleans, text and tuples of ints can be saved.")
            kind = "text"
        else:
            raise ValueError(f"column {col!r} has type {s.dtype}; only numbers, booleans, "
                             "text and tuples of ints can be saved.")
        columns.append([col, kind])
    return out, tuples, columns


def _plain(value):
    """An attribute value as JSON can hold it: a DataFrame inside it becomes its list of
    row dicts (tuples become lists, NumPy values Python ones on the way out)."""
    if isinstance(value, pd.DataFrame):
        return [{str(k): _plain(v) for k, v in row.items()}
                for row in value.to_dict("records")]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _split_attrs(attrs: dict):
    """Top-level NumPy arrays (stored in the .npz) and the rest (JSON, :func:`_plain`)."""
    arrays, plain = {}, {}
    for key, value in attrs.items():
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise ValueError(f"attribute {key!r} is an object array; it cannot be saved.")
            arrays[str(key)] = value
        else:
            plain[str(key)] = _plain(value)
    return arrays, plain


def save_table(run_id: str, name: str, table: pd.DataFrame, *, store=None,
               meta: dict | None = None) -> Path:
    """Attach ``table`` to the saved run ``run_id`` under ``name`` (replacing an earlier one).

    ``table``'s columns must hold numbers, booleans, text or tuples of ints; its ``attrs``
    are kept (top-level NumPy arrays in an ``.npz``, the rest as JSON: a DataFrame inside
    an attribute comes back as its list of row dicts, a tuple as a list) and ``meta``
    (JSON) is stored beside them. Returns the header's path. Raises RunStoreError for an unknown run or a
    failed write, ValueError for what cannot be saved (naming the column or attribute).
    """
    store = _store(store)
    _check_name(name)
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"table must be a pandas DataFrame; got {type(table).__name__}.")
    stored, tuples, columns = _encode(table)
    arrays, attrs = _split_attrs(dict(table.attrs))
    folder = _folder(store, run_id)
    try:
        fmt = "parquet"
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover - pyarrow ships with the test and dask extras
        fmt = "csv"
    if fmt == "parquet":
        buf = io.BytesIO()
        stored.to_parquet(buf, index=False)
        data = buf.getvalue()
    else:  # pragma: no cover
        data = stored.to_csv(index=False).encode("utf-8")
    token = secrets.token_hex(6)
    files = {f"{name}.{token}.{fmt}": data}
    header = {"format": TABLE_FORMAT, "version": TABLE_VERSION, "name": name,
              "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "rows": int(len(stored)), "columns": columns, "tuple_columns": tuples,
              "data": {"file": f"{name}.{token}.{fmt}", "format": fmt, "bytes": len(data),
                       "sha256": _sha(data)},
              "attrs": attrs, "meta": dict(meta or {})}
    if arrays:
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        packed = buf.getvalue()
        files[f"{name}.{token}.npz"] = packed
        header["arrays"] = {"file": f"{name}.{token}.npz", "names": sorted(arrays),
                            "bytes": len(packed), "sha256": _sha(packed)}
    text = _to_json(f"the attributes and meta of table {name!r}", header).encode("utf-8")
    return _write_attachment(folder, name, token, files, text,
                             f"Could not save table {name!r} with run {run_id!r}")


def _write_attachment(folder: Path, name: str, token: str, files: dict, header: bytes,
                      failure: str) -> Path:
    """Write an attachment atomically: its data ``files`` under their new names, then the
    ``header`` under a temporary name renamed over the old one (a reader sees the old
    attachment or the new one), then the old data files go. RunStoreError ``failure: why``
    if a write fails (the new data files are removed)."""
    old = _old_files(folder, name)
    tmp = folder / f"{name}.json{_TMP_PREFIX}{os.getpid()}-{token}"
    try:
        _private_dirs(folder)
        for fname, blob in files.items():
            part = folder / f"{fname}{_TMP_PREFIX}{os.getpid()}"
            _write_bytes_synced(part, blob)
            os.replace(part, folder / fname)
        _write_bytes_synced(tmp, header)
        os.replace(tmp, folder / f"{name}.json")
        _fsync_dir(folder)
    except OSError as exc:
        for fname in files:
            _unlink(folder / fname)
        raise RunStoreError(f"{failure}: {exc.strerror or exc}.") from None
    finally:
        _unlink(tmp)
    for fname in old - set(files):
        _unlink(folder / fname)
    return folder / f"{name}.json"


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def load_table(run_id: str, name: str, *, store=None) -> SavedTable:
    """The table ``name`` attached to run ``run_id``, every file checked (header fields,
    sizes, checksums, columns, rows) before it is trusted. RunStoreError when there is none
    or it is damaged (the message says which)."""
    store = _store(store)
    _check_name(name)
    return read_at(_folder(store, run_id), run_id, name)


def read_table(run_id: str, name: str, *, store=None) -> TableRead:
    """:func:`load_table`, never raising for a missing or damaged attachment (nor for a
    run that is gone): the table, or None with a notice that says why it reads as not
    computed."""
    try:
        return TableRead(load_table(run_id, name, store=store))
    except (KmvizError, ValueError, OSError) as exc:
        missing = isinstance(exc, RunStoreError) and str(exc).startswith("No table")
        return TableRead(None, None if missing else str(exc))


def list_tables(run_id: str, *, store=None) -> pd.DataFrame:
    """The tables attached to a run: ``name``, ``rows``, ``created`` and ``meta`` (from the
    headers; an unreadable header is listed with rows -1)."""
    store = _store(store)
    folder = _folder(store, run_id)
    rows = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        name = path.name[:-5]
        if not _NAME.match(name):
            continue
        try:
            header = json.loads(path.read_bytes())
            if isinstance(header, dict) and header.get("format") == ARRAYS_FORMAT:
                continue  # named arrays (a fit's history), not a table
            rows.append({"name": name, "rows": int(header.get("rows", -1)),
                         "created": str(header.get("created", "")),
                         "meta": header.get("meta") or {}})
        except (OSError, ValueError, TypeError):
            rows.append({"name": name, "rows": -1, "created": "", "meta": {}})
    return pd.DataFrame(rows, columns=["name", "rows", "created", "meta"])


def delete_table(run_id: str, name: str, *, store=None) -> bool:
    """Remove an attached table (its header first, then its files); False if there was
    none."""
    store = _store(store)
    _check_name(name)
    folder = _folder(store, run_id)
    old = _old_files(folder, name)
    path = folder / f"{name}.json"
    if not path.exists():
        return False
    _unlink(path)
    for fname in old:
        _unlink(folder / fname)
    _fsync_dir(folder)
    return True


# --------------------------------------------------------------------- named arrays


def save_arrays(run_id: str, name: str, arrays: dict, *, meta: dict | None = None,
                store=None) -> Path:
    """Attach named NumPy arrays (and a JSON ``meta`` dict) to the saved run ``run_id``
    under ``name``, replacing an earlier set: an ``.npz`` beside a header, written and
    replaced atomically like :func:`save_table`. Object arrays are refused (ValueError);
    RunStoreError for an unknown run or a failed write."""
    store = _store(store)
    _check_name(name)
    if run_id not in store:
        raise RunStoreError(f"No run {run_id!r} in the run store to attach {name!r} to.")
    for key, value in arrays.items():
        if not isinstance(value, np.ndarray) or value.dtype.hasobject:
            raise ValueError(f"array {key!r} of {name!r} must be a NumPy array of numbers, "
                             "booleans or text to be saved.")
    folder = _folder(store, run_id)
    buf = io.BytesIO()
    np.savez(buf, **{str(k): v for k, v in arrays.items()})
    packed = buf.getvalue()
    token = secrets.token_hex(6)
    fname = f"{name}.{token}.npz"
    header = {"format": ARRAYS_FORMAT, "version": ARRAYS_VERSION, "name": name,
              "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "rows": len(arrays),
              "data": {"file": fname, "format": "npz", "bytes": len(packed),
                       "sha256": _sha(packed)},
              "names": sorted(str(k) for k in arrays), "meta": dict(meta or {})}
    text = _to_json(f"the meta of arrays {name!r}", header).encode("utf-8")
    return _write_attachment(folder, name, token, {fname: packed}, text,
                             f"Could not save {name!r} with run {run_id!r}")


def load_arrays(run_id: str, name: str, *, store=None) -> tuple[dict, dict]:
    """``(arrays, meta)`` saved by :func:`save_arrays`, every file checked (header, size,
    checksum, member names; members read with ``allow_pickle=False``). RunStoreError
    starting "No arrays" when there are none, else naming the damage."""
    store = _store(store)
    _check_name(name)
    return read_arrays_at(_folder(store, run_id), run_id, name)
