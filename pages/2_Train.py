"""Train: model family, hyperparameters, a background fit with live progress and Stop."""

import streamlit as st

from kmviz.ui.errors import user_errors
from kmviz.ui.forms import km_params_form
from kmviz.ui.state import StateKeys, active_run, init_state
from kmviz.ui.training import FAMILIES, background_warm_up, default_params, start_job
from kmviz.ui.views import collect_finished_job, progress_panel, require_dataset, run_metrics

init_state()
collect_finished_job()
st.title("Train")
ratings, split = require_dataset()
sizes = split.describe()
st.caption(f"Data: **{ratings.name}**, {sizes['train']:,} training / {sizes['validation']:,} "
           f"validation / {sizes['test']:,} test ratings ({sizes['by']} split, seed "
           f"{sizes['seed']}). Change it on the Data page.")

family = st.selectbox("Model family", list(FAMILIES), format_func=FAMILIES.get,
                      key="train_family", help="More families (kernel MC, one-class MF) follow.")
overrides = st.session_state.get(StateKeys.RERUN_CONFIG)
notice = st.session_state.get(StateKeys.NOTICE)
st.session_state[StateKeys.RERUN_CONFIG] = st.session_state[StateKeys.NOTICE] = None
if overrides:
    st.info(f"Settings of the saved run loaded; press Train to run them again. {notice or ''}",
            icon=":material/replay:")
params, submitted = km_params_form(default_params(family), overrides=overrides)

if not background_warm_up().done.is_set():
    st.info("Compiling the Numba kernels in the background. The first start after installing "
            "takes about a minute; later starts load them from disk in a second. A fit you "
            "start now begins as soon as it is done.", icon=":material/hourglass_top:")

job = st.session_state.get(StateKeys.JOB)
if submitted:
    if job is not None and not job.done:
        st.warning("A training run is in progress; stop it or wait for it to finish.")
    else:
        with user_errors("starting the training"):
            start_job(family, params)

progress_panel()

run = active_run()
if run is not None:
    st.subheader(f"Result: {run.label}")
    run_metrics(run)
    st.page_link("pages/3_Convergence.py", label="See convergence",
                 icon=":material/show_chart:")
    st.page_link("pages/6_Implications.py", label="See the implications",
                 icon=":material/hub:")
