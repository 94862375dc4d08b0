"""Where the enhanced GD spends its iterations and time (paper Table II, Sec. IV)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._theme import PHASE_COLORS, PHASES, TIMED_PARTS, color, empty_figure, styled

#: Trace count columns of the four phases.
PHASE_COLUMNS = {"I-A": "n_phase_1a", "I-B": "n_phase_1b", "II-A": "n_phase_2a",
                 "II-B": "n_phase_2b"}


def _frame(trace) -> pd.DataFrame:
    return trace if isinstance(trace, pd.DataFrame) else trace.to_frame()


def phase_shares(trace) -> pd.DataFrame:
    """Share of dual iterations per phase, per BCD iteration plus an ``all`` row."""
    df = _frame(trace)
    cols = {p: c for p, c in PHASE_COLUMNS.items() if c in df}
    if not cols:
        return pd.DataFrame(columns=["iteration", *PHASES])
    counts = df[list(cols.values())].fillna(0).astype(float)
    counts.columns = list(cols)
    counts.insert(0, "iteration", df["iteration"].astype(str))
    total = counts[list(cols)].sum()
    counts = pd.concat([pd.DataFrame([{"iteration": "all", **total.to_dict()}]), counts],
                       ignore_index=True)
    sums = counts[list(cols)].sum(axis=1).replace(0, np.nan)
    for p in cols:
        counts[p] = counts[p] / sums
    return counts


def phase_share_figure(trace) -> go.Figure:
    """Stacked bars: share of dual GD iterations in phases I-A, I-B, II-A, II-B (Table II)."""
    title = "Share of dual GD iterations per phase (Table II)"
    shares = phase_shares(trace)
    if shares.empty or shares[[p for p in PHASES if p in shares]].isna().all().all():
        return empty_figure(title, "This run recorded no phase counts (solver without phases).")
    fig = go.Figure()
    for p in PHASES:
        if p not in shares:
            continue
        fig.add_bar(x=shares["iteration"], y=shares[p] * 100, name=f"phase {p}",
                    marker_color=PHASE_COLORS[p],
                    hovertemplate=(f"BCD iteration %{{x}}<br>phase {p}: %{{y:.1f}}% of dual "
                                   "iterations<extra></extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(type="category")
    return styled(fig, title=title, x="BCD iteration τ ('all' = whole run)",
                  y="share of dual iterations (%)")


#: Trace columns of the dual GD time per phase (their sum is t_bqp_dual_s).
PHASE_TIME_COLUMNS = {"I-A": "t_dual_1a_s", "I-B": "t_dual_1b_s", "II-A": "t_dual_2a_s",
                      "II-B": "t_dual_2b_s"}
_BQP_PARTS = ("t_evd_s", "t_lanczos_s", "t_randomization_s")


def _has(df, col):
    return col in df and df[col].notna().any()


def phase_time_figure(trace) -> go.Figure:
    """Stacked bars: wall time of each part of one BCD iteration, per iteration.

    The BQP step t_bqp_s is drawn as its non-overlapping parts: dual GD per phase of Alg. 2
    (EVD and Lanczos time excluded), dense EVD, Lanczos, randomization, and the rest of the
    step. Older traces without the per-phase split show the dual GD as one bar.
    """
    title = "Wall time per BCD iteration, by part"
    df = _frame(trace).copy()
    by_phase = [c for c in PHASE_TIME_COLUMNS.values() if _has(df, c)]
    dual = by_phase or [c for c in ("t_bqp_dual_s",) if c in df]
    inner = [c for c in (*dual, *_BQP_PARTS) if c in df]
    if "t_bqp_s" in df and inner:
        # t_bqp_s times the whole BQP step; its named parts are drawn separately
        df["t_bqp_other_s"] = (df["t_bqp_s"] - df[inner].fillna(0).sum(axis=1)).clip(lower=0)
    skip = {"t_bqp_dual_s"} if by_phase else set(PHASE_TIME_COLUMNS.values())
    parts = [c for c in TIMED_PARTS if c not in skip and _has(df, c)]
    if df.empty or not parts:
        return empty_figure(title, "This run recorded no phase timings.")
    phase_of = {c: p for p, c in PHASE_TIME_COLUMNS.items()}
    fig = go.Figure()
    for k, c in enumerate(parts):
        col = PHASE_COLORS[phase_of[c]] if c in phase_of else color(k)
        fig.add_bar(x=df["iteration"], y=df[c], name=TIMED_PARTS[c], marker_color=col,
                    hovertemplate=(f"BCD iteration %{{x}}<br>{TIMED_PARTS[c]}: %{{y:.4f}} s"
                                   "<extra></extra>"))
    fig.update_layout(barmode="stack")
    return styled(fig, title=title, x="BCD iteration τ", y="s per BCD iteration")


def evd_savings_figure(trace) -> go.Figure:
    """Per BCD iteration: dual GD iterations, those that needed no EVD for their direction
    (phases I-A, I-B, II-A of Alg. 2), and the EVDs computed (line search included)."""
    title = "EVD elimination of Alg. 2"
    df = _frame(trace)
    if df.empty or "n_evd" not in df or "n_dual_iter" not in df:
        return empty_figure(title, "This run recorded no EVD counts.")
    total = df["n_dual_iter"].fillna(0).astype(float)
    evd = df["n_evd"].fillna(0).astype(float)
    free_cols = [c for c in ("n_phase_1a", "n_phase_1b", "n_phase_2a") if c in df]
    free = df[free_cols].fillna(0).astype(float).sum(axis=1) if free_cols else None
    fig = go.Figure()
    fig.add_bar(x=df["iteration"], y=total, name="dual GD iterations", marker_color="#9ecae1",
                hovertemplate="BCD iteration %{x}<br>%{y:,} dual iterations<extra></extra>")
    if free is not None:
        fig.add_bar(x=df["iteration"], y=free, name="iterations without EVD (I-A, I-B, II-A)",
                    marker_color="#72b7b2",
                    hovertemplate="BCD iteration %{x}<br>%{y:,} iterations needed no EVD"
                                  "<extra></extra>")
    fig.add_bar(x=df["iteration"], y=evd, name="EVDs computed (line search included)",
                marker_color="#e45756",
                hovertemplate="BCD iteration %{x}<br>%{y:,} EVDs<extra></extra>")
    fig.update_layout(barmode="group")
    if free is not None and total.sum() > 0:
        title += f": {free.sum() / total.sum():.0%} of dual iterations need no EVD"
    return styled(fig, title=title, x="BCD iteration τ", y="count (all items)")
