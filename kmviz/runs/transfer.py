"""Runs that travel: :func:`import_run_zip` reads back what :meth:`RunStore.export` writes
(a zip holding one folder ``<run_id>/`` with ``meta.json``, ``trace.json``, ``arrays.npz``,
the derived ``trace.csv`` / ``events.csv``, and the tables saved with the run under
``attachments/``: :mod:`kmviz.runs.artifacts`).

An archive is untrusted input, so nothing in it is believed before it is checked:

- its size on disk, its member count and the expanded sizes the archive declares are
  bounded before any member is read, and every member is read in chunks, counted as the
  bytes come out (an archive that lies about its sizes stops at the bound);
- member names must be exactly ``<run_id>/<known file>`` or
  ``<run_id>/attachments/<table file>``: no other folder, no ``..``, no absolute path, no
  symbolic link, no encrypted or duplicated member;
- ``meta.json`` and ``trace.json`` go through the store's own checks of JSON types, and
  ``arrays.npz`` through its member-by-member header checks (no object dtype, declared
  sizes equal to the stored ones, ``allow_pickle=False``); the arrays must be the ones
  ``meta.json`` declares, with those shapes and dtypes; each attached table is read back
  through :func:`kmviz.runs.artifacts.load_table` (sizes, SHA-256, columns, no pickle) once
  the run is in place, and one that fails is removed and named in the result's message.

The import is atomic: the run is written under a temporary folder name of the store (swept
away if the process is killed) and renamed into place, and only then indexed. An existing
run is never overwritten: a run id already in the store gets a new id, and the result says
so.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sqlite3
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..exceptions import RunStoreError
from ..trace import Trace
from .files import (
    PRIVATE_DIR_MODE,
    _ARRAY_NAME,
    _RUN_ID,
    _TMP_PREFIX,
    _fsync_dir,
    _make_private,
    _read_npz,
    _to_json,
    _write_bytes_synced,
    max_run_bytes,
)
from ._tables import ATTACHMENTS
from .format import _now_utc, _read_meta

#: The files an export holds; the first three are required, the CSVs are derived and skipped.
REQUIRED_MEMBERS = ("meta.json", "trace.json", "arrays.npz")
DERIVED_MEMBERS = ("trace.csv", "events.csv")
#: At most this many attached tables, and members in all (an export has five, plus two or
#: three files per table).
MAX_TABLES = 16
MAX_MEMBERS = 8 + 3 * MAX_TABLES
#: An attached table's files: its header, its rows, its array attributes.
_TABLE_FILE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,79}(\.json|\.[0-9a-f]{12}\.(parquet|csv|npz))$")
#: The most bytes the JSON and CSV members of an import may take, each.
MAX_TEXT_MEMBER_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20

_FIX = ("Fix: import a zip written by `kmviz runs export RUN --out RUN.zip` or the Runs page's "
        "\"Whole run (zip)\" download, unchanged.")


@dataclass
class ImportResult:
    """What an import did: the run id in the store, the id the archive carried, and a
    sentence saying so (``renamed`` when the archive's id was taken)."""

    run_id: str
    original_id: str
    label: str
    renamed: bool
    message: str


def _refuse(source: str, problem: str) -> RunStoreError:
    return RunStoreError(f"{source}: {problem}; nothing was imported. {_FIX}")


def import_limit() -> int:
    """The most bytes an import may expand to: the arrays' limit (:func:`max_run_bytes`)
    plus room for the JSON and CSV members."""
    return max_run_bytes() + 4 * MAX_TEXT_MEMBER_BYTES


def _open_source(source, limit: int):
    """(file object, name for messages) of a path, bytes or a binary file object, its size
    checked against ``limit`` before anything is read."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > limit:
            raise _refuse("the upload", f"it is {len(data):,} bytes, more than the "
                                        f"{limit:,} an import may take")
        return io.BytesIO(data), "the upload"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source).expanduser()
        name = str(path)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise RunStoreError(f"{name}: no such file; nothing was imported.") from None
        except OSError as exc:
            raise RunStoreError(f"{name}: cannot be read ({exc.strerror or exc}).") from None
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(name, "it is not a regular file")
        if st.st_size > limit:
            raise _refuse(name, f"it is {st.st_size:,} bytes, more than the {limit:,} an "
                                "import may take")
        try:
            return open(path, "rb"), name
        except OSError as exc:
            raise RunStoreError(f"{name}: cannot be read ({exc.strerror or exc}).") from None
    if hasattr(source, "read"):
        name = str(getattr(source, "name", "the upload"))
        data = source.read(limit + 1)
        if len(data) > limit:
            raise _refuse(name, f"it is more than the {limit:,} bytes an import may take")
        return io.BytesIO(data), name
    raise ValueError("source must be a path, bytes or a binary file object; got "
                     f"{type(source).__name__}.")


def _plan(zf: zipfile.ZipFile, name: str, limit: int) -> tuple[str, dict]:
    """The archive's run folder and ``{member: ZipInfo}``, every name and size checked."""
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _refuse(name, f"it holds {len(infos)} members; an exported run has at most "
                            f"{MAX_MEMBERS}")
    folders, members, total = set(), {}, 0
    for info in infos:
        fname = info.filename
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise _refuse(name, f"member {fname!r} is a symbolic link")
        if info.flag_bits & 0x1:
            raise _refuse(name, f"member {fname!r} is encrypted")
        parts = fname.split("/")
        table_file = len(parts) == 3 and parts[1] == ATTACHMENTS and bool(
            _TABLE_FILE.match(parts[2]))
        if "\\" in fname or fname.startswith("/") or any(p in ("", ".", "..") for p in
                                                          parts[:-1]) or \
                not (len(parts) == 2 or table_file):
            raise _refuse(name, f"member {fname!r} is not <run id>/<file> or <run id>/"
                                f"{ATTACHMENTS}/<table file> (an export holds one folder named "
                                "after its run, its files, and its saved tables)")
        folder, member = parts[0], "/".join(parts[1:])
        if not _RUN_ID.match(folder):
            raise _refuse(name, f"folder {folder!r} is not a run id")
        folders.add(folder)
        if member == "" and info.is_dir():
            continue  # the folder's own entry, if a zip tool added one
        if member not in REQUIRED_MEMBERS + DERIVED_MEMBERS and not table_file:
            raise _refuse(name, f"member {fname!r} is not a file of an exported run (those "
                                f"are {', '.join(REQUIRED_MEMBERS + DERIVED_MEMBERS)})")
        if member in members:
            raise _refuse(name, f"member {fname!r} appears twice")
        cap = limit if member == "arrays.npz" or table_file else MAX_TEXT_MEMBER_BYTES
        if info.file_size > cap:
            raise _refuse(name, f"member {fname!r} expands to {info.file_size:,} bytes, "
                                f"more than the {cap:,} it may take")
        total += info.file_size
        members[member] = info
    if len(folders) != 1:
        raise _refuse(name, "it must hold exactly one run folder; it holds "
                            f"{len(folders)}")
    if total > limit:
        raise _refuse(name, f"its members expand to {total:,} bytes, more than the "
                            f"{limit:,} an import may take")
    missing = [m for m in REQUIRED_MEMBERS if m not in members]
    if missing:
        raise _refuse(name, f"it lacks {', '.join(missing)}")
    return folders.pop(), members


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> bytes:
    """A member's bytes, read in chunks and counted against its declared size."""
    out, size = io.BytesIO(), 0
    try:
        with zf.open(info) as f:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > info.file_size:
                    raise _refuse(name, f"member {info.filename!r} expands beyond its "
                                        "declared size")
                out.write(chunk)
    except RunStoreError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
            NotImplementedError, RuntimeError) as exc:
        raise _refuse(name, f"member {info.filename!r} cannot be read (truncated or "
                            f"damaged: {exc})") from None
    return out.getvalue()


def _check_arrays_declared(meta: dict, arrays: dict, name: str) -> None:
    declared = meta.get("arrays") or {}
    for key, a in arrays.items():
        if not _ARRAY_NAME.match(key):
            raise _refuse(name, f"arrays.npz holds {key!r}, which is not an array name")
    if set(declared) != set(arrays):
        extra = sorted(set(arrays) - set(declared))
        lacking = sorted(set(declared) - set(arrays))
        raise _refuse(name, "arrays.npz does not hold the arrays meta.json declares ("
                            + "; ".join(p for p in (
                                f"missing {', '.join(lacking)}" if lacking else "",
                                f"undeclared {', '.join(extra)}" if extra else "") if p) + ")")
    for key, spec in declared.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("shape"), list) or \
                not isinstance(spec.get("dtype"), str):
            raise _refuse(name, f"meta.json's 'arrays'.{key!r} is not {{'shape': [...], "
                                "'dtype': '...'}")
        a = arrays[key]
        if [int(n) for n in a.shape] != spec["shape"] or a.dtype.str != spec["dtype"]:
            raise _refuse(name, f"array {key!r} is {a.dtype.str} {list(a.shape)} but "
                                f"meta.json declares {spec['dtype']} {spec['shape']}")


def import_run_zip(store, source, *, owner: str | None = None,
                   max_bytes: int | None = None) -> ImportResult:
    """Import an exported run (a zip from :meth:`RunStore.export`) into ``store``.

    Parameters
    ----------
    store : RunStore
    source : path, bytes or binary file object
        The zip archive.
    owner : str, optional
        Who may manage the imported run (recorded as ``meta["owner"]``, replacing the
        exporter's): the CLI's ``cli:<user>``, the app's browser session.
    max_bytes : int, optional
        The most bytes the archive may take and expand to (default :func:`import_limit`).

    Returns
    -------
    ImportResult

    Raises
    ------
    RunStoreError
        The archive is not an exported run, is damaged, too large, or holds anything
        unexpected; the message says what and nothing is changed in the store.
    """
    limit = import_limit() if max_bytes is None else int(max_bytes)
    f, name = _open_source(source, limit)
    with f:
        try:
            zf = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError,
                ValueError) as exc:
            raise _refuse(name, f"it is not a readable zip archive ({exc})") from None
        with zf:
            folder, members = _plan(zf, name, limit)
            raw = {m: _read_member(zf, members[m], name) for m in REQUIRED_MEMBERS}
            for m in DERIVED_MEMBERS:  # read to check they are sound; they are rebuilt
                if m in members:
                    _read_member(zf, members[m], name)
            tables = {m: _read_member(zf, members[m], name) for m in members
                      if m.startswith(ATTACHMENTS + "/")}
    if len([m for m in tables if m.endswith(".json")]) > MAX_TABLES:
        raise _refuse(name, f"it holds more than {MAX_TABLES} saved tables")
    return _install(store, folder, raw, name, owner, min(limit, max_run_bytes()), tables)


def _install(store, folder: str, raw: dict, name: str, owner, limit: int,
             tables: dict | None = None) -> ImportResult:
    store._connect().close()  # the store exists (created on first use)
    runs_dir = store.runs_dir
    tmp = runs_dir / f"{_TMP_PREFIX}import-{folder}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(mode=PRIVATE_DIR_MODE)
        _make_private(tmp, PRIVATE_DIR_MODE)
        try:
            # the store's own checks, on the files as the store would hold them
            _write_bytes_synced(tmp / "meta.json", raw["meta.json"])
            meta = _read_meta(tmp, folder)
            if meta["run_id"] != folder:
                raise _refuse(name, f"meta.json names run {meta['run_id']!r} but the folder "
                                    f"is {folder!r}")
            try:
                Trace.from_json(raw["trace.json"])
            except RunStoreError as exc:
                raise _refuse(name, f"trace.json: {exc}") from None
            arrays = _read_npz(io.BytesIO(raw["arrays.npz"]), folder, limit,
                               owner=name, fix=_FIX)
            _check_arrays_declared(meta, arrays, name)
            del arrays
        except RunStoreError as exc:
            msg = str(exc)
            if "nothing was imported" not in msg:
                msg = f"{name}: {msg} Nothing was imported."
            raise RunStoreError(msg) from None
        if tables:
            (tmp / ATTACHMENTS).mkdir(mode=PRIVATE_DIR_MODE)
            _make_private(tmp / ATTACHMENTS, PRIVATE_DIR_MODE)
            for member, data in tables.items():
                _write_bytes_synced(tmp / member, data)
        result = _place(store, tmp, folder, meta, raw, owner)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if tables:
        result = _check_tables(store, result, tables)
    return result


def _check_tables(store, result: ImportResult, tables: dict) -> ImportResult:
    """Read every imported table back through the store's checks; remove (and name) those
    that fail, and the files no header names."""
    import json

    from .artifacts import ARRAYS_FORMAT, _old_files, delete_table, load_arrays, load_table

    folder = store.runs_dir / result.run_id / ATTACHMENTS
    names = sorted(m.split("/")[1][:-5] for m in tables if m.endswith(".json"))
    kept, dropped, named = [], [], set()
    for tname in names:
        try:
            try:
                header = json.loads(tables[f"{ATTACHMENTS}/{tname}.json"])
            except ValueError:
                header = None
            arrays = isinstance(header, dict) and header.get("format") == ARRAYS_FORMAT
            (load_arrays if arrays else load_table)(result.run_id, tname, store=store)
            kept.append(tname)
            named |= {f"{tname}.json", *_old_files(folder, tname)}
        except RunStoreError as exc:
            delete_table(result.run_id, tname, store=store)
            dropped.append(f"{tname} ({exc})")
    for path in folder.iterdir() if folder.is_dir() else ():
        if path.name not in named:
            path.unlink(missing_ok=True)
    words = result.message
    if kept:
        words += f" What was saved with it came along: {', '.join(kept)}."
    if dropped:
        words += f" Left out, as they did not read back: {'; '.join(dropped)}."
    return ImportResult(run_id=result.run_id, original_id=result.original_id,
                        label=result.label, renamed=result.renamed, message=words)


def _place(store, tmp: Path, original: str, meta: dict, raw: dict, owner) -> ImportResult:
    """Write the checked run under ``tmp``, rename it into place under a free id, index it."""
    existing = set(store.ids())
    run_id = original
    for _ in range(5):
        renamed = run_id != original
        if run_id in existing or (store.runs_dir / run_id).exists():
            run_id = store._new_run_id(_now_utc())
            continue
        meta = dict(meta)
        meta["run_id"] = run_id
        meta["owner"] = None if owner is None else str(owner)
        provenance = dict(meta.get("provenance") or {})
        provenance["imported"] = {"from_run_id": original,
                                  "at": _now_utc().isoformat(timespec="milliseconds")}
        meta["provenance"] = provenance
        _write_bytes_synced(tmp / "meta.json", _to_json("meta", meta).encode("utf-8"))
        _write_bytes_synced(tmp / "trace.json", raw["trace.json"])
        _write_bytes_synced(tmp / "arrays.npz", raw["arrays.npz"])
        _fsync_dir(tmp)
        final = store.runs_dir / run_id
        try:
            os.rename(tmp, final)  # fails if a folder of that name appeared meanwhile
        except OSError:
            existing.add(run_id)
            continue
        _fsync_dir(store.runs_dir)
        conn = store._connect()
        try:
            store._insert_row(conn, meta)
        except sqlite3.IntegrityError:
            # indexed meanwhile under this id by another writer: put the folder back
            os.rename(final, tmp)
            existing.add(run_id)
            continue
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise
        finally:
            conn.close()
        label = str(meta.get("label", ""))
        if renamed:
            message = (f"Imported run {label!r} as {run_id}: its id {original} is already "
                       "in this store, which is left unchanged.")
        else:
            message = f"Imported run {label!r} as {run_id}."
        return ImportResult(run_id=run_id, original_id=original, label=label,
                            renamed=renamed, message=message)
    raise RunStoreError(f"Could not find a free run id in {store.runs_dir}; nothing was "
                        "imported.")


__all__ = ["ImportResult", "import_limit", "import_run_zip", "MAX_MEMBERS",
           "MAX_TEXT_MEMBER_BYTES"]
