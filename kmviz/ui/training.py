"""Training in a background thread owned by one browser session, with progress and stop.

Streamlit cannot cancel a running script, so the fit runs in a thread. The page keeps the
:class:`TrainingJob` in its session state and polls :meth:`TrainingJob.progress` from a
fragment; the Stop button sets an event that the fit's callback turns into
``StopIteration`` after the current BCD iteration, which ends the fit cleanly with the
model learned so far. Fits are serialized per server process (two cores; Numba's parallel
kernels), so a second session's job waits in a queue until the first one ends.
"""

from __future__ import annotations

import importlib
import logging
import subprocess
import sys
import threading
import time
import traceback

import streamlit as st

from kmviz import families
from kmviz.runs import RunStore, run_metrics, save_run
from kmviz.trace import Trace

from .state import RunRecord, StateKeys, session_owner

log = logging.getLogger("kmviz.ui")

#: One fit at a time in this server process; other sessions' jobs wait (status "queued").
_FIT_LOCK = threading.Lock()


class TrainingJob:
    """One background fit: thread, stop flag, and a lock-protected progress record."""

    def __init__(self, family: str, params: dict, split, *, dataset_name: str,
                 fingerprint: str, label: str | None = None, save: bool = True,
                 ratings=None, spec: dict | None = None, owner: str | None = None):
        self.family = family
        self.params = dict(params)
        self.split = split
        self.dataset_name = dataset_name
        self.fingerprint = fingerprint
        self.ratings = ratings  # the whole dataset: its names and ids are saved with the run
        self.spec = dict(spec or {})
        self.owner = owner  # the session's token, recorded in the saved run
        self.label = label or families.get(family).label(params, dataset_name)
        try:  # the progress bar's length; a bad setting fails later, in the fit, with its message
            self._planned = int(families.get(family).make(params).planned_iterations(
                split.train if split is not None else None))
        except Exception:  # noqa: BLE001
            self._planned = int(self.params.get("max_iter", 1) or 1)
        self.save = save
        self.stop_event = threading.Event()
        self._lock = threading.Lock()
        self._rows: list[dict] = []
        self._status = "queued"
        self._message = ""
        self._details = ""
        self._started = time.time()
        self._fit_started: float | None = None
        self._finished: float | None = None
        self.result: RunRecord | None = None
        self.consumed = False
        self.save_error = ""
        self.thread = threading.Thread(target=self._run, name="kmviz-training", daemon=True)

    # -- control -------------------------------------------------------------------------
    def start(self) -> "TrainingJob":
        self.thread.start()
        return self

    def stop(self) -> None:
        """Ask the fit to end after the current iteration (keeps the model so far)."""
        self.stop_event.set()

    @property
    def done(self) -> bool:
        with self._lock:
            return self._status in ("done", "stopped", "failed")

    @property
    def status(self) -> str:
        with self._lock:
            return self._status

    def progress(self) -> dict:
        """A consistent snapshot for the page: status, rows so far, last row, elapsed time."""
        with self._lock:
            rows = [dict(r) for r in self._rows]
            end = self._finished or time.time()
            return {
                "status": self._status,
                "message": self._message,
                "details": self._details,
                "rows": rows,
                "last": rows[-1] if rows else None,
                "n_done": len(rows),
                "max_iter": self._planned,
                "elapsed_s": end - (self._fit_started or self._started),
                "stop_requested": self.stop_event.is_set(),
                "save_error": self.save_error,
            }

    # -- the thread ----------------------------------------------------------------------
    def _set(self, **kw) -> None:
        with self._lock:
            for k, v in kw.items():
                setattr(self, f"_{k}", v)

    def _callback(self, row: dict) -> None:
        with self._lock:
            self._rows.append(dict(row))
        if self.stop_event.is_set():
            raise StopIteration

    def _run(self) -> None:
        try:
            while not _FIT_LOCK.acquire(timeout=0.2):
                if self.stop_event.is_set():
                    self._set(status="stopped", message="Stopped before training started.",
                              finished=time.time())
                    return
            try:
                if self.stop_event.is_set():
                    self._set(status="stopped", message="Stopped before training started.",
                              finished=time.time())
                    return
                self._set(status="running", fit_started=time.time())
                model = families.get(self.family).make(self.params)
                model.fit(self.split.train, callback=self._callback,
                          validation=self.split.validation)
            finally:
                _FIT_LOCK.release()
            stopped = self.stop_event.is_set() or model.trace_.stop_reason == "callback"
            metrics = run_metrics(model, self.split)
            metrics["wall_s"] = float(model.trace_.rows[-1]["wall_s"]) if model.trace_.rows \
                else 0.0
            run_id = self._save(model, metrics)
            self.result = RunRecord(
                run_id=run_id, label=self.label,
                family=self.family, params=model.get_params(), trace=model.trace_,
                model=model, split=self.split, dataset_name=self.dataset_name,
                fingerprint=self.fingerprint, metrics=metrics,
                stop_reason=str(model.trace_.stop_reason), saved=not self.save_error)
            n = model.trace_.n_iter
            self._set(status="stopped" if stopped else "done", finished=time.time(),
                      message=(f"Stopped after {n} iteration(s); the model so far is kept."
                               if stopped else f"Finished {n} iteration(s) "
                               f"({model.trace_.stop_reason})."))
        except ValueError as exc:
            self._set(status="failed", message=str(exc), finished=time.time())
        except Exception as exc:  # noqa: BLE001 - reported on the page with details
            log.exception("training failed")
            self._set(status="failed", finished=time.time(),
                      message=f"Training failed: {type(exc).__name__}: {exc}. Try other "
                              "settings; the details below help when reporting it.",
                      details="".join(traceback.format_exception(exc)))

    def _save(self, model, metrics: dict) -> str:
        """Save to the run store; if that fails the run still lives in this session."""
        if not self.save:
            return f"session-{int(time.time() * 1000)}"
        try:
            return save_run(model, self.split, dataset=self.ratings, spec=self.spec,
                            label=self.label, store=RunStore(), writer="app", metrics=metrics,
                            owner=self.owner)
        except Exception as exc:  # noqa: BLE001 - saving must not lose the trained model
            log.exception("saving the run failed")
            self.save_error = f"The run could not be saved to the run store: {exc}"
            return f"session-{int(time.time() * 1000)}"

    # -- live view -----------------------------------------------------------------------
    def live_trace(self):
        """The rows so far as a Trace (for the Convergence page while the fit runs)."""
        with self._lock:
            rows = [dict(r) for r in self._rows]
        return Trace(solver=f"{self.family} (running)", params=dict(self.params), rows=rows)


class WarmUp:
    """Compiling the Numba kernels once per server process, in a daemon thread.

    A fresh install has no compiled kernels on disk: the first compilation takes about a
    minute on two cores (later starts load them from Numba's cache in about a second). Started
    when the app starts, it compiles in a child process (:mod:`kmviz.km.warmup`), so the
    server stays responsive, and overlaps the time a user spends on the Home and Data pages;
    it holds the fit lock, so a fit started meanwhile waits for it in the queue. Each family
    names its warm-up module in the registry.
    """

    def __init__(self):
        self.done = threading.Event()
        self.seconds: float | None = None
        self.error = ""
        self.thread = threading.Thread(target=self._run, name="kmviz-warm-up", daemon=True)

    def _run(self) -> None:
        try:
            start = time.perf_counter()
            with _FIT_LOCK:  # fits started meanwhile wait in the queue
                for fam in families.all_families():
                    if not fam.warmup:
                        continue
                    # compile in a child process (the compiler holds the GIL and would stall
                    # the server), then load the cached kernels here
                    subprocess.run([sys.executable, "-m", fam.warmup], capture_output=True,
                                   timeout=900, check=False)
                    importlib.import_module(fam.warmup).compile_kernels()
            self.seconds = time.perf_counter() - start
        except Exception as exc:  # noqa: BLE001 - a fit will then compile (and report) itself
            log.exception("warm-up failed")
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done.set()


@st.cache_resource(show_spinner=False)
def background_warm_up() -> WarmUp:
    """Start :class:`WarmUp` once per server process (``st.cache_resource``); never blocks."""
    warm = WarmUp()
    warm.thread.start()
    return warm


def start_job(family: str, params: dict) -> TrainingJob:
    """Validate the settings, then start a background fit owned by this session."""
    families.get(family).make(params)._validate_params()  # bad settings fail here, on the page
    ratings = st.session_state[StateKeys.DATASET]
    split = st.session_state[StateKeys.SPLIT]
    job = TrainingJob(family, params, split, dataset_name=ratings.name,
                      fingerprint=ratings.fingerprint(), ratings=ratings,
                      spec=st.session_state.get(StateKeys.DATASET_SPEC), owner=session_owner())
    st.session_state[StateKeys.JOB] = job
    return job.start()
