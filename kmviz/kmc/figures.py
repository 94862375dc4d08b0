"""Plotly figures of the Kernel MC pages, from the results of :mod:`kmviz.kmc.analysis`.

Pure functions returning ``go.Figure``; no Streamlit and no I/O.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..viz._theme import value_axis
from .analysis.landmarks import SAMPLING_LABELS
from .analysis.matrix import PARTS

COLD = "#00a3a3"  # cold-start marks
PART_COLOURS = {"unobserved": "#eeeeee", "train": "#4c78a8", "validation": "#f58518",
                "test": "#e45756"}
METHOD_NAMES = {"kkmcex": "KKMCEX", "rrmcex": "RRMCEX", "online_rrmcex": "online RRMCEX",
                "als": "ALS", "sgd": "SGD", "pg": "nuclear-norm PG"}
METHOD_COLOURS = {"kkmcex": "#4c78a8", "rrmcex": "#e45756", "online_rrmcex": "#f58518",
                  "als": "#54a24b", "sgd": "#b279a2", "pg": "#9d755d"}
SAMPLING_COLOURS = {"uniform": "#4c78a8", "leverage": "#e45756",
                    "approximate_leverage": "#f58518", "recursive": "#54a24b",
                    "sklearn": "#9d755d"}


def _short(label, n=28):
    label = str(label)
    return label if len(label) <= n else label[:n - 1] + "…"


def _ticks(labels, cold, limit=60):
    """Tick positions and texts: every label when few, else every k-th (k as small as keeps
    them within ``limit``); a cold-start row or column among them carries a ❄."""
    from ..viz.labels import thinned

    pos = thinned(len(labels), limit)
    text = [("❄ " if cold[k] else "") + _short(labels[k]) for k in pos]
    return pos, text


def _runs(flags):
    """(start, stop) of each run of consecutive True values."""
    flags = np.asarray(flags, dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


#: Tick labels of the heat maps are laid out for this font (the theme's 14 px, times the
#: presentation switch's 1.4: no overlap in either) and these plot sizes: the height of
#: the plot area, and the width each map gets in a two-column row of the page.
HEATMAP_TICK_FONT = 14 * 1.4
HEATMAP_PLOT_WIDTH = 300
HEATMAP_LABEL = 22  # characters of a tick label (the hover has the whole name)


def _label_room() -> float:
    """Pixels below the plot for the vertical column labels (and above it for the title)."""
    from ..viz.labels import CHAR_EM

    return 50 + 40 + CHAR_EM * HEATMAP_TICK_FONT * (HEATMAP_LABEL + 2)


def heatmap_height(n_rows: int) -> int:
    """A heat map's height: a line of tick text a row (220 to 720 pixels), plus room for
    the labels: up to 26 rows are all labelled."""
    from ..viz.labels import LINE_EM

    per_row = LINE_EM * HEATMAP_TICK_FONT + 0.5
    return int(round(min(max(per_row * n_rows, 220), 720) + _label_room()))


def heatmap_tick_layout(n_rows: int, n_cols: int, height: int) -> tuple[int, int]:
    """How many row and column tick labels a heat map of ``height`` pixels prints."""
    from ..viz.labels import tick_budget

    return (min(n_rows, tick_budget(height - _label_room(), HEATMAP_TICK_FONT)),
            min(n_cols, tick_budget(HEATMAP_PLOT_WIDTH, HEATMAP_TICK_FONT)))


def completion_map_figure(view, which: str, *, height=None) -> go.Figure:
    """One heat map of a :class:`~kmviz.kmc.analysis.CompletionView`: ``"truth"``,
    ``"mask"``, ``"estimate"`` or ``"error"``. Cold-start rows and columns (no training
    entry) carry a ❄ in their tick label and a teal frame."""
    n_r, n_c = len(view.rows), len(view.cols)
    rl = [("❄ " if c else "") + str(x) for x, c in zip(view.row_labels, view.cold_rows)]
    cl = [("❄ " if c else "") + str(x) for x, c in zip(view.col_labels, view.cold_cols)]
    hover_r = np.repeat(np.asarray(rl, dtype=object)[:, None], n_c, axis=1)
    hover_c = np.repeat(np.asarray(cl, dtype=object)[None, :], n_r, axis=0)
    custom = np.dstack([hover_r, hover_c])
    if which == "mask":
        names = list(PARTS)
        colours = [PART_COLOURS[k] for k in names]
        scale = []
        for k, c in enumerate(colours):
            scale += [[k / len(colours), c], [(k + 1) / len(colours), c]]
        z = view.part.astype(float)
        trace = go.Heatmap(z=z, zmin=-0.5, zmax=len(names) - 0.5, colorscale=scale,
                           customdata=custom,
                           colorbar=dict(tickvals=list(range(len(names))), ticktext=names,
                                         title="entry"),
                           hovertemplate="%{customdata[0]} × %{customdata[1]}<br>"
                                         "part code %{z}<extra></extra>")
        title = "Mask: where each value is (train / validation / test)"
    else:
        z = {"truth": view.truth, "estimate": view.estimate, "error": view.error}[which]
        if which == "error":
            lim = float(np.nanquantile(np.abs(z), 0.98)) if np.isfinite(z).any() else 1.0
            kw = dict(colorscale="RdBu_r", zmid=0.0, zmin=-lim, zmax=lim)
            title = "Error: estimate − truth, on the known values"
        else:
            both = np.concatenate([view.truth[np.isfinite(view.truth)],
                                   view.estimate[np.isfinite(view.estimate)]])
            lo, hi = (np.quantile(both, [0.01, 0.99]) if both.size else (0.0, 1.0))
            kw = dict(colorscale="Viridis", zmin=float(lo), zmax=float(hi))
            title = ("Truth: every value the data holds (blank: unknown)" if which == "truth"
                     else "Estimate F̂ (blank: not predictable)")
        trace = go.Heatmap(z=z, customdata=custom, colorbar=dict(title=which), **kw,
                           hovertemplate="%{customdata[0]} × %{customdata[1]}<br>"
                                         f"{which} %{{z:.4g}}<extra></extra>")
    fig = go.Figure(trace)
    # one frame per run of consecutive cold-start rows (columns), not one per row
    for a, b in _runs(view.cold_rows):
        fig.add_shape(type="rect", x0=-0.5, x1=n_c - 0.5, y0=a - 0.5, y1=b - 0.5,
                      line=dict(color=COLD, width=2))
    for a, b in _runs(view.cold_cols):
        fig.add_shape(type="rect", y0=-0.5, y1=n_r - 0.5, x0=a - 0.5, x1=b - 0.5,
                      line=dict(color=COLD, width=2))
    height = height or heatmap_height(n_r)
    n_y, n_x = heatmap_tick_layout(n_r, n_c, height)
    yp, yt = _ticks(view.row_labels, view.cold_rows, limit=n_y)
    xp, xt = _ticks(view.col_labels, view.cold_cols, limit=n_x)
    # vertical column labels: thinned to one per line of text, never reaching past the
    # left edge (slanted ones were cut there: "ator 2: Judgment Day")
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(tickvals=xp, ticktext=[_short(t, HEATMAP_LABEL) for t in xt],
                                 tickangle=-90, automargin=True),
                      yaxis=dict(tickvals=yp, ticktext=[_short(t, HEATMAP_LABEL) for t in yt],
                                 autorange="reversed", automargin=True))
    return fig


def fraction_curve_figure(curve) -> go.Figure:
    """NMSE and fit time against the fraction of the matrix observed, one line per method
    (the thesis's Figs. 3.5 and 3.6)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "Held-out NMSE (3.68)", "Fit time"), horizontal_spacing=0.1)
    ok = curve[curve["error"].fillna("") == ""] if "error" in curve else curve
    for method, g in ok.groupby("method", sort=False):
        g = g.sort_values("observed_fraction")
        name = METHOD_NAMES.get(method, method)
        for col, y in ((1, "nmse"), (2, "time_s")):
            fig.add_trace(go.Scatter(x=g["observed_fraction"], y=g[y], mode="lines+markers",
                                     name=name, legendgroup=method, showlegend=col == 1,
                                     line_color=METHOD_COLOURS.get(method),
                                     hovertemplate=f"{name}<br>observed %{{x:.2%}}<br>"
                                                   f"{y} %{{y:.4g}}<extra></extra>"),
                          row=1, col=col)
    fig.update_xaxes(title_text="fraction of the matrix observed (P_s)", tickformat=".0%")
    fig.update_yaxes(title_text="NMSE", row=1, col=1, **value_axis(log=True))
    fig.update_yaxes(title_text="seconds", type="log", row=1, col=2)
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def spectra_figure(spectra) -> go.Figure:
    """Singular values of F and F̂, largest first, on a log scale."""
    fig = go.Figure()
    for name, g in spectra.groupby("matrix", sort=False):
        fig.add_trace(go.Scatter(x=g["k"], y=g["sigma"], mode="lines+markers", name=name,
                                 marker_size=5))
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title="k (singular values, largest first)",
                      yaxis=dict(title="σ_k", type="log"),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def _point_hover(data):
    return [str(x) for x in data.labels]


def leverage_map_figure(data, scores, *, title="") -> go.Figure:
    """The points on their first two principal components, coloured and sized by their
    ridge leverage score."""
    s = np.asarray(scores, dtype=float)
    lo, hi = float(s.min()), float(s.max())
    flat = hi - lo <= 1e-3 * max(abs(hi), 1e-300)
    # nearly equal scores: one size, and the colour scale spans [0, 1] (the scores' range)
    # instead of a sliver whose ticks read 1.00074487906044518
    size = np.full(s.shape, 8.0) if flat else 4 + 10 * np.sqrt((s - lo) / (hi - lo))
    scale = dict(cmin=0.0, cmax=1.0) if flat else {}
    fig = go.Figure(go.Scatter(
        x=data.coords[:, 0], y=data.coords[:, 1], mode="markers",
        marker=dict(color=s, size=size, colorscale="Plasma", showscale=True, **scale,
                    colorbar=dict(title="leverage", tickformat=".3~g"), line=dict(width=0)),
        text=_point_hover(data),
        hovertemplate="%{text}<br>leverage %{marker.color:.3g}<extra></extra>"))
    if flat and not title:
        title = f"every score is about {hi:.3g}: the kernel is flat at this α"
    fig.update_layout(title=title, height=480, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis=dict(title=data.axes[0], tickformat=".3~g"),
                      yaxis=dict(title=data.axes[1], tickformat=".3~g"))
    return fig


def score_scatter_figure(exact, approx, *, groups=None, group_name="") -> go.Figure:
    """Approximate against exact leverage scores, with the line y = x (log-log)."""
    exact, approx = np.asarray(exact, float), np.asarray(approx, float)
    fig = go.Figure()
    if groups is None:
        groups = np.full(exact.shape[0], "points")
    for g in list(dict.fromkeys(np.asarray(groups).tolist())):
        sel = np.asarray(groups) == g
        fig.add_trace(go.Scatter(x=exact[sel], y=approx[sel], mode="markers",
                                 name=str(g), marker_size=5, opacity=0.7))
    pos = np.concatenate([exact[exact > 0], approx[approx > 0]])
    if pos.size:
        lo, hi = float(pos.min()), float(pos.max())
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="y = x",
                                 line=dict(color="grey", dash="dash")))
    fig.update_layout(height=440, margin=dict(l=10, r=10, t=30, b=10),
                      legend_title_text=group_name,
                      # labels at 1, 2 and 5 of each decade, not every digit 2-9
                      xaxis=dict(title="exact score", type="log", dtick="D2"),
                      yaxis=dict(title="approximate score", type="log", dtick="D2"))
    return fig


def landmarks_figure(data, indices, counts) -> go.Figure:
    """All points in grey and the sampled landmarks on top (size: times drawn)."""
    fig = go.Figure(go.Scatter(x=data.coords[:, 0], y=data.coords[:, 1], mode="markers",
                               name="points", marker=dict(color="#c7c7c7", size=4),
                               text=_point_hover(data),
                               hovertemplate="%{text}<extra></extra>"))
    idx = np.asarray(indices, dtype=int)
    counts = np.asarray(counts, dtype=int)
    fig.add_trace(go.Scatter(
        x=data.coords[idx, 0], y=data.coords[idx, 1], mode="markers", name="landmarks",
        marker=dict(color="#e45756", size=7 + 3 * np.sqrt(counts),
                    line=dict(color="black", width=1)),
        text=[f"{data.labels[k]}<br>drawn {c}×" for k, c in zip(idx, counts)],
        hovertemplate="%{text}<extra></extra>"))
    fig.update_layout(height=460, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis=dict(title=data.axes[0], tickformat=".3~g"),
                      yaxis=dict(title=data.axes[1], tickformat=".3~g"),
                      legend=dict(orientation="h", y=-0.15))
    return fig


def kron_scores_figure(exact, approx, row_labels, col_labels) -> go.Figure:
    """The exact and approximate (5.23) leverage scores of every entry, side by side on one
    colour scale."""
    exact, approx = np.asarray(exact, float), np.asarray(approx, float)
    top = float(max(exact.max(), approx.max())) if exact.size else 1.0
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=("exact: diag(K (K + αI)⁻¹)",
                                        "approximation (5.23): ℓ_col ⊗ ℓ_row at √α"))
    rows = [_short(x) for x in row_labels]
    cols = [_short(x, 12) for x in col_labels]
    for k, z in enumerate((exact, approx), start=1):
        fig.add_trace(go.Heatmap(z=z, x=list(range(len(cols))), y=list(range(len(rows))),
                                 zmin=0.0, zmax=top, colorscale="Plasma",
                                 showscale=k == 2, colorbar=dict(title="leverage"),
                                 customdata=np.dstack(np.broadcast_arrays(
                                     np.asarray(rows, dtype=object)[:, None],
                                     np.asarray(cols, dtype=object)[None, :])),
                                 hovertemplate="%{customdata[0]} × %{customdata[1]}<br>"
                                               "score %{z:.3g}<extra></extra>"),
                      row=1, col=k)
    height = heatmap_height(len(rows))
    n_y, n_x = heatmap_tick_layout(len(rows), len(cols), height)
    yp, yt = _ticks(rows, np.zeros(len(rows), bool), limit=n_y)
    xp, xt = _ticks(cols, np.zeros(len(cols), bool), limit=n_x)
    fig.update_yaxes(tickvals=yp, ticktext=[_short(t, HEATMAP_LABEL) for t in yt],
                     autorange="reversed", automargin=True)
    fig.update_xaxes(tickvals=xp, ticktext=xt, tickangle=-90, automargin=True)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=50, b=10))
    return fig


MEASURE_TITLES = {"trace": "relative trace error Tr(K − K̂) / Tr K",
                  "frobenius": "relative Frobenius error ‖K − K̂‖_F / ‖K‖_F",
                  "spectral": "relative spectral error ‖K − K̂‖₂ / ‖K‖₂"}


def nystrom_error_figure(bands, measure="trace") -> go.Figure:
    """Median error against the number of landmarks per sampling scheme, with a band from
    the 10 % to the 90 % quantile over the repeated draws."""
    fig = go.Figure()
    b = bands[bands["measure"] == measure]
    for scheme, g in b.groupby("sampling", sort=False):
        g = g.sort_values("m")
        colour = SAMPLING_COLOURS.get(scheme, "#333333")
        name = SAMPLING_LABELS.get(scheme, scheme)
        fig.add_trace(go.Scatter(
            x=np.concatenate([g["m"], g["m"][::-1]]),
            y=np.concatenate([g["high"], g["low"][::-1]]), fill="toself", fillcolor=colour,
            opacity=0.18, line=dict(width=0), hoverinfo="skip", legendgroup=scheme,
            showlegend=False))
        fig.add_trace(go.Scatter(x=g["m"], y=g["median"], mode="lines+markers", name=name,
                                 legendgroup=scheme, line=dict(color=colour)))
    fig.update_layout(height=460, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis=dict(title="landmarks m", type="log"),
                      yaxis=dict(title=MEASURE_TITLES.get(measure, measure),
                                 **value_axis(log=True)),
                      legend=dict(orientation="h", y=-0.2))
    return fig


__all__ = ["completion_map_figure", "fraction_curve_figure", "kron_scores_figure",
           "landmarks_figure", "leverage_map_figure", "nystrom_error_figure",
           "score_scatter_figure", "spectra_figure"]
