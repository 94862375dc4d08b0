"""The solvers side by side on one problem: the paper's Figure 2 as data.

:func:`compare_solvers` fits :class:`~kmviz.similarity.SimilarityLearning` once per solver on
the same training data, settings and seed (so the same starting theta), and returns one row
per iteration: the time spent optimizing, the objective, the relative objective difference
``(L - L*) / L*`` against the lowest objective any of them reached (Sec. 4.3), and the
validation MAP@5 (eq. 52). The time excludes the validation ranking, which the paper does
not count either and which would otherwise favour the solvers with fewer, longer iterations.

:class:`ComparisonJob` runs it in a thread with a progress record and a stop flag (for the
app's Optimizers page; plain Python, no Streamlit).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._jobs import BackgroundJob, stop_when
from ..exceptions import NumericalError
from .estimator import SimilarityLearning, relative_objective_difference
from .solvers import SOLVER_LABELS, SOLVERS

#: The columns of :func:`compare_solvers`' frame.
COLUMNS = ("solver", "label", "iteration", "time_s", "objective",
           "relative_objective_difference", "validation_map_at_5")


class _TimedValidation(SimilarityLearning):
    """The estimator, with the seconds its validation ranking took in every trace row and
    the objective at the starting theta (``start_objective_``)."""

    def _fit_start(self, data, prm, **kwargs):
        state = super()._fit_start(data, prm, **kwargs)
        self.start_objective_ = float(state.previous)
        return state

    def _trace_metrics(self, state, validation):
        start = time.perf_counter()
        out = super()._trace_metrics(state, validation)
        out["seconds"] = time.perf_counter() - start
        return out


@dataclass
class Comparison:
    """What :func:`compare_solvers` returns.

    Attributes
    ----------
    frame : DataFrame
        One row per (solver, iteration), columns :data:`COLUMNS`.
    notes : dict
        solver -> how its fit ended, in words ("converged: ...", "stopped", "diverged ...").
    best_objective : float
        L*, the lowest objective over every solver and iteration.
    """

    frame: pd.DataFrame
    notes: dict = field(default_factory=dict)
    best_objective: float = float("nan")


def _rows(solver, trace_rows, start_objective=None):
    out, spent = [], 0.0
    if start_objective is not None and np.isfinite(start_objective):
        out.append({"solver": solver, "label": SOLVER_LABELS.get(solver, solver),
                    "iteration": 0, "time_s": 0.0, "objective": start_objective,
                    "validation_map_at_5": np.nan})
    for row in trace_rows:
        spent += float(row.get("validation_seconds", 0.0))
        out.append({"solver": solver, "label": SOLVER_LABELS.get(solver, solver),
                    "iteration": int(row["iteration"]),
                    "time_s": max(float(row["wall_s"]) - spent, 0.0),
                    "objective": float(row["objective"]),
                    "validation_map_at_5": float(row.get("validation_map_at_5", np.nan))})
    return out


def compare_solvers(train, validation, solvers=SOLVERS, params=None, *, time_limit=None,
                    progress=None, stop=None, **fit_inputs) -> Comparison:
    """Fit one model per solver on the same data and starting point; their curves.

    Parameters
    ----------
    train, validation : kmviz.data.Ratings
        Training and held-out interactions in one index space (``validation`` may be None:
        no MAP@5 column then).
    solvers : sequence of str
        Names from :data:`kmviz.similarity.SOLVERS`.
    params : dict, optional
        Settings of :class:`~kmviz.similarity.SimilarityLearning` shared by every fit
        (``solver`` is set per fit; ``random_state`` defaults to 0, so every solver starts
        from the same theta).
    time_limit : float, optional
        Seconds of optimization per solver at most (the fit stops after the iteration that
        passes it).
    progress : callable, optional
        ``progress(solver, row)`` after every iteration (``row``: the trace row).
    stop : threading.Event or callable, optional
        Checked after every iteration; when set (or true), the current fit ends and no
        further solver starts. The rows so far are kept.
    **fit_inputs
        Passed to every ``fit`` (``user_features``, ``item_features``, ...).

    Returns
    -------
    Comparison
    """
    unknown = [s for s in solvers if s not in SOLVERS]
    if unknown or not len(solvers):
        raise ValueError(f"solvers must be a non-empty subset of {', '.join(SOLVERS)}; got "
                         f"{list(solvers)!r}.")
    settings = {"random_state": 0, **dict(params or {})}
    settings.pop("solver", None)

    def stopped():
        if stop is None:
            return False
        return stop.is_set() if hasattr(stop, "is_set") else bool(stop())

    rows, notes = [], {}
    for solver in solvers:
        if stopped():
            break
        model = _TimedValidation(**settings, solver=solver)
        seen = []

        def callback(row, solver=solver, seen=seen):
            seen.append(dict(row))
            if progress is not None:
                progress(solver, row)
            spent = sum(float(r.get("validation_seconds", 0.0)) for r in seen)
            if time_limit is not None and float(row["wall_s"]) - spent >= time_limit:
                return False
            return not stopped()

        try:
            with stop_when(stop):  # the solvers' inner steps see it too
                model.fit(train, validation=validation, callback=callback, **fit_inputs)
            trace = model.trace_
            if stopped():
                notes[solver] = "stopped"
            elif trace.stop_reason == "callback":
                notes[solver] = f"time limit of {time_limit:g} s reached"
            else:
                notes[solver] = trace.stop_message or str(trace.stop_reason)
        except NumericalError as exc:
            notes[solver] = f"diverged: {exc}"
        rows.extend(_rows(solver, seen, getattr(model, "start_objective_", None)))
    frame = pd.DataFrame(rows, columns=[c for c in COLUMNS
                                        if c != "relative_objective_difference"])
    best = float(frame["objective"].min()) if len(frame) else float("nan")
    frame["relative_objective_difference"] = (
        relative_objective_difference(frame["objective"], best=best) if len(frame) else [])
    return Comparison(frame[list(COLUMNS)], notes, best)


def time_to_reach(frame, threshold=1e-3) -> pd.DataFrame:
    """Per solver: the first time its relative objective difference is <= ``threshold``
    (NaN if never), its best validation MAP@5 and its iterations."""
    out = []
    for solver, part in frame.groupby("solver", sort=False):
        hit = part[part["relative_objective_difference"] <= threshold]
        out.append({"solver": solver, "label": part["label"].iloc[0],
                    f"time_to_{threshold:g}_s": float(hit["time_s"].iloc[0]) if len(hit)
                    else np.nan,
                    "best_validation_map_at_5": float(part["validation_map_at_5"].max()),
                    "iterations": int(part["iteration"].max()),
                    "time_s": float(part["time_s"].max())})
    return pd.DataFrame(out)


class ComparisonJob(BackgroundJob):
    """:func:`compare_solvers` in a background thread, with progress and a stop flag.

    ``snapshot()`` gives a consistent view for a page that polls; ``stop()`` ends the
    current fit after its iteration (the curves so far are kept in ``result``); ``start``,
    ``stop`` and ``done`` are :class:`kmviz._jobs.BackgroundJob`'s.
    """

    def __init__(self, train, validation, solvers, params=None, *, time_limit=None,
                 gate=None, **fit_inputs):
        super().__init__("kmviz-similarity-compare", gate=gate)
        self.solvers = list(solvers)
        self._args = (train, validation, self.solvers, dict(params or {}))
        self._kw = dict(time_limit=time_limit, **fit_inputs)
        self._current, self._n_rows, self._done = None, 0, []
        self.error = ""
        self.result: Comparison | None = None

    def _progress(self, solver, row):
        with self._lock:
            if solver != self._current:
                if self._current is not None:
                    self._done.append(self._current)
                self._current = solver
            self._n_rows = int(row["iteration"])

    def snapshot(self) -> dict:
        """status ("queued", "running", "done", "stopped", "failed"), the solver running, how many
        solvers are finished, its iteration, the elapsed seconds and the error message."""
        with self._lock:
            return {"status": self._status, "solver": self._current,
                    "n_finished": len(self._done), "n_solvers": len(self.solvers),
                    "iteration": self._n_rows, "elapsed_s": time.time() - self._started,
                    "error": self.error}

    def _run(self):
        try:
            with self._turn() as go:
                if not go:
                    self._set(status="stopped")
                    return
                result = compare_solvers(*self._args, progress=self._progress,
                                         stop=self.stop_event, **self._kw)
            with self._lock:
                self.result = result
                self._status = "stopped" if self.stop_event.is_set() else "done"
        except Exception as exc:  # noqa: BLE001 - shown on the page
            with self._lock:
                self.error = f"{type(exc).__name__}: {exc}"
                self._status = "failed"
