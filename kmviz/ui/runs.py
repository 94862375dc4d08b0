"""Run-store helpers for the Runs page: listing columns, exports, re-run settings."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

#: Columns of the runs table, in display order (those present are shown).
TABLE_COLUMNS = ["label", "created", "family", "dataset", "status", "n_iter", "duration_s",
                 "D", "bqp_solver", "evd", "gamma", "lambda_theta", "mu_psi",
                 "final_train_rmse", "validation_nrmse", "test_nrmse", "run_id"]
METRIC_COLUMNS = ["n_iter", "duration_s", "final_train_rmse", "final_objective",
                  "train_nrmse", "validation_nrmse", "test_nrmse"]


def table(df: pd.DataFrame) -> pd.DataFrame:
    return df[[c for c in TABLE_COLUMNS if c in df]]


def compare_metrics(df: pd.DataFrame, run_ids) -> pd.DataFrame:
    """Selected runs side by side: one column per run, metrics and settings as rows."""
    sub = df[df["run_id"].isin(list(run_ids))].set_index("run_id")
    rows = [c for c in METRIC_COLUMNS + ["D", "bqp_solver", "evd", "gamma", "n_rand",
                                          "lambda_theta", "mu_psi", "dataset", "status"]
            if c in sub]
    def fmt(x):
        return f"{x:.4g}" if isinstance(x, float) else str(x)

    return sub[rows].T.map(fmt)


def trace_csv(trace) -> str:
    return trace.to_frame().to_csv(index=False)


def arrays_npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def figures_html(figures: dict) -> str:
    """Several Plotly figures in one standalone HTML page (plotly.js included once)."""
    parts = []
    for k, (title, fig) in enumerate(figures.items()):
        parts.append(f"<h2>{title}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=k == 0))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>kmviz run</title></head>"
            "<body>" + "\n".join(parts) + "</body></html>")


def rerun_params(params: dict, defaults: dict) -> dict:
    """The estimator settings of a saved run (bookkeeping keys dropped)."""
    return {k: v for k, v in params.items() if k in defaults}


def meta_json(meta: dict) -> str:
    return json.dumps(meta, indent=2, default=str)
