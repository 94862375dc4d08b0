"""The run store: saved fits that can be listed, reloaded, compared and exported.

A store is a directory::

    <root>/index.sqlite          one row per run (SQLite in WAL mode)
    <root>/runs/<run_id>/        arrays.npz, trace.json, meta.json

The root is, in order of precedence, the ``path`` given to :class:`RunStore`, the
environment variable ``KMVIZ_RUNS_DIR``, or ``<user data dir>/kmviz/runs`` (from
``platformdirs``).

Saving is atomic: the run folder is written under a temporary name, flushed to disk and
renamed into place, and only then is its index row inserted in a transaction. A crash at
any point leaves either nothing visible or a complete run; never an index row without its
folder. Several processes may save at once: SQLite's WAL journal and a busy timeout
serialize the index writes. Nothing is ever pickled: arrays go through ``np.savez`` and are
read back with ``allow_pickle=False``; everything else is JSON.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import secrets
import shutil
import sqlite3
import time
import zipfile
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from ._params import json_safe
from .data.splits import has_split_arrays, split_arrays, split_from_arrays
from .exceptions import RunStoreBusyError, RunStoreError
from .families import family_of
from .families import get as get_family
from .trace import Trace, json_default

__all__ = ["RUN_FORMAT", "OpenedRun", "Run", "RunStore", "default_runs_dir", "load_model_file",
           "open_run", "run_metrics", "save_model_file", "save_run"]

#: Version of the on-disk layout of one run (meta.json "format"). Bump it when the layout
#: changes, and teach :func:`_migrate_meta` to read the older one.
#: 1: kmviz 0.1.0 (the CLI and the app wrote different params and metric names).
#: 2: one format for every writer: estimator params only, the split under "split", metrics
#:    named ``{part}_{metric}``, a note, provenance.
RUN_FORMAT = 2
#: Version of the SQLite index schema (``PRAGMA user_version``); 2 adds the note column.
INDEX_SCHEMA = 2

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_ARRAY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# np.savez takes these as its own keyword arguments, so they cannot name arrays.
_RESERVED_ARRAY_NAMES = {"file", "allow_pickle"}
_TMP_PREFIX = ".tmp-"
_TRASH_PREFIX = ".del-"
# A temporary folder whose writer cannot be checked (another host, reused pid) is only
# removed once it is this old, so a slow save in progress is never swept away.
_STALE_AFTER_S = 24 * 3600.0
_BUSY_TIMEOUT_MS = 30_000
# list() re-indexes a complete run folder without an index row once it is this old (a save
# renames its folder into place, then inserts the row within the busy timeout).
_REINDEX_GRACE_S = 4 * _BUSY_TIMEOUT_MS / 1000
# SQLITE_BUSY, SQLITE_LOCKED: another connection holds the lock.
_BUSY_CODES = (5, 6)
# Largest meta.json / trace.json read (parsing JSON takes several times its size).
_MAX_JSON_BYTES = 256 * 1024 * 1024
#: Environment variable and default of the most bytes a run's arrays may take when loaded
#: (checked from the .npy headers before anything is read).
MAX_RUN_MB_ENV = "KMVIZ_MAX_RUN_MB"
DEFAULT_MAX_RUN_MB = 1024
# The columns of the index's runs table: kmviz 0.1.0 (schema 1), and now (schema 2).
_V1_COLUMNS = ("run_id", "family", "label", "dataset", "fingerprint", "created", "duration_s",
               "n_iter", "status", "params", "metrics", "format")
_V2_COLUMNS = _V1_COLUMNS + ("note",)
# What to do about a run whose files are damaged.
_DAMAGED_FIX = ("Fix: delete the run (kmviz runs delete ID, or the Runs page) or restore its "
                "folder from an export or a backup.")
_CORE_COLUMNS = ["run_id", "created", "family", "label", "dataset", "fingerprint", "status",
                 "duration_s", "n_iter", "note"]

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
    note        TEXT NOT NULL DEFAULT ''
)
"""


def default_runs_dir() -> Path:
    """The store used when no path is given: ``$KMVIZ_RUNS_DIR`` or the user data dir."""
    env = os.environ.get("KMVIZ_RUNS_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("kmviz")) / "runs"


@dataclass
class Run:
    """One saved run.

    Attributes
    ----------
    meta : dict
        Everything but the arrays and the trace: ``run_id``, ``family``, ``label``,
        ``dataset`` (a dict with ``name``, ``fingerprint`` and sizes), ``params``,
        ``metrics``, ``created`` (ISO 8601, UTC), ``duration_s``, ``status``, ``format``.
    trace : Trace
        The fit's telemetry.
    arrays : dict of str to ndarray
        The fitted arrays, for the Kolmogorov model ``theta`` and ``psi``.
    """

    meta: dict
    trace: Trace
    arrays: dict

    @property
    def run_id(self) -> str:
        return self.meta["run_id"]

    @property
    def family(self) -> str:
        return self.meta["family"]

    @property
    def label(self) -> str:
        return self.meta["label"]

    @property
    def params(self) -> dict:
        return self.meta["params"]

    @property
    def metrics(self) -> dict:
        return self.meta["metrics"]

    @property
    def dataset(self) -> dict:
        return self.meta["dataset"]


# ------------------------------------------------------------------------------ helpers
def _to_json(what: str, value) -> str:
    try:
        return json.dumps(value, default=json_default, allow_nan=True, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be JSON-serializable: {exc}.") from None


def _fsync_dir(path: Path) -> None:
    """Make a rename or file creation in ``path`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # Windows cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_bytes_synced(path: Path, data: bytes) -> None:
    # 0600: runs hold the training data, readable by the store's owner only
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0),
                 0o600)
    with open(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


#: Modes of the store's directories and files: its owner only (runs hold the training data).
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def _make_private(path: Path, mode: int) -> None:
    """Give an existing file or directory of the store ``mode`` if it is more open than that
    (a store made by an older kmviz heals; a path owned by someone else is left alone)."""
    try:
        if os.stat(path).st_mode & 0o777 & ~mode:
            os.chmod(path, mode)
    except (FileNotFoundError, PermissionError):
        pass


def _private_dirs(*dirs: Path) -> None:
    for d in dirs:
        d.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        _make_private(d, PRIVATE_DIR_MODE)


def _owner_check(run_id: str, meta: dict, owner, action: str) -> None:
    """Refuse ``action`` on a run whose recorded owner is not ``owner`` (None: no check)."""
    if owner is not None and meta.get("owner") != owner:
        raise RunStoreError(
            f"Run {run_id!r} belongs to someone else, so it cannot be {action} here: a "
            "session may rename, note or delete only the runs it made. Its settings and "
            "curves stay visible; the operator can share every run with `kmviz app "
            "--shared-runs` (KMVIZ_SHARED_RUNS=1).")


def _family_of(model) -> str:
    """``"km"`` from the string "km" or from an estimator defined in ``kmviz.km``."""
    if isinstance(model, str):
        family = model
    else:
        parts = type(model).__module__.split(".")
        family = parts[1] if len(parts) > 1 and parts[0] == "kmviz" else type(model).__name__
    if not family or not _RUN_ID.match(family):
        raise ValueError(f"model family must be a short name such as 'km'; got {family!r}.")
    return family


def _dataset_meta(dataset) -> dict:
    """Name, fingerprint and sizes of a Ratings; or just a name for a string."""
    if isinstance(dataset, str):
        return {"name": dataset, "fingerprint": None}
    if isinstance(dataset, dict):
        if "name" not in dataset:
            raise ValueError("dataset given as a dict needs a 'name' key.")
        return {"fingerprint": None, **dataset}
    if hasattr(dataset, "fingerprint") and hasattr(dataset, "name"):
        meta = {"name": str(dataset.name), "fingerprint": dataset.fingerprint()}
        for key in ("source", "n_users", "n_items", "n_ratings", "r_min", "r_max", "implicit"):
            if hasattr(dataset, key):
                value = getattr(dataset, key)
                meta[key] = value.item() if isinstance(value, np.generic) else value
        return meta
    raise ValueError(
        f"dataset must be a Ratings, a name or a dict with 'name'; got {type(dataset).__name__}."
    )


def _check_arrays(arrays) -> dict:
    if not isinstance(arrays, dict):
        raise ValueError(f"arrays must be a dict of name -> ndarray; got {type(arrays).__name__}.")
    out = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not _ARRAY_NAME.match(name) or (
                name in _RESERVED_ARRAY_NAMES):
            raise ValueError(
                f"array name {name!r} is not allowed; use letters, digits and '_' "
                "(and not 'file' or 'allow_pickle')."
            )
        a = np.asarray(value)
        # Object arrays can only be stored by pickling them, which the store never does.
        if a.dtype.hasobject:
            raise ValueError(
                f"array {name!r} has dtype object; only numeric, boolean and fixed-width "
                "string arrays can be saved."
            )
        out[name] = a
    return out


def _flatten(prefix: str, value, out: dict) -> None:
    """Scalars of a (nested) dict as ``a.b`` columns; lists and arrays are skipped."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif value is None or isinstance(value, (bool, int, float, str)):
        out[prefix] = value


def _now_utc() -> datetime:
    return datetime.now(timezone.utc)


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


# ------------------------------------------------------------------------------ the store
class RunStore:
    """A directory of saved runs with a SQLite index.

    Parameters
    ----------
    path : str or Path, optional
        The store's root directory, created on first use. Default: ``$KMVIZ_RUNS_DIR`` or
        the per-user data directory (see :func:`default_runs_dir`).

    Examples
    --------
    >>> store = RunStore(tmp_path)                                        # doctest: +SKIP
    >>> run_id = store.save("km", model.trace_, {"theta": model.theta_, "psi": model.psi_},
    ...                     dataset=train, params=model.get_params(),
    ...                     metrics={"val_nrmse": 0.19})                  # doctest: +SKIP
    >>> store.list()[["run_id", "label", "val_nrmse"]]                    # doctest: +SKIP
    >>> run = store.load(run_id); run.arrays["theta"].shape               # doctest: +SKIP
    """

    def __init__(self, path=None):
        self.path = Path(path).expanduser() if path is not None else default_runs_dir()
        self.runs_dir = self.path / "runs"
        self.index_path = self.path / "index.sqlite"
        self._ready = False

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r})"

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
        """``"new"`` (an empty file), ``"current"`` or ``"v1"`` (kmviz 0.1.0's schema, to
        migrate); a newer or foreign index raises RunStoreError. Reads only."""
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
        elif version == INDEX_SCHEMA and "note" in columns:
            return "current"
        elif version == 1:
            return "v1"
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
            elif state == "v1":  # kmviz 0.1.0: schema 1 -> 2 adds the note column
                columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)").fetchall()}
                if "note" not in columns:
                    conn.execute("ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT ''")
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
                "duration_s, n_iter, status, params, metrics, format, note) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (meta["run_id"], meta["family"], meta["label"], meta["dataset"].get("name"),
                 meta["dataset"].get("fingerprint"), meta["created"], meta["duration_s"],
                 meta["n_iter"], meta["status"], _to_json("params", meta["params"]),
                 _to_json("metrics", meta["metrics"]), meta["format"],
                 str(meta.get("note") or "")),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # -------------------------------------------------------------------- save
    def _new_run_id(self, created: datetime) -> str:
        for _ in range(100):
            run_id = f"{created:%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"
            if not (self.runs_dir / run_id).exists():
                return run_id
        raise RunStoreError(f"Could not find a free run id in {self.runs_dir}.")

    def save(self, model, trace: Trace, arrays: dict, *, dataset, params: dict,
             metrics: dict, label: str | None = None, status: str | None = None,
             duration_s: float | None = None, note: str = "", split: dict | None = None,
             provenance: dict | None = None, owner: str | None = None) -> str:
        """Save a fitted model's arrays, trace and settings as a new run.

        Parameters
        ----------
        model : str or estimator
            The model family (``"km"``), or an estimator from ``kmviz.<family>``.
        trace : Trace
            The fit's telemetry (``model.trace_``).
        arrays : dict of str to ndarray
            Fitted arrays, e.g. ``{"theta": model.theta_, "psi": model.psi_}``. Names are
            identifiers; object arrays are refused (they would need pickle).
        dataset : Ratings, str or dict
            The training data (its name, fingerprint and sizes are kept), or just a name.
        params : dict
            Hyperparameters, JSON-serializable.
        metrics : dict
            Final metrics, for example ``{"train_rmse": ..., "val_nrmse": ...}``.
        label : str, optional
            A display name. Default: ``"<family> on <dataset name>"``.
        status : str, optional
            Default: the trace's ``stop_reason`` (``"max_iter"``, ``"converged"`` ...).
        duration_s : float, optional
            Fit time. Default: the last trace row's ``wall_s``.
        note : str, optional
            Free text shown beside the run (editable later with :meth:`update`).
        split : dict, optional
            How the data was split (:meth:`kmviz.data.Split.describe`).
        provenance : dict, optional
            Who wrote the run and how (``{"writer": "cli", ...}``).
        owner : str, optional
            Who may rename, note and delete the run when :meth:`update` and :meth:`delete`
            are given an ``owner`` (the app: the browser session's token; the CLI:
            ``"cli:<user>"``). Kept as ``meta["owner"]``.

        Returns
        -------
        str
            The new run id, ``YYYYmmdd-HHMMSS-<8 hex digits>`` (UTC time).

        Raises
        ------
        ValueError
            If an argument cannot be stored (bad array name, object array, non-JSON params).
        RunStoreError
            If the store cannot be written.
        """
        family = _family_of(model)
        if not isinstance(trace, Trace):
            raise ValueError(f"trace must be a kmviz Trace; got {type(trace).__name__}.")
        arrays = _check_arrays(arrays)
        ds = _dataset_meta(dataset)
        for what, value in (("params", params), ("metrics", metrics)):
            if not isinstance(value, dict):
                raise ValueError(f"{what} must be a dict; got {type(value).__name__}.")
        # Round-trip through JSON now, so what is saved is exactly what load() returns.
        params = json.loads(_to_json("params", params))
        metrics = json.loads(_to_json("metrics", metrics))
        trace_json = trace.to_json()
        if duration_s is None and trace.rows:
            duration_s = trace.rows[-1].get("wall_s")
        created = _now_utc()

        conn = self._connect()
        try:
            run_id = self._new_run_id(created)
            meta = {
                "format": RUN_FORMAT,
                "kmviz_version": _kmviz_version(),
                "run_id": run_id,
                "family": family,
                "label": str(label) if label else f"{family} on {ds['name']}",
                "note": str(note or ""),
                "owner": None if owner is None else str(owner),
                "dataset": ds,
                "split": json.loads(_to_json("split", split or {})),
                "provenance": json.loads(_to_json("provenance", provenance or {})),
                "params": params,
                "metrics": metrics,
                "created": created.isoformat(timespec="milliseconds"),
                "duration_s": None if duration_s is None else float(duration_s),
                "n_iter": trace.n_iter,
                "status": str(status) if status else trace.stop_reason,
                "arrays": {k: {"shape": list(a.shape), "dtype": a.dtype.str}
                           for k, a in arrays.items()},
            }
            final = self.runs_dir / run_id
            tmp = self.runs_dir / f"{_TMP_PREFIX}{run_id}-{os.getpid()}"
            try:
                self._write_folder(tmp, arrays, trace_json, meta)
                os.replace(tmp, final)
                _fsync_dir(self.runs_dir)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            try:
                self._insert_row(conn, meta)
            except BaseException:
                # The folder is complete but unindexed; remove it so the failed save leaves
                # nothing behind.
                shutil.rmtree(final, ignore_errors=True)
                raise
        except (OSError, sqlite3.Error) as exc:
            raise RunStoreError(f"Could not save the run in {self.path}: {exc}.") from None
        finally:
            conn.close()
        return run_id

    def _write_folder(self, folder: Path, arrays: dict, trace_json: str, meta: dict) -> None:
        """Write and fsync the three files of a run into a new folder (0700, files 0600)."""
        folder.mkdir(mode=PRIVATE_DIR_MODE)
        _make_private(folder, PRIVATE_DIR_MODE)
        buf = io.BytesIO()
        # Object arrays were refused in _check_arrays, so nothing here can be pickled.
        np.savez(buf, **arrays)
        _write_bytes_synced(folder / "arrays.npz", buf.getvalue())
        _write_bytes_synced(folder / "trace.json", trace_json.encode("utf-8"))
        _write_bytes_synced(folder / "meta.json", _to_json("meta", meta).encode("utf-8"))
        _fsync_dir(folder)

    # -------------------------------------------------------------------- read
    def list(self) -> pd.DataFrame:
        """All runs, newest first, one row each.

        Columns: ``run_id``, ``created`` (UTC timestamp), ``family``, ``label``,
        ``dataset``, ``fingerprint``, ``status``, ``duration_s``, ``n_iter``; then every
        final metric under its own name (``val_nrmse`` ...), then every scalar parameter
        under its own name (``D``, ``gamma`` ...; nested ones as ``outer.inner``). A
        parameter whose name is already taken by a column is prefixed ``param_``.

        Before listing, the store heals: leftovers of interrupted saves and deletes are
        cleaned up, and complete run folders without an index row (a writer killed between
        the two) are indexed again once they are a few minutes old (see :meth:`repair`).
        When another process holds the index's lock, healing waits for the next listing.
        """
        try:
            self._sweep()
            self._reindex(_REINDEX_GRACE_S)
        except RunStoreBusyError:
            pass  # the listing below still works, or says "busy, try again"
        conn = self._connect()
        try:
            rows = conn.execute(
                "SELECT run_id, created, family, label, dataset, fingerprint, status, "
                "duration_s, n_iter, note, params, metrics, format FROM runs "
                "ORDER BY created DESC, run_id DESC"
            ).fetchall()
        finally:
            conn.close()
        records = []
        for row in rows:
            rec = dict(zip(_CORE_COLUMNS, row[:10]))
            params, metrics = _loads_or_empty(row[10]), _loads_or_empty(row[11])
            if row[12] == 1:
                params, _ = _split_out_of_params(params)
                metrics = _migrate_metrics(metrics)
            metric_cols, param_cols = {}, {}
            _flatten("", metrics, metric_cols)
            _flatten("", params, param_cols)
            for k, v in metric_cols.items():
                rec[k if k not in rec else f"metric_{k}"] = v
            for k, v in param_cols.items():
                rec[k if k not in rec else f"param_{k}"] = v
            records.append(rec)
        df = pd.DataFrame.from_records(records)
        if df.empty:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in _CORE_COLUMNS})
        df["created"] = pd.to_datetime(df["created"], utc=True, format="ISO8601")
        return df.reset_index(drop=True)

    def ids(self) -> list[str]:
        """Run ids in the index, newest first."""
        conn = self._connect()
        try:
            rows = conn.execute(
                "SELECT run_id FROM runs ORDER BY created DESC, run_id DESC").fetchall()
        finally:
            conn.close()
        return [r[0] for r in rows]

    def __contains__(self, run_id) -> bool:
        return isinstance(run_id, str) and run_id in self.ids()

    def __len__(self) -> int:
        return len(self.ids())

    def _folder(self, run_id) -> Path:
        """The folder of an indexed run, or RunStoreError naming the id."""
        if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
            raise RunStoreError(
                f"{run_id!r} is not a run id (ids look like 20260101-120000-1a2b3c4d). "
                f"List the runs with `kmviz runs list --dir {self.path}` or RunStore.list()."
            )
        conn = self._connect()
        try:
            found = conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        finally:
            conn.close()
        folder = self.runs_dir / run_id
        if found is None or not folder.is_dir():
            raise RunStoreError(
                f"No run {run_id!r} in the store at {self.path}. List the runs with "
                f"`kmviz runs list --dir {self.path}` or RunStore.list()."
            )
        return folder

    def load_meta(self, run_id: str) -> dict:
        """The run's meta.json, checked for a readable format."""
        folder = self._folder(run_id)
        return _read_meta(folder, run_id)

    def load(self, run_id: str) -> Run:
        """Load a run's meta, trace and arrays.

        Every file is checked before it is trusted: the JSON files for their size, UTF-8
        and the types of their fields, ``arrays.npz`` member by member from the .npy
        headers (no pickled objects, declared sizes equal to the stored ones, at most
        :func:`max_run_bytes` in all) before any array is allocated.

        Raises
        ------
        RunStoreError
            If there is no such run, its files are incomplete or corrupt, or it was written
            in a format this version cannot read (the message names the run, says which and
            what to do).
        """
        folder = self._folder(run_id)
        meta = _read_meta(folder, run_id)
        raw = _read_json_bytes(folder / "trace.json", run_id)
        try:
            trace = Trace.from_json(raw)
        except RunStoreError as exc:
            raise RunStoreError(f"Run {run_id!r}: trace.json: {exc} "
                                f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
        del raw
        arrays = _read_npz(folder / "arrays.npz", run_id)
        missing = sorted(set(meta.get("arrays") or {}) - set(arrays))
        if missing:
            raise RunStoreError(
                f"Run {run_id!r} is incomplete: arrays.npz lacks {', '.join(missing)}.")
        return Run(meta=meta, trace=trace, arrays=arrays)

    # -------------------------------------------------------------------- edit
    def update(self, run_id: str, *, label: str | None = None, note: str | None = None,
               owner: str | None = None) -> dict:
        """Rename a run or change its note; returns the new meta.

        meta.json is replaced atomically (temporary file, then rename), then the index row.
        A label must not be empty; both are plain text (at most 200 and 5,000 characters).
        With ``owner``, a run whose ``meta["owner"]`` differs is refused (RunStoreError);
        None (the CLI, Python) does not check.
        """
        folder = self._folder(run_id)
        meta = _read_meta(folder, run_id)
        _owner_check(run_id, meta, owner, "renamed or noted")
        if label is not None:
            label = " ".join(str(label).split())
            if not label:
                raise ValueError("A run's name cannot be empty; type a name or keep the old one.")
            if len(label) > 200:
                raise ValueError(f"A run's name is at most 200 characters; got {len(label)}.")
            meta["label"] = label
        if note is not None:
            note = str(note)
            if len(note) > 5000:
                raise ValueError(f"A run's note is at most 5,000 characters; got {len(note)}.")
            meta["note"] = note
        tmp = folder / f"meta.json{_TMP_PREFIX}{os.getpid()}"
        try:
            _write_bytes_synced(tmp, _to_json("meta", meta).encode("utf-8"))
            os.replace(tmp, folder / "meta.json")
            _fsync_dir(folder)
        except OSError as exc:
            raise RunStoreError(f"Could not update run {run_id!r}: {exc}.") from None
        finally:
            if tmp.exists():
                tmp.unlink()
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE runs SET label = ?, note = ? WHERE run_id = ?",
                         (meta["label"], meta.get("note") or "", run_id))
            conn.execute("COMMIT")
        finally:
            conn.close()
        return meta

    # -------------------------------------------------------------------- delete
    def delete(self, run_id: str, *, owner: str | None = None) -> None:
        """Remove a run: its folder and its index row.

        The folder is first renamed to a hidden name (the run disappears at once), then the
        row is deleted, then the files. An interruption leaves at most a hidden folder and a
        row without a folder, both cleaned up by the next :meth:`list`. With ``owner``, a
        run whose ``meta["owner"]`` differs is refused (RunStoreError); None does not check.
        """
        folder = self._folder(run_id)
        if owner is not None:
            _owner_check(run_id, _read_meta(folder, run_id), owner, "deleted")
        trash = self.runs_dir / f"{_TRASH_PREFIX}{run_id}-{os.getpid()}"
        try:
            os.replace(folder, trash)
        except OSError as exc:
            raise RunStoreError(f"Could not delete run {run_id!r}: {exc}.") from None
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
            conn.execute("COMMIT")
        finally:
            conn.close()
        shutil.rmtree(trash, ignore_errors=True)

    # -------------------------------------------------------------------- export
    def _export_members(self, run_id: str) -> dict:
        """File name -> bytes of an export: trace CSV and JSON, arrays NPZ, meta JSON."""
        run = self.load(run_id)  # validates the run before anything is written
        folder = self.runs_dir / run_id
        trace_csv = run.trace.to_frame().to_csv(index=False)
        members = {
            "meta.json": json.dumps(run.meta, indent=2, default=json_default).encode("utf-8"),
            "trace.json": (folder / "trace.json").read_bytes(),
            "trace.csv": trace_csv.encode("utf-8"),
            "arrays.npz": (folder / "arrays.npz").read_bytes(),
        }
        if run.trace.events:
            members["events.csv"] = pd.DataFrame.from_records(
                run.trace.events).to_csv(index=False).encode("utf-8")
        return members

    def export(self, run_id: str, dest, *, overwrite: bool = False) -> Path:
        """Write a run's files for use outside kmviz.

        Parameters
        ----------
        run_id : str
        dest : str or Path
            A path ending in ``.zip`` gets a zip archive holding a folder ``<run_id>/``;
            anything else is a directory, in which a folder ``<run_id>/`` is created.
            Either way the files are ``meta.json``, ``trace.json``, ``trace.csv`` (one row
            per iteration), ``arrays.npz`` and, if the trace has events, ``events.csv``.
        overwrite : bool, default=False
            Replace an existing zip or export folder instead of failing.

        Returns
        -------
        Path
            The zip file or the created folder.
        """
        dest = Path(dest).expanduser()
        members = self._export_members(run_id)
        if dest.suffix.lower() == ".zip":
            if dest.exists() and not overwrite:
                raise RunStoreError(f"{dest} already exists; choose another name or overwrite.")
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".part")
            tmp.write_bytes(_zip(run_id, members))
            os.replace(tmp, dest)
            return dest
        out = dest / run_id
        if out.exists():
            if not overwrite:
                raise RunStoreError(f"{out} already exists; choose another directory or overwrite.")
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for name, data in members.items():
            (out / name).write_bytes(data)
        return out

    def export_bytes(self, run_id: str) -> bytes:
        """The zip archive of :meth:`export` as bytes (for a download button)."""
        return _zip(run_id, self._export_members(run_id))

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
                age = now - entry.stat().st_mtime
            except OSError:
                continue
            if name.startswith(_TRASH_PREFIX) or not _pid_alive(pid) or age > _STALE_AFTER_S:
                shutil.rmtree(entry, ignore_errors=True)
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

    def repair(self, *, grace_s: float = 60.0) -> dict:
        """Clean up after crashes and re-index complete runs that lost their index row.

        A process killed after renaming its run folder into place but before inserting the
        index row leaves a complete, invisible run. This re-inserts rows for such folders
        once they are older than ``grace_s`` seconds (younger ones may belong to a save in
        progress in another process).

        Returns
        -------
        dict
            ``{"reindexed": [...run ids], "unreadable": [...folder names]}``.
        """
        self._sweep()
        reindexed, unreadable = self._reindex(grace_s)
        return {"reindexed": reindexed, "unreadable": unreadable}

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


def _zip(run_id: str, members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(f"{run_id}/{name}", data)
    return buf.getvalue()


def _loads_or_empty(text) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _read_json_bytes(path: Path, run_id: str) -> bytes:
    """The bytes of a run's JSON file, refusing a missing or implausibly large one."""
    try:
        size = path.stat().st_size
        if size > _MAX_JSON_BYTES:
            raise RunStoreError(
                f"Run {run_id!r}: {path.name} is {size / 2**20:.0f} MB, more than the "
                f"{_MAX_JSON_BYTES // 2**20} MB a run's {path.name} can take; not reading it. "
                f"{_DAMAGED_FIX.replace('ID', run_id)}")
        return path.read_bytes()
    except FileNotFoundError:
        raise RunStoreError(f"Run {run_id!r} is incomplete: {path.name} is missing. "
                            f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
    except IsADirectoryError:
        raise RunStoreError(f"Run {run_id!r}: {path.name} is a folder, not a file. "
                            f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
    except OSError as exc:
        raise RunStoreError(f"Run {run_id!r}: {path.name} cannot be read "
                            f"({exc.strerror or exc}).") from None


def max_run_bytes() -> int:
    """The most bytes a run's arrays may take when loaded: ``$KMVIZ_MAX_RUN_MB`` megabytes,
    default 1024. Checked from the arrays' headers before anything is read."""
    env = os.environ.get(MAX_RUN_MB_ENV, "").strip()
    if not env:
        return DEFAULT_MAX_RUN_MB * 1024 * 1024
    try:
        mb = float(env)
    except ValueError:
        mb = float("nan")
    if not (mb > 0 and math.isfinite(mb)):
        raise RunStoreError(f"The environment variable {MAX_RUN_MB_ENV} must be a positive "
                            f"number of megabytes; got {env!r}.")
    return int(mb * 1024 * 1024)


def _read_npz(path, run_id: str, limit: int | None = None, *, owner: str | None = None,
              fix: str | None = None) -> dict:
    """The arrays of a run's ``arrays.npz``, every member checked before it is read.

    Each member's .npy header gives its shape and dtype: object dtypes (pickle) are refused,
    the data size the header implies must equal the member's size in the archive, and the
    total must stay under :func:`max_run_bytes`. Only then is anything allocated, and each
    member is read through the zip's own size and CRC checks. ``path`` may be a file
    object (a model file's member); ``owner`` and ``fix`` word the errors for it.
    """
    limit = max_run_bytes() if limit is None else limit
    fix = _DAMAGED_FIX.replace("ID", run_id) if fix is None else fix
    owner = f"Run {run_id!r}" if owner is None else owner

    def bad(problem: str) -> RunStoreError:
        return RunStoreError(f"{owner}: arrays.npz {problem}. {fix}")

    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise RunStoreError(f"{owner} is incomplete: arrays.npz is missing. {fix}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise bad(f"cannot be read ({exc})") from None
    arrays = {}
    with archive:
        plan, total = [], 0
        for info in archive.infolist():
            name = info.filename
            if not name.endswith(".npy") or info.is_dir():
                raise bad(f"holds {name!r}, which is not an array (.npy)")
            if info.flag_bits & 0x1:
                raise bad(f"member {name!r} is encrypted")
            try:
                with archive.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                    elif version == (2, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                    else:
                        raise ValueError(f"unsupported .npy format version {version}")
                    offset = f.tell()
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
                    RuntimeError, NotImplementedError, SyntaxError) as exc:
                raise bad(f"member {name!r} has no readable array header ({exc})") from None
            if dtype.hasobject:
                raise bad(f"member {name!r} holds Python objects (dtype {dtype}), which only "
                          "pickle could read; kmviz never unpickles")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes != info.file_size - offset:
                raise bad(f"member {name!r} declares shape {tuple(shape)} of {dtype} "
                          f"({nbytes:,} bytes) but holds {max(0, info.file_size - offset):,} "
                          "bytes of data")
            total += nbytes
            if total > limit:
                raise RunStoreError(
                    f"{owner}: its arrays take more than {limit / 2**20:,.0f} MB "
                    f"(member {name!r}: shape {tuple(shape)} of {dtype}); not loading them. "
                    f"Fix: if the run is genuine, set {MAX_RUN_MB_ENV} to a larger number of "
                    "megabytes; otherwise delete it.")
            plan.append((info, name[:-4]))
        for info, key in plan:
            try:
                with archive.open(info) as f:
                    arrays[key] = np.lib.format.read_array(f, allow_pickle=False)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
                    RuntimeError, NotImplementedError) as exc:
                raise bad(f"member {info.filename!r} cannot be read ({exc})") from None
    return arrays


def _read_meta(folder: Path, run_id: str) -> dict:
    """Read meta.json and check that this version understands its format and types."""
    raw = _read_json_bytes(folder / "meta.json", run_id)
    try:
        meta = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise RunStoreError(f"Run {run_id!r}: meta.json is malformed (nested too deeply). "
                            f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunStoreError(f"Run {run_id!r}: meta.json is malformed ({exc}). "
                            f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
    if not isinstance(meta, dict):
        raise RunStoreError(f"Run {run_id!r}: meta.json does not hold a JSON object.")
    _check_meta_types(meta, run_id)
    fmt = meta.get("format")
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        raise RunStoreError(
            f"Run {run_id!r}: meta.json has no valid 'format' version ({fmt!r}); it was not "
            "written by kmviz's run store."
        )
    if fmt > RUN_FORMAT:
        raise RunStoreError(
            f"Run {run_id!r} was saved by a newer kmviz (run format {fmt}; this version reads "
            f"formats 1 to {RUN_FORMAT}). Upgrade kmviz to load it."
        )
    if fmt < 1:
        raise RunStoreError(f"Run {run_id!r} has an unknown run format {fmt}.")
    if fmt == 1:
        meta = _migrate_meta(meta)
    missing = [k for k in ("run_id", "family", "label", "dataset", "params", "metrics",
                           "created", "status") if k not in meta]
    if missing:
        raise RunStoreError(f"Run {run_id!r}: meta.json lacks {', '.join(missing)}.")
    meta.setdefault("duration_s", None)
    meta.setdefault("n_iter", None)
    meta.setdefault("note", "")
    meta.setdefault("split", {})
    meta.setdefault("provenance", {})
    if isinstance(meta.get("duration_s"), float) and math.isnan(meta["duration_s"]):
        meta["duration_s"] = None
    _check_meta_types(meta, run_id)
    return meta


_META_OBJECTS = ("params", "metrics", "dataset", "split", "provenance", "arrays")
_META_TEXTS = ("run_id", "family", "label", "created", "status", "note")


def _check_meta_types(meta: dict, run_id: str) -> None:
    """Refuse a meta.json whose fields have the wrong JSON types (which would otherwise
    surface as TypeError or AttributeError wherever the run is shown)."""
    def wrong(key, want):
        value = meta[key]
        kind = "null" if value is None else type(value).__name__
        return RunStoreError(f"Run {run_id!r}: meta.json's {key!r} is a {kind}; expected "
                             f"{want}. {_DAMAGED_FIX.replace('ID', run_id)}")

    for key in _META_OBJECTS:
        if key in meta and meta[key] is not None and not isinstance(meta[key], dict):
            raise wrong(key, "a JSON object")
    for key in _META_TEXTS:
        if key in meta and not isinstance(meta[key], str):
            raise wrong(key, "a string")
    for key in ("duration_s", "n_iter"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise wrong(key, "a number or null")
    dataset = meta.get("dataset")
    if isinstance(dataset, dict):
        for key in ("n_users", "n_items", "n_ratings"):
            value = dataset.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise RunStoreError(
                    f"Run {run_id!r}: meta.json's dataset {key!r} is {value!r}; expected a "
                    f"whole number. {_DAMAGED_FIX.replace('ID', run_id)}")


def _kmviz_version() -> str:
    from . import __version__

    return __version__


# ------------------------------------------------------------------------------ migration
#: Metric names of kmviz 0.1.0 -> ``{part}_{metric}``. The CLI wrote ``val_nrmse``,
#: ``train_rmse`` (the probability-scale RMSE on the training ratings, i.e. KM's training
#: NRMSE) and ``objective``; the app wrote ``final_train_rmse`` and ``final_objective``.
_V1_METRICS = {
    "val_nrmse": "validation_nrmse",
    "val_rmse_ratings": "validation_rmse",
    "val_nrmse_ratings": "validation_nrmse_ratings",
    "final_train_rmse": "train_nrmse",
    "train_rmse": "train_nrmse",
    "final_objective": "objective",
}


def _migrate_metrics(metrics: dict) -> dict:
    out = {}
    for k, v in metrics.items():
        new = _V1_METRICS.get(k, k)
        if new not in metrics or new == k:
            out.setdefault(new, v)
    return out


def _split_out_of_params(params: dict) -> tuple[dict, dict]:
    """0.1.0 runs mixed bookkeeping into params: ``family``, ``fingerprint`` and ``split``
    (the app: counts and settings; the CLI: test_size and seed of a two-way split)."""
    params = dict(params)
    params.pop("family", None)
    params.pop("fingerprint", None)
    split = params.pop("split", None) or {}
    if "val_size" not in split and "test_size" in split:  # the CLI's train/validation split
        split = {"val_size": float(split["test_size"]), "test_size": 0.0, "by": "random",
                 "seed": int(split.get("seed", 0))}
    return params, split


def _migrate_meta(meta: dict) -> dict:
    """A format-1 meta.json (kmviz 0.1.0) in the current layout."""
    meta = dict(meta)
    params, split = _split_out_of_params(meta.get("params") or {})
    meta["params"] = params
    meta["split"] = split
    meta["metrics"] = _migrate_metrics(meta.get("metrics") or {})
    meta.setdefault("provenance", {"writer": "kmviz 0.1.0"})
    meta["migrated_from"] = 1
    meta["format"] = RUN_FORMAT
    return meta


# ------------------------------------------------------------------------------ fitted models
def run_metrics(model, split) -> dict:
    """The run's metrics in the one vocabulary ``{part}_{metric}``: the family's
    ``evaluate`` on every part of the split, then ``objective`` (last row) and ``n_iter``."""
    out = {}
    for part, ratings in split.parts().items():
        if ratings.n_ratings == 0:
            continue
        for name, value in model.evaluate(ratings).items():
            out[f"{part}_{name}"] = float(value)
    trace = model.trace_
    if trace.rows and trace.rows[-1].get("objective") is not None:
        out["objective"] = float(trace.rows[-1]["objective"])
    out["n_iter"] = int(trace.n_iter)
    return out


def dataset_meta(ratings, split=None, spec: dict | None = None) -> dict:
    """What a run keeps about its data besides the arrays (JSON): name, source,
    fingerprints, sizes, scale, how it was loaded (``spec``) and the user and item names."""
    def as_text(names):
        return None if names is None else [None if x is None else str(x) for x in names]

    spec = {k: v for k, v in (spec or {}).items() if k != "split"}
    meta = {
        "name": str(ratings.name), "source": str(ratings.source),
        "fingerprint": ratings.fingerprint(),
        "n_users": int(ratings.n_users), "n_items": int(ratings.n_items),
        "n_ratings": int(ratings.n_ratings), "r_min": float(ratings.r_min),
        "r_max": float(ratings.r_max), "implicit": bool(ratings.implicit),
        "spec": json.loads(json.dumps(spec, default=str)),
        "item_names": as_text(getattr(ratings, "item_names", None)),
        "user_names": as_text(getattr(ratings, "user_names", None)),
    }
    if split is not None:
        meta["train_fingerprint"] = split.train.fingerprint()
    return meta


def _provenance(writer: str, extra: dict | None = None) -> dict:
    import platform
    import sys

    return {"writer": writer, "kmviz_version": _kmviz_version(),
            "python": platform.python_version(), "argv": list(sys.argv[1:])
            if writer == "cli" else None, **(extra or {})}


def _model_payload(model, split, dataset, spec):
    """(family name, arrays, dataset meta, split meta) of a fitted model and its data."""
    fam = family_of(model)
    arrays = {k: np.asarray(v) for k, v in model._fitted_arrays().items()}
    bad = [k for k in arrays if k.startswith("data_")]
    if bad:
        raise ValueError(f"{type(model).__name__}._fitted_arrays names {bad[0]!r}; the prefix "
                         "'data_' is reserved for the split.")
    split_meta = {}
    if split is not None:
        arrays.update(split_arrays(split))
        split_meta = split.describe()
    whole = dataset if dataset is not None else (split.train if split is not None else None)
    ds = dataset_meta(whole, split, spec) if whole is not None else {"name": "unknown"}
    return fam, arrays, ds, split_meta


def save_run(model, split, *, dataset=None, spec: dict | None = None, label: str | None = None,
             note: str = "", store: "RunStore | None" = None, writer: str = "python",
             metrics: dict | None = None, duration_s: float | None = None,
             owner: str | None = None) -> str:
    """Save a fitted model with its split as a run; the one call the CLI and the app use.

    Parameters
    ----------
    model : a fitted estimator of a registered family
    split : kmviz.data.Split
        The parts the model was trained and evaluated on (saved as arrays, so every Explore
        view can reopen the run).
    dataset : Ratings, optional
        The whole dataset (name, fingerprint, item names); default: the training part.
    spec : dict, optional
        How the data was loaded (catalogue name and options, upload, path), for re-runs.
    label, note : str
        Display name (default: the family's label from the settings) and free text.
    store : RunStore, optional
        Default: the store at :func:`default_runs_dir`.
    writer : str
        ``"cli"``, ``"app"`` or ``"python"`` (kept as provenance).
    metrics : dict, optional
        Default: :func:`run_metrics` of the model on the split.
    owner : str, optional
        Who may manage the run (see :meth:`RunStore.save`).

    Returns
    -------
    str
        The run id.
    """
    fam, arrays, ds, split_meta = _model_payload(model, split, dataset, spec)
    params = json_safe(model.get_params())
    if metrics is None:
        metrics = run_metrics(model, split) if split is not None else {
            "n_iter": int(model.trace_.n_iter)}
    store = store if store is not None else RunStore()
    return store.save(fam.name, model.trace_, arrays, dataset=ds, params=params,
                      metrics=metrics, label=label or fam.label(params, ds.get("name", "data")),
                      note=note, split=split_meta, provenance=_provenance(writer),
                      duration_s=duration_s, owner=owner)


@dataclass
class OpenedRun:
    """A saved run reopened as a fitted model and its data.

    ``model`` is None and ``problem`` says why when the run cannot give a model (for
    example a kmviz 0.1.0 command-line run, saved without its training data); ``split`` and
    ``dataset`` are None when the run carries no data.
    """

    run: Run
    model: object
    split: object
    dataset: object
    problem: str = ""


def open_run(run_id: str, store: "RunStore | None" = None) -> OpenedRun:
    """Reopen a saved run: the fitted model (its family's estimator) and its split."""
    store = store if store is not None else RunStore()
    run = store.load(run_id)
    return _open(run)


def _open(run) -> OpenedRun:
    split = whole = None
    problem = ""
    if has_split_arrays(run.arrays):
        try:
            whole, split = split_from_arrays(run.arrays, run.dataset, run.meta.get("split"),
                                             what=f"Run {run.run_id}")
        except ValueError as exc:
            problem = str(exc)
    else:
        writer = "kmviz 0.1.0's command line" if run.meta.get("migrated_from") == 1 else \
            "its writer"
        problem = (f"Run {run.label!r} ({run.run_id}) was saved by {writer} without its "
                   "training data, so the views that recompute on the data (one item's "
                   "problem, implications checked against the ratings) cannot be rebuilt; "
                   "its convergence curves and metrics are still shown. Train it again "
                   "(kmviz train ... --save, or the Train page) to get a run that carries "
                   "its split.")
    model = None
    try:
        fam = get_family(run.family)
        cls = fam.estimator_class()
        params = {k: v for k, v in run.params.items() if k in cls._parameter_constraints}
        model = cls._from_fitted_arrays(run.arrays, params, run.trace,
                                        train=None if split is None else split.train)
    except (ValueError, KeyError) as exc:
        if not problem:
            problem = f"Run {run.run_id}: its model cannot be rebuilt ({exc})."
    return OpenedRun(run=run, model=model, split=split, dataset=whole, problem=problem)


# ------------------------------------------------------------------------------ model files
#: Largest model file :func:`load_model_file` reads (its members are checked before reading).
_MODEL_FILE_MAX_BYTES = 2 * 1024 ** 3


def save_model_file(path, model, *, split=None, dataset=None, spec=None) -> Path:
    """One fitted model in one file, in the run format: a zip holding ``meta.json``,
    ``trace.json`` and ``arrays.npz`` (the members of a run folder). Written atomically."""
    fam, arrays, ds, split_meta = _model_payload(model, split, dataset, spec)
    path = Path(path)
    meta = {
        "format": RUN_FORMAT, "kind": "kmviz model", "family": fam.name,
        "run_id": path.stem or "model", "label": fam.label(json_safe(model.get_params()),
                                                          ds.get("name", "data")),
        "note": "", "dataset": ds, "split": split_meta,
        "params": json_safe(model.get_params()),
        "metrics": run_metrics(model, split) if split is not None else {},
        "created": _now_utc().isoformat(timespec="milliseconds"),
        "status": model.trace_.stop_reason, "n_iter": model.trace_.n_iter,
        "duration_s": None, "provenance": _provenance("python"),
        "arrays": {k: {"shape": list(a.shape), "dtype": a.dtype.str}
                   for k, a in arrays.items()},
    }
    buf = io.BytesIO()
    np.savez(buf, **_check_arrays(arrays))
    members = {"meta.json": _to_json("meta", meta).encode("utf-8"),
               "trace.json": model.trace_.to_json().encode("utf-8"),
               "arrays.npz": buf.getvalue()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(out.getvalue())
    os.replace(tmp, path)
    return path


def load_model_file(path):
    """``(model, split)`` from :func:`save_model_file` (split None when none was saved).

    Also reads the single ``.npz`` files of kmviz 0.1.0's ``KolmogorovModel.save``. Nothing
    is unpickled; a file that is neither raises :class:`RunStoreError` saying why.
    """
    path = Path(path)
    if not path.exists():
        raise RunStoreError(f"{path}: no such model file.")
    if not zipfile.is_zipfile(path):
        raise RunStoreError(f"{path}: not a kmviz model file (not a zip archive).")
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if sum(i.file_size for i in zf.infolist()) > _MODEL_FILE_MAX_BYTES:
                raise RunStoreError(f"{path}: the archive unpacks to more than "
                                    f"{_MODEL_FILE_MAX_BYTES // 1024 ** 3} GB; not reading it.")
            if {"meta.json", "trace.json", "arrays.npz"} <= names:
                meta = json.loads(zf.read("meta.json").decode("utf-8"))
                trace = Trace.from_json(zf.read("trace.json").decode("utf-8"))
                arrays = _read_npz(io.BytesIO(zf.read("arrays.npz")), path.stem,
                                   _MODEL_FILE_MAX_BYTES, owner=str(path),
                                   fix="Fix: save the model again (kmviz.runs.save_model_file).")
            else:
                return _load_v1_model_file(path)
    except (zipfile.BadZipFile, OSError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, RunStoreError):
            raise
        raise RunStoreError(f"{path}: not a readable kmviz model file ({exc}).") from None
    fmt = meta.get("format") if isinstance(meta, dict) else None
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 2:
        raise RunStoreError(f"{path}: meta.json has no valid format version ({fmt!r}).")
    if fmt > RUN_FORMAT:
        raise RunStoreError(f"{path}: written by a newer kmviz (format {fmt}; this version "
                            f"reads up to {RUN_FORMAT}). Upgrade kmviz to read it.")
    meta.setdefault("run_id", path.stem)
    for key in ("family", "params", "dataset", "metrics", "status", "created", "label"):
        meta.setdefault(key, {} if key in ("params", "dataset", "metrics") else "")
    opened = _open(Run(meta=meta, trace=trace, arrays=arrays))
    if opened.model is None:
        raise RunStoreError(f"{path}: {opened.problem}")
    return opened.model, opened.split


def _load_v1_model_file(path):
    """kmviz 0.1.0's ``KolmogorovModel.save``: one .npz with params and trace as JSON text."""
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise RunStoreError(f"{path}: not a kmviz model file ({exc}).") from None
    need = {"format", "kind", "params", "theta", "psi", "dual_u", "known_users",
            "known_items", "scale", "probability", "n_iter", "trace"}
    if str(data.get("kind", "")) != "KolmogorovModel" or not need <= set(data):
        raise RunStoreError(f"{path}: not a saved kmviz model (missing "
                            f"{sorted(need - set(data))}).")
    if int(data["format"]) > 1:
        raise RunStoreError(f"{path}: an unknown model file format {int(data['format'])}.")
    cls = get_family("km").estimator_class()
    params = json.loads(str(data["params"]))
    trace = Trace.from_json(str(data["trace"]))
    return cls._from_fitted_arrays(data, params, trace), None
