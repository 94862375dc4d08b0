"""The run store: :class:`RunStore` saves, lists, loads, edits, deletes and exports runs;
:class:`Run` is one run read back."""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import RunStoreBusyError, RunStoreError
from ..families import family_of
from ..trace import Trace
from .files import (
    PRIVATE_DIR_MODE,
    _DAMAGED_FIX,
    _RUN_ID,
    _TMP_PREFIX,
    _TRASH_PREFIX,
    _check_arrays,
    _fsync_dir,
    _loads_or_empty,
    _make_private,
    _read_json_bytes,
    _read_npz,
    _remove_tree,
    _to_json,
    _write_bytes_synced,
    _zip,
)
from .export import export_members, export_run
from .format import (
    RUN_FORMAT,
    _kmviz_version,
    _migrate_metrics,
    _now_utc,
    _read_meta,
    _split_out_of_params,
)
from .fields import _dataset_meta, _family_name, _flatten, _loads_list, check_tags
from .index import _Index, _REINDEX_GRACE_S


_CORE_COLUMNS = ["run_id", "created", "family", "label", "dataset", "fingerprint", "status",
                 "duration_s", "n_iter", "note"]

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
        The fitted arrays by name (the estimator's, and the split's ``data_*``).
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


def _owner_check(run_id: str, meta: dict, owner, action: str) -> None:
    """Refuse ``action`` on a run whose recorded owner is not ``owner`` (None: no check)."""
    if owner is not None and meta.get("owner") != owner:
        raise RunStoreError(
            f"Run {run_id!r} belongs to someone else, so it cannot be {action} here: a "
            "session may rename, note or delete only the runs it made. Its settings and "
            "curves stay visible; the operator can share every run with `kmviz app "
            "--shared-runs` (KMVIZ_SHARED_RUNS=1).")


class RunStore(_Index):
    """A directory of saved runs with a SQLite index.

    Parameters
    ----------
    path : str or Path, optional
        The store's root directory, created on first use. Default: ``$KMVIZ_RUNS_DIR`` or
        the per-user data directory (see :func:`default_runs_dir`).

    Examples
    --------
    >>> store = RunStore(tmp_path)                                        # doctest: +SKIP
    >>> run_id = store.save(model, model.trace_, {"theta": model.theta_, "psi": model.psi_},
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

    def _exists(self) -> bool:
        """Whether there is a store here to read: an index, or run folders to index again.
        Reading (list, show, load) a path without either creates nothing; the first save
        creates the store."""
        if self._ready or self.index_path.exists():
            return True
        if self.path.exists() and not self.path.is_dir():
            raise RunStoreError(f"Cannot use the run store at {self.path}: it is a file, not "
                                "a folder. Fix: point kmviz at a folder (--dir DIR or "
                                "KMVIZ_RUNS_DIR).")
        try:
            return self.runs_dir.is_dir() and any(
                not e.name.startswith(".") for e in self.runs_dir.iterdir())
        except OSError:
            return False

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
             provenance: dict | None = None, owner: str | None = None,
             tags=None, sweep: dict | None = None) -> str:
        """Save a fitted model's arrays, trace and settings as a new run.

        Parameters
        ----------
        model : str or estimator
            The model family's name, or an estimator of a registered family
            (:func:`kmviz.families.family_of`).
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
        tags : list of str, optional
            Short words to filter runs by (``meta["tags"]``; no commas).
        sweep : dict, optional
            The sweep the run is a point of: ``{"id": ..., "point": i, "of": n, ...}``
            (``meta["sweep"]``; :mod:`kmviz.sweep`).

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
        family = _family_name(model)
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
        tags = check_tags(tags)
        if sweep is not None and not (isinstance(sweep, dict) and sweep.get("id")):
            raise ValueError("sweep must be a dict with an 'id'; got "
                             f"{type(sweep).__name__}.")
        sweep = None if sweep is None else json.loads(_to_json("sweep", sweep))
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
                "tags": tags,
                "sweep": sweep,
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
        if not self._exists():
            return pd.DataFrame({c: pd.Series(dtype=object) for c in _CORE_COLUMNS})
        try:
            self._sweep()
            self._reindex(_REINDEX_GRACE_S)
        except RunStoreBusyError:
            pass  # the listing below still works, or says "busy, try again"
        conn = self._connect()
        try:
            rows = conn.execute(
                "SELECT run_id, created, family, label, dataset, fingerprint, status, "
                "duration_s, n_iter, note, params, metrics, format, sweep, tags FROM runs "
                "ORDER BY created DESC, run_id DESC"
            ).fetchall()
        finally:
            conn.close()
        records = []
        for row in rows:
            rec = dict(zip(_CORE_COLUMNS, row[:10]))
            rec["sweep"] = row[13]
            tags = _loads_list(row[14])
            rec["tags"] = ", ".join(str(t) for t in tags)
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
        if not self._exists():
            return []
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
        found = None
        if self._exists():
            conn = self._connect()
            try:
                found = conn.execute("SELECT 1 FROM runs WHERE run_id = ?",
                                     (run_id,)).fetchone()
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

    def load_trace(self, run_id: str) -> Trace:
        """A run's trace alone (its arrays are not read): for figures across many runs."""
        folder = self._folder(run_id)
        raw = _read_json_bytes(folder / "trace.json", run_id)
        try:
            return Trace.from_json(raw)
        except RunStoreError as exc:
            raise RunStoreError(f"Run {run_id!r}: trace.json: {exc} "
                                f"{_DAMAGED_FIX.replace('ID', run_id)}") from None

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
        _remove_tree(trash)  # a folder that is a link: the link goes, its target stays

    # -------------------------------------------------------------------- export
    def export(self, run_id: str, dest, *, overwrite: bool = False) -> Path:
        """Write a run's files for use outside kmviz (and for :func:`import_run_zip`).

        Parameters
        ----------
        run_id : str
        dest : str or Path
            A path ending in ``.zip`` gets a zip archive holding a folder ``<run_id>/``;
            anything else is a directory, in which a folder ``<run_id>/`` is created.
            Either way the files are ``meta.json``, ``trace.json``, ``trace.csv`` (one row
            per iteration), ``arrays.npz`` and, if the trace has events, ``events.csv``.
            The export keeps the store's owner-only modes (folders 0700, files 0600: the
            arrays hold the training data), and is never written inside the store.
        overwrite : bool, default=False
            Replace an existing zip or export folder instead of failing.

        Returns
        -------
        Path
            The zip file or the created folder.

        Raises
        ------
        RunStoreError
            The destination exists (without ``overwrite``), is a symbolic link (an export
            never writes or deletes through a link), lies inside the store, or cannot be
            written (a file where a folder should be, no permission ...).
        """
        return export_run(self, run_id, dest, overwrite=overwrite)

    def export_bytes(self, run_id: str) -> bytes:
        """The zip archive of :meth:`export` as bytes (for a download button)."""
        return _zip(run_id, export_members(self, run_id))

    # -------------------------------------------------------------------- maintenance
    def repair(self, *, grace_s: float = 60.0) -> dict:
        """Clean up after crashes and re-index complete runs that lost their index row.

        A rename or note killed mid-write leaves ``meta.json.tmp-<pid>`` in the run's
        folder; those of ended processes (or older than a day) are removed. A process
        killed after renaming its run folder into place but before inserting the
        index row leaves a complete, invisible run. This re-inserts rows for such folders
        once they are older than ``grace_s`` seconds (younger ones may belong to a save in
        progress in another process).

        Returns
        -------
        dict
            ``{"reindexed": [...run ids], "unreadable": [...folder names]}``.
        """
        if not self._exists():
            return {"reindexed": [], "unreadable": []}
        self._sweep()
        self._sweep_meta_tmp()
        reindexed, unreadable = self._reindex(grace_s)
        return {"reindexed": reindexed, "unreadable": unreadable}
