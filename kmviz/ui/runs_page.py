"""The Runs page's sections: Import, the filters, and the one-run panel whose widgets are
keyed to the run id (so after a delete, rename or import every widget names the same run).
"""

from __future__ import annotations

import zlib

import pandas as pd
import streamlit as st

from kmviz import families
from kmviz.runs import RunStore, import_run_zip
from kmviz.runs.explain import explain_comparison
from kmviz.trace import Trace
from kmviz.viz.runs_figures import (convergence_overlay_figure, metric_scatter_figure,
                                    parallel_coordinates_figure, seed_groups)

from . import runs as ru
from .errors import user_errors
from .state import forget_run, manage_owner, session_owner, session_runs
from .text import md_escape, metric_label

#: Session keys of the page: the run shown in "One run", the runs compared, a pending
#: delete, the uploader's generation (a new key empties it after an import).
ONE, SELECTED, CONFIRM_DELETE, UPLOAD_GEN = ("runs_one", "runs_selected",
                                             "runs_confirm_delete", "runs_upload_gen")


def select_run(run_id: str | None) -> None:
    """Make ``run_id`` the run every widget of the page names on the next run of the
    script (None: the first run listed); widget values are popped, not set, since the
    widgets may already be drawn in this run."""
    st.session_state.pop(ONE, None)
    st.session_state.pop(SELECTED, None)
    if run_id is not None:
        st.session_state["runs_next"] = run_id
    st.session_state[CONFIRM_DELETE] = None


def import_panel() -> None:
    """Import an exported run (zip); the imported run becomes the one shown."""
    gen = st.session_state.get(UPLOAD_GEN, 0)
    with st.expander("Import a run (zip)", icon=":material/upload:"):
        st.caption("A zip written by `kmviz runs export RUN --out RUN.zip` or the "
                   "\"Whole run (zip)\" download below. Every file in it is checked first and "
                   "nothing is unpickled; a run whose id is already here gets a new id.")
        up = st.file_uploader("Exported run", type=["zip"], key=f"runs_upload_{gen}")
        if st.button("Import", key="runs_import", icon=":material/upload:",
                     disabled=up is None):
            with user_errors("importing the run") as outcome:
                result = import_run_zip(RunStore(), up.getvalue(), owner=session_owner())
            if outcome.ok:
                st.session_state[UPLOAD_GEN] = gen + 1
                select_run(result.run_id)
                st.session_state["runs_notice"] = result.message
                st.rerun()
    notice = st.session_state.pop("runs_notice", None)
    if notice:
        st.success(notice, icon=":material/check:")


def filters(df: pd.DataFrame) -> pd.DataFrame:
    """Filter by family, dataset, sweep and tag (offered when there is more than one value
    or any at all for sweep and tag); returns the runs shown."""
    offered = [(c, label, ru.filter_options(df, c)) for c, label in ru.FILTERS]
    offered = [(c, label, opts) for c, label, opts in offered
               if len(opts) > 1 or (c in ("sweep", "tags") and opts)]
    if not offered:
        return df
    chosen = {}
    for col, (c, label, opts) in zip(st.columns(len(offered)), offered):
        key = f"runs_filter_{c}"
        if st.session_state.get(key):
            st.session_state[key] = [v for v in st.session_state[key] if v in opts]
        chosen[c] = col.multiselect(label, opts, key=key, placeholder="all")
    return ru.apply_filters(df, chosen)


def pick_one(df: pd.DataFrame, labels: dict) -> str:
    """The "One run" selector; a run no longer listed (deleted, filtered out) is replaced
    by the first shown before the widget is drawn, so nothing names a stale run."""
    ids = list(labels)
    wanted = st.session_state.pop("runs_next", None)
    if wanted in ids:
        st.session_state[ONE] = wanted
    elif st.session_state.get(ONE) not in ids:
        st.session_state[ONE] = ids[0]
    return st.selectbox("Run", ids, format_func=labels.get, key=ONE)


def edit_form(rid: str, row, mine: bool) -> None:
    """Name and note of run ``rid``: the form and its boxes are keyed to the run id, and
    the button and the message name the run they change."""
    short = rid[-8:]  # the end of the id, as the pickers show it
    # keyed to the run and to its saved name and note: another run, or a name changed
    # (here or by the command line), gives fresh boxes holding the saved text
    version = zlib.crc32(f"{row['label']}\0{row.get('note') or ''}".encode("utf-8"))
    with st.form(f"runs_edit_{rid}_{version}"):
        st.caption(f"Name and note of run **{md_escape(str(row['label']))}** ({rid}).")
        c1, c2 = st.columns([1, 2])
        new_label = c1.text_input("Name", value=row["label"], max_chars=200,
                                  disabled=not mine, key=f"runs_name_{rid}_{version}")
        new_note = c2.text_area("Note", value=row.get("note") or "", max_chars=5000,
                                height=80, key=f"runs_note_{rid}_{version}", disabled=not mine,
                                placeholder="What was this run for? What did you learn?")
        if st.form_submit_button("Save name and note", icon=":material/edit:",
                                 disabled=not mine, help=f"Renames run {short} only."):
            with user_errors("renaming the run") as outcome:
                meta = RunStore().update(rid, label=new_label, note=new_note,
                                         owner=manage_owner())
            if outcome.ok:
                if rid in session_runs():
                    session_runs()[rid].label = meta["label"]
                st.toast(f"Saved the name and note of run {rid}: now "
                         f"\"{md_escape(meta['label'])}\" (was \"{md_escape(row['label'])}\").")
                st.rerun()


def delete_controls(rid: str, label: str, mine: bool, col) -> None:
    """Delete with confirmation; afterwards the next run is the one every widget names."""
    if col.button("Delete this run ...", key="runs_delete", icon=":material/delete:",
                  disabled=not mine, help=None if mine else "Only its owner can delete it."):
        st.session_state[CONFIRM_DELETE] = rid
    if st.session_state.get(CONFIRM_DELETE) != rid:
        return
    st.warning(f"Delete the run **{md_escape(label)}** ({rid}) for good? Its trace, model "
               "and saved data are removed; this cannot be undone.", icon=":material/warning:")
    d1, d2 = st.columns(2)
    if d1.button(f"Yes, delete {md_escape(label[:40])}", key="runs_delete_yes",
                 type="primary"):
        with user_errors("deleting the run") as outcome:
            RunStore().delete(rid, owner=manage_owner())
        st.session_state[CONFIRM_DELETE] = None
        if outcome.ok:
            forget_run(rid)
            select_run(None)  # pick_one shows the first run still listed
            st.toast(f"Deleted run {md_escape(label[:60])} ({rid}).")
            st.rerun()
    if d2.button("Cancel", key="runs_delete_no"):
        st.session_state[CONFIRM_DELETE] = None
        st.rerun()


def pick_compare(df: pd.DataFrame, labels: dict, rid: str) -> list:
    """The runs to compare: by default the one shown and the newest other run of its
    family."""
    ids = list(labels)
    if st.session_state.get(SELECTED) is not None:
        kept = [r for r in st.session_state[SELECTED] if r in labels]
        if kept:
            st.session_state[SELECTED] = kept
        else:  # every run compared is gone (deleted, filtered out): start again
            st.session_state.pop(SELECTED)
    default = None if SELECTED in st.session_state else [
        r for r in ru.default_compare(df, rid) if r in labels]
    return st.multiselect("Runs to compare", ids, default=default, format_func=labels.get,
                          key=SELECTED)


#: Most runs whose traces the convergence overlay loads.
MAX_OVERLAY_RUNS = 60


@st.cache_data(max_entries=512, show_spinner=False)
def _trace_dict(run_id: str, store_dir: str, created: str) -> dict:
    """A saved run's trace (``created`` keys the cache: a new run under a reused id)."""
    return RunStore(store_dir).load_trace(run_id).to_dict()


def saved_trace(run_id: str, created) -> Trace:
    return Trace.from_dict(_trace_dict(run_id, str(RunStore().path), str(created)))


def across_runs(shown: pd.DataFrame, rid: str) -> None:
    """Figures across the runs shown of the family of run ``rid``: parallel coordinates,
    a metric against a setting, convergence overlaid (seed groups as mean and band)."""
    family = shown.set_index("run_id").loc[rid, "family"]
    part = shown[shown["family"] == family]
    fam = families.get(family) if family in families.names() else None
    settings = ru.differing_settings(part)
    metrics = [m for m in (fam.metrics if fam else ()) if m in part and part[m].notna().any()]
    st.subheader("Across runs")
    if len(part) < 2 or not settings or not metrics:
        st.caption(f"Shown for two or more runs of one family whose settings differ: here "
                   f"{len(part)} run(s) of {family}"
                   f"{'' if settings else ', all with the same settings'}.")
        return
    st.caption(f"The {len(part)} {family} runs shown (the family of the run above; filter to "
               "narrow). Runs that differ only in their seed (random_state) are one group.")
    c1, c2, c3 = st.columns(3)
    metric = c1.selectbox("Metric", metrics, key="runs_across_metric",
                          format_func=metric_label)
    plain = [s for s in settings if s != "random_state"] or settings
    setting = c2.selectbox("Setting", plain, key="runs_across_setting")
    band = c3.radio("Band over seeds", ["minmax", "sd"], horizontal=True,
                    format_func={"minmax": "min to max", "sd": "±1 sd"}.get,
                    key="runs_across_band")
    t1, t2, t3 = st.tabs(["Parallel coordinates", "Metric against a setting", "Convergence"])
    t1.plotly_chart(parallel_coordinates_figure(part, settings, metric),
                    key="runs_across_parcoords")
    t2.plotly_chart(metric_scatter_figure(part, setting, metric, settings=settings,
                                          band=band, metric_label=metric_label(metric)),
                    key="runs_across_scatter")
    ids = list(part["run_id"][:MAX_OVERLAY_RUNS])
    groups = {", ".join(f"{s}={v}" for s, v in zip([s for s in settings
                                                     if s != "random_state"], key)) or
              "all": [r for r in members if r in ids]
              for key, members in seed_groups(part, settings).items()}
    groups = {k: v for k, v in groups.items() if v}
    created = dict(zip(part["run_id"], part["created"]))
    traces = {}
    for r in ids:
        try:
            traces[r] = saved_trace(r, created[r])
        except ValueError:  # a damaged run: drawn without it (its own panel says why)
            continue
    groups = {k: [r for r in v if r in traces] for k, v in groups.items()}
    groups = {k: v for k, v in groups.items() if v}
    columns = [c for c in [metric, "validation_nrmse", "train_nrmse", "objective"]
               if any(c in row for t in traces.values() for row in t.rows[:1])]
    if not columns:
        t3.caption("These runs' traces have no column to draw.")
        return
    column = t3.selectbox("Trace column", list(dict.fromkeys(columns)),
                          key="runs_across_column")
    if len(part) > MAX_OVERLAY_RUNS:
        t3.caption(f"The newest {MAX_OVERLAY_RUNS} runs of {len(part)}.")
    t3.plotly_chart(convergence_overlay_figure(traces, column, groups=groups, band=band),
                    key="runs_across_convergence")


def why_one_beat_another(df: pd.DataFrame, chosen: list, traces: dict) -> None:
    """Under Compare: which of the runs compared is best for a validation metric, and why
    (:func:`kmviz.runs.explain.explain_comparison`), in sentences."""
    sub = df.set_index("run_id").loc[list(chosen)]
    names = [n for n in sub["family"].unique() if n in families.names()]
    fam_metrics = [m for n in names for m in families.get(n).metrics] or list(sub.columns)
    metrics = [m for m in dict.fromkeys(fam_metrics) if m.startswith("validation_")
               and m in sub and sub[m].notna().sum() >= 2]
    if not metrics:
        st.caption("No validation metric that two of these runs share: nothing to rank them "
                   "by (train with a validation part on the Data page).")
        return
    st.markdown("**Why one beat another**")
    metric = st.selectbox("Ranked by", metrics, key="runs_why_metric",
                          format_func=metric_label)
    settings = [p for n in names for p in families.get(n).constraints()]
    lines = explain_comparison(sub, traces, metric, settings=list(dict.fromkeys(settings)))
    st.markdown("\n".join(f"- {md_escape(line)}" for line in lines))
