"""Run-store glue for the pages: the runs table, comparisons, downloads, reopening a run."""

from __future__ import annotations

import html
import io
import json

import numpy as np
import pandas as pd
import streamlit as st

from kmviz import families
from kmviz.runs import RunStore, open_run
from kmviz.tabular_export import table_bytes

from .state import NOT_YOURS, RunRecord, owns
from .text import metric_label

#: Columns of the runs table after the name, its family and the headline metrics, in
#: display order.
TAIL_COLUMNS = ["dataset", "status", "n_iter", "duration_s", "created", "sweep", "tags",
                "note", "run_id"]
#: Headline metrics the table shows per family (the rest are in Compare).
TABLE_METRICS = 3


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The registered families' headline metrics that some run in ``df`` has."""
    out = []
    for fam in families.all_families():
        out += [m for m in fam.metrics if m in df.columns and m not in out]
    return [m for m in out if df[m].notna().any()]


def headline_columns(df: pd.DataFrame) -> list[str]:
    """The table's metric columns: the first :data:`TABLE_METRICS` headline metrics of
    each family with a run in ``df`` (a KM run shows its NRMSEs, an OCMF run its p@5 and
    nDCG@5), in registry order."""
    present = set(df["family"]) if "family" in df else set()
    have = set(metric_columns(df))
    out = []
    for fam in families.all_families():
        if fam.name in present or not present:
            out += [m for m in fam.metrics if m in have and m not in out][:TABLE_METRICS]
    return out


def _same(values) -> bool:
    return len({_fmt(v) for v in values}) <= 1


def differing_settings(df: pd.DataFrame) -> list[str]:
    """The declared settings of the runs' families whose values differ among the rows of
    ``df`` (in declaration order); a setting only some runs have counts as differing."""
    out = []
    present = set(df["family"]) if "family" in df else set()
    for fam in families.all_families():
        if fam.name not in present:
            continue
        for p in fam.constraints():
            if p in df.columns and p not in out and not _same(df[p]):
                out.append(p)
    return out


def table(df: pd.DataFrame) -> pd.DataFrame:
    """The runs table: name, family and the families' headline metrics first (visible
    without scrolling), then the settings that differ among these runs, then data,
    status, iterations, time, when, sweep, tags, note; the run id last. The Runs page
    shows one per family (:func:`family_tables`), so every metric column is the run's
    own."""
    cols = ["label"] + (["family"] if "family" in df else []) + headline_columns(df)
    cols += [c for c in differing_settings(df) if c not in cols]
    cols += [c for c in TAIL_COLUMNS if c in df and c not in cols]
    out = df[cols].copy()
    if "created" in out and len(out):
        out["created"] = pd.to_datetime(out["created"], utc=True).dt.tz_localize(None)
    if "family" in out:
        titles = {f.name: f.short or f.name for f in families.all_families()}
        out["family"] = out["family"].map(lambda f: titles.get(f, f))
    return out


def family_tables(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The runs table split by family, in registry order (runs of an unknown family last):
    ``[(tab title, runs of that family), ...]``. Each part's :func:`table` has only its own
    family's headline metrics, so no cell is left empty for a metric the run's family does
    not report (one table of every family showed "None" in most metric columns)."""
    if "family" not in df or df.empty:
        return [("runs", df)]
    known = {f.name: f for f in families.all_families()}
    order = [n for n in known if (df["family"] == n).any()]
    order += [n for n in pd.unique(df["family"]) if n not in known]
    out = []
    for name in order:
        part = df[df["family"] == name]
        title = known[name].short or name if name in known else str(name)
        out.append((f"{title} ({len(part)})", part))
    return out


def table_config(df: pd.DataFrame) -> dict:
    """Column formats for ``st.dataframe``: metrics to 4 decimals, seconds to 1."""
    cfg = {"label": st.column_config.TextColumn("name", width="medium"),
           "created": st.column_config.DatetimeColumn("created (UTC)",
                                                      format="YYYY-MM-DD HH:mm"),
           "duration_s": st.column_config.NumberColumn("seconds", format="%.1f"),
           "n_iter": st.column_config.NumberColumn("iterations", format="%d"),
           "run_id": st.column_config.TextColumn("run id", width="small"),
           "note": st.column_config.TextColumn("note", width="medium")}
    for m in metric_columns(df):
        part, _, metric = m.partition("_")
        cfg[m] = st.column_config.NumberColumn(metric_label(m), format="%.4f",
                                               help=f"{m}: {metric} on the {part} part")
    return cfg


def _fmt(x) -> str:
    if isinstance(x, (float, np.floating)):
        return "" if x != x else f"{x:.4g}"
    return "" if x is None else str(x)


def compare(df: pd.DataFrame, run_ids, *, all_settings: bool = False
            ) -> tuple[pd.DataFrame, list[str], bool]:
    """Selected runs side by side (one column per run): metrics, then the settings that
    differ between them (every setting with ``all_settings``).

    Returns the table (rows whose values differ between the runs are marked with "≠" in the
    first column), the names of the differing settings, and whether the runs come from
    different datasets (by fingerprint).
    """
    sub = df[df["run_id"].isin(list(run_ids))].set_index("run_id").loc[list(run_ids)]
    metrics = metric_columns(sub.reset_index())
    settings = []
    for fam in families.all_families():
        if fam.name in set(sub.get("family", [])):
            settings += [p for p in fam.constraints() if p in sub and p not in settings]
    rows = ["dataset", "fingerprint", "status", "n_iter", "duration_s"] + metrics + settings
    rows = [r for r in rows if r in sub]
    values = sub[rows].T
    values.columns = [f"{sub.loc[r, 'label']} · {r[-8:]}" for r in sub.index]
    differ = [r for r in rows if len({_fmt(v) for v in values.loc[r]}) > 1]
    if not all_settings and len(run_ids) > 1:
        keep = [r for r in rows if r not in settings or r in differ]
        values, rows = values.loc[keep], keep
    shown = values.map(_fmt)
    shown.insert(0, "differs", ["≠" if r in differ else "" for r in rows])
    datasets_differ = "fingerprint" in sub and sub["fingerprint"].nunique(dropna=False) > 1
    return shown, [d for d in differ if d in settings], bool(datasets_differ)


def trace_csv(trace) -> str:
    return table_bytes(trace.to_frame(), "csv").decode("utf-8")


def arrays_npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def figures_html(figures: dict) -> str:
    """Several Plotly figures in one standalone HTML page (plotly.js included once)."""

    parts = []
    for k, (title, fig) in enumerate(figures.items()):
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=k == 0))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>kmviz run</title></head>"
            "<body>" + "\n".join(parts) + "</body></html>")


def meta_json(meta: dict) -> str:
    return json.dumps(meta, indent=2, default=str)


def record_from_saved(run_id: str, store: RunStore | None = None) -> RunRecord:
    """A :class:`RunRecord` for the Explore pages from a saved run (model and split None,
    with ``problem`` saying why, when the run cannot give them). Another session's run
    gives its trace and metrics only: its saved training data is loaded by its owner alone
    (or when the operator shares runs)."""
    opened = open_run(run_id, store)
    run = opened.run
    if not owns(run.meta):
        opened.model = opened.split = opened.dataset = None
        opened.problem = (f"Run {run.label!r} ({run.run_id}): {NOT_YOURS} Its convergence "
                          "curves and metrics are shown on the Convergence and Runs pages.")
    created = pd.Timestamp(run.meta["created"]).timestamp()
    return RunRecord(
        run_id=run.run_id, label=run.label, family=run.family, params=dict(run.params),
        trace=run.trace, model=opened.model, split=opened.split,
        dataset_name=str(run.dataset.get("name", "")),
        fingerprint=str(run.dataset.get("fingerprint") or ""), metrics=dict(run.metrics),
        stop_reason=str(run.meta.get("status", "")), created=created, reopened=True,
        problem=opened.problem)


def default_compare(df: pd.DataFrame, run_id) -> list:
    """The runs Compare starts with: ``run_id`` and the newest other run of its family
    (``df`` is newest first), so a default comparison never mixes families."""
    if run_id is None or run_id not in set(df["run_id"]):
        return list(df["run_id"][:2])
    family = df.set_index("run_id").loc[run_id, "family"]
    same = [r for r in df.loc[df["family"] == family, "run_id"] if r != run_id]
    return [run_id] + same[:1]


#: The filters of the Runs page: (column of the listing, label).
FILTERS = (("family", "Family"), ("dataset", "Dataset"), ("sweep", "Sweep"), ("tags", "Tag"))


def filter_options(df: pd.DataFrame, column: str) -> list:
    """The values a filter offers: those in ``df`` (tags split at commas), in order seen."""
    if column not in df:
        return []
    out = []
    for value in df[column]:
        if value is None or value != value or value == "":
            continue
        for v in (str(value).split(", ") if column == "tags" else [value]):
            if v not in out:
                out.append(v)
    return out


def apply_filters(df: pd.DataFrame, chosen: dict) -> pd.DataFrame:
    """The rows of ``df`` matching every non-empty choice (``{column: [values]}``): a run
    matches a column's choice if its value (one of its tags) is among the values."""
    keep = pd.Series(True, index=df.index)
    for column, values in chosen.items():
        if not values or column not in df:
            continue
        if column == "tags":
            wanted = set(values)
            keep &= df[column].map(lambda t: bool(wanted & set(str(t or "").split(", "))))
        else:
            keep &= df[column].isin(list(values))
    return df[keep]
