"""Page building blocks that draw with streamlit: guards, pickers, summaries, progress."""

from __future__ import annotations

import os
import re

import pandas as pd
import streamlit as st

from kmviz import families
from kmviz.runs import RunStore, default_runs_dir
from kmviz.trace import Trace
from kmviz.viz._theme import plural

from .datasets import apply_pending_load, ensure_dataset, measured_settings
from .errors import show_exception
from .memory import release_memory
from .runs import record_from_saved
from .state import StateKeys, active_run, add_run, session_runs
from .text import md_escape, metric_label
from .forms import form_params
from .training import request_training, start_requested_job, warm_up

DATA_PAGE = "app_pages/data.py"
TRAIN_PAGE = "app_pages/train.py"
CONVERGENCE_PAGE = "app_pages/convergence.py"
RUNS_PAGE = "app_pages/runs.py"


def collect_finished_job(family: str | None = None) -> None:
    """Register the session's finished background fit as a run (once), on any page.

    Called at the top of every page; a family's Explore page passes its ``family``, whose
    kernels the warm-up then compiles next."""
    apply_pending_load()  # a Load whose callback was stopped before it could finish
    if family is not None:
        warm_up().ask(family)
    job = st.session_state.get(StateKeys.JOB)
    if job is not None and job.done and not job.consumed:
        job.consumed = True
        if job.result is not None:
            add_run(job.result)
        release_memory()  # the fit's work arrays are gone: give their pages back


def require_dataset():
    """The session's dataset and split (the built-in default in a fresh session), or a
    pointer to the Data page and stop."""
    ratings, split = ensure_dataset()
    if ratings is None or split is None:
        st.info("Load a dataset first: pick a built-in one, upload a file, or give a path.")
        st.page_link(DATA_PAGE, label="Go to Data", icon=":material/database:")
        st.stop()
    return ratings, split


def pick_family_on_train(family: str) -> None:
    """Make ``family`` the one the Train page shows next (a button that leads to Train for
    one family, such as Home's "Use a planted KM set instead", calls this first)."""
    # the Train page's picker reads its own key, else the session's family
    st.session_state[StateKeys.FAMILY] = st.session_state["train_family"] = family


_pick_family_on_train = pick_family_on_train


def no_runs_yet(family: str | None = None) -> None:
    """Say there is no run to show (of ``family``, when given), offer to train one, and stop.

    With a family, the page trains one itself at one click (the settings measured for this
    built-in dataset, else the Train form's), shows its progress and then what it learned:
    a teacher opening an Explore page first sees its figure, not a detour. The second
    button opens Train with that family picked, to change the settings first."""
    lesson = lesson_data()
    family = family or lesson_family(lesson)  # a lesson: train its family here
    if family is None:
        st.info("No runs yet: train a model first; this page shows what it learned.")
        st.page_link(TRAIN_PAGE, label="Go to Train", icon=":material/model_training:")
        st.stop()
    fam = families.get(family)
    title, short = fam.title, fam.short or fam.title
    ratings, _ = require_dataset()
    start_requested_job()  # a click of "Train ... here" on the run before this one
    job = st.session_state.get(StateKeys.JOB)
    if job is not None and job.family == family:  # its progress, then (rerun) the run
        progress_panel()
        if not job.done:
            st.caption(f"This page shows what the {md_escape(short)} fit learned as soon as "
                       "it ends.")
            st.stop()
    params, measured = settings_here(family)
    how = "the settings measured on this dataset" if measured else "the Train page's settings"
    where = " on the lesson's data" if lesson is not None else ""
    st.info(f"No {title} run{where} yet. Train one here on **{md_escape(ratings.name)}** at "
            f"{how}, and this page shows what it learned.", icon=":material/model_training:")
    left, right = st.columns(2)
    left.button(f"Train {short} here", key="no_runs_train_here", type="primary",
                icon=":material/play_arrow:", on_click=request_training,
                args=(family, params), use_container_width=True)
    if right.button("Change the settings on Train first", key="no_runs_train",
                    icon=":material/tune:", on_click=_pick_family_on_train, args=(family,),
                    use_container_width=True):
        st.switch_page(TRAIN_PAGE)
    st.stop()


def settings_here(family: str) -> tuple[dict, bool]:
    """The settings a page's own "Train here" fits: the Train form's, with the measured ones
    on top (and whether there were such)."""
    params = form_params(families.get(family))
    suggestion = measured_settings(family)
    if suggestion is None:
        return params, False
    return {**params, **suggestion.params}, True


def require_run(*, family: str | None = None, need_model: bool = False):
    """The run the Explore pages show, chosen among this session's and the saved runs
    (only runs of ``family`` when given).

    A saved run is opened on first use (its model and split rebuilt from the run store)
    and then kept with the session's runs. Without any run: a pointer to Train, and stop.
    With ``need_model``, a run that cannot give its model and data stops the page with the
    reason.
    """
    opts = run_options(family=family)
    if not opts:
        no_runs_yet(family)
    ids = list(opts)
    current = st.session_state.get(StateKeys.ACTIVE_RUN)
    if current not in opts:
        newest = active_run()
        current = newest.run_id if newest is not None and newest.run_id in opts else ids[0]
    rid = st.selectbox("Run", ids, index=ids.index(current), format_func=opts.get,
                       key=f"explore_run_{family or 'any'}",
                       help="This session's runs and the runs saved in the run store.")
    st.session_state[StateKeys.ACTIVE_RUN] = rid
    run = session_runs().get(rid)
    if run is None:
        run = open_saved_run(rid)
    if need_model and (run.model is None or run.split is None):
        st.info(md_escape(run.problem or f"Run {run.label!r} cannot be reopened here."),
                icon=":material/info:")
        st.page_link(CONVERGENCE_PAGE, label="See its convergence",
                     icon=":material/show_chart:")
        st.stop()
    return run


def open_saved_run(run_id: str):
    """Load a saved run into this session's runs (stops the page with a message on failure)."""
    try:
        record = record_from_saved(run_id)
    except Exception as exc:  # noqa: BLE001 - a damaged run must not break the page
        show_exception(exc, f"opening the saved run {run_id}")
        st.stop()
    add_run(record)
    return record


_BENCH = r"`[^`]*bench/[^`]*`"
#: Developer text that a page does not show: the benchmark commands and machine loads in
#: the catalogue's notes (they stay in the code and bench/README.md, for developers).
_DEVELOPER_TEXT = [
    # "; `cmd`, more words" keeps its words; "; `cmd` compares." drops the clause (to the
    # end of the sentence or the bracket: a decimal point such as 0.01 does not end it)
    (rf"\s*by {_BENCH}", ""), (rf";\s*{_BENCH}(?=[,)])", ""),
    (rf";\s*{_BENCH}(?:[^.;)]|\.(?=\d))*", ""), (rf"\s*\({_BENCH}\)", ""),
    (rf",\s*{_BENCH}", ""), (rf"\s*{_BENCH}\.?", ""),
    (r",?\s*but took [^.;()]*? at load \d+", ""), (r",?\s*\bat load \d+", ""),
]


def page_note(text: str) -> str:
    """A catalogue note as a page shows it: without benchmark commands or machine loads."""
    out = str(text or "")
    for pattern, repl in _DEVELOPER_TEXT:
        out = re.sub(pattern, repl, out)
    out = re.sub(r"\s+([.,;)])", r"\1", out)
    return re.sub(r"\s{2,}", " ", out).strip()


def _setting_text(spec, value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if spec is not None and isinstance(value, str):
        return spec.option_labels.get(value, value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def suggestion_panel(family) -> dict | None:
    """Offer the settings the catalogue measured for this built-in dataset and ``family``
    (:func:`kmviz.data.suggested_settings`), with how they were chosen and a button that
    loads them into the form. Returns the form's new settings (the family's defaults with
    the suggested ones) on the run after the button was pressed, else None."""
    suggestion = measured_settings(family.name)
    if suggestion is None:
        return None
    key = f"kmviz_use_suggested_{family.name}"
    asked = st.session_state.pop(key, False)
    constraints = family.constraints()
    settings = ", ".join(
        f"{getattr(constraints.get(k), 'label', '') or k} = "
        f"{_setting_text(constraints.get(k), v)}" for k, v in suggestion.params.items())
    with st.container(border=True):
        st.markdown(f"**Settings measured on this dataset:** {settings}.")
        st.caption(page_note(suggestion.note))  # written in the catalogue, not user text
        st.button("Use these settings", key=f"kmviz_suggest_button_{family.name}",
                  icon=":material/tune:", on_click=st.session_state.__setitem__,
                  args=(key, True))
    if not asked:
        return None
    return {**family.default_params(), **suggestion.params}


def dataset_metrics(ratings) -> None:
    c = st.columns(5)
    row_noun, column_noun = getattr(ratings, "nouns", ("user", "item"))
    c[0].metric(plural(row_noun), f"{ratings.n_users:,}")
    c[1].metric(plural(column_noun), f"{ratings.n_items:,}")
    c[2].metric("ratings", f"{ratings.n_ratings:,}")
    c[3].metric("density", f"{ratings.density:.2%}")
    if ratings.implicit:  # short: a metric's value is cut to its column's width
        c[4].metric("scale", "0 / 1", help="0/1 interactions: every entry is a positive; "
                                           "the absent pairs are unknown, not 0.")
    else:
        c[4].metric("scale", f"{ratings.r_min:g} – {ratings.r_max:g}")


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
    """Metric cards of a run: iterations, the family's headline metrics, time."""
    fam = families.get(run.family)
    m = run.metrics
    shown = [k for k in fam.metrics if k in m][:4]
    c = st.columns(len(shown) + 2)
    c[0].metric("iterations", m.get("n_iter", run.trace.n_iter))
    for col, k in zip(c[1:], shown):
        col.metric(metric_label(k), f"{m[k]:.4f}", help=f"{k}: the run's metric name")
    c[-1].metric("time", f"{m.get('wall_s', float('nan')):.1f} s")
    meaning = (": nrmse is the RMSE on the model's [0, 1] scale, rmse on the rating scale"
               if any(k.endswith("_nrmse") for k in m) else "")
    st.caption(f"Run `{run.run_id}` · stop reason: {run.stop_reason or 'n/a'}. Metrics are "
               f"named part_metric{meaning}.")
    for event in getattr(run.trace, "events", []) or []:
        if event.get("kind") == "warning" and event.get("advice"):  # what the user can change
            st.warning(md_escape(str(event["message"])), icon=":material/warning:")


def compile_message(status: dict) -> str:
    """What the kernel warm-up is doing for one family (:meth:`WarmUp.status`), in words."""
    title = status["title"]
    after = (f" Still to compile after it: {', '.join(status['after'])}."
             if status["after"] else "")
    if status["state"] == "compiling" and status.get("cached"):
        return (f"Loading the compiled Numba kernels of {title} from disk "
                f"({status['seconds'] or 0:.0f} s so far): they were compiled on an earlier "
                f"start, so this takes seconds (any kernel missing from the cache is compiled "
                f"now).{after}")
    if status["state"] == "compiling":
        return (f"Compiling the Numba kernels of {title} ({status['seconds'] or 0:.0f} s so "
                "far). The first start after installing compiles them (from half a minute to "
                "a few minutes per model family on two cores); later starts load them from "
                f"disk in a few seconds.{after}")
    if status["state"] == "pending":
        before = ", ".join(status["before"]) or "the family compiling now"
        return (f"The Numba kernels of {title} compile next, after those of {before}."
                f"{after}")
    if status["state"] == "failed":
        return (f"Compiling the kernels of {title} in the background failed "
                f"({status['error']}); a fit compiles them itself, so its first iteration "
                "takes longer.")
    return f"The Numba kernels of {title} are compiled."


def kernels_notice(family: str) -> None:
    """On the Train page: whether ``family``'s kernels are still compiling, refreshed every
    second until they are ready (then the page reruns once)."""
    warm = warm_up()
    if warm.ready(family) and not warm.status(family)["error"]:
        return

    @st.fragment(run_every=1.0 if not warm.ready(family) else None)
    def _notice():
        status = warm.status(family)
        if status["state"] in ("compiling", "pending"):
            st.info(md_escape(compile_message(status) + " A fit you start now begins as "
                              f"soon as the kernels of {status['title']} are ready."),
                    icon=":material/hourglass_top:")
        elif status["state"] == "failed":
            st.warning(md_escape(compile_message(status)), icon=":material/warning:")
        else:  # ready: rerun the page once, which drops this notice and its polling
            st.rerun(scope="app")

    with st.container():  # one slot of the page, as for the progress panel below
        _notice()


#: The headline of the progress panel per job status.
STATUS_TEXT = {"compiling": "Compiling the kernels", "queued": "Queued",
               "running": "Training", "done": "Done", "stopped": "Stopped",
               "failed": "Failed"}


#: Seconds between two refreshes of the progress panel while a fit waits or runs: each
#: tick reruns only the panel's fragment (bar, queue line, Stop), and once a second is
#: enough for fits whose iterations take seconds. $KMVIZ_PROGRESS_EVERY_S changes it
#: (bench/app/load_test.py --tick-cost measures the cost of a tick with it).
PROGRESS_EVERY_S = float(os.environ.get("KMVIZ_PROGRESS_EVERY_S") or 1.0)


def progress_panel() -> None:
    """Progress of this session's background fit, polled by a fragment while it runs: the
    state it is in (compiling its family's kernels, queued behind another session's fit,
    training with progress, done, stopped, failed with the error)."""
    job = st.session_state.get(StateKeys.JOB)
    running = job is not None and not job.done

    @st.fragment(run_every=PROGRESS_EVERY_S if running else None)
    def _panel():
        job_now = st.session_state.get(StateKeys.JOB)
        if job_now is None:
            return
        snap = job_now.progress()
        status = snap["status"]
        frac = min(1.0, snap["n_done"] / max(1, snap["max_iter"]))
        last = snap["last"] or {}
        title = families.get(snap["family"]).short or snap["family"]
        if status == "compiling":
            loading = (snap["warm_up"] or {}).get("cached")
            text = (f"{'Loading the kernels' if loading else STATUS_TEXT[status]} of {title}: "
                    "not training yet")
        else:
            text = (f"{STATUS_TEXT.get(status, status)}: iteration {snap['n_done']} of at "
                    f"most {snap['max_iter']}")
        if last:
            text += f" · objective {last.get('objective', float('nan')):.5g}"
            for k, v in last.items():
                if k.startswith(("train_", "validation_")) and isinstance(v, (int, float)):
                    text += f" · {metric_label(k)} {v:.4f}"
        text += f" · {snap['elapsed_s']:.1f} s"
        st.progress(1.0 if status == "done" else frac, text=text)
        if status == "compiling" and snap["warm_up"] is not None:
            st.info(md_escape(compile_message(snap["warm_up"]) + " Training starts as soon "
                              "as they are ready."), icon=":material/hourglass_top:")
        elif status == "queued":
            st.info(md_escape(f"{snap['queue'] or 'Queued'}. This fit starts when its turn "
                              "comes; Stop takes it out of the queue."),
                    icon=":material/hourglass_top:")
        if not job_now.done:
            if st.button("Stop", key="train_stop", icon=":material/stop:",
                         disabled=snap["stop_requested"],
                         help="End training after the current iteration; the model "
                              "learned so far is kept and saved."):
                job_now.stop()
                st.toast("Stopping after the current iteration ...")
            return
        if status == "failed":
            _failed(snap)
        elif status == "stopped":
            st.warning(md_escape(snap["message"]), icon=":material/stop_circle:")
        elif finished_short(job_now):  # one message: not green beside "stopped before ..."
            st.info(md_escape(snap["message"]) + " It stopped at its iteration limit, before "
                    "its stopping criterion was met: the result below says what to change.",
                    icon=":material/pause_circle:")
        elif _warned(job_now):  # not green above a warning that the result is poor
            st.info(md_escape(snap["message"]) + " The fit raised a warning: read it with "
                    "the result below.", icon=":material/info:")
        else:
            st.success(md_escape(snap["message"]), icon=":material/check_circle:")
        if snap["save_error"]:
            st.warning(md_escape(snap["save_error"] + " The run stays available in this "
                                 "session."), icon=":material/warning:")
        if not job_now.consumed:
            collect_finished_job()
            st.rerun(scope="app")

    # One slot of the page for the fragment, whatever it draws inside: a fragment run left
    # over from an earlier script run then clears only its own elements, never the result
    # heading drawn after it (seen as a finished fit whose "Result:" heading was missing).
    with st.container():
        _panel()


def finished_short(job) -> bool:
    """Whether a finished fit ended at its iteration budget (not by its criterion)."""
    result = getattr(job, "result", None)
    return result is not None and str(getattr(result, "stop_reason", "")) == "max_iter"


def _failed(snap) -> None:
    """A failed fit: the ValueError's own message, or a friendly note with folded details."""
    if not snap["details"]:
        st.error(md_escape(snap["message"]), icon=":material/error:")
        return
    st.error(md_escape(snap["message"]), icon=":material/bug_report:")
    with st.expander("Details"):
        st.code(snap["details"], language="text")


# -------------------------------------------------------------------- runs of both kinds
LIVE = "live"  # the option of the session's running fit in the run pickers


def saved_runs_frame() -> pd.DataFrame:
    """The run store's listing (empty if it cannot be read; the error is shown once)."""
    try:
        return RunStore().list()
    except Exception as exc:  # noqa: BLE001 - a broken store must not break the page
        show_exception(exc, "reading the run store")
        return pd.DataFrame(columns=["run_id", "label", "created", "family"])


@st.cache_data(max_entries=64, show_spinner=False)
def _saved_trace_dict(run_id: str, store_dir: str) -> dict:
    return RunStore(store_dir).load(run_id).trace.to_dict()


def running_job():
    """This session's fit while it runs (None otherwise)."""
    job = st.session_state.get(StateKeys.JOB)
    return job if job is not None and not job.done else None


def lesson_data() -> str | None:
    """In lesson mode, the fingerprint of the data loaded now (the lesson's): its pages show
    runs on those data only, never a run another browser made on other data (seen as the KM
    lesson's Convergence step opening on an analyst's flat two-iteration fit). None outside
    lesson mode."""
    if not st.session_state.get(StateKeys.LESSON_ON):
        return None
    ratings = st.session_state.get(StateKeys.DATASET)
    return None if ratings is None else ratings.fingerprint()


def lesson_family(lesson: str | None) -> str | None:
    """The family a lesson's page shows when it names none: the session's (the lesson's
    links set it); None outside a lesson (``lesson``: :func:`lesson_data`)."""
    return None if lesson is None else st.session_state.get(StateKeys.FAMILY)


def run_options(*, family: str | None = None, live: bool = False) -> dict:
    """run_id -> label, the running fit first (``live``), this session's runs (newest
    first), then the saved ones; only runs of ``family`` when given, and in lesson mode
    only runs of the lesson's family on the lesson's data (:func:`lesson_data`)."""
    opts = {}
    data = lesson_data()
    family = family or lesson_family(data)  # a lesson's page: its family's runs only
    job = running_job() if live else None
    if job is not None and (family is None or job.family == family):
        opts[LIVE] = f"{job.label} · training now"
    for rid, r in sorted(session_runs().items(), key=lambda kv: -kv[1].created):
        if (family is None or r.family == family) and data in (None, r.fingerprint):
            opts[rid] = f"{r.label} · {'saved' if r.reopened else 'this session'}"
    saved = saved_runs_frame()
    for row in saved.itertuples():
        if data is not None and getattr(row, "fingerprint", None) != data:
            continue
        if row.run_id not in opts and (family is None or getattr(row, "family", None) == family):
            when = pd.Timestamp(row.created).strftime("%Y-%m-%d %H:%M")
            opts[row.run_id] = f"{row.label} · saved {when}"
    return unique_labels(opts)


def unique_labels(opts: dict) -> dict:
    """``{run_id: label}`` with every label told apart: labels that occur more than once
    get the end of their run id (" · 3f9a1c2e"). Streamlit's pickers keep a choice by its
    label, so two runs of the same name saved in the same minute would otherwise be one
    option (only one of them could be overlaid on Convergence)."""
    seen: dict = {}
    for label in opts.values():
        seen[label] = seen.get(label, 0) + 1
    return {rid: (f"{label} · {str(rid)[-8:]}" if seen[label] > 1 else label)
            for rid, label in opts.items()}


def run_record(run_id: str):
    """A session run, or a saved one opened into the session (None if it cannot be)."""
    run = session_runs().get(run_id)
    if run is None and run_id != LIVE:
        try:
            run = record_from_saved(run_id)
        except Exception:  # noqa: BLE001 - the caller draws what it can without it
            return None
        runs = dict(session_runs())
        runs[run.run_id] = run
        st.session_state[StateKeys.RUNS] = runs
    return run


def mean_predictor_lines(run_id: str):
    """(family, {trace column: value}) of the mean-predictor yardstick for a run's data:
    the family's ``mean_predictor_metrics`` on the training and validation parts, named as
    the trace's columns. Empty when the run has no data to compute it on."""
    run = run_record(run_id)
    if run is None:
        return None, {}
    fam = families.get(run.family)
    if run.model is None or run.split is None or not hasattr(run.model,
                                                             "mean_predictor_metrics"):
        return fam, {}
    out = {}
    for part, ratings in run.split.parts().items():
        if part == "test":
            continue
        for name, value in run.model.mean_predictor_metrics(run.split.train, ratings).items():
            out[f"{part}_{name}"] = value
    return fam, out


def get_trace(run_id: str):
    """The trace of the running fit, a session run or a saved run."""
    if run_id == LIVE:
        job = running_job()
        return job.live_trace() if job is not None else Trace(solver="none")
    runs = session_runs()
    if run_id in runs:
        return runs[run_id].trace
    return Trace.from_dict(_saved_trace_dict(run_id, str(default_runs_dir())))


def trace_picker(*, multi: bool, key: str, family: str | None = None, live: bool = False):
    """Pick runs (the running fit, session and saved runs) and return ``{label: trace}``
    plus the chosen run ids; stop with a hint if there are none."""
    opts = run_options(family=family, live=live)
    if not opts:
        no_runs_yet(family)
    current = active_run()
    first = LIVE if LIVE in opts else (
        current.run_id if current is not None and current.run_id in opts else next(iter(opts)))
    if multi:
        if st.session_state.get(key) is not None:
            st.session_state[key] = [r for r in st.session_state[key] if r in opts] or [first]
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
    return out, chosen


def _warned(job) -> bool:
    """Whether a finished fit's trace holds a warning (no convergence, no better than the
    mean, divergence ...): its status is then not shown as a success."""
    trace = getattr(getattr(job, "result", None), "trace", None)
    return any(e.get("kind") == "warning" for e in (getattr(trace, "events", None) or []))
