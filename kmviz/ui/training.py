"""Training in a background thread owned by one browser session, with progress and stop.

Streamlit cannot cancel a running script, so the fit runs in a thread. The page keeps the
:class:`TrainingJob` in its session state and polls :meth:`TrainingJob.progress` from a
fragment; the Stop button sets an event that the fit's callback turns into
``StopIteration`` after the current BCD iteration, which ends the fit cleanly with the
model learned so far. A job first waits for its own family's kernels (status "compiling",
on a first start after installing; :mod:`kmviz.ui.warmup`), never for other families'. At
most a few fits run at once in the server process (:mod:`kmviz.ui.scheduler`: a limit from
the core count, ``kmviz app --max-fits``); other sessions' jobs wait in a first-in-first-out
queue (status "queued", with their place in line), and each running fit uses its share of
Numba's threads.
"""

from __future__ import annotations

import importlib
import logging
import os
import secrets
import threading
import time
import traceback

import streamlit as st

from kmviz import families
from kmviz._jobs import BackgroundJob
from kmviz.history import History, recording, save_history
from kmviz._memory import check_fit_memory
from kmviz.parallel import DASK_ENV, ClusterError, backend_from_env
from kmviz.runs import RunStore, run_metrics, save_run
from kmviz.trace import Trace

from .datasets import load_in_progress, measured_settings
from .errors import user_errors
from .forms import form_params
from .scheduler import OwnerFitLimitError, fit_threads, scheduler
from .state import RunRecord, StateKeys, fit_owner, session_id, session_owner
from .text import md_escape
from .warmup import WarmUp

log = logging.getLogger("kmviz.ui")

#: The trace's stop reasons in words (anything else is shown as it is).
#: Fallback words for a trace without a stop message (runs saved before kmviz 0.2).
STOP_REASONS = {"converged": "converged", "max_iter": "the iteration budget was used up",
                "callback": "stopped", "numerical_error": "a numerical error"}


def stop_words(trace) -> str:
    """Why a fit ended, in its family's words ("converged: CG relative residual ...")."""
    reason = str(trace.stop_reason)
    message = getattr(trace, "stop_message", "")
    if reason == "converged" and message and "converged" not in message.lower():
        return f"converged: {message}"
    return message or STOP_REASONS.get(reason, reason)


class TrainingJob(BackgroundJob):
    """One background fit: thread, stop flag, and a lock-protected progress record.

    :meth:`stop` asks the fit to end after the current iteration (the model so far is
    kept); the thread, the flag and the status come from :class:`kmviz._jobs.BackgroundJob`.
    """

    def __init__(self, family: str, params: dict, split, *, dataset_name: str,
                 fingerprint: str, label: str | None = None, save: bool = True,
                 ratings=None, spec: dict | None = None, owner: str | None = None,
                 warm_up: WarmUp | None = None, request_id: str | None = None,
                 model=None):
        self.family = family
        # the estimator start_job built and checked; fitted by _run as it is (None: built
        # from params in _run, for a job made without the page's checks)
        self.model = model
        self.warm_up = warm_up  # the fit waits for this family's kernels first (if given)
        self.request_id = request_id  # the Train click that started it
        self.params = dict(params)
        self.split = split
        self.dataset_name = dataset_name
        self.fingerprint = fingerprint
        self.ratings = ratings  # the whole dataset: its names and ids are saved with the run
        self.spec = dict(spec or {})
        self.owner = owner  # the session's token, recorded in the saved run
        self.label = label or families.get(family).label(params, dataset_name)
        try:  # the progress bar's length; a bad setting fails later, in the fit, with its message
            planner = model if model is not None else families.get(family).make(params)
            self._planned = int(planner.planned_iterations(
                split.train if split is not None else None))
        except Exception:  # noqa: BLE001
            self._planned = int(self.params.get("max_iter", 1) or 1)
        self.save = save
        super().__init__("kmviz-training",
                         "compiling" if warm_up is not None and not warm_up.ready(family)
                         else "queued")
        self._rows: list[dict] = []
        self._message = ""
        self._details = ""
        self._fit_started: float | None = None
        self._finished: float | None = None
        self.result: RunRecord | None = None
        self.consumed = False
        self.save_error = ""

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
                "family": self.family,
                "queue": (scheduler().queue_words(self) if self._status == "queued"
                          else ""),
                "dataset_name": self.dataset_name,
                "warm_up": (self.warm_up.status(self.family)
                            if self._status == "compiling" and self.warm_up is not None
                            else None),
            }

    # -- the thread ----------------------------------------------------------------------
    def _callback(self, row: dict) -> None:
        with self._lock:
            self._rows.append(dict(row))
        if self.stop_event.is_set():
            raise StopIteration

    def _stopped_before_start(self) -> None:
        self._set(status="stopped", message="Stopped before training started.",
                  finished=time.time())

    def cancel_gone(self) -> None:
        """Stop, because every tab of the browser that started it is closed (the fit
        queue's watcher; a running fit ends at its next inner step and is saved)."""
        log.info("cancelling a fit: every tab of its browser is closed")
        self.stop()

    def _run(self) -> None:
        try:
            if self.warm_up is not None and not self.warm_up.ready(self.family):
                self._set(status="compiling")  # this family's kernels only
                if not self.warm_up.wait_for(self.family, self.stop_event):
                    self._stopped_before_start()
                    return
                self._set(status="queued")
            fits = scheduler()
            with fits.slot(self, self.stop_event) as got:
                if not got or self.stop_event.is_set():
                    self._stopped_before_start()
                    return
                self._set(status="running", fit_started=time.time())
                model = self.model if self.model is not None else \
                    families.get(self.family).make(self.params)
                backend_from_env()   # the operator's `kmviz app --dask` cluster, if any
                with fit_threads(fits.threads_per_fit()), recording(History()):
                    # its share of Numba's threads; every iteration kept for the replay
                    model.fit(self.split.train, callback=self._callback,
                              validation=self.split.validation)
            stopped = self.stop_event.is_set() or model.trace_.stop_reason == "callback"
            metrics = run_metrics(model, self.split)
            metrics["wall_s"] = float(model.trace_.rows[-1]["wall_s"]) if model.trace_.rows \
                else 0.0
            run_id = self._save(model, metrics)
            self._save_history(run_id, model)
            self.result = RunRecord(
                run_id=run_id, label=self.label,
                family=self.family, params=model.get_params(), trace=model.trace_,
                model=model, split=self.split, dataset_name=self.dataset_name,
                fingerprint=self.fingerprint, metrics=metrics,
                stop_reason=str(model.trace_.stop_reason), saved=not self.save_error)
            n = model.trace_.n_iter
            why = stop_words(model.trace_)
            self._set(status="stopped" if stopped else "done", finished=time.time(),
                      message=(f"Stopped after {n} iteration(s); the model so far is kept."
                               if stopped else f"Finished {n} iteration(s) ({why})."))
        except (ValueError, ClusterError) as exc:   # ClusterError: the --dask cluster
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

    def _save_history(self, run_id: str, model) -> None:
        """Keep the fit's iterations with the saved run (the pages' replay); a failure
        leaves the run without a replay, said on the pages, and never loses the run."""
        history = getattr(model, "history_", None)
        if history is None or not self.save or self.save_error or not len(history):
            return
        try:
            save_history(run_id, history, store=RunStore())
        except (ValueError, OSError) as exc:  # RunStoreError is a ValueError
            log.warning("saving the history of run %s failed: %s", run_id, exc)
            history.note = f"The replay was not saved with the run: {exc}"

    # -- live view -----------------------------------------------------------------------
    def live_trace(self):
        """The rows so far as a Trace (for the Convergence page while the fit runs)."""
        with self._lock:
            rows = [dict(r) for r in self._rows]
        return Trace(solver=f"{self.family} (running)", params=dict(self.params), rows=rows)


def cluster_caption() -> str | None:
    """One line for the Train page when the operator started the app with ``--dask``."""
    spec = os.environ.get(DASK_ENV)
    if not spec:
        return None
    fams = families.all_families()
    on = [f.short or f.title for f in fams if f.distributed]
    off = [f.short or f.title for f in fams if not f.distributed]
    where = (f"{', '.join(on)} fits run on the Dask cluster `{spec}` (the operator's "
             f"`kmviz app --dask` choice); results equal in-process fits." if on else
             f"The Dask cluster `{spec}` is set (`kmviz app --dask`), but no family runs "
             f"on it yet.")
    return where + (f" {', '.join(off)} fit in this process." if off else "")


def fit_running() -> bool:
    """Whether a fit holds the cores now (the warm-up defers compiles nobody asked for)."""
    return scheduler().running() > 0


_WARM_UP: WarmUp | None = None
_WARM_UP_LOCK = threading.Lock()


def warm_up() -> WarmUp:
    """The server process's :class:`~kmviz.ui.warmup.WarmUp`, started on first use; never
    blocks. One per process (a module global, not ``st.cache_resource``, so "Clear cache"
    in the app menu does not start a second one)."""
    global _WARM_UP
    with _WARM_UP_LOCK:
        if _WARM_UP is None:
            # Import every family's estimator and warm-up module here, in the script's
            # thread, before the warm-up thread imports them too: two threads importing
            # kmviz.km at once made the Train page fail with "cannot import name
            # 'KolmogorovModel' from partially initialized module" (seen on a fresh server
            # whose first Train page met the KM warm-up loading its kernels).
            for fam in families.all_families():
                fam.estimator_class()
                if fam.warmup:
                    importlib.import_module(fam.warmup)
            _WARM_UP = WarmUp([(f.name, f.short or f.title, f.warmup)
                               for f in families.all_families()],
                              fit_running=fit_running).start()
        return _WARM_UP


def background_warm_up() -> WarmUp:
    """Start the warm-up of every family's kernels (once per server process); never blocks."""
    return warm_up()


def start_job(family: str, params: dict, *, request_id: str | None = None) -> TrainingJob:
    """Validate the settings, then start a background fit owned by this session (it waits
    for its family's kernels if they are still compiling). The estimator is built once,
    here: the job fits this very model (its progress bar's length comes from it too)."""
    model = families.get(family).make(params)
    checked = model._validate_params()  # bad settings fail here, on the page
    ratings = st.session_state[StateKeys.DATASET]
    split = st.session_state[StateKeys.SPLIT]
    # a fit over the per-fit memory limit is refused here too, before it takes a place in
    # the queue (the fit's entry checks again when it starts: the memory free then counts)
    check_fit_memory(model, checked, split.train)
    job = TrainingJob(family, params, split, dataset_name=ratings.name,
                      fingerprint=ratings.fingerprint(), ratings=ratings,
                      spec=st.session_state.get(StateKeys.DATASET_SPEC), owner=session_owner(),
                      warm_up=warm_up(), request_id=request_id, model=model)
    # a served app: at most N running-or-queued fits per browser (OwnerFitLimitError),
    # and the fit is cancelled once every tab of the browser is gone
    scheduler().admit(job, fit_owner(), session_id())
    st.session_state[StateKeys.JOB] = job
    return job.start()


#: Why a second Train click of a session is refused while its fit runs.
ONE_FIT_PER_SESSION = ("A training run is in progress in this session, so this one was not "
                       "started: one fit per session at a time, so that every session on the "
                       "server gets its turn. Stop it or wait for it to finish, then press "
                       "Train again.")


def load_refusal(loading: dict) -> str:
    """Why Train did not start while the Data page's Load of ``loading`` runs."""
    return (f"Not started: {md_escape(loading['what'])} is still loading (Data page), and "
            "this fit would have trained on the dataset it replaces. Press Train again once "
            "the new dataset is named above.")


def load_notice() -> None:
    """On the Train page while the Data page's Load runs: which data is loading, refreshed
    until it has loaded (then the page reruns once, naming the new dataset)."""
    if load_in_progress() is None:
        return

    @st.fragment(run_every=0.5)
    def _notice():
        loading = load_in_progress()
        if loading is None:
            st.rerun(scope="app")
        st.info(f"Loading {md_escape(loading['what'])} ({time.time() - loading['since']:.0f} "
                "s so far): Train waits for it and refuses to start until it has loaded, so "
                "no fit trains on the dataset it replaces.", icon=":material/hourglass_top:")

    with st.container():
        _notice()


def request_training(family: str, params: dict | None = None) -> None:
    """The Train button's callback: record the click in the session state.

    Streamlit runs it before the script reruns, so the request survives a rerun that
    interrupts the one the click started (a click while the page was still running);
    :func:`start_requested_job` starts it on the next run of the page, once. ``params``:
    the settings to fit (default: those of the family's Train form).

    The Train page then shows ``family``: a click on a form still on screen while the page
    switched to another family (the rerun had not drawn the new form yet) trains the form
    pressed, and the page follows that fit rather than hiding it behind the other family."""
    st.session_state[StateKeys.FAMILY] = st.session_state["train_family"] = family
    st.session_state[StateKeys.TRAIN_REQUEST] = {
        "id": secrets.token_hex(8), "family": family,
        "params": form_params(families.get(family)) if params is None else dict(params),
        "at": time.time()}


def start_requested_job() -> None:
    """Start this session's pending Train request (shows why not, if it cannot start)."""
    request = st.session_state.get(StateKeys.TRAIN_REQUEST)
    if not request:
        return
    job = st.session_state.get(StateKeys.JOB)
    loading = load_in_progress()
    if job is not None and job.request_id == request["id"]:
        pass  # started by a run that was interrupted before it could clear the request
    elif job is not None and not job.done:
        st.warning(ONE_FIT_PER_SESSION, icon=":material/hourglass_top:")
    elif loading is not None:
        st.warning(load_refusal(loading), icon=":material/hourglass_top:")
    else:
        with user_errors("starting the training"):
            try:
                start_job(request["family"], request["params"], request_id=request["id"])
            except OwnerFitLimitError as exc:  # not a bad setting: say why and what to do
                st.warning(str(exc), icon=":material/hourglass_top:")
    st.session_state[StateKeys.TRAIN_REQUEST] = None


# -- a fit's warnings on the page ---------------------------------------------------------
def warning_fix(event: dict) -> dict:
    """The settings change a trace warning proposes: its ``fix_<parameter>`` entries."""
    return {k[4:]: v for k, v in event.items() if k.startswith("fix_") and len(k) > 4}


def _fix_words(family: str, fix: dict) -> str:
    """``max iterations = 400, center = yes``: the change in the form's words."""
    constraints = families.get(family).constraints()

    def shown(v):
        return "yes" if v is True else "no" if v is False else f"{v:g}" \
            if isinstance(v, float) else str(v)

    return ", ".join(f"{getattr(constraints.get(k), 'label', '') or k} = {shown(v)}"
                     for k, v in fix.items())


def _apply_fix(family: str, params: dict, fix: dict) -> None:
    # a button's callback: the Train page loads these settings into the form on its next run
    st.session_state[StateKeys.RERUN_CONFIG] = (family, {**params, **fix}, "fix")
    st.session_state[StateKeys.NOTICE] = (f"Changed as the warning proposed: "
                                          f"{_fix_words(family, fix)}.")


def _measured_keeps(run, fix: dict) -> str:
    """The form's words for ``fix``'s settings where the catalogue's measured settings for
    the session's built-in dataset hold them at the run's own values (a fix would undo
    them: gFM's 10 passes on MovieLens stop early because more fit the noise); else ""."""
    data = st.session_state.get(StateKeys.DATASET)
    if not fix or data is None or data.fingerprint() != run.fingerprint:  # other data
        return ""
    measured = measured_settings(run.family)
    held = {k: run.params.get(k) for k in fix}
    if measured is None or any(k not in measured.params or measured.params[k] != v
                               for k, v in held.items()):
        return ""
    return _fix_words(run.family, held)


def fit_warnings(run) -> None:
    """Every warning the run's fit raised (its trace's "warning" events: no convergence,
    no better than the mean, divergence ...), each with what to change, and a button that
    puts the proposed change in the form where the warning names one."""
    events = [e for e in getattr(run.trace, "events", []) or []
              if e.get("kind") == "warning"]
    for n, event in enumerate(events):
        st.warning(md_escape(event.get("message", "")), icon=":material/warning:")
        fix = warning_fix(event)
        if run.family not in families.names():
            continue
        kept = _measured_keeps(run, fix)
        if kept:
            st.caption(f"The settings measured on this dataset keep {kept} (their note says "
                       "what was measured), so no change is proposed here.")
        elif fix:
            st.button(f"Set {_fix_words(run.family, fix)}", key=f"train_fix_{run.run_id}_{n}",
                      icon=":material/build:", on_click=_apply_fix,
                      args=(run.family, dict(run.params), fix),
                      help="Puts this change in the form above (the other settings stay); "
                           "then press Train.")
