"""Similarity · Optimizers: the paper's Figure 2 on the current data, computed on request
in the background with progress and Stop."""

import streamlit as st

from kmviz import families
from kmviz.similarity.figures import solver_comparison_figure
from kmviz.similarity.optimizers import ComparisonJob, time_to_reach
from kmviz.similarity.solvers import SOLVER_LABELS, SOLVERS
from kmviz.ui.errors import user_errors
from kmviz.ui.forms import form_params
from kmviz.ui.state import init_state
from kmviz.ui.scheduler import gate, scheduler
from kmviz.ui.text import md_escape
from kmviz.ui.views import collect_finished_job, require_dataset

JOB, RESULT = "similarity_compare_job", "similarity_compare_result"  # this page's state
SHOWN = ("k", "user_tower", "item_tower", "loss", "omega", "lambda_theta", "imputed",
         "threshold", "side_features")

init_state()
collect_finished_job("similarity")
st.title("Optimizers: how fast each solver gets there")
st.caption(md_escape(
    "The paper's Figure 2 on the data loaded now: every chosen solver fits the same model "
    "from the same starting θ (same settings and seed), and each line follows its relative "
    "objective difference (L − L*) / L*, L* the lowest objective any of them reached, and "
    "its validation MAP@5 against the time spent optimizing (the validation ranking is not "
    "counted)."))
ratings, split = require_dataset()
params = form_params(families.get("similarity"))
st.markdown(md_escape("Settings of the Train page's form: " + ", ".join(
    f"{name} = {params[name]}" for name in SHOWN) + ". Change them there."))
if split.validation is None:
    st.info("The split has no validation part: the MAP@5 panel stays empty (set one on the "
            "Data page).")

c = st.columns([3, 1, 1])
chosen = c[0].multiselect("solvers", list(SOLVERS), default=["newton", "gd", "gd-diag",
                                                                "sogram-diag"],
                          format_func=SOLVER_LABELS.get, key="similarity_opt_solvers",
                          help="Each one is a separate fit from the same starting point.")
limit = c[1].number_input("seconds per solver", 2, 600, 20, key="similarity_opt_limit",
                          help="Optimization time per solver at most.")
iters = c[2].number_input("iterations at most", 2, 500, int(params["max_iter"]),
                          key="similarity_opt_iters",
                          help="Outer iterations per solver (the stochastic ones take "
                               "1 / ρ steps per iteration).")
job = st.session_state.get(JOB)
running = job is not None and not job.done
if st.button("Compare", type="primary", icon=":material/play_arrow:", disabled=running or
             not chosen, key="similarity_opt_run"):
    with user_errors("starting the comparison"):
        st.session_state[JOB] = ComparisonJob(
            split.train, split.validation, chosen, {**params, "max_iter": int(iters)},
            time_limit=float(limit), gate=gate).start()
        st.rerun()


@st.fragment(run_every=1.0)
def _progress():
    job = st.session_state.get(JOB)
    if job is None:
        return
    snap = job.snapshot()
    if snap["status"] == "queued":  # the server's fit queue (kmviz app --max-fits)
        st.info(scheduler().queue_words(job), icon=":material/hourglass_empty:")
        if st.button("Stop", icon=":material/stop:", key="similarity_opt_stop"):
            job.stop()
        return
    if snap["status"] == "running":
        st.progress(min(1.0, snap["n_finished"] / snap["n_solvers"]),
                    text=f"{snap['n_finished']} of {snap['n_solvers']} solvers done; "
                         f"{md_escape(SOLVER_LABELS.get(snap['solver'], 'starting'))}, "
                         f"iteration {snap['iteration']} ({snap['elapsed_s']:.0f} s)")
        if st.button("Stop", icon=":material/stop:", key="similarity_opt_stop"):
            job.stop()
        return
    st.session_state[JOB] = None
    if snap["status"] == "failed":
        st.session_state[RESULT] = None
        st.error(f"The comparison failed: {md_escape(snap['error'])}")
        return
    st.session_state[RESULT] = (job.result, snap["status"])
    st.rerun()


_progress()
stored = st.session_state.get(RESULT)
if stored is None or stored[0] is None or not len(stored[0].frame):
    if not running:
        st.info(f"Choose solvers and press Compare (at most {len(chosen)} × {limit} s of "
                "optimization, plus the validation rankings).")
    st.stop()
result, status = stored
if status == "stopped":
    st.warning("Stopped: the curves so far are shown.", icon=":material/stop_circle:")
st.plotly_chart(solver_comparison_figure(result.frame), key="similarity_opt_fig")
st.caption(f"L* = {result.best_objective:.6g}. Down and to the left is better on the left "
           "panel; up and to the left on the right. A line-search solver never raises L; "
           "the stochastic ones are noisy and their step is fixed.")
st.dataframe(time_to_reach(result.frame), hide_index=True)
with st.expander("How each fit ended"):
    for solver, note in result.notes.items():
        st.markdown(f"**{md_escape(SOLVER_LABELS.get(solver, solver))}**: {md_escape(note)}")
