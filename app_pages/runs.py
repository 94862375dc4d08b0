"""Runs: every saved run as a sortable table; name and note, compare, export, re-run, delete."""

import streamlit as st

from kmviz import families
from kmviz.runs import OpenedRun, RunStore, open_run
from kmviz.ui import runs as ru
from kmviz.ui.datasets import restore_run_data
from kmviz.ui.errors import user_errors
from kmviz.ui.state import (NOT_YOURS, StateKeys, forget_run, init_state, manage_owner, owns,
                            session_runs, shared_runs)
from kmviz.ui.text import md_escape
from kmviz.ui.views import TRAIN_PAGE, collect_finished_job, get_trace, saved_runs_frame
from kmviz.viz import convergence_figure, phase_time_figure

init_state()
collect_finished_job()
st.title("Runs")
df = saved_runs_frame()
if df.empty:
    st.info("No saved runs yet. Every training run is saved here when it ends, from the app "
            "or from `kmviz train ... --save`.")
    st.page_link(TRAIN_PAGE, label="Go to Train", icon=":material/model_training:")
    st.stop()

st.caption(f"{len(df)} run(s), newest first; click a column header to sort. Runs saved by "
           "the app and by the command line (`kmviz runs list`) are the same runs." + (
               "" if shared_runs() else " Runs made by other sessions are read-only here."))
parts = ru.family_tables(df)  # one table per family: each shows its own metrics
for tab, (_, part) in zip(st.tabs([t for t, _ in parts]) if len(parts) > 1 else [st],
                          parts):
    tab.dataframe(ru.table(part), hide_index=True, column_config=ru.table_config(part))

labels = dict(zip(df["run_id"], df["label"] + " · " + df["run_id"].str[-8:]))
ids = list(labels)

# ------------------------------------------------------------------------ one run
st.subheader("One run")
rid = st.selectbox("Run", ids, format_func=labels.get, key="runs_one")
row = df.set_index("run_id").loc[rid]
mine = False
with user_errors("reading the run"):
    mine = owns(RunStore().load_meta(rid))
if not mine:
    st.info(NOT_YOURS, icon=":material/lock:")
with st.form("runs_edit"):
    c1, c2 = st.columns([1, 2])
    new_label = c1.text_input("Name", value=row["label"], max_chars=200, disabled=not mine)
    new_note = c2.text_area("Note", value=row.get("note") or "", max_chars=5000, height=80,
                            placeholder="What was this run for? What did you learn?",
                            disabled=not mine)
    if st.form_submit_button("Save name and note", icon=":material/edit:", disabled=not mine):
        with user_errors("renaming the run") as outcome:
            RunStore().update(rid, label=new_label, note=new_note, owner=manage_owner())
        if outcome.ok:
            if rid in session_runs():
                session_runs()[rid].label = " ".join(new_label.split())
            st.toast("Saved.")
            st.rerun()

with user_errors("reading the run"):
    run = RunStore().load(rid)
    fam = families.get(run.family) if run.family in families.names() else None
    phase_opts = fam.figure_options("phase_time") if fam else {}
    figs = {"Convergence": convergence_figure(
        {run.label: run.trace}, **(fam.figure_options("convergence") if fam else {})),
        "Time per phase": phase_time_figure(run.trace, **phase_opts)}
    c = st.columns(5)
    c[0].download_button("Trace CSV", ru.trace_csv(run.trace), f"{rid}-trace.csv",
                         "text/csv", key="runs_csv")
    c[1].download_button("Trace JSON", run.trace.to_json(), f"{rid}-trace.json",
                         "application/json", key="runs_json")
    private = None if mine else "Holds the run's training data: only its owner downloads it."
    c[2].download_button("Arrays NPZ", lambda: ru.arrays_npz(run.arrays), f"{rid}.npz",
                         "application/octet-stream", key="runs_npz", disabled=not mine,
                         help=private)
    c[3].download_button("Figures HTML", lambda: ru.figures_html(figs), f"{rid}.html",
                         "text/html", key="runs_html")
    c[4].download_button("Whole run (zip)", lambda: RunStore().export_bytes(rid),
                         f"{rid}.zip", "application/zip", key="runs_zip", disabled=not mine,
                         help=private)
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
    if c2.button("Delete this run ...", key="runs_delete", icon=":material/delete:",
                 disabled=not mine, help=None if mine else "Only its owner can delete it."):
        st.session_state["runs_confirm_delete"] = rid
    if st.session_state.get("runs_confirm_delete") == rid:
        st.warning(f"Delete the run **{md_escape(run.label)}** ({rid}) for good? Its trace, "
                   "model and saved data are removed; this cannot be undone.",
                   icon=":material/warning:")
        d1, d2 = st.columns(2)
        if d1.button(f"Yes, delete {md_escape(run.label[:40])}", key="runs_delete_yes",
                     type="primary"):
            with user_errors("deleting the run") as outcome:
                RunStore().delete(rid, owner=manage_owner())
            st.session_state["runs_confirm_delete"] = None
            if outcome.ok:
                forget_run(rid)
                st.session_state.pop("runs_one", None)
                st.session_state.pop("runs_selected", None)
                st.toast(f"Deleted run {md_escape(run.label[:60])} ({rid}).")
                st.rerun()
        if d2.button("Cancel", key="runs_delete_no"):
            st.session_state["runs_confirm_delete"] = None
            st.rerun()

# ------------------------------------------------------------------------ compare
st.subheader("Compare runs")
if st.session_state.get("runs_selected"):
    st.session_state["runs_selected"] = [r for r in st.session_state["runs_selected"]
                                         if r in labels]
chosen = st.multiselect("Runs to compare", ids, default=ids[:2], format_func=labels.get,
                        key="runs_selected")
if chosen:
    table, differ, datasets_differ = ru.compare(df, chosen)
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
    traces = {labels[r]: get_trace(r) for r in chosen}
    st.plotly_chart(convergence_figure(
        traces, **(one.figure_options("convergence") if one else {})))
    st.dataframe(table)
