"""OCMF: the objective split over iterations, TRON's steps, one user's top-k with each
score's attribution, and a rho x lambda grid of validation p@5 on request."""

import numpy as np
import plotly.express as px
import streamlit as st

from kmviz import families
from kmviz.ocmf.analysis import tron_trace, user_recommendations, validation_grid
from kmviz.ocmf.telemetry import OBJECTIVE_PARTS
from kmviz.ui.errors import user_errors
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, require_run
from kmviz.viz import bcd_convergence_figure, phase_time_figure

init_state()
collect_finished_job("ocmf")
fam = families.get("ocmf")
st.title("One-class MF: what it optimized and what it recommends")
run = require_run(family="ocmf", need_model=True)
model, split = run.model, run.split
threshold = run.params.get("threshold")

st.subheader("The objective, split (6)-(7)")
st.caption("L+ sums the loss over the observed positives; L- is the weighted squared loss "
           "toward ā over all m × n pairs, computed in closed form without forming them.")
parts = [c for c in ("objective", *OBJECTIVE_PARTS) if c in run.trace.to_frame()]
st.plotly_chart(bcd_convergence_figure({run.label: run.trace}, metrics=parts,
                                       labels=fam.metric_labels()))
st.plotly_chart(phase_time_figure(run.trace, **fam.figure_options("phase_time")))
with st.expander("TRON: every Newton step of every block"):
    if getattr(model, "inner_trace_", None) is not None and len(model.inner_trace_):
        st.dataframe(tron_trace(model), hide_index=True)
    else:
        st.info("This run kept no inner trace.")

st.subheader("Recommendations for one user")
held = split.held_out()
if held is not None and threshold is not None:
    held = held.binarize(float(threshold))
train = split.train
users = np.unique(np.asarray(held.users)) if held is not None and held.n_ratings else \
    np.arange(train.n_users)
c1, c2 = st.columns([3, 1])
user = c1.selectbox("User", [int(u) for u in users], key="ocmf_user",
                    format_func=lambda u: f"{train.user_label(u)} [{u}]",
                    help="Users with held-out positives first; the ✓ column marks them.")
k = c2.slider("k", 5, 30, 10, key="ocmf_k")
with user_errors("ranking the items"):
    recs = user_recommendations(model, user, k, train=train, held_out=held)
    st.dataframe(recs, hide_index=True, column_config={
        "score": st.column_config.NumberColumn(format="%.3f"),
        "held_out": st.column_config.CheckboxColumn("held-out positive ✓")})
    st.caption("Training positives are left out of the ranking. user_terms splits each "
               "score over the user's side features and identity part.")

st.subheader("ρ × λ grid of validation p@5")
if split.validation is None:
    st.info("The split has no validation part; set one on the Data page to tune ρ and λ.")
else:
    st.caption("Each cell refits the model with this run's other settings (λ_w = λ_h = λ) "
               "and keeps its best iteration's validation p@5, as the paper selects models.")
    c1, c2 = st.columns(2)
    rhos = c1.multiselect("ρ", [2.0 ** e for e in (-9, -7, -5, -3, -1, 0)],
                          default=[2.0 ** -7, 2.0 ** -3, 1.0], key="ocmf_rhos",
                          format_func=lambda r: f"2^{np.log2(r):.0f}")
    lambdas = c2.multiselect("λ", [2.0 ** e for e in (-2, 0, 2, 4, 6)],
                             default=[1.0, 4.0], key="ocmf_lambdas",
                             format_func=lambda r: f"2^{np.log2(r):.0f}")
    if st.button("Compute the grid", key="ocmf_grid", icon=":material/grid_on:"):
        bar = st.progress(0.0, text="fitting ...")
        others = {p: v for p, v in run.params.items()
                  if p not in ("rho", "lambda_w", "lambda_h")}
        with user_errors("computing the grid"):
            grid = validation_grid(
                train, split.validation, rhos, lambdas, params=others,
                progress=lambda done, total, row: bar.progress(
                    done / total, text=f"{done} of {total} fits"))
            table = grid.pivot(index="rho", columns="lambda", values="best")
            st.plotly_chart(px.imshow(table, text_auto=".3f", aspect="auto",
                                      labels=dict(x="λ", y="ρ", color="validation p@5")))
