"""The Train page's "Sweep" expander: a grid (or random, or Optuna TPE) search over the family's declared
settings, run in a background thread, every point taking its turn in the server's fit queue
like any fit (:func:`kmviz.ui.scheduler.gate`), with progress, Stop (the points done are
kept) and a summary table. The sweep itself is :mod:`kmviz.sweep`."""

from __future__ import annotations

import logging
import threading
import traceback

import streamlit as st

from kmviz._jobs import BackgroundJob
from kmviz.parallel import ClusterError, backend_from_env
from kmviz.exceptions import InvalidParameterError
from kmviz.runs import RunStore
from kmviz.search import plan_search
from kmviz.sweep import MAX_SEEDS, parse_grid, plan_sweep, run_sweep

from .errors import user_errors
from .scheduler import gate
from .state import session_owner
from .text import md_escape

log = logging.getLogger("kmviz.ui")

#: Session key of this session's sweep job.
SWEEP_JOB = "sweep_job"
#: Seconds between two refreshes of the progress while a sweep runs.
SWEEP_EVERY_S = 1.0


class SweepJob(BackgroundJob):
    """One sweep in a thread: each point waits for a place in the fit queue."""

    def __init__(self, plan, ratings, split, *, spec: dict, owner: str):
        super().__init__("kmviz-sweep", "queued")
        self.plan, self.ratings, self.split = plan, ratings, split
        self.spec, self.owner = dict(spec), owner
        self.rows: list = []
        self._message = ""
        self._point = 0
        self.shown_done = False
        self._rows_lock = threading.Lock()

    def _on_point(self, i, n, row) -> None:
        with self._rows_lock:
            self.rows.append(dict(row))
        self._set(point=i, status="running")

    def _point_gate(self):
        self._set(status="queued")
        return gate(self, self.stop_event)

    def progress(self) -> dict:
        with self._lock, self._rows_lock:
            return {"status": self._status, "message": self._message, "done": len(self.rows),
                    "of": len(self.plan.points), "rows": [dict(r) for r in self.rows]}

    def _run(self) -> None:
        try:
            backend_from_env()  # the operator's `kmviz app --dask` cluster, if any
            result = run_sweep(self.plan, self.ratings, self.split, store=RunStore(),
                               spec=self.spec, owner=self.owner, writer="app",
                               stop_event=self.stop_event, on_point=self._on_point,
                               gate=self._point_gate)
            n, total = len(result.rows), len(self.plan.points)
            self._set(status="stopped" if result.stopped else "done",
                      message=(f"Sweep {self.plan.sweep_id}: {n} of {total} point(s) fitted "
                               f"and saved in {result.wall_s:.1f} s"
                               + (" (stopped; the points done are kept)." if result.stopped
                                  else ".")))
        except (ValueError, ClusterError) as exc:
            self._set(status="failed", message=str(exc))
        except Exception as exc:  # noqa: BLE001 - shown on the page
            log.exception("sweep failed")
            self._set(status="failed", message=f"The sweep failed: {type(exc).__name__}: "
                      f"{exc}. {''.join(traceback.format_exception_only(exc)).strip()}")


def _sweepable(family) -> list[str]:
    """Settings a sweep can vary: numbers and enumerations (not the seed)."""
    return [n for n, spec in family.constraints().items()
            if n != "random_state" and (spec.options or spec.kind in (int, float, bool))]


def sweep_panel(family, params: dict, ratings, split, spec: dict) -> None:
    """The "Sweep" expander under the Train form: vary some settings (the others as in the
    form), a number of seeds, grid or random points; start, follow, stop."""
    key = f"sweep_{family.name}"
    job = st.session_state.get(SWEEP_JOB)
    running = job is not None and not job.done
    with st.expander("Sweep: fit a grid of settings", icon=":material/grid_view:",
                     expanded=running):
        st.caption("Every point is an ordinary saved run, tagged with its sweep, fitted on "
                   "the split above; the settings not varied are the form's as last "
                   "submitted (a setting given one value here is fixed at it). Each point "
                   "waits for its turn in the server's fit queue, like any fit.")
        vary = st.multiselect("Settings to vary", _sweepable(family), key=f"{key}_vary",
                              help="Each gets a box for its values; every combination of "
                                   "them is one point (or, with random points, the range)")
        texts = {}
        for name in vary:
            texts[name] = st.text_input(
                f"Values of {name} (comma-separated)", value=str(params.get(name, "")),
                key=f"{key}_{name}", help="Checked against the setting's declared range "
                                          "before any fit starts")
        c1, c2, c3 = st.columns(3)
        seeds = c1.number_input("Seeds per point", 1, MAX_SEEDS, 1, key=f"{key}_seeds",
                                help="Model seeds random_state, random_state + 1, ...")
        mode = c2.radio("Points", ["grid", "random", "tpe"], horizontal=True,
                        key=f"{key}_mode",
                        format_func=lambda m: "TPE (Optuna)" if m == "tpe" else m,
                        help="grid: every combination; random: N draws between the values "
                             "given (log-uniform over more than two decades); TPE: N points "
                             "chosen one after the other by Optuna's TPE sampler between "
                             "the values given, from the validation metric of the points "
                             "before (needs Optuna: pip install \"kmviz[search]\")")
        n_random = c3.number_input("Points to draw", 1, 1000, 10, key=f"{key}_n",
                                   disabled=mode == "grid",
                                   help="How many points to draw with Points = random or TPE")
        if st.button("Start sweep", key=f"{key}_start", icon=":material/play_arrow:",
                     disabled=running or not vary):
            with user_errors("planning the sweep") as outcome:
                grid = parse_grid(family, [f"{n}={t}" for n, t in texts.items()])
                base = {k: v for k, v in params.items() if k not in grid and not (
                    k == "random_state" and seeds > 1)}
                if mode == "tpe":
                    if seeds > 1:
                        raise InvalidParameterError("TPE chooses every point itself: set "
                                                    "Seeds per point to 1.")
                    plan = plan_search(family, grid, base=base, trials=int(n_random),
                                       seed=int(params.get("random_state") or 0))
                else:
                    plan = plan_sweep(family, grid, base=base, seeds=int(seeds),
                                      random=int(n_random) if mode == "random" else None,
                                      seed=int(params.get("random_state") or 0))
            if outcome.ok:
                job = SweepJob(plan, ratings, split, spec=spec, owner=session_owner())
                st.session_state[SWEEP_JOB] = job.start()
                running = True
        if job is not None:
            _progress(job)


def _progress(job: SweepJob) -> None:
    @st.fragment(run_every=SWEEP_EVERY_S if not job.done else None)
    def _panel():
        snap = job.progress()
        st.progress(snap["done"] / max(1, snap["of"]),
                    text=f"{job.plan.describe()}: {snap['done']} of {snap['of']} done"
                         + (" · waiting for its turn in the fit queue"
                            if snap["status"] == "queued" else ""))
        if not job.done:
            if st.button("Stop sweep", key="sweep_stop", icon=":material/stop:"):
                job.stop()
                st.toast("Stopping after the current fit; the points done are kept.")
        elif snap["status"] == "failed":
            st.error(md_escape(snap["message"]), icon=":material/error:")
        else:
            st.success(md_escape(snap["message"]) + " The Runs page filters by sweep.",
                       icon=":material/check_circle:")
        if snap["rows"]:
            st.dataframe(snap["rows"], hide_index=True)
        if job.done and not job.shown_done:  # once: the page's fragment stops polling
            job.shown_done = True
            st.rerun(scope="app")

    with st.container():
        _panel()
