"""Runs: saved runs as a table; compare, delete, export, re-run."""

import streamlit as st

from kmviz.runs import RunStore
from kmviz.ui import runs as ru
from kmviz.ui.datasets import restore_run_data
from kmviz.ui.errors import user_errors
from kmviz.ui.state import StateKeys, init_state, session_runs
from kmviz.ui.training import default_params
from kmviz.ui.views import collect_finished_job, get_trace, saved_runs_frame
from kmviz.viz import bcd_convergence_figure, phase_share_figure, phase_time_figure

init_state()
collect_finished_job()
st.title("Runs")
df = saved_runs_frame()
if df.empty:
    st.info("No saved runs yet. Every training run is saved here when it ends.")
    st.page_link("pages/2_Train.py", label="Go to Train", icon=":material/model_training:")
    st.stop()
st.dataframe(ru.table(df), hide_index=True)

labels = dict(zip(df["run_id"], df["label"] + " · " + df["run_id"]))
chosen = st.multiselect("Runs to compare", list(labels), default=list(labels)[:1],
                        format_func=labels.get, key="runs_selected")
if chosen:
    traces = {labels[r]: get_trace(r) for r in chosen}
    st.plotly_chart(bcd_convergence_figure(traces))
    st.dataframe(ru.compare_metrics(df, chosen))

    st.subheader("Export, re-run, delete")
    rid = st.selectbox("Run", chosen, format_func=labels.get, key="runs_one")
    with user_errors("reading the run"):
        run = RunStore().load(rid)
        figs = {"Convergence": bcd_convergence_figure({run.label: run.trace}),
                "Phases": phase_share_figure(run.trace), "Time": phase_time_figure(run.trace)}
        c = st.columns(5)
        c[0].download_button("Trace CSV", ru.trace_csv(run.trace), f"{rid}-trace.csv",
                             "text/csv", key="runs_csv")
        c[1].download_button("Trace JSON", run.trace.to_json(), f"{rid}-trace.json",
                             "application/json", key="runs_json")
        c[2].download_button("Arrays NPZ", lambda: ru.arrays_npz(run.arrays), f"{rid}.npz",
                             "application/octet-stream", key="runs_npz")
        c[3].download_button("Figures HTML", lambda: ru.figures_html(figs), f"{rid}.html",
                             "text/html", key="runs_html")
        c[4].download_button("Whole run (zip)", lambda: RunStore().export_bytes(rid),
                             f"{rid}.zip", "application/zip", key="runs_zip")
        if st.button("Re-run this configuration", key="runs_rerun", icon=":material/replay:",
                     help="Restores the run's settings on the Train page and, when the run "
                          "carries its data or came from the catalogue, its dataset and "
                          "split too: press Train there to reproduce it."):
            note = restore_run_data(run) or (
                "This run was saved without its data; the dataset loaded now is kept.")
            st.session_state[StateKeys.RERUN_CONFIG] = ru.rerun_params(
                run.params, default_params(run.family))
            st.session_state[StateKeys.NOTICE] = note
            st.switch_page("pages/2_Train.py")

    confirm = st.checkbox(f"Yes, delete the {len(chosen)} selected run(s) for good",
                          key="runs_confirm")
    if st.button("Delete selected", key="runs_delete", disabled=not confirm, type="primary",
                 icon=":material/delete:"):
        with user_errors("deleting runs"):
            store = RunStore()
            for r in chosen:
                store.delete(r)
                session_runs().pop(r, None)
            st.toast(f"Deleted {len(chosen)} run(s).")
            st.rerun()
