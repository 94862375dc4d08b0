"""The SQLite index of a run store (``index.sqlite``, WAL mode): its schema and migration,
connections whose lock timeouts say "busy, try again", and the healing after a crash (stale
temporary folders, rows without folders, folders without rows)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

from ..exceptions import RunStoreBusyError, RunStoreError
from .files import (
    PRIVATE_FILE_MODE,
    _RUN_ID,
    _TMP_PREFIX,
    _TRASH_PREFIX,
    _make_private,
    _private_dirs,
    _remove_tree,
    _to_json,
)
from .format import _read_meta


#: Version of the SQLite index schema (``PRAGMA user_version``); 2 adds the note column,
#: 3 a run's sweep id and tags (to filter by).
INDEX_SCHEMA = 3

# A temporary folder whose writer cannot be checked (another host, reused pid) is only
# removed once it is this old, so a slow save in progress is never swept away.
_STALE_AFTER_S = 24 * 3600.0
_BUSY_TIMEOUT_MS = 30_000
# list() re-indexes a complete run folder without an index row once it is this old (a save
# renames its folder into place, then inserts the row within the busy timeout).
_REINDEX_GRACE_S = 4 * _BUSY_TIMEOUT_MS / 1000
# SQLITE_BUSY, SQLITE_LOCKED: another connection holds the lock.
_BUSY_CODES = (5, 6)

# The columns of the index's runs table: kmviz 0.1.0 (schema 1), and now (schema 2).
_V1_COLUMNS = ("run_id", "family", "label", "dataset", "fingerprint", "created", "duration_s",
               "n_iter", "status", "params", "metrics", "format")
_V2_COLUMNS = _V1_COLUMNS + ("note",)
_V3_COLUMNS = _V2_COLUMNS + ("sweep", "tags")
# What each migration adds (kmviz 0.1.0's schema 1 -> 2 -> 3).
_ADDED_COLUMNS = {"note": "note TEXT NOT NULL DEFAULT ''", "sweep": "sweep TEXT",
                  "tags": "tags TEXT NOT NULL DEFAULT '[]'"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    family      TEXT NOT NULL,
    label       TEXT NOT NULL,
    dataset     TEXT,
    fingerprint TEXT,
    created     TEXT NOT NULL,
    duration_s  REAL,
    n_iter      INTEGER,
    status      TEXT NOT NULL,
    params      TEXT NOT NULL,
    metrics     TEXT NOT NULL,
    format      INTEGER NOT NULL,
    note        TEXT NOT NULL DEFAULT '',
    sweep       TEXT,
    tags        TEXT NOT NULL DEFAULT '[]'
)
"""


def sweep_id(meta: dict):
    """The id of the sweep a run belongs to (``meta["sweep"]["id"]``), or None."""
    sweep = meta.get("sweep")
    return str(sweep["id"]) if isinstance(sweep, dict) and sweep.get("id") else None


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists but belongs to someone else, or cannot tell: assume alive
    return True


def _is_busy(exc: BaseException) -> bool:
    """Whether a SQLite error means another connection holds the lock."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text or \
        "database is busy" in text


def _busy_error(index_path) -> RunStoreBusyError:
    return RunStoreBusyError(
        f"The run index {index_path} is busy: another kmviz process has held its lock for "
        f"more than {_BUSY_TIMEOUT_MS / 1000:g} s. Nothing was changed; try again in a "
        "moment.")


class _IndexConnection(sqlite3.Connection):
    """A connection to the run index whose lock timeouts raise "busy, try again"
    (:class:`RunStoreBusyError`) instead of SQLite's "database is locked"."""

    index_path = ""

    def execute(self, *args, **kwargs):
        try:
            return super().execute(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise _busy_error(self.index_path) from None
            raise

    def executemany(self, *args, **kwargs):
        try:
            return super().executemany(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise _busy_error(self.index_path) from None
            raise


class _Index:
    """The SQLite index of a :class:`RunStore` and its healing (the store's base class).

    It uses the store's ``path``, ``runs_dir``, ``index_path`` and ``_ready``: opening a
    connection (creating or migrating the schema on first use), inserting a run's row,
    and the sweep and re-indexing that :meth:`RunStore.list` and :meth:`RunStore.repair`
    run after a crash.
    """

    # -------------------------------------------------------------------- index access
    def _connect(self) -> sqlite3.Connection:
        """A fresh connection per operation, so the store is safe to use after fork."""
        if not self._ready:
            try:
                _private_dirs(self.path, self.runs_dir)
            except OSError as exc:
                raise RunStoreError(f"Cannot create the run store at {self.path}: {exc}.") from None
        try:
            conn = sqlite3.connect(self.index_path, timeout=_BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None, factory=_IndexConnection)
        except sqlite3.Error as exc:
            raise RunStoreError(f"Cannot open the run index {self.index_path}: {exc}.") from None
        conn.index_path = self.index_path
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            if not self._ready:
                self._init_schema(conn)
                self._ready = True
                for suffix in ("", "-wal", "-shm"):
                    _make_private(Path(f"{self.index_path}{suffix}"), PRIVATE_FILE_MODE)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if _is_busy(exc):
                raise _busy_error(self.index_path) from None
            raise RunStoreError(
                f"{self.index_path} is not a kmviz run index ({exc}); kmviz left it unchanged. "
                "Fix: point kmviz at another run directory (--dir DIR or KMVIZ_RUNS_DIR), or "
                "move this file away if it is not needed."
            ) from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _index_state(self, conn: sqlite3.Connection) -> str:
        """``"new"`` (an empty file), ``"current"``, or ``"old"`` (schema 1 of kmviz 0.1.0,
        or 2: to migrate); a newer or foreign index raises RunStoreError. Reads only."""
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > INDEX_SCHEMA:
            raise RunStoreError(
                f"The run index {self.index_path} was written by a newer kmviz (schema "
                f"{version}; this version reads up to {INDEX_SCHEMA}). Upgrade kmviz."
            )
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()]
        if not tables and version == 0:
            return "new"
        columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)").fetchall()]
        if "runs" not in tables:
            reason = f"it holds the tables {', '.join(map(repr, tables[:5]))} but no 'runs'" \
                if tables else f"it has no tables but schema version {version}"
        elif missing := [c for c in _V1_COLUMNS if c not in columns]:
            reason = f"its 'runs' table lacks the column(s) {', '.join(missing)}"
        elif version == INDEX_SCHEMA and all(c in columns for c in _V3_COLUMNS):
            return "current"
        elif version in (1, 2):
            return "old"
        else:
            reason = f"its schema version is {version}, which no kmviz wrote"
        raise RunStoreError(
            f"{self.index_path} is not a kmviz run index: {reason}. kmviz left it unchanged. "
            "Fix: point kmviz at another run directory (--dir DIR or KMVIZ_RUNS_DIR), or move "
            "this file away if it is not needed.")

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        """Check the index; create it in an empty file, or migrate kmviz 0.1.0's schema.

        A current index is only read. A newer or foreign file is refused before anything is
        written to it. Creating and migrating happen under the write lock, after checking
        again (another process may have done it meanwhile).
        """
        state = self._index_state(conn)
        if state == "current":
            return
        if state == "new":
            # WAL lets readers proceed while one process writes; the mode is kept in the file.
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            state = self._index_state(conn)
            if state == "new":
                conn.execute(_SCHEMA)
                conn.execute(f"PRAGMA user_version = {INDEX_SCHEMA}")
            elif state == "old":  # 1 -> 2 adds the note column, 2 -> 3 sweep and tags
                columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)").fetchall()}
                for name, decl in _ADDED_COLUMNS.items():
                    if name not in columns:
                        conn.execute(f"ALTER TABLE runs ADD COLUMN {decl}")
                conn.execute(f"PRAGMA user_version = {INDEX_SCHEMA}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _insert_row(self, conn: sqlite3.Connection, meta: dict) -> None:
        """Insert the index row of a run whose folder is already in place."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "INSERT INTO runs (run_id, family, label, dataset, fingerprint, created, "
                "duration_s, n_iter, status, params, metrics, format, note, sweep, tags) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (meta["run_id"], meta["family"], meta["label"], meta["dataset"].get("name"),
                 meta["dataset"].get("fingerprint"), meta["created"], meta["duration_s"],
                 meta["n_iter"], meta["status"], _to_json("params", meta["params"]),
                 _to_json("metrics", meta["metrics"]), meta["format"],
                 str(meta.get("note") or ""), sweep_id(meta),
                 _to_json("tags", list(meta.get("tags") or []))),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # -------------------------------------------------------------------- maintenance
    def _sweep(self) -> None:
        """Remove leftovers of interrupted saves/deletes and rows whose folder is gone.

        A temporary folder is removed when the process that wrote it has ended (or, when
        that cannot be told, after a day), so concurrent saves are never disturbed. A row
        without a folder is safe to drop because a save renames the folder into place
        before it inserts the row.
        """
        if not self.runs_dir.is_dir():
            return
        now = time.time()
        for entry in self.runs_dir.iterdir():
            name = entry.name
            if not (name.startswith(_TMP_PREFIX) or name.startswith(_TRASH_PREFIX)):
                continue
            pid_text = name.rsplit("-", 1)[-1]
            pid = int(pid_text) if pid_text.isdigit() else -1
            try:
                age = now - entry.lstat().st_mtime  # a link's own age, never its target's
            except OSError:
                continue
            if name.startswith(_TRASH_PREFIX) or not _pid_alive(pid) or age > _STALE_AFTER_S:
                _remove_tree(entry)
        conn = self._connect()
        try:
            ids = [r[0] for r in conn.execute("SELECT run_id FROM runs").fetchall()]
            dangling = [i for i in ids if not (self.runs_dir / i).is_dir()]
            if dangling:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("DELETE FROM runs WHERE run_id = ? ", [(i,) for i in dangling])
                conn.execute("COMMIT")
        finally:
            conn.close()

    def _sweep_meta_tmp(self) -> list:
        """Remove the ``meta.json.tmp-<pid>`` files that killed renames left in run folders
        (their writer has ended, or they are a day old); returns their paths."""
        if not self.runs_dir.is_dir():
            return []
        now, removed = time.time(), []
        for folder in self.runs_dir.iterdir():
            if folder.name.startswith(".") or not folder.is_dir() or folder.is_symlink():
                continue
            for entry in folder.glob(f"meta.json{_TMP_PREFIX}*"):
                pid_text = entry.name.rsplit("-", 1)[-1]
                pid = int(pid_text) if pid_text.isdigit() else -1
                try:
                    age = now - entry.lstat().st_mtime
                    if not _pid_alive(pid) or age > _STALE_AFTER_S:
                        entry.unlink()
                        removed.append(entry)
                except OSError:
                    continue
        return removed

    def _reindex(self, grace_s: float) -> tuple[list, list]:
        """Insert index rows for complete run folders older than ``grace_s`` seconds that
        have none; returns (re-indexed run ids, unreadable folder names)."""
        if not self.runs_dir.is_dir():
            return [], []
        indexed = set(self.ids())
        now = time.time()
        reindexed, unreadable = [], []
        for entry in sorted(self.runs_dir.iterdir()):
            name = entry.name
            if name.startswith(".") or name in indexed or not _RUN_ID.match(name):
                continue
            try:
                if not entry.is_dir() or now - entry.stat().st_mtime < grace_s:
                    continue
            except OSError:
                continue
            try:
                meta = _read_meta(entry, name)
                if meta.get("run_id") != name:
                    raise RunStoreError("run_id in meta.json does not match the folder")
                _to_json("params", meta["params"])
                _to_json("metrics", meta["metrics"])
            except (RunStoreError, ValueError):
                unreadable.append(name)
                continue
            conn = self._connect()
            try:
                self._insert_row(conn, meta)
                reindexed.append(name)
            except sqlite3.IntegrityError:
                pass  # indexed meanwhile by its own (slow) writer
            finally:
                conn.close()
        return reindexed, unreadable
