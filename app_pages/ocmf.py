"""OCMF: the objective split over iterations, TRON's steps, one user's top-k with each
score's attribution, and a rho x lambda grid of validation p@5 on request."""

import numpy as np
import plotly.express as px
import streamlit as st

from kmviz import families
from kmviz.ocmf.analysis import (objective_panel_title, objective_panels, tron_trace,
                                 user_recommendations, validation_grid)
from kmviz.ui.errors import user_errors
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, require_run
from kmviz.viz import convergence_figure, phase_time_figure

GRIDS = "ocmf_grids"  # (run_id, rhos, lambdas) -> rho x lambda table of validation p@5

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
labels = fam.metric_labels()
rows, always_zero = objective_panels(run.trace)
for row in rows:
    st.plotly_chart(convergence_figure({run.label: run.trace}, metrics=row,
                                       title=objective_panel_title(row),
                                       **fam.figure_options("convergence")))
if always_zero:
    st.caption(" and ".join(labels.get(c, (c,))[0] for c in always_zero) +
               " stayed 0 at every iteration (with λ_g = 0 or no user graph there is no "
               "graph term), so it is not drawn.")
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
k = c2.slider("k", 5, 30, 10, key="ocmf_k", help="How many items to recommend.")
with user_errors("ranking the items"):
    recs = user_recommendations(model, user, k, train=train, held_out=held)
    if len(recs) and float(np.abs(recs["score"]).max()) < 1e-3:
        st.warning("Every score here is below 0.001 in size: the model has shrunk this "
                   "user's factors to about zero, so its ranking says little. On data that "
                   "is not 0/1, set the positive threshold on the Train page (empty counts "
                   "every observed entry as a positive); smaller λ_w, λ_h also help.",
                   icon=":material/warning:")
    st.dataframe(recs, hide_index=True, column_config={
        "score": st.column_config.NumberColumn(format="%.3g"),
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
                          help="ρ: the weight of the unobserved pairs in the loss.",
                          format_func=lambda r: f"2^{np.log2(r):.0f}")
    lambdas = c2.multiselect("λ", [2.0 ** e for e in (-2, 0, 2, 4, 6)],
                             default=[1.0, 4.0], key="ocmf_lambdas",
                             help="λ = λ_w = λ_h: the weight of the ‖W‖² and ‖H‖² "
                                  "regularizers.",
                             format_func=lambda r: f"2^{np.log2(r):.0f}")
    key = (run.run_id, tuple(sorted(rhos)), tuple(sorted(lambdas)))
    grids = st.session_state.setdefault(GRIDS, {})
    if st.button("Compute the grid", key="ocmf_grid", icon=":material/grid_on:",
                 disabled=not (rhos and lambdas),
                 help="Fits one model per cell: pick at least one ρ and one λ."):
        bar = st.progress(0.0, text="fitting ...")
        others = {p: v for p, v in run.params.items()
                  if p not in ("rho", "lambda_w", "lambda_h")}
        with user_errors("computing the grid"):
            grid = validation_grid(
                train, split.validation, rhos, lambdas, params=others,
                progress=lambda done, total, row: bar.progress(
                    done / total, text=f"{done} of {total} fits"))
            grids.clear()  # one grid kept: the last one computed
            grids[key] = grid.pivot(index="rho", columns="lambda", values="best")
        bar.empty()
    table = grids.get(key)
    if table is not None:
        shown = table.rename(index=lambda r: f"2^{np.log2(r):.0f}",
                             columns=lambda r: f"2^{np.log2(r):.0f}")
        st.plotly_chart(px.imshow(shown, text_auto=".3f", aspect="auto",
                                  labels=dict(x="λ", y="ρ", color="validation p@5")))
        st.caption("Kept while this run, ρ and λ stay as they are (another user, k or page "
                   "does not clear it).")
    elif grids:
        st.caption("The grid computed before was for other ρ, λ or another run; press "
                   "Compute the grid for these.")
