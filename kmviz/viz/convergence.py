"""Convergence views: BCD metrics per iteration (Fig. 4) and the dual GD gap (Figs. 1-2)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._theme import LINE_COLORS, PHASE_COLORS, PHASES, color, empty_figure, styled

#: Trace columns shown per BCD iteration, with their panel titles and axis labels.
BCD_METRICS = {
    "train_rmse": ("Training RMSE", "RMSE (probability scale)"),
    "objective": ("Objective of (2)", "sum of squared errors"),
    "val_nrmse": ("Validation NRMSE", "NRMSE"),
}


def _frame(trace) -> pd.DataFrame:
    if isinstance(trace, pd.DataFrame):
        return trace
    if hasattr(trace, "to_frame"):
        return trace.to_frame()
    return pd.DataFrame(trace)


def bcd_convergence_figure(traces: Mapping, *, metrics=tuple(BCD_METRICS),
                           log_y: bool = False) -> go.Figure:
    """One panel per metric, one line per run, x = BCD iteration (paper Fig. 4).

    Parameters
    ----------
    traces : mapping label -> Trace or DataFrame
        Runs to overlay; each needs an ``iteration`` column.
    metrics : sequence of str
        Trace columns to show (panels for columns no run has are dropped).
    """
    frames = {label: _frame(t) for label, t in traces.items()}
    shown = [m for m in metrics if any(m in f and f[m].notna().any() for f in frames.values())]
    title = "Convergence per BCD iteration"
    if not frames or not shown:
        return empty_figure(title, "No iterations recorded yet.")
    fig = make_subplots(rows=1, cols=len(shown),
                        subplot_titles=[BCD_METRICS.get(m, (m, m))[0] for m in shown],
                        horizontal_spacing=0.1)
    for k, (label, frame) in enumerate(frames.items()):
        for col, metric in enumerate(shown, start=1):
            if metric not in frame or not frame[metric].notna().any():
                continue
            fig.add_trace(go.Scatter(
                x=frame["iteration"], y=frame[metric], mode="lines+markers", name=label,
                legendgroup=label, showlegend=col == 1 or metric == shown[0],
                line=dict(color=color(k)), marker=dict(size=6),
                hovertemplate=(f"<b>{label}</b><br>iteration %{{x}}<br>"
                               f"{BCD_METRICS.get(metric, (metric,))[0]}: %{{y:.5g}}"
                               "<extra></extra>")), row=1, col=col)
            fig.update_xaxes(title_text="BCD iteration τ", row=1, col=col)
            # the metrics are >= 0: keep a flat zero line (a converged noiseless fit) from
            # getting a symmetric axis around 0
            fig.update_yaxes(title_text=BCD_METRICS.get(metric, (metric, metric))[1],
                             type="log" if log_y else "linear",
                             rangemode="normal" if log_y else "nonnegative", row=1, col=col)
    n_max = max((int(f["iteration"].max()) for f in frames.values() if len(f)), default=0)
    if n_max <= 20:
        fig.update_xaxes(dtick=1)  # whole iterations only, no 1.5
    fig = styled(fig, title=title, height=450)
    fig.update_layout(margin=dict(t=100))
    fig.update_annotations(font_size=13)
    return fig


def dual_gap_figure(trajectories: Mapping[str, pd.DataFrame], *, title: str,
                    subtitle: str = "") -> go.Figure:
    """Optimality gap h(u_i) - h(u*) per dual iteration, log scale, markers coloured by phase.

    Parameters
    ----------
    trajectories : mapping label -> DataFrame
        Columns ``iteration``, ``gap`` and ``phase`` (``I-A``, ``I-B``, ``II-A``, ``II-B``),
        optionally ``h``, ``step`` and ``n_evd``.
    """
    full = f"{title}<br><sup>{subtitle}</sup>" if subtitle else title
    if not trajectories or all(len(df) == 0 for df in trajectories.values()):
        return empty_figure(full, "No dual iterations to show.")
    fig = go.Figure()
    symbols = ["circle", "diamond", "square", "triangle-up"]
    seen_phases = set()
    for k, (label, df) in enumerate(trajectories.items()):
        gap = np.maximum(df["gap"].to_numpy(dtype=float), 1e-16)
        fig.add_trace(go.Scatter(x=df["iteration"], y=gap, mode="lines", name=label,
                                 line=dict(color=LINE_COLORS[k % len(LINE_COLORS)], width=2,
                                           dash="solid" if k == 0 else "dash"),
                                 legendgroup=label,
                                 hoverinfo="skip"))
        phases = df["phase"].astype(str) if "phase" in df else pd.Series(["GD"] * len(df))
        extra = [c for c in ("h", "step", "n_evd") if c in df]
        for phase in [p for p in PHASES + ["GD"] if (phases == p).any()] + sorted(
                set(phases) - set(PHASES) - {"GD"}):
            sel = (phases == phase).to_numpy()
            custom = np.column_stack([df[c].to_numpy()[sel] for c in extra]) if extra else None
            hover = (f"<b>{label}</b><br>dual iteration %{{x}}<br>gap %{{y:.3e}}<br>"
                     f"phase {phase}")
            for j, c in enumerate(extra):
                hover += f"<br>{c} %{{customdata[{j}]:.4g}}"
            fig.add_trace(go.Scatter(
                x=df["iteration"].to_numpy()[sel], y=gap[sel], mode="markers",
                name=f"phase {phase}", legendgroup=f"phase {phase}",
                showlegend=phase not in seen_phases, customdata=custom,
                marker=dict(color=PHASE_COLORS.get(phase, "#333333"), size=6,
                            symbol=symbols[k % len(symbols)],
                            line=dict(width=0.5, color="white")),
                hovertemplate=hover + "<extra></extra>"))
            seen_phases.add(phase)
    fig.update_yaxes(type="log", exponentformat="power")
    return styled(fig, title=full, x="dual GD iteration i",
                  y="optimality gap h_γ(u_i) − h_γ(u*)", height=420)
