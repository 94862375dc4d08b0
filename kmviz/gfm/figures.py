"""Plotly figures of the gFM pages: pure functions of :mod:`kmviz.gfm.analysis` results."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..viz._theme import value_axis

_COLORS = {"eps": "#1f77b4", "err_w": "#2ca02c", "err_M": "#d62728", "fitted": "#7f7f7f",
           "predicted": "#ff7f0e"}


def recovery_figure(table, *, fitted_rate: float, predicted_rate: float) -> go.Figure:
    """eps_t and its two parts against instances consumed (log y), with the fitted geometric
    line and the line of the theory's scaling."""
    fig = go.Figure()
    x = table["n_seen"]
    for col, name in (("eps", "εₜ = ‖w*−w‖ + ‖M*−M‖_F"), ("err_w", "‖w*−w‖"),
                      ("err_M", "‖M*−M‖_F")):
        y = table[col].where(table[col] > 0)  # an exact 0 (w* = w = 0) has no log: a gap
        if y.notna().any():
            fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines+markers",
                                     line=dict(color=_COLORS[col])))
    if np.isfinite(fitted_rate):
        fig.add_trace(go.Scatter(x=x, y=table["fitted"], name=f"fitted rate q = "
                                 f"{fitted_rate:.3g} per batch", mode="lines",
                                 line=dict(color=_COLORS["fitted"], dash="dash")))
    fig.add_trace(go.Scatter(x=x, y=table["predicted"], name=f"theory's scaling δ = √(kd/n) = "
                             f"{predicted_rate:.3g}", mode="lines",
                             line=dict(color=_COLORS["predicted"], dash="dot")))
    fig.update_yaxes(**value_axis(log=True))
    fig.update_layout(xaxis_title="instances consumed (n t)", yaxis_title="error (log scale)",
                      height=420, legend=dict(orientation="h", y=-0.25),
                      margin=dict(t=30))
    return fig


def angle_contraction_figure(table) -> go.Figure:
    """tan theta(U, U*) (log) and the contraction eps_t / eps_{t-1} per batch."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "tan θ between U and U* (log scale)", "contraction εₜ / εₜ₋₁"))
    fig.add_trace(go.Scatter(x=table["t"], y=table["tan_theta"].where(table["tan_theta"] > 0),
                             mode="lines+markers",
                             name="tan θ"), row=1, col=1)
    fig.add_trace(go.Scatter(x=table["t"], y=table["contraction"], mode="lines+markers",
                             name="εₜ / εₜ₋₁"), row=1, col=2)
    fig.add_hline(y=1.0, line_dash="dot", line_color="gray", row=1, col=2)
    fig.update_yaxes(title_text="tan θ", row=1, col=1, **value_axis(log=True))
    fig.update_yaxes(title_text="εₜ / εₜ₋₁", row=1, col=2, **value_axis())
    fig.update_xaxes(title_text="batch t")
    fig.update_layout(height=340, showlegend=False, margin=dict(t=40))
    return fig


def heatmaps_figure(M, M_star) -> go.Figure:
    """The learned M beside M* on one symmetric colour scale."""
    lim = float(max(np.abs(M).max(), np.abs(M_star).max(), 1e-12))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("true M*", "learned M"),
                        horizontal_spacing=0.08)
    for col, mat in ((1, M_star), (2, M)):
        fig.add_trace(go.Heatmap(z=mat, zmin=-lim, zmax=lim, colorscale="RdBu_r",
                                 showscale=col == 2, colorbar=dict(title="M_ab")),
                      row=1, col=col)
        fig.update_yaxes(autorange="reversed", scaleanchor=f"x{col}", row=1, col=col)
    fig.update_layout(height=420, margin=dict(t=40))
    return fig


def spectrum_figure(frame, *, color="matrix", title="") -> go.Figure:
    """Eigenvalues as grouped bars (learned M beside the true eigenvalue of M* it matches,
    :func:`kmviz.gfm.analysis.match_spectra`; or one matrix by sign)."""
    fig = go.Figure()
    for name, part in frame.groupby(color, sort=False):
        fig.add_trace(go.Bar(x=part["index"], y=part["eigenvalue"], name=str(name)))
    fig.update_layout(barmode="group", xaxis_title=("eigenvalue of M* (by |value|), with the learned one nearest to it"
                                   if color == "matrix" else "eigenvalue (by |value|)"),
                      yaxis_title="eigenvalue", height=320, title=title or None,
                      margin=dict(t=40 if title else 20))
    fig.add_hline(y=0.0, line_color="gray")
    return fig


def phase_figure(frame, *, second: str = "k", tol: float = 1e-2) -> go.Figure:
    """log10 of the final relative error over batch size n/(kd) x ``second`` (k or
    condition), with the success share in each cell's text."""
    rows = sorted(frame[second].unique())
    cols = sorted(frame["ratio"].unique())
    z = np.full((len(rows), len(cols)), np.nan)
    text = np.empty((len(rows), len(cols)), dtype=object)
    for rec in frame.itertuples():
        i, j = rows.index(getattr(rec, second)), cols.index(rec.ratio)
        err = rec.rel_err if np.isfinite(rec.rel_err) else 1e6
        z[i, j] = np.log10(max(err, 1e-16))
        text[i, j] = f"{rec.rel_err:.1e}<br>{rec.success:.0%} < {tol:g}"
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"{c:g}" for c in cols], y=[f"{r:g}" for r in rows], text=text,
        texttemplate="%{text}", colorscale="Viridis_r", zmin=-8, zmax=1,
        colorbar=dict(title="log₁₀ rel. error")))
    fig.update_layout(xaxis_title="batch size n / (k d)",
                      yaxis_title="rank k" if second == "k" else "condition σ₁*/σₖ*",
                      xaxis_type="category", yaxis_type="category",  # one even cell each
                      height=360, margin=dict(t=20))
    return fig


def predictions_figure(frame, *, mean: float) -> go.Figure:
    """Predictions against truth on held-out data, with the identity and the mean."""
    lo = float(min(frame["truth"].min(), frame["prediction"].min()))
    hi = float(max(frame["truth"].max(), frame["prediction"].max()))
    fig = go.Figure()
    fig.add_trace(go.Scattergl(x=frame["truth"], y=frame["prediction"], mode="markers",
                               marker=dict(size=4, opacity=0.4), name="held-out ratings"))
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="prediction = truth",
                             line=dict(color="gray", dash="dot")))
    fig.add_trace(go.Scatter(x=[lo, hi], y=[mean, mean], mode="lines",
                             name="the training mean", line=dict(color="#ff7f0e",
                                                                 dash="dash")))
    fig.update_layout(xaxis_title="truth", yaxis_title="prediction", height=420,
                      margin=dict(t=20))
    return fig


def weights_figure(frame) -> go.Figure:
    """First-order weights as horizontal bars, largest |w| on top."""
    fig = go.Figure(go.Bar(x=frame["w"][::-1], y=frame["feature"][::-1], orientation="h"))
    fig.update_layout(xaxis_title="w (first-order weight)", height=max(260, 22 * len(frame)),
                      margin=dict(t=20, l=10))
    return fig
