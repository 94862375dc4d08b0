"""Plotly figures of the similarity pages: pure functions of :mod:`.optimizers` and
:mod:`.analysis` results."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..viz._theme import value_axis

#: One colour per solver, the same on every figure.
SOLVER_COLORS = {"newton": "#d62728", "gd": "#1f77b4", "gd-diag": "#17becf",
                 "sogram": "#2ca02c", "sampling": "#ff7f0e", "sogram-diag": "#98df8a",
                 "sampling-diag": "#ffbb78"}


def solver_comparison_figure(frame) -> go.Figure:
    """The paper's Figure 2 in shape: relative objective difference (log) and validation
    MAP@5 against optimization time, one line per solver."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "relative objective difference (L − L*) / L*", "validation MAP@5"))
    for solver, part in frame.groupby("solver", sort=False):
        color = SOLVER_COLORS.get(solver)
        label = part["label"].iloc[0]
        rel = part["relative_objective_difference"].where(
            part["relative_objective_difference"] > 0)  # L* itself has no log
        fig.add_trace(go.Scatter(x=part["time_s"], y=rel, name=label, mode="lines+markers",
                                 legendgroup=solver, line=dict(color=color),
                                 marker=dict(size=4)), row=1, col=1)
        fig.add_trace(go.Scatter(x=part["time_s"], y=part["validation_map_at_5"], name=label,
                                 mode="lines+markers", legendgroup=solver, showlegend=False,
                                 line=dict(color=color), marker=dict(size=4)), row=1, col=2)
    fig.update_yaxes(title_text="(L − L*) / L*", row=1, col=1, **value_axis(log=True))
    fig.update_yaxes(title_text="MAP@5", row=1, col=2, **value_axis())
    fig.update_xaxes(title_text="optimization time (s)")
    fig.update_layout(height=430, legend=dict(orientation="h", y=-0.25), margin=dict(t=40))
    return fig


def embedding_figure(coords, labels, names, *, title="", ratio=None) -> go.Figure:
    """Rows in 2-D (PCA of their embeddings), coloured by ``labels``, hover ``names``."""
    fig = go.Figure()
    labels = np.asarray(labels, dtype=object)
    groups, counts = np.unique(labels.astype(str), return_counts=True)
    for g in groups[np.argsort(-counts, kind="stable")]:
        rows = np.flatnonzero(labels.astype(str) == g)
        fig.add_trace(go.Scattergl(x=coords[rows, 0], y=coords[rows, 1], mode="markers",
                                   name=f"{g} ({rows.size})", text=[str(names[r]) for r in rows],
                                   hovertemplate="%{text}<extra>" + g + "</extra>",
                                   marker=dict(size=5, opacity=0.7)))
    axes = ("PC 1", "PC 2")
    if ratio is not None and len(ratio) >= 2:
        axes = tuple(f"PC {i + 1} ({100 * r:.0f} % of the variance)" for i, r in
                     enumerate(ratio[:2]))
    fig.update_layout(title=title or None, xaxis_title=axes[0], yaxis_title=axes[1],
                      height=520, legend=dict(itemsizing="constant"), margin=dict(t=40))
    return fig


def tower_layers_figure(activations) -> go.Figure:
    """Each layer's output for one entity as a heat-map row (units along x, padded)."""
    width = max(a.size for _, a in activations)
    Z = np.full((len(activations), width), np.nan)
    for r, (_, a) in enumerate(activations):
        Z[r, :a.size] = a
    top = float(np.nanmax(np.abs(Z))) or 1.0
    fig = go.Figure(go.Heatmap(z=Z, y=[name for name, _ in activations],
                               x=np.arange(width), colorscale="RdBu", reversescale=True,
                               zmin=-top, zmax=top, colorbar=dict(title="value"),
                               hovertemplate="unit %{x}: %{z:.3g}<extra>%{y}</extra>"))
    fig.update_layout(xaxis_title="unit", height=120 + 60 * len(activations),
                      margin=dict(t=20), yaxis=dict(autorange="reversed"))
    return fig


def cold_scores_figure(cold, warm) -> go.Figure:
    """One item's score for every user from its features alone against the fitted one."""
    fig = go.Figure(go.Scattergl(x=warm, y=cold, mode="markers", marker=dict(size=4),
                                 hovertemplate="fitted %{x:.3g}<br>from features %{y:.3g}"
                                               "<extra></extra>"))
    lo, hi = float(min(np.min(cold), np.min(warm))), float(max(np.max(cold), np.max(warm)))
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", showlegend=False,
                             line=dict(color="#7f7f7f", dash="dash")))
    fig.update_layout(xaxis_title="fitted score (with its id)",
                      yaxis_title="score from its features alone", height=400,
                      showlegend=False, margin=dict(t=20))
    return fig
