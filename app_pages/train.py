"""Train: model family, its settings (from the estimator's declarations), a background fit
with live progress and Stop.

Pressing Train records a request in the session state (the button's callback, which runs
before the page does), and this page starts it on its next run, once: a click that lands
while the page is still running is not lost. The page says which state the fit is in:
compiling its family's kernels (first start after installing), queued, training with
progress, done (the result below), stopped, or failed with the error."""

import streamlit as st

from kmviz import families
from kmviz.ui.forms import defaults_panel, params_form
from kmviz.ui.pages import link_target
from kmviz.ui.state import StateKeys, active_run, init_state, session_runs
from kmviz.ui.sweep import sweep_panel
from kmviz.ui.text import md_escape
from kmviz.ui.training import (cluster_caption, fit_warnings, load_notice, request_training,
                                start_requested_job, warm_up)
from kmviz.ui.views import (CONVERGENCE_PAGE, collect_finished_job, kernels_notice,
                            progress_panel, require_dataset, run_metrics, suggestion_panel)

init_state()
collect_finished_job()
st.title("Train")
ratings, split = require_dataset()
sizes = split.describe()
spec = st.session_state.get(StateKeys.DATASET_SPEC) or {}
default_note = " (the built-in default)" if spec.get("default") else ""
st.caption(f"Data: **{md_escape(ratings.name)}**{default_note}, {sizes['train']:,} training / "
           f"{sizes['validation']:,} validation / {sizes['test']:,} test ratings "
           f"({sizes['by']} split, seed {sizes['seed']}). Change it on the Data page.")
if cluster_line := cluster_caption():
    st.caption(cluster_line)
# What comes and goes above the form (notices, the measured settings, the fit's progress)
# sits in fixed slots: an element appearing or leaving there would move the form, and while
# the run that moved it lasts, the old form stays on screen beside the new one (seen on a
# fresh server when the kernels' notice left: two Train forms)
with st.container():
    load_notice()  # a Load of the Data page still running: Train refuses until it ends

rerun = st.session_state.get(StateKeys.RERUN_CONFIG)
notice = st.session_state.get(StateKeys.NOTICE)
st.session_state[StateKeys.RERUN_CONFIG] = st.session_state[StateKeys.NOTICE] = None
names = families.names()
if rerun:
    st.session_state["train_family"] = rerun[0]
elif st.session_state.get("train_family") not in names:
    st.session_state["train_family"] = st.session_state.get(StateKeys.FAMILY) or names[0]
name = st.selectbox("Model family", names, key="train_family",
                    format_func=lambda n: families.get(n).title,
                    help="The kind of model to fit; its settings form and its Explore "
                         "pages (in the sidebar) follow the choice.")
st.session_state[StateKeys.FAMILY] = name
warm_up().ask(name)  # compile this family's kernels first (first start after installing)
family = families.get(name)
st.markdown(family.summary)
with st.container():
    if rerun:
        lead = ("The change is in the form; press Train to fit it." if len(rerun) > 2 else
                "Settings of the saved run loaded; press Train to run them again.")
        st.info(f"{lead} {md_escape(notice or '')}", icon=":material/replay:")
    defaults_panel(family, ratings, spec, quiet=bool(rerun))
    suggested = suggestion_panel(family)
    if suggested and not rerun:
        st.success("The measured settings are in the form below; press Train to fit them.",
                   icon=":material/tune:")
    # the fit's state and progress above the form, in view at 1400 x 900 while it runs (the
    # Train click's callback recorded its request before this run, so it can start here)
    start_requested_job()
    job = st.session_state.get(StateKeys.JOB)
    if job is None or job.done:
        kernels_notice(name)
    if job is None or job.family == name:  # the status of this family's fit, not another's
        progress_panel()
    elif not job.done:  # its progress polls here too, and the page reruns when it ends
        st.info(f"A {md_escape(families.get(job.family).title)} fit is running: pick that "
                "family above to see its result when it ends.",
                icon=":material/hourglass_top:")
        progress_panel()
params, _ = params_form(family, overrides=rerun[1] if rerun else suggested,
                        on_submit=request_training)
sweep_panel(family, params, ratings, split, spec)  # the Sweep expander (kmviz/ui/sweep.py)

# the result of this family's newest run on the data loaded now: a run on other data is
# named, not shown as this page's result (its figures would not describe this data)
here = ratings.fingerprint()
run = active_run()
if run is None or run.family != name or run.fingerprint != here:
    mine = [r for r in session_runs().values() if r.family == name]
    same = [r for r in mine if r.fingerprint == here]
    run = max(same, key=lambda r: r.created) if same else None
    if run is None and mine and (job is None or job.done):
        other = max(mine, key=lambda r: r.created)
        st.caption(f"Your last {md_escape(family.short or family.title)} run, "
                   f"{md_escape(other.label)}, was on {md_escape(other.dataset_name)}, not "
                   "on the data loaded now: it stays on the Runs and Explore pages.")
if run is not None:
    if job is not None and not job.done and job.family == name:  # reruns when it ends
        st.subheader(f"Previous result: {md_escape(run.label)}")
        st.caption("The fit above is still running; its result replaces this one when it "
                   "ends.")
    else:
        st.subheader(f"Result: {md_escape(run.label)}")
    st.caption(f"Trained on **{md_escape(run.dataset_name)}** (fingerprint "
               f"`{run.fingerprint}`)")
    run_metrics(run)
    fit_warnings(run)
    fam = families.get(run.family)
    cols = st.columns(1 + len(fam.explore))
    cols[0].page_link(CONVERGENCE_PAGE, label="Convergence", icon=":material/show_chart:")
    for col, page in zip(cols[1:], fam.explore):
        col.page_link(link_target(page), label=page.title, icon=page.icon)
