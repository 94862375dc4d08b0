"""Convergence: the metrics of every outer iteration for one or several runs, following a
running fit live, with the mean predictor as a yardstick."""

import streamlit as st

from kmviz import families
from kmviz.ui.replay import hold_iteration_axis, replay_traces
from kmviz.ui.state import init_state
from kmviz.ui.text import md_escape
from kmviz.ui.views import (LIVE, collect_finished_job, get_trace, mean_predictor_lines,
                            running_job, trace_picker)
from kmviz.viz import convergence_figure
from kmviz.viz.convergence import DEFAULT_METRICS

init_state()
collect_finished_job()
st.title("Convergence")
st.caption("One line per run, one point per outer iteration of the family's solver (its own "
           "word for it labels the x axis). The dashed line, where shown, is the mean "
           "predictor (every rating predicted by the training mean): a model below it has "
           "learned something beyond the average.")

c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
with c1:
    traces, chosen = trace_picker(multi=True, key="conv_runs", live=True)
log_y = c2.toggle("log scale", key="conv_log",
                  help="A logarithmic y axis in every panel, for metrics that fall over "
                       "orders of magnitude.")
replayed_at, whole = None, traces
if LIVE not in chosen:  # replay: the curves as they stood after an earlier iteration
    traces, replayed_at = replay_traces(traces, key="conv_replay")


@st.fragment(run_every=1.0 if LIVE in chosen and running_job() is not None else None)
def _panels():
    shown = dict(traces)
    for label, rid in zip(list(shown), chosen):
        if rid == LIVE:
            shown[label] = get_trace(LIVE)
    first = next((r for r in chosen if r != LIVE), None)
    family = None
    baselines = {}
    if first is not None:
        family, baselines = mean_predictor_lines(first)
    elif running_job() is not None:
        family = families.get(running_job().family)
    metrics = list(DEFAULT_METRICS)
    options = {}  # the family's metric names and its word for an iteration
    if family is not None:
        options = family.figure_options("convergence")
        # the family's headline validation metric too (p@5, NMSE, RMSE ...), where recorded
        metrics += [m for m in family.metrics if m.startswith("validation_")][:1]
    fig = convergence_figure(shown, metrics=metrics, baselines=baselines, log_y=log_y,
                             **options)
    if replayed_at is not None:  # the whole fit drawn faintly behind: the axes hold still
        fig = hold_iteration_axis(fig, whole, whole_figure=convergence_figure(
            whole, metrics=metrics, baselines=baselines, log_y=log_y, **options))
    st.plotly_chart(fig)
    if replayed_at is not None:
        st.caption(f"Replaying: the curves up to iteration {replayed_at}.")
    if family is not None and first is not None:
        label = next(lab for lab, rid in zip(list(shown), chosen) if rid == first)
        note = family.convergence_note(shown[label])
        if note:
            st.info(md_escape(note), icon=":material/info:")
    if not baselines and first is not None:
        st.caption("No mean-predictor line for this run: its family does not define one "
                   "(or the run's data are not at hand).")
    if LIVE in chosen:
        job = running_job()
        st.caption("Following the running fit: the chart updates every second." if job
                   else "The fit has ended; pick its saved run to keep it on the chart.")


_panels()
if len(traces) == 1:
    with st.expander("Trace table (one row per iteration)"):
        st.dataframe(next(iter(traces.values())).to_frame(), hide_index=True)
