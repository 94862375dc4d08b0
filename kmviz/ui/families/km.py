"""Streamlit glue of the KM Explore pages: cached calls into :mod:`kmviz.km.analysis`,
:mod:`kmviz.km.mining` and :mod:`kmviz.rules` (implications, rules, planted truth), the
shared item picker, and reading the implication graph's click state."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from kmviz import rules as pair_rules
from kmviz.km import analysis as an
from kmviz.km import mining
from kmviz.km.interpret import influence_scores
from kmviz.km.telemetry import PHASE_COUNT_LABELS
from kmviz.viz.phases import phase_shares

from kmviz._jobs import BackgroundJob

from ..scheduler import gate, scheduler
from ..state import StateKeys


def item_problem(run, item: int):
    """S_i and v_i of ``item``'s binary QP (4) at the run's theta, exactly as the fit
    builds them (:meth:`kmviz.km.KolmogorovModel.item_problem`)."""
    return run.model.item_problem(run.split.train, int(item))


@st.cache_data(max_entries=32, show_spinner="Running the dual gradient descent ...")
def dual_trajectories(S: np.ndarray, v: np.ndarray, gamma: float) -> dict:
    return an.dual_trajectories(S, v, gamma)


def item_dual_matrix(run, item: int) -> np.ndarray:
    """C(u*) of eq. (12) at the run's final theta, u* from a tight solve of the same dual
    (the fit's stored dual belongs to the theta before its last update)."""
    S, v = item_problem(run, item)
    u_star = dual_trajectories(S, v, float(run.params.get("gamma", 100.0)))["u_star"]
    return an.item_dual_matrix(run.model, run.split.train, item, u_star)


@st.cache_data(max_entries=64, show_spinner=False)
def lanczos_view(C: np.ndarray, a: float) -> dict:
    return an.lanczos_view(C, a)


@st.cache_data(max_entries=16, show_spinner=False)
def influence(run_id: str, psi: np.ndarray) -> np.ndarray:
    return influence_scores(psi)


# --------------------------------------------------------------------- implications, rules
def _cache_id(run) -> str:
    """The cached views' key of ``run``: its id, with the iteration for a replayed copy
    (:func:`kmviz.ui.replay.replay_run`), so an earlier iteration is mined on its own."""
    t = getattr(run, "replay_iteration", None)
    return run.run_id if t is None else f"{run.run_id}@iteration-{int(t)}"


@st.cache_data(max_entries=8, show_spinner="Mining the implications ...")
def _implications(run_id: str, liked, min_ratings: int, *, _run):
    train = _run.split.train
    return mining.mine_implications(_run.model, train, liked=liked,
                                    validation=_run.split.held_out(),
                                    items=an.shown_items(train, min_ratings))


def implications(run, liked, min_ratings: int):
    """:func:`kmviz.km.mine_implications` of the run (merged groups, held-out statistics
    from the run's held-out part) among the items with ``min_ratings`` training ratings."""
    return _implications(_cache_id(run), liked, int(min_ratings), _run=run)


@st.cache_data(max_entries=32, show_spinner=False)
def _item_implications(run_id: str, liked, min_ratings: int, item: int, *, _run):
    train = _run.split.train
    return mining.mine_implications(_run.model, train, liked=liked,
                                    validation=_run.split.held_out(),
                                    items=an.shown_items(train, min_ratings), around=item)


def item_implications(run, liked, min_ratings: int, item: int):
    """The item-level rows with ``item`` on one side, each pair with its own figures."""
    return _item_implications(_cache_id(run), liked, int(min_ratings), int(item), _run=run)


@st.cache_data(max_entries=8, show_spinner=False)
def _groups(run_id: str, liked, min_ratings: int, *, _run):
    train = _run.split.train
    return mining.support_groups(_run.model, train, liked=liked,
                                 items=an.shown_items(train, min_ratings))


def support_groups(run, liked, min_ratings: int) -> dict:
    return _groups(_cache_id(run), liked, int(min_ratings), _run=run)


@st.cache_data(max_entries=8, show_spinner="Computing the association rules ...")
def _rules(run_id: str, liked, min_ratings: int, min_support: int, min_confidence: float,
           *, _run):
    train = _run.split.train
    return pair_rules.pairwise_rules(train, liked=liked, min_support=min_support,
                                     min_confidence=min_confidence,
                                     validation=_run.split.held_out(),
                                     items=an.shown_items(train, min_ratings))


def rules(run, liked, min_ratings: int, min_support: int, min_confidence: float):
    """:func:`kmviz.rules.pairwise_rules` on the run's training likes, same items."""
    return _rules(run.run_id, liked, int(min_ratings), int(min_support),
                  float(min_confidence), _run=run)


@st.cache_data(max_entries=8, show_spinner="Scoring against the planted truth ...")
def _recovery(run_id: str, liked, min_ratings: int, min_support: int, *, _run):
    train = _run.split.train
    truth = mining.planted_truth(train)
    if truth is None:
        return None
    return mining.recovery_table(_run.model, train, truth, liked=liked,
                                 items=an.shown_items(train, min_ratings),
                                 min_support=min_support)


def recovery(run, liked, min_ratings: int, min_support: int):
    """Precision / recall of the true implications on planted data, else None."""
    return _recovery(_cache_id(run), liked, int(min_ratings), int(min_support), _run=run)


def clicked_item(selection_state) -> int | None:
    """The item of the node clicked in the implication graph, from the chart's selection
    state (``st.session_state[<chart key>]``), or None when no node is selected."""
    points = ((selection_state or {}).get("selection") or {}).get("points") or []
    for point in points:
        data = point.get("customdata")
        if isinstance(data, list):  # some front-ends wrap a scalar customdata in a list
            data = data[0] if data else None
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return int(data)
    return None


def current_item(run) -> int | None:
    """The item the per-item views of this run show: the one last picked on any KM page,
    else a typical, well-rated item (:func:`kmviz.km.analysis.typical_item`)."""
    chosen = (st.session_state.get(StateKeys.ITEM) or {}).get(run.run_id)
    counts = run.split.train.item_counts()
    if chosen is not None and 0 <= chosen < counts.size and counts[chosen] > 0:
        return int(chosen)
    return an.typical_item(run.split.train)


def set_item(run, item) -> None:
    items = dict(st.session_state.get(StateKeys.ITEM) or {})
    items[run.run_id] = None if item is None else int(item)
    st.session_state[StateKeys.ITEM] = items


def item_picker(run, *, key: str, label: str = "Item", restrict=None):
    """Select an item with training ratings (most rated first); starts from
    :func:`current_item`, and the choice carries over to the other KM pages."""
    train = run.split.train
    order = an.items_by_count(train)
    if restrict is not None:
        order = [i for i in order if restrict[i]]
    if not order:
        st.info("No item has training ratings.")
        st.stop()
    counts = train.item_counts()
    current = current_item(run)
    if st.session_state.get(key) not in order:
        st.session_state[key] = current if current in order else order[0]
    item = st.selectbox(label, order, key=key,
                        format_func=lambda i: f"{train.item_label(i)} [{i}] · {counts[i]} ratings",
                        help="The same item is shown on every KM page until you pick another.")
    set_item(run, item)
    return item


def phase_metrics(trace) -> None:
    """One metric per phase of Alg. 2: its share of all dual iterations of the run."""
    shares = phase_shares(trace, PHASE_COUNT_LABELS)
    if not len(shares):
        return
    overall = shares.iloc[0].drop("iteration")
    cols = st.columns(len(overall))
    for c, (phase, share) in zip(cols, overall.items()):
        c.metric(f"phase {phase}", "n/a" if share != share else f"{share:.1%}",
                 help="Share of all dual GD iterations of the run spent in this phase.")


# --------------------------------------------------------------------- stability over refits
class StabilityJob(BackgroundJob):
    """:func:`kmviz.km.stable_implications` of one run in a background thread (Streamlit
    cannot cancel a script), with progress and a stop flag checked between refits. The
    refits take a place in the server's fit queue like any fit (:func:`scheduler.gate`)."""

    def __init__(self, run, liked, min_ratings: int, n_refits: int):
        from kmviz.runs import RunStore

        super().__init__("kmviz-stability", gate=gate)
        self.total, self.done_n, self.result, self.error = int(n_refits), 0, None, None
        self.started = time.perf_counter()
        self.elapsed = 0.0
        self.saved_note = ""  # what became of saving the table with the run
        self._inputs = (run, liked, min_ratings)
        # the store is chosen here (the page's, from the environment), used by the thread
        self._store = RunStore() if getattr(run, "saved", True) else None

    def _run(self) -> None:
        from kmviz.km.stability import stable_implications

        run, liked, min_ratings = self._inputs
        train = run.split.train
        settings = {k: v for k, v in run.model.get_params().items() if k != "random_state"}
        try:
            with self._turn() as go:
                if go:
                    self.started = time.perf_counter()
                    self.result = stable_implications(
                        train, liked=liked, validation=run.split.held_out(),
                        items=an.shown_items(train, min_ratings), n_refits=self.total,
                        random_state=run.params.get("random_state"),
                        progress=self._progress, stop=self.stop_event.is_set, **settings)
        except Exception as exc:  # shown on the page
            self.error = f"{type(exc).__name__}: {exc}"
        self.elapsed = time.perf_counter() - self.started
        if self.result is not None and not self.error:
            self._keep(run, liked, min_ratings)
        self._set(status="failed" if self.error else
                  "stopped" if self.stop_event.is_set() else "done")

    def _keep(self, run, liked, min_ratings) -> None:
        """Save the finished table with the run (so that it reopens with it), here in the
        thread: it is kept even when the page was left before the refits ended."""
        from kmviz.km.saved_tables import save_stability

        if self.stop_event.is_set():
            self.saved_note = "Stopped before the last refit: not saved with the run."
        elif self._store is None:
            self.saved_note = "Not saved: the run itself is not in the run store."
        else:
            try:
                save_stability(run.run_id, self.result, liked=liked,
                               min_ratings=min_ratings, store=self._store)
                self.saved_note = "Saved with the run: it reopens with it."
            except (ValueError, OSError) as exc:
                self.saved_note = f"Not saved with the run: {exc}"

    def _progress(self, done: int, total: int) -> None:
        self.done_n = done

    @property
    def finished(self) -> bool:
        return self.done


def _stability_key(run, liked, min_ratings) -> str:
    return f"{run.run_id}|{liked}|{int(min_ratings)}"


def stability_panel(run, liked, min_ratings: int):
    """On the Implications page: B, the button that starts the refits, their progress and
    Stop; returns the finished :func:`kmviz.km.stable_implications` table, else None."""
    from kmviz.km.stability import DEFAULTS

    jobs = st.session_state.setdefault("impl_stability_jobs", {})
    key = _stability_key(run, liked, min_ratings)
    c1, c2, c3 = st.columns([1, 1, 3], vertical_alignment="bottom")
    B = int(c1.number_input("refits B", min_value=2, max_value=200,
                            value=DEFAULTS["n_refits"], step=5, key="impl_stab_B",
                            help="KM is refitted B times, each on half of the users (drawn "
                                 "without replacement) with its own seed and the run's "
                                 "settings."))
    job = jobs.get(key)
    saved = None if job is not None else saved_stability_table(run, liked, min_ratings)
    if c2.button("Compute again" if saved is not None and saved.table is not None
                 else "Compute stability", key="impl_stab_go", icon=":material/replay:",
                 disabled=job is not None and not job.finished):
        for other in jobs.values():  # one stability job per session: the newest
            other.stop()
        st.session_state.get("impl_stability_saved", {}).pop(key, None)  # read anew later
        jobs[key] = job = StabilityJob(run, liked, min_ratings, B).start()
        st.rerun()  # the button shows disabled while the refits run
    c3.caption("Stability: the share of refits on resampled users in which an implication "
               "holds. Out-of-bag figures check each refit on the users it did not see.")
    if job is None:
        if saved is not None and saved.notice:
            st.warning(saved.notice, icon=":material/warning:")
        if saved is None or saved.table is None:
            return None
        when = saved.saved.created.replace("T", " ").replace("+00:00", " UTC")
        st.caption(f"Saved with the run ({when}, "
                   f"{int(saved.table.attrs.get('n_refits', 0))} refits): reopened as it was "
                   "computed. Compute again to refit.")
        return saved.table

    @st.fragment(run_every=0.5 if not job.finished else None)
    def _progress():
        if not job.finished:
            if job.status == "queued":  # the server's fit queue (kmviz app --max-fits)
                st.info(scheduler().queue_words(job), icon=":material/hourglass_empty:")
            else:
                st.progress(job.done_n / max(job.total, 1),
                            text=f"Refit {job.done_n} of {job.total} · "
                                 f"{time.perf_counter() - job.started:.0f} s")
            if st.button("Stop", key="impl_stab_stop", icon=":material/stop:",
                         disabled=job.stop_event.is_set(),
                         help="No new refit starts (on a Dask cluster the pending ones are "
                              "cancelled); the refits done are kept."):
                job.stop_event.set()
            return
        if job.error:
            st.error(job.error, icon=":material/error:")
        elif job.saved_note:
            st.caption(job.saved_note)
        if not st.session_state.get(f"impl_stab_seen_{id(job)}"):
            st.session_state[f"impl_stab_seen_{id(job)}"] = True
            st.rerun(scope="app")

    with st.container():
        _progress()
    return job.result if job.finished else None



def saved_stability_table(run, liked, min_ratings: int):
    """The stability saved with the run for these settings
    (:func:`kmviz.km.saved_tables.saved_stability`: the table, or None and a notice), read
    once per session and setting; None for a run that is not in the store."""
    from kmviz.km.saved_tables import saved_stability
    from kmviz.runs import RunStore

    if not getattr(run, "saved", True):
        return None
    cache = st.session_state.setdefault("impl_stability_saved", {})
    key = _stability_key(run, liked, min_ratings)
    if key not in cache:
        cache[key] = saved_stability(run.run_id, liked=liked, min_ratings=min_ratings,
                                     store=RunStore())
    return cache[key]


@st.cache_data(max_entries=16, show_spinner="Looking for an item where Figs. 1 and 2 differ ...")
def _dual_teaching_item(run_id: str, gamma: float, *, _run):
    from kmviz.km.teaching import dual_item
    return dual_item(_run.model, _run.split.train, gamma)


def opening_dual_item(run):
    """The Dual GD page's first item for ``run`` (:func:`kmviz.km.teaching.dual_item`),
    made the run's current item when none was picked yet; returns the choice (or None
    when an item was picked already)."""
    if (st.session_state.get(StateKeys.ITEM) or {}).get(run.run_id) is not None:
        return None
    choice = _dual_teaching_item(run.run_id, float(run.params.get("gamma", 100.0)), _run=run)
    if choice.item is not None:
        set_item(run, choice.item)
    return choice
