"""Approximate EVD views: Lanczos error bounds against m (paper Fig. 6) and Ritz values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ...viz._theme import color, empty_figure, styled, value_axis

#: Canonical columns of a Lanczos diagnostics frame and how they are drawn.
CURVES = {
    "beta": ("β<sub>m+1</sub> (Lemma 2: bounds the max error)", "solid", "circle"),
    "beta_q_min": ("min<sub>i</sub> β<sub>m+1</sub> |q<sub>i</sub>(m)| (Lemma 2: bounds the min error)", "solid", "square"),
    "max_err": ("true error max<sub>i</sub> |λ<sub>i</sub> − λ̂<sub>i</sub>|", "dot", "diamond"),
    "min_err": ("true error min<sub>i</sub> |λ<sub>i</sub> − λ̂<sub>i</sub>|", "dot", "triangle-up"),
    "dominant_err": ("true error of the largest eigenvalue", "dot", "star"),
    "lemma3_bound": ("upper bound of β<sub>m+1</sub> (Lemma 3)", "dash", "x"),
}


def lanczos_bounds_figure(diag: pd.DataFrame, *, delta: float | None = None,
                          m_chosen: int | None = None, a: float | None = None,
                          D: int | None = None) -> go.Figure:
    """Error bounds and true errors of the modified Lanczos method against m, log y.

    Parameters
    ----------
    diag : DataFrame
        Column ``m`` and any of ``beta``, ``beta_q_min``, ``max_err``, ``min_err``,
        ``dominant_err``, ``lemma3_bound`` (one row per m = 1..D+1), as returned by
        :func:`kmviz.km.lanczos.lanczos_diagnostics`.
    delta : float, optional
        The threshold δ of (20), drawn as a horizontal line.
    m_chosen : int, optional
        The m where Alg. 5 stops (first β_{m+1} ≤ δ), marked with a vertical line.
    """
    title = "Lanczos approximation error and bounds (Fig. 6)"
    if D is not None:
        title += f", D = {D}"
    if a is not None:
        title += f", a = {a:g}"
    if diag is None or len(diag) == 0:
        return empty_figure(title, "No Lanczos diagnostics to show.")
    fig = go.Figure()
    floor = 1e-17  # zeros cannot be drawn on a log axis; show them at the floor
    for k, (col, (name, dash, symbol)) in enumerate(CURVES.items()):
        if col not in diag or not np.isfinite(diag[col].to_numpy(dtype=float)).any():
            continue
        y = np.maximum(diag[col].to_numpy(dtype=float), floor)
        fig.add_trace(go.Scatter(
            x=diag["m"], y=y, mode="lines+markers", name=name,
            line=dict(color=color(k), dash=dash), marker=dict(symbol=symbol, size=8),
            hovertemplate=f"m = %{{x}}<br>{name}: %{{y:.3e}}<extra></extra>"))
    if delta is not None and np.isfinite(delta) and delta > 0:
        fig.add_trace(go.Scatter(
            x=[diag["m"].min(), diag["m"].max()], y=[delta, delta], mode="lines",
            name=f"threshold δ of (20) = {delta:.3e}", line=dict(color="black", dash="longdash"),
            hovertemplate=f"δ = {delta:.3e}<extra></extra>"))
    if m_chosen is not None:
        fig.add_vline(x=m_chosen, line=dict(color="#2ca02c", width=2, dash="dot"),
                      annotation_text=f"m chosen = {m_chosen}", annotation_position="top")
    fig.update_yaxes(**value_axis(log=True))
    fig.update_xaxes(dtick=1)
    return styled(fig, title=title, x="Lanczos iterations m", y="error / bound (log scale)",
                  height=460)


def ritz_values_figure(exact, ritz: pd.DataFrame) -> go.Figure:
    """Ritz values for each m (dots) against the exact eigenvalues (horizontal lines).

    Parameters
    ----------
    exact : array of float
        Eigenvalues of C(u*) (from a full EVD).
    ritz : DataFrame
        Columns ``m`` and ``value``: the eigenvalues of the m x m tridiagonal matrix T_m.
    """
    title = "Exact eigenvalues of C(u*) and Ritz values of T_m"
    exact = np.sort(np.asarray(exact, dtype=float))
    if exact.size == 0:
        return empty_figure(title, "No eigenvalues to show.")
    fig = go.Figure()
    m_max = int(ritz["m"].max()) if len(ritz) else 1
    for j, lam in enumerate(exact):
        fig.add_trace(go.Scatter(
            x=[0.5, m_max + 0.5], y=[lam, lam], mode="lines", name="exact eigenvalues",
            legendgroup="exact", showlegend=j == 0, line=dict(color="#bbbbbb", width=1),
            hovertemplate=f"exact λ<sub>{j + 1}</sub> = {lam:.6g}<extra></extra>"))
    if len(ritz):
        fig.add_trace(go.Scatter(
            x=ritz["m"], y=ritz["value"], mode="markers", name="Ritz values (eig. of T_m)",
            marker=dict(color=color(1), size=8),
            hovertemplate="m = %{x}<br>Ritz value %{y:.6g}<extra></extra>"))
    fig.update_xaxes(dtick=1)
    return styled(fig, title=title, x="Lanczos iterations m", y="eigenvalue", height=420)
