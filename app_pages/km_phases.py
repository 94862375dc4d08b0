"""KM · Phases: where each BCD iteration spends its time, and the phases of Alg. 2 (Table II)."""

import streamlit as st

from kmviz import families
from kmviz.km import KolmogorovModel
from kmviz.ui.families.km import phase_metrics
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, trace_picker
from kmviz.viz import evd_savings_figure, phase_share_figure, phase_time_figure

init_state()
collect_finished_job("km")
fam = families.get("km")
st.title("Where the time goes")
traces, _ = trace_picker(multi=False, key="phases_run", family="km")
label, trace = next(iter(traces.items()))
solver = trace.solver.removeprefix("km.")
solver_text = KolmogorovModel.BQP_SOLVER_LABELS.get(solver, solver)
st.caption(f"Binary QP solver of this run: **{solver_text}**. Each BCD iteration builds the "
           "items' binary QPs (4), solves them, then updates θ by Frank-Wolfe.")

log_y = st.toggle("log scale (one line per part)", key="phases_log",
                  help="For runs whose first iteration (Numba compilation, cold duals) "
                       "dwarfs the rest; the bar chart also draws the first iteration apart.")
st.plotly_chart(phase_time_figure(trace, log_y=log_y, **fam.figure_options("phase_time")))

st.subheader("Phases of the enhanced dual GD (Alg. 2, Table II)")
has_phases = any(r.get(c, 0) for r in trace.rows
                 for c in ("n_phase_1a", "n_phase_1b", "n_phase_2a", "n_phase_2b"))
if not has_phases:
    st.info(f"This run's solver ({solver}) does not go through the phases I-A to II-B of "
            "Alg. 2. Train with the BQP solver 'enhanced' (or 'gd') to see the share of "
            "iterations per phase and the EVDs that Alg. 2 saves.", icon=":material/info:")
else:
    st.caption("Alg. 2 moves through phases I-A, I-B and II-A without an EVD and computes one "
               "only in II-B. Table II of the paper reports the share of iterations per phase.")
    phase_metrics(trace)
    st.plotly_chart(phase_share_figure(trace, **fam.figure_options("phase_share")))
    st.plotly_chart(evd_savings_figure(trace, **fam.figure_options("evd_savings")))
with st.expander("Trace table"):
    st.dataframe(trace.to_frame(), hide_index=True)
