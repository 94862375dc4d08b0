"""Phases: where the enhanced GD spends its iterations and time (Table II)."""

import streamlit as st

from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, phase_metrics, trace_picker
from kmviz.viz import evd_savings_figure, phase_share_figure, phase_time_figure

init_state()
collect_finished_job()
st.title("Phases of the enhanced dual GD")
st.caption("Alg. 2 moves through phases I-A, I-B and II-A without an EVD and computes one only "
           "in II-B. Table II of the paper reports the share of iterations per phase.")
traces = trace_picker(multi=False, key="phases_run")
label, trace = next(iter(traces.items()))
phase_metrics(trace)
st.plotly_chart(phase_share_figure(trace))
st.plotly_chart(phase_time_figure(trace))
st.plotly_chart(evd_savings_figure(trace))
with st.expander("Trace table"):
    st.dataframe(trace.to_frame(), hide_index=True)
