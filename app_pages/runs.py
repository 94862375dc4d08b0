"""Runs: every saved run as a sortable table (filtered, settings beside metrics); import; name
and note, compare, export, re-run, delete."""

import streamlit as st

from kmviz import families
from kmviz.runs import OpenedRun, RunStore, open_run
from kmviz.ui import runs as ru
from kmviz.ui import runs_page as rp
from kmviz.ui.datasets import restore_run_data
from kmviz.ui.errors import user_errors
from kmviz.ui.state import NOT_YOURS, StateKeys, init_state, owns, shared_runs
from kmviz.ui.views import TRAIN_PAGE, collect_finished_job, get_trace, saved_runs_frame
from kmviz.viz import convergence_figure, phase_time_figure

init_state()
collect_finished_job()
st.title("Runs")
rp.import_panel()
df = saved_runs_frame()
if df.empty:
    st.info("No saved runs yet. Every training run is saved here when it ends, from the app "
            "or from `kmviz train ... --save`.")
    st.page_link(TRAIN_PAGE, label="Go to Train", icon=":material/model_training:")
    st.stop()

shown = rp.filters(df)
if shown.empty:
    st.info("No run matches these filters; clear one to see more.")
    st.stop()
st.caption(f"{len(shown)} of {len(df)} run(s), newest first; click a column header to sort. "
           "The settings that differ among the runs shown are columns. Runs saved by the app "
           "and by the command line (`kmviz runs list`) are the same runs." + (
               "" if shared_runs() else " Runs made by other sessions are read-only here."))
parts = ru.family_tables(shown)  # one table per family: each shows its own metrics
for tab, (_, part) in zip(st.tabs([t for t, _ in parts]) if len(parts) > 1 else [st],
                          parts):
    tab.dataframe(ru.table(part), hide_index=True, column_config=ru.table_config(part))

labels = dict(zip(shown["run_id"], shown["label"] + " · " + shown["run_id"].str[-8:]))

# ------------------------------------------------------------------------ one run
st.subheader("One run")
rid = rp.pick_one(shown, labels)
row = shown.set_index("run_id").loc[rid]
mine = False
with user_errors("reading the run"):
    mine = owns(RunStore().load_meta(rid))
if not mine:
    st.info(NOT_YOURS, icon=":material/lock:")
rp.edit_form(rid, row, mine)

with user_errors("reading the run"):
    run = RunStore().load(rid)
    fam = families.get(run.family) if run.family in families.names() else None
    phase_opts = fam.figure_options("phase_time") if fam else {}
    figs = {"Convergence": convergence_figure(
        {run.label: run.trace}, **(fam.figure_options("convergence") if fam else {})),
        "Time per phase": phase_time_figure(run.trace, **phase_opts)}
    c = st.columns(5)
    c[0].download_button("Trace CSV", ru.trace_csv(run.trace), f"{rid}-trace.csv",
                         "text/csv", key="runs_csv", on_click="ignore")
    c[1].download_button("Trace JSON", run.trace.to_json(), f"{rid}-trace.json",
                         "application/json", key="runs_json", on_click="ignore")
    private = None if mine else "Holds the run's training data: only its owner downloads it."
    c[2].download_button("Arrays NPZ", lambda: ru.arrays_npz(run.arrays), f"{rid}.npz",
                         "application/octet-stream", key="runs_npz", on_click="ignore",
                         disabled=not mine, help=private)
    c[3].download_button("Figures HTML", lambda: ru.figures_html(figs), f"{rid}.html",
                         "text/html", key="runs_html", on_click="ignore")
    c[4].download_button("Whole run (zip)", lambda: RunStore().export_bytes(rid),
                         f"{rid}.zip", "application/zip", key="runs_zip", on_click="ignore",
                         disabled=not mine, help=private)
    c1, c2 = st.columns(2)
    if c1.button("Re-run this configuration", key="runs_rerun", icon=":material/replay:",
                 disabled=fam is None,
                 help="Restores the run's settings on the Train page and, when the run "
                      "came from the catalogue or is yours and carries its data, its "
                      "dataset and split too: press Train there to reproduce it."):
        opened = open_run(rid) if mine else OpenedRun(run=run, model=None, split=None,
                                                       dataset=None)
        note = restore_run_data(opened, saved_data=mine) or (
            "This run was saved without its data; the dataset loaded now is kept." if mine
            else "This run was made by another session: its settings are restored, not the "
                 "data it was trained on; the dataset loaded now is kept.")
        params = {k: v for k, v in run.params.items() if k in fam.constraints()}
        st.session_state[StateKeys.RERUN_CONFIG] = (run.family, params)
        st.session_state[StateKeys.NOTICE] = note
        st.switch_page(TRAIN_PAGE)
    rp.delete_controls(rid, run.label, mine, c2)

rp.across_runs(shown, rid)  # parallel coordinates, scatter, seed bands

# ------------------------------------------------------------------------ compare
st.subheader("Compare runs")
chosen = rp.pick_compare(shown, labels, rid)
if chosen:
    every = st.toggle("Every setting", key="runs_compare_all",
                      help="Off: only the settings that differ between the runs compared.")
    table, differ, datasets_differ = ru.compare(df, chosen, all_settings=every)
    if datasets_differ:
        st.warning("These runs were trained on different datasets (their fingerprints "
                   "differ): their metrics are not measured on the same ratings, so the "
                   "curves below share an axis but not a yardstick.", icon=":material/warning:")
    if len(chosen) > 1:
        st.caption("Settings that differ: " + (", ".join(differ) if differ else "none") +
                   " (rows marked ≠).")
    fams = {df.set_index("run_id").loc[r, "family"] for r in chosen}
    one = families.get(next(iter(fams))) if len(fams) == 1 and (
        next(iter(fams)) in families.names()) else None
    by_id = {r: get_trace(r) for r in chosen}
    if len(chosen) > 1:
        rp.why_one_beat_another(df, chosen, by_id)
    traces = {labels[r]: by_id[r] for r in chosen}
    st.plotly_chart(convergence_figure(
        traces, **(one.figure_options("convergence") if one else {})))
    st.dataframe(table)
