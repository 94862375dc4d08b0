"""KM · Dual GD: the dual gradient descent on one item's binary QP (Figs. 1 and 2)."""

import streamlit as st

from kmviz import families
from kmviz.km.analysis import dual_summary
from kmviz.ui.families import km
from kmviz.ui.errors import user_errors
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, require_run
from kmviz.viz import dual_gap_figure

init_state()
collect_finished_job("km")
fam = families.get("km")
st.title("Dual gradient descent on one item (Figs. 1 and 2)")
st.caption("The item's $S_i$ and $v_i$ are built from the run's $\\theta$ and training ratings; the dual "
           "(13) of its binary QP (4) is solved from scratch, once per method. Line style "
           "names the method; marker colour shows the phase of Alg. 2.")
run = require_run(family="km", need_model=True)
opening = km.opening_dual_item(run)  # a first item where the figures differ, by a rule
item = km.item_picker(run, key="dual_item")
if opening is not None and opening.item == item:
    st.caption(f"Opened on this item by a rule: {opening.reason}.")
gamma = float(run.params.get("gamma", 100.0))
with user_errors("running the dual gradient descent") as outcome:
    S, v = km.item_problem(run, item)
    traj = km.dual_trajectories(S, v, gamma)
if outcome.ok:
    name = run.split.train.item_label(item)
    sub = f"item {name!r}, D = {S.shape[0]}, γ = {gamma:g}"
    opts = fam.figure_options("dual_gap")
    c1, c2 = st.columns(2)
    axis = c1.radio("Fig. 1's axis", ["n_evd", "iteration"], horizontal=True, key="dual_x",
                    format_func={"n_evd": "EVDs computed", "iteration": "dual iterations"}.get,
                    help="Alg. 1 and Alg. 2 take the same steps; what differs is how many "
                         "EVDs each computes, so that is the axis on which they part.")
    c1.plotly_chart(dual_gap_figure(traj["fig1"], title="Fig. 1: original vs enhanced GD",
                                    subtitle=sub, x=axis, **opts))
    c2.plotly_chart(dual_gap_figure(traj["fig2"], title="Fig. 2: with and without the "
                                    "initial step", subtitle=sub, **opts))
    capped = [m for m, ok in traj["converged"].items() if not ok]
    if capped:
        st.warning(f"Stopped at the dual iteration cap before meeting ε: {', '.join(capped)}. "
                   "The paper's step rule has a heavy tail on items with many ratings; pick "
                   "an item with fewer ratings to see full convergence.")
    summary = dual_summary(traj)
    evds = [int(x) for x in summary["EVDs"].iloc[:2]]
    st.caption("Alg. 1 and Alg. 2 produce the same iterates (Remark 2): against the dual "
               "iterations their curves coincide; against the EVDs computed (Fig. 1's default "
               f"axis) Alg. 2's ends sooner: {evds[0]} against {evds[1]} EVDs on this item "
               f"({evds[0] - evds[1]} fewer for Alg. 2; the Phases page "
               "shows where the whole fit's dual iterations go). The initial step of Fig. 2 "
               "changes the iterates themselves, so its curve is the one that moves:")
    st.dataframe(summary, column_config={
        "final gap": st.column_config.NumberColumn(format="%.2e")})
