"""Streamlit glue of the Implications page's first section, "Relations in the data": the
relation miner's default path on the run (:func:`kmviz.km.run_relations.mine_run_relations`,
the same code path as ``kmviz implications --run``) computed in a background job with
progress and Stop, saved with the run (:mod:`kmviz.km.saved_tables`) so that it reopens
after a restart, and shown through the page's table view (:mod:`.km_relation_table`)."""

from __future__ import annotations

import time

import streamlit as st

from kmviz._jobs import BackgroundJob

from ..scheduler import gate, scheduler
from ..text import md_escape
from .km_relation_table import relation_table

#: Runs with fewer training ratings start the mining on the first open of the page.
AUTO_MAX_RATINGS = 200_000
#: The session-state keys of the jobs, the saved tables read and the runs started once.
JOBS, SAVED, AUTO = "impl_rel_jobs", "impl_rel_saved", "impl_rel_auto"


class RelationsJob(BackgroundJob):
    """:func:`kmviz.km.run_relations.mine_run_relations` of one run in a thread, with its
    progress (``done_n`` of ``total``, ``what``) and Stop; the finished table is saved with
    the run from the thread (kept even when the page was left)."""

    def __init__(self, run, liked):
        from kmviz.runs import RunStore

        super().__init__("kmviz-relations", gate=gate)
        self.done_n, self.total, self.what = 0, 1, "starting"
        self.result, self.error, self.saved_note = None, None, ""
        self.started = time.perf_counter()
        self._inputs = (run, liked)
        self._store = RunStore() if getattr(run, "saved", True) else None

    def _run(self) -> None:
        from kmviz.km.run_relations import mine_run_relations

        run, liked = self._inputs
        try:
            with self._turn() as go:
                if go:
                    self.started = time.perf_counter()
                    self.result = mine_run_relations(run, liked=liked,
                                                     progress=self._progress,
                                                     stop=self.stop_event.is_set)
        except Exception as exc:  # shown on the page
            self.error = f"{type(exc).__name__}: {exc}"
        if self.result is not None and not self.error:
            self._keep(run, liked)
        self._set(status="failed" if self.error else
                  "stopped" if self.stop_event.is_set() else "done")

    def _keep(self, run, liked) -> None:
        from kmviz.km.saved_tables import save_relations

        if self.stop_event.is_set():
            self.saved_note = "Stopped early: shown, not saved with the run."
        elif self._store is None:
            self.saved_note = "Not saved: the run itself is not in the run store."
        else:
            try:
                save_relations(run.run_id, self.result, store=self._store,
                               meta={"liked": liked})
                self.saved_note = "Saved with the run: it reopens with it."
            except (ValueError, OSError) as exc:
                self.saved_note = f"Not saved with the run: {exc}"

    def _progress(self, done: int, total: int, what: str) -> None:
        self.done_n, self.total, self.what = int(done), int(total), str(what)


def _saved(run):
    """The relation table saved with the run (read once per session), or None."""
    from kmviz.km.saved_tables import saved_relations
    from kmviz.runs import RunStore

    if not getattr(run, "saved", True):
        return None
    cache = st.session_state.setdefault(SAVED, {})
    if run.run_id not in cache:
        cache[run.run_id] = saved_relations(run.run_id, store=RunStore())
    return cache[run.run_id]


def _start(run, liked):
    jobs = st.session_state.setdefault(JOBS, {})
    for other in jobs.values():  # one relation job per session: the newest
        other.stop()
    st.session_state.setdefault(SAVED, {}).pop(run.run_id, None)
    jobs[run.run_id] = job = RelationsJob(run, liked).start()
    return job


def _progress_fragment(job) -> None:
    """Progress and Stop, redrawn every half second; once the job ends, the whole page runs
    again (it then shows the table, and no fragment)."""
    @st.fragment(run_every=0.5)
    def _progress():
        if job.done:
            st.rerun(scope="app")
        if job.status == "queued":
            st.info(scheduler().queue_words(job), icon=":material/hourglass_empty:")
        else:
            st.progress(min(job.done_n / max(job.total, 1), 1.0),
                        text=f"{job.what} · step {job.done_n} of {job.total} · "
                             f"{time.perf_counter() - job.started:.0f} s")
        if st.button("Stop", key="impl_rel_stop", icon=":material/stop:",
                     disabled=job.stop_event.is_set(),
                     help="Ends the mining at its next check; the refits done are kept "
                          "in the table."):
            job.stop_event.set()

    with st.container():
        _progress()


def _finished(job) -> None:
    if job.error:
        st.error(md_escape(job.error), icon=":material/error:")
    elif job.saved_note:
        st.caption(job.saved_note)


def _chosen(table) -> None:
    chosen = table.attrs.get("chosen") or {}
    if chosen.get("summary"):
        st.caption("How the default was chosen: " + md_escape(str(chosen["summary"])))
    for w in chosen.get("warnings") or []:
        st.warning(md_escape(str(w)), icon=":material/warning:")


def _metrics(table):
    def show(counts, passing):
        m = st.columns(4)
        m[0].metric("relations", f"{len(table):,}")
        m[1].metric("with two items on the left",
                    f"{int((table['size'] > 1).sum()) if 'size' in table else 0:,}")
        m[2].metric("refits", f"{int(table.attrs.get('n_refits', 0)):,}")
        m[3].metric("rows passing the filters", f"{passing:,}")
    return show


def relations_section(run, liked, fmt, names):
    """The section: Compute (or the automatic start on a small run), progress and Stop,
    then how the default was chosen and the table view. Returns the table shown, or None.
    One keyed block whatever its state, so the blocks below keep their place on the page."""
    with st.container(key="rel_block"):
        return _section(run, liked, fmt, names)


def _section(run, liked, fmt, names):
    st.subheader("Relations in the data")
    st.caption("The relation miner's default path on this run's training part (the same as "
               "`kmviz implications --run`): KM refits with the run's settings (or, when the "
               "run is no better than the mean, settings chosen on the data), pairs and "
               "{a, b} ⇒ c conjunctions, ranked by the evidence in the ratings. The model's "
               "own implications follow below.")
    jobs = st.session_state.setdefault(JOBS, {})
    job = jobs.get(run.run_id)
    saved = _saved(run) if job is None else None
    has_saved = saved is not None and saved.table is not None
    auto = st.session_state.setdefault(AUTO, set())
    if (job is None and not has_saved and run.run_id not in auto
            and run.split.train.n_ratings < AUTO_MAX_RATINGS):
        auto.add(run.run_id)  # once per session: Stop is not undone by a rerun
        job = _start(run, liked)
    running = job is not None and not job.done
    if st.button("Compute again" if has_saved or (job is not None and job.done)
                 else "Compute", key="impl_rel_go", icon=":material/play_arrow:",
                 disabled=running):
        _start(run, liked)
        st.rerun()
    table = None
    if job is not None and not job.done:
        _progress_fragment(job)
    elif job is not None:
        _finished(job)
        table = job.result
    elif saved is not None:
        if saved.notice:
            st.warning(saved.notice, icon=":material/warning:")
        if has_saved:
            table = saved.table
            when = saved.saved.created.replace("T", " ").replace("+00:00", " UTC")
            st.caption(f"Saved with the run ({when}): reopened as it was computed.")
            then = (saved.saved.meta or {}).get("liked")
            if then is not None and str(then) != str(liked):
                st.caption(f"Computed with liked = {then}; Compute again to use {liked}.")
    if table is None:
        return None
    _chosen(table)
    relation_table(run, table, None, run.split.validation, run.split.train, liked, fmt,
                   names, _metrics(table), prefix="rel", title=None)
    return table
