"""Page building blocks that draw with streamlit: guards, pickers, summaries, progress."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from .errors import show_exception
from .state import StateKeys, active_run, add_run, session_runs

DATA_PAGE = "pages/1_Data.py"
TRAIN_PAGE = "pages/2_Train.py"


def collect_finished_job() -> None:
    """Register the session's finished background fit as a run (once), on any page."""
    job = st.session_state.get(StateKeys.JOB)
    if job is not None and job.done and not job.consumed:
        job.consumed = True
        if job.result is not None:
            add_run(job.result)


def require_dataset():
    """The loaded dataset and split, or a pointer to the Data page and stop."""
    ratings = st.session_state.get(StateKeys.DATASET)
    split = st.session_state.get(StateKeys.SPLIT)
    if ratings is None or split is None:
        st.info("Load a dataset first: pick a built-in one, upload a file, or give a path.")
        st.page_link(DATA_PAGE, label="Go to Data", icon=":material/database:")
        st.stop()
    return ratings, split


def require_run(*, need_split: bool = False):
    """The run the Explore pages show, chosen among this session's and the saved runs.

    A saved run is opened on first use (its split and model rebuilt from the run store)
    and then kept with the session's runs. Without any run: a pointer to Train, and stop.
    With ``need_split``, a run saved without its data stops the page with a note.
    """
    opts = run_options()
    if not opts:
        st.info("Train a model first; the Explore pages show what it learned.")
        st.page_link(TRAIN_PAGE, label="Go to Train", icon=":material/model_training:")
        st.stop()
    ids = list(opts)
    current = st.session_state.get(StateKeys.ACTIVE_RUN)
    if current not in opts:
        newest = active_run()
        current = newest.run_id if newest is not None else ids[0]
    rid = st.selectbox("Run", ids, index=ids.index(current), format_func=opts.get,
                       key="explore_run",
                       help="This session's runs and the runs saved in the run store.")
    st.session_state[StateKeys.ACTIVE_RUN] = rid
    run = session_runs().get(rid)
    if run is None:
        run = open_saved_run(rid)
    if need_split and run.split is None:
        st.info(f"Run {run.label!r} was saved without its training data (by an earlier "
                "kmviz version), so its per-item views (one item's binary QP, Lanczos on "
                "C(u*), implications checked against the ratings) cannot be rebuilt. Its "
                "convergence curves and phases are on the Convergence and Phases pages. "
                "Re-run it from the Runs page to get a run that carries its data.",
                icon=":material/info:")
        st.stop()
    return run


def open_saved_run(run_id: str):
    """Load a saved run into this session's runs (stops the page with a message on failure)."""
    from kmviz.runs import RunStore

    from .runs import record_from_saved

    try:
        record = record_from_saved(RunStore().load(run_id))
    except Exception as exc:  # noqa: BLE001 - a damaged run must not break the page
        show_exception(exc, f"opening the saved run {run_id}")
        st.stop()
    add_run(record)
    return record


def item_picker(run, *, key: str, label: str = "Item", prefer: str = "most"):
    """Select an item that has training ratings; shows names and rating counts.

    The list runs from the most rated item down; ``prefer="median"`` preselects the median
    item among those with at least 10 ratings (all items if none has): the paper's step rule
    needs thousands of dual iterations on the most rated items, so the dual GD figures start
    from a typical one."""
    from .analysis import items_by_count

    train = run.split.train
    order = items_by_count(train)
    if len(order) == 0:
        st.info("No item has training ratings.")
        st.stop()
    counts = train.item_counts()
    index = 0
    if prefer == "median":
        n_rated = int(np.sum(counts[order] >= 10)) or len(order)  # order: most rated first
        index = n_rated // 2
    return st.selectbox(label, order, key=key, index=index,
                        format_func=lambda i: f"{train.item_label(i)} [{i}] · {counts[i]} ratings")


def dataset_metrics(ratings) -> None:
    c = st.columns(5)
    c[0].metric("users", f"{ratings.n_users:,}")
    c[1].metric("items", f"{ratings.n_items:,}")
    c[2].metric("ratings", f"{ratings.n_ratings:,}")
    c[3].metric("density", f"{ratings.density:.2%}")
    scale = "0/1 interactions" if ratings.implicit else f"{ratings.r_min:g} – {ratings.r_max:g}"
    c[4].metric("scale", scale)


def side_information(ratings) -> pd.DataFrame:
    d = ratings.describe()
    rows = [
        ("item names", "yes" if d["item_names"] else "no"),
        ("user names", "yes" if d["user_names"] else "no"),
        ("item features", ", ".join(map(str, d["item_features"][:12])) if d["item_features"]
         else "none"),
        ("user features", ", ".join(map(str, d["user_features"][:12])) if d["user_features"]
         else "none"),
        ("item graph", "yes" if d["item_graph"] else "no"),
        ("user graph", "yes" if d["user_graph"] else "no"),
    ]
    rows += [(k[5:], str(v)) for k, v in d.items() if k.startswith("info_")]
    return pd.DataFrame(rows, columns=["side information", "present"])


def run_metrics(run) -> None:
    m = run.metrics
    c = st.columns(5)
    c[0].metric("BCD iterations", m.get("n_iter", run.trace.n_iter))
    c[1].metric("training RMSE", f"{m.get('final_train_rmse', float('nan')):.4f}")
    c[2].metric("validation NRMSE", f"{m.get('validation_nrmse', float('nan')):.4f}")
    c[3].metric("test NRMSE", f"{m.get('test_nrmse', float('nan')):.4f}")
    c[4].metric("time", f"{m.get('wall_s', float('nan')):.1f} s")
    st.caption(f"Run `{run.run_id}` · stop reason: {run.stop_reason or 'n/a'} · "
               "NRMSE = RMSE on the probability scale, the paper's measure for KM (Sec. V-B).")


def phase_metrics(trace) -> None:
    """One metric per phase of Alg. 2: its share of all dual iterations of the run."""
    from kmviz.viz.phases import phase_shares

    shares = phase_shares(trace)
    if not len(shares):
        return
    overall = shares.iloc[0].drop("iteration")
    cols = st.columns(len(overall))
    for c, (phase, share) in zip(cols, overall.items()):
        c.metric(f"phase {phase}", "n/a" if share != share else f"{share:.1%}",
                 help="Share of all dual GD iterations of the run spent in this phase.")


def progress_panel() -> None:
    """Progress of this session's background fit, polled by a fragment while it runs."""
    job = st.session_state.get(StateKeys.JOB)
    running = job is not None and not job.done

    @st.fragment(run_every=0.5 if running else None)
    def _panel():
        job_now = st.session_state.get(StateKeys.JOB)
        if job_now is None:
            return
        snap = job_now.progress()
        status = snap["status"]
        frac = min(1.0, snap["n_done"] / max(1, snap["max_iter"]))
        last = snap["last"] or {}
        text = f"{status}: iteration {snap['n_done']} of at most {snap['max_iter']}"
        if last:
            text += (f" · objective {last.get('objective', float('nan')):.5g} · training RMSE "
                     f"{last.get('train_rmse', float('nan')):.4f}")
            if last.get("val_nrmse") is not None:
                text += f" · validation NRMSE {last['val_nrmse']:.4f}"
        text += f" · {snap['elapsed_s']:.1f} s"
        st.progress(1.0 if status == "done" else frac, text=text)
        if status == "queued":
            from .training import background_warm_up

            if not background_warm_up().done.is_set():
                st.info("Waiting for the Numba kernels to finish compiling (first start "
                        "after installing only); this fit starts as soon as they are ready.")
            else:
                st.info("Waiting: another session on this server is training; this fit "
                        "starts when it ends.")
        if not job_now.done:
            if st.button("Stop", key="train_stop", icon=":material/stop:",
                         disabled=snap["stop_requested"],
                         help="End training after the current BCD iteration; the model "
                              "learned so far is kept and saved."):
                job_now.stop()
                st.toast("Stopping after the current iteration ...")
            return
        if status == "failed":
            _failed(snap)
        elif status == "stopped":
            st.warning(snap["message"], icon=":material/stop_circle:")
        else:
            st.success(snap["message"], icon=":material/check_circle:")
        if snap["save_error"]:
            st.warning(snap["save_error"] + " The run stays available in this session.",
                       icon=":material/warning:")
        if not job_now.consumed:
            collect_finished_job()
            st.rerun(scope="app")

    _panel()


def _failed(snap) -> None:
    """A failed fit: the ValueError's own message, or a friendly note with folded details."""
    if not snap["details"]:
        st.error(snap["message"], icon=":material/error:")
        return
    st.error(snap["message"], icon=":material/bug_report:")
    with st.expander("Details"):
        st.code(snap["details"], language="text")


# -------------------------------------------------------------------- runs of both kinds
def saved_runs_frame() -> pd.DataFrame:
    """The run store's listing (empty if it cannot be read; the error is shown once)."""
    from kmviz.runs import RunStore

    try:
        return RunStore().list()
    except Exception as exc:  # noqa: BLE001 - a broken store must not break the page
        show_exception(exc, "reading the run store")
        return pd.DataFrame(columns=["run_id", "label", "created"])


@st.cache_data(max_entries=64, show_spinner=False)
def _saved_trace_dict(run_id: str, store_dir: str) -> dict:
    from kmviz.runs import RunStore

    return RunStore(store_dir).load(run_id).trace.to_dict()


def run_options() -> dict:
    """run_id -> label, this session's runs first (newest first), then the saved ones."""
    opts = {rid: f"{r.label} · {'saved' if r.reopened else 'this session'}" for rid, r in
            sorted(session_runs().items(), key=lambda kv: -kv[1].created)}
    saved = saved_runs_frame()
    for row in saved.itertuples():
        if row.run_id not in opts:
            when = pd.Timestamp(row.created).strftime("%Y-%m-%d %H:%M")
            opts[row.run_id] = f"{row.label} · saved {when}"
    return opts


def get_trace(run_id: str):
    """The trace of a session run or a saved run."""
    from kmviz.runs import default_runs_dir
    from kmviz.trace import Trace

    runs = session_runs()
    if run_id in runs:
        return runs[run_id].trace
    return Trace.from_dict(_saved_trace_dict(run_id, str(default_runs_dir())))


def trace_picker(*, multi: bool, key: str):
    """Pick runs (session + saved) and return {label: trace}; stop with a hint if none."""
    opts = run_options()
    if not opts:
        st.info("No runs yet: train a model first.")
        st.page_link(TRAIN_PAGE, label="Go to Train", icon=":material/model_training:")
        st.stop()
    current = active_run()
    first = current.run_id if current is not None and current.run_id in opts else next(iter(opts))
    if multi:
        chosen = st.multiselect("Runs to overlay", list(opts), default=[first], key=key,
                                format_func=opts.get)
    else:
        ids = list(opts)
        chosen = [st.selectbox("Run", ids, index=ids.index(first), key=key,
                               format_func=opts.get)]
    out = {}
    for rid in chosen:
        try:
            out[f"{opts[rid]} [{rid[-8:]}]"] = get_trace(rid)
        except Exception as exc:  # noqa: BLE001
            show_exception(exc, f"loading run {rid}")
    return out
