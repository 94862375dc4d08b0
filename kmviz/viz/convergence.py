"""Convergence views: metrics per outer iteration and the dual GD gap.

Model-agnostic: panel titles, the word for an iteration and phase colours come from the
caller (a family's ``telemetry.FIGURE_OPTIONS``, through
:meth:`kmviz.families.Family.figure_options`), else from the trace column names.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._theme import LINE_COLORS, color, column_label, distinct_colors, empty_figure, \
    method_line, plain, styled, value_axis

#: Generic panel and axis titles of the usual trace metrics: column -> (title, y axis).
DEFAULT_METRICS = {
    "train_nrmse": ("Training NRMSE", "NRMSE"),
    "train_rmse": ("Training RMSE", "RMSE"),
    "objective": ("Objective", "objective value"),
    "validation_nrmse": ("Validation NRMSE", "NRMSE"),
}
#: Old column names still read: old -> new (the new column wins where both have a value).
METRIC_ALIASES = {"val_nrmse": "validation_nrmse"}
MEAN_PREDICTOR = "mean predictor"


def _frame(trace) -> pd.DataFrame:
    if isinstance(trace, pd.DataFrame):
        return trace
    if hasattr(trace, "to_frame"):
        return trace.to_frame()
    return pd.DataFrame(trace)


def _with_aliases(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every old metric column also under its new name."""
    for old, new in METRIC_ALIASES.items():
        if old in frame:
            frame = frame.copy()
            frame[new] = frame[new].combine_first(frame[old]) if new in frame else frame[old]
    return frame


def _metric_titles(metric: str, labels) -> tuple[str, str]:
    if labels and metric in labels:
        value = labels[metric]
        if isinstance(value, (tuple, list)):
            return (str(value[0]), str(value[1] if len(value) > 1 else value[0]))
        return str(value), str(value)
    if metric in DEFAULT_METRICS:
        return DEFAULT_METRICS[metric]
    name = column_label(metric)
    return name, name


def mean_predictor_rmse(train_values, held_values=None) -> float:
    """RMSE of predicting the mean training value for every rating in ``held_values``.

    The yardstick of a fit: a model that does not beat it has learned nothing beyond the
    average. With ``held_values`` omitted, the training values themselves (their standard
    deviation). Pass values on the scale of the metric (for KM, the probability scale).

    Parameters
    ----------
    train_values : array-like
        Values whose mean is the prediction.
    held_values : array-like, optional
        Values the prediction is scored on; default ``train_values``.

    Returns
    -------
    float
        NaN if either array is empty.
    """
    train = np.asarray(train_values, dtype=np.float64).ravel()
    held = train if held_values is None else np.asarray(held_values, dtype=np.float64).ravel()
    if train.size == 0 or held.size == 0:
        return float("nan")
    return float(np.sqrt(np.mean((held - train.mean()) ** 2)))


def _word(iteration: str) -> str:
    """An iteration's axis title without its trailing symbol ("outer iteration τ" ->
    "outer iteration"), for figure titles."""
    head, _, last = iteration.rpartition(" ")
    return head if head and len(last) == 1 and not last.isascii() else iteration


#: Most x-axis ticks of one panel when it has the figure's whole width; a panel of a
#: figure with ``n`` panels gets about ``MAX_X_TICKS / n`` (at least 5).
MAX_X_TICKS = 20


def iteration_dtick(span: float, n_panels: int = 1) -> int:
    """Whole-number step between x ticks: 1, 2, 5, 10, 20, 50, ... , the smallest that
    gives a panel at most ``max(5, MAX_X_TICKS // n_panels)`` intervals over ``span``
    iterations (so "0 1 2 ... 21" in four narrow panels becomes "0 5 10 15 20")."""
    limit = max(5, MAX_X_TICKS // max(1, int(n_panels)))
    step, k = 1, 0
    while span / step > limit:
        k += 1
        step = (1, 2, 5)[k % 3] * 10 ** (k // 3)
    return step


def convergence_figure(traces: Mapping, *, metrics=None, labels=None, baselines=None,
                       log_y: bool = False, iteration: str = "iteration",
                       title: str | None = None) -> go.Figure:
    """One panel per metric, one line per run, x = the family's outer iteration.

    Parameters
    ----------
    traces : mapping label -> Trace or DataFrame
        Runs to overlay; each needs an ``iteration`` column. The labels (run names: user
        text) name the legend entries and start each hover text, shown as plain text.
    metrics : sequence of str, optional
        Trace columns to show, default those of :data:`DEFAULT_METRICS` (``train_nrmse``,
        ``train_rmse``, ``objective``, ``validation_nrmse``); panels for columns no run has
        are dropped. ``val_nrmse`` is read as
        ``validation_nrmse`` (the newer column wins where a row has both).
    labels : mapping column -> str or (panel title, y-axis title), optional
        Display names; default :data:`DEFAULT_METRICS`, else the column name.
    baselines : mapping column -> float, optional
        The metric's value for the mean predictor (predict the training mean; see
        :func:`mean_predictor_rmse`), drawn as a dashed horizontal line "mean predictor" in
        that metric's panel.
    log_y : bool, default=False
    iteration : str, default="iteration"
        What one row of the trace is (the x-axis title; the figure's title without a
        trailing symbol): a family's own word, such as "outer iteration" or "CG iteration".
    title : str, optional
        The figure's title (plain text), default "Convergence per <iteration>": give one
        when a page shows several of these figures, so each says what it holds.
    """
    alias = lambda m: METRIC_ALIASES.get(m, m)  # noqa: E731
    metrics = [alias(m) for m in (metrics if metrics is not None else DEFAULT_METRICS)]
    metrics = list(dict.fromkeys(metrics))
    baselines = {alias(k): float(v) for k, v in (baselines or {}).items()
                 if v is not None and np.isfinite(v)}
    frames = {label: _with_aliases(_frame(t)) for label, t in traces.items()}
    shown = [m for m in metrics if any(m in f and f[m].notna().any() for f in frames.values())]
    title = plain(title) if title else "Convergence per " + _word(iteration)
    if not frames or not shown:
        return empty_figure(title, "No iterations recorded yet.")
    titles = {m: _metric_titles(m, labels) for m in shown}
    fig = make_subplots(rows=1, cols=len(shown), subplot_titles=[titles[m][0] for m in shown],
                        horizontal_spacing=0.1)
    for k, (label, frame) in enumerate(frames.items()):
        first = True
        text = plain(label)
        for col, metric in enumerate(shown, start=1):
            if metric not in frame or not frame[metric].notna().any():
                continue
            fig.add_trace(go.Scatter(
                x=frame["iteration"], y=frame[metric], mode="lines+markers", name=text,
                legendgroup=text, showlegend=first,
                line=dict(color=color(k)), marker=dict(size=6),
                hovertemplate=(f"<b>{text}</b><br>iteration %{{x}}<br>"
                               f"{titles[metric][0]}: %{{y:.5g}}<extra></extra>")),
                row=1, col=col)
            first = False
    iterations = pd.concat([f["iteration"] for f in frames.values() if "iteration" in f
                            and len(f)], ignore_index=True).dropna()
    x0, x1 = (float(iterations.min()), float(iterations.max())) if len(iterations) else (0, 1)
    legend_done = False
    for col, metric in enumerate(shown, start=1):
        if metric in baselines:
            value = baselines[metric]
            fig.add_trace(go.Scatter(
                x=[x0, x1], y=[value, value], mode="lines" if x1 > x0 else "lines+markers",
                name=MEAN_PREDICTOR, legendgroup=MEAN_PREDICTOR, showlegend=not legend_done,
                line=dict(color="#7f7f7f", dash="dash", width=1.5),
                marker=dict(symbol="line-ew-open", size=14, color="#7f7f7f"),
                hovertemplate=(f"<b>{MEAN_PREDICTOR}</b> (predict the training mean)<br>"
                               f"{titles[metric][0]}: %{{y:.5g}}<extra></extra>")),
                row=1, col=col)
            legend_done = True
        fig.update_xaxes(title_text=iteration, row=1, col=col)
        # the metrics are >= 0: keep a flat zero line (a converged noiseless fit) from
        # getting a symmetric axis around 0
        fig.update_yaxes(title_text=titles[metric][1], type="log" if log_y else "linear",
                         rangemode="normal" if log_y else "nonnegative", row=1, col=col,
                         # 25,473 or 10⁻⁴, never "0.2e+7" or "100µ"
                         **{k: v for k, v in value_axis(log_y).items() if k != "type"})
    # whole iterations only (no 1.5), few enough to stay level and apart in a narrow panel
    fig.update_xaxes(tick0=0, dtick=iteration_dtick(x1 - x0, len(shown)), tickangle=0)
    fig = styled(fig, title=title, height=450)
    fig.update_layout(margin=dict(t=100))
    fig.update_annotations(font_size=13)
    return fig


#: Open marker symbols, one per method: markers of coinciding curves stay distinguishable.
METHOD_SYMBOLS = ["circle-open", "diamond-open", "square-open", "triangle-up-open",
                  "x-thin-open", "cross-thin-open"]


#: At most about this many phase markers per curve (plus one at every phase change).
MAX_MARKERS = 40


def dual_gap_figure(trajectories: Mapping[str, pd.DataFrame], *, title: str,
                    subtitle: str = "", phase_colors: Mapping[str, str] | None = None,
                    x: str = "iteration") -> go.Figure:
    """Optimality gap h(u_i) - h(u*) per dual iteration, log scale, phases as marker colours.

    Each method is a line with its own colour, dash and width (the legend names it; a later,
    thinner dashed line drawn over an earlier one leaves both visible when they coincide),
    drawn over open markers of its own symbol coloured by phase: one at every phase change
    and about :data:`MAX_MARKERS` in all, alternating between methods. The phase colours
    have a separate legend ("phase").

    Parameters
    ----------
    trajectories : mapping label -> DataFrame
        Columns ``iteration`` and ``gap``, optionally ``phase`` (any labels) and ``h``,
        ``step`` and ``n_evd`` (shown on hover).
    title, subtitle : str
        Plain text (the subtitle may name an item: user text).
    phase_colors : mapping phase -> colour, optional
        Colours of the phases, in legend order (for KM,
        :data:`kmviz.km.telemetry.PHASE_COLORS`); other phases get distinct palette colours.
    x : {"iteration", "n_evd"}
        The horizontal axis: the dual iteration, or the EVDs computed so far (where two
        methods with the same iterates differ: Alg. 1 against Alg. 2).
    """
    if x not in ("iteration", "n_evd"):
        raise ValueError(f"x must be 'iteration' or 'n_evd'; got {x!r}.")
    if x == "n_evd" and not all("n_evd" in df for df in trajectories.values()):
        x = "iteration"  # a trajectory without EVD counts: iterations for all
    full = f"{plain(title)}<br><sup>{plain(subtitle)}</sup>" if subtitle else plain(title)
    if not trajectories or all(len(df) == 0 for df in trajectories.values()):
        return empty_figure(full, "No dual iterations to show.")
    phase_colors = dict(phase_colors or {})
    seen = []
    for df in trajectories.values():
        if "phase" in df:
            seen += [p for p in pd.unique(df["phase"].astype(str)) if p not in seen]
    order = [p for p in phase_colors if p in seen] + [p for p in seen if p not in phase_colors]
    colours = distinct_colors(order, phase_colors, avoid=LINE_COLORS)
    fig = go.Figure()
    n = len(trajectories)
    lines = []
    for k, (label, df) in enumerate(trajectories.items()):
        label = plain(label)
        gap = np.maximum(df["gap"].to_numpy(dtype=float), 1e-16)
        it = df[x].to_numpy()
        extra = [c for c in ("h", "step", "n_evd") if c in df]
        has_phase = "phase" in df
        phases = df["phase"].astype(str).to_numpy() if has_phase else None
        cols = ([phases.astype(object)] if has_phase else []) + [
            df[c].to_numpy().astype(object) for c in extra]
        custom = np.column_stack(cols) if cols else None
        hover = (f"<b>{label}</b><br>"
                 + ("EVDs so far" if x == "n_evd" else "dual iteration")
                 + " %{x}<br>gap %{y:.3e}")
        if has_phase:
            hover += "<br>phase %{customdata[0]}"
        for j, c in enumerate(extra, start=int(has_phase)):
            hover += f"<br>{c} %{{customdata[{j}]:.4g}}"
        # the lines go on top of every marker (added after them below)
        lines.append(go.Scatter(
            x=it, y=gap, mode="lines", name=label, legendgroup=label, legend="legend",
            line=method_line(k, n), customdata=custom, hovertemplate=hover + "<extra></extra>"))
        if not has_phase or len(df) == 0:
            continue
        # markers at every phase change and every `stride`-th iterate (shifted per method, so
        # the symbols of coinciding curves alternate instead of covering each other)
        stride = max(1, -(-len(df) // MAX_MARKERS))
        keep = np.zeros(len(df), dtype=bool)
        keep[(k * stride) // n::stride] = True
        keep[0] = keep[-1] = True
        keep[1:] |= phases[1:] != phases[:-1]
        fig.add_trace(go.Scatter(
            x=it[keep], y=gap[keep], mode="markers", name=f"{label}: phases",
            legendgroup=label, legend="legend", showlegend=False, hoverinfo="skip",
            customdata=phases[keep],
            marker=dict(color=[colours[p] for p in phases[keep]], size=7,
                        symbol=METHOD_SYMBOLS[k % len(METHOD_SYMBOLS)], line=dict(width=1.5))))
    for line in lines:
        fig.add_trace(line)
    for phase in order:  # the colour key: legend entries only, no data
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name=f"phase {phase}", legend="legend2",
            legendgroup=f"phase {phase}", hoverinfo="skip",
            marker=dict(color=colours[phase], size=9, symbol="square")))
    fig.update_yaxes(**value_axis(log=True))
    # The legends go below the plot, one method per line (long names never wrap under the
    # phase key), the phase key under them. Plotly places legends in fractions of the plot's
    # height, so the layout is worked out in pixels: a fixed plot height, the x axis's
    # labels, then each legend's rows, all inside the bottom margin (none clipped).
    top = 60
    axis = LEGEND_AXIS_PX
    methods = LEGEND_ROW_PX * (n + 1)  # a title row and one row per method
    phases = LEGEND_ROW_PX * 2 + 10     # a title row and one row of phases (wraps: margin)
    bottom = axis + methods + LEGEND_GAP_PX + phases + 20
    fig = styled(fig, title=full,
                 x="EVDs computed so far" if x == "n_evd" else "dual GD iteration i",
                 y="optimality gap h(uᵢ) − h(u*)", height=top + DUAL_PLOT_PX + bottom)
    fig.update_layout(
        legend=dict(title=dict(text="method (line)"), orientation="v", yanchor="top",
                    y=-axis / DUAL_PLOT_PX, x=0.0, tracegroupgap=0),
        legend2=dict(title=dict(text="phase (marker colour)", side="top"), orientation="h",
                     yanchor="top", y=-(axis + methods + LEGEND_GAP_PX) / DUAL_PLOT_PX,
                     x=0.0, itemclick=False, itemdoubleclick=False),
        margin=dict(t=top, b=bottom))
    return fig


#: Pixel layout of :func:`dual_gap_figure`: the plot's height, the room the x axis's tick
#: labels and title take under it, one legend row, and the gap between the two legends.
DUAL_PLOT_PX = 340
LEGEND_AXIS_PX = 60
LEGEND_ROW_PX = 22
LEGEND_GAP_PX = 12
