"""Figures across runs (a sweep, or the runs a filter shows): parallel coordinates of
settings and a final metric, a metric against one setting, and convergence curves overlaid,
with runs that differ only in their seed drawn as one mean line and a band.

Pure functions of a runs listing (:meth:`kmviz.runs.RunStore.list`: one row per run, its
settings and final metrics as columns) and of traces. The band is stated in every figure
that draws one: :data:`BAND_WORDS` (min-max over the seeds, or +-1 sd).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._theme import COLORS, TEMPLATE, plain, value_axis

#: The seed setting: runs that differ only in it are one group (mean and band).
SEED = "random_state"
#: What the band spans, in the words the figures use.
BAND_WORDS = {"minmax": "band: min to max over the seeds",
              "sd": "band: mean +- 1 standard deviation over the seeds"}
#: A numeric axis is logarithmic when its positive values span more than this ratio.
LOG_RATIO = 100.0


def _numeric(values) -> bool:
    s = pd.Series(list(values))
    return bool(len(s)) and all(isinstance(v, (int, float, np.integer, np.floating))
                                and not isinstance(v, bool) for v in s.dropna())


def wants_log(values) -> bool:
    """Whether a numeric axis should be logarithmic: all values positive, spanning more
    than two decades (max / min > 100)."""
    if not _numeric(values):
        return False
    x = np.asarray(pd.Series(list(values)).dropna(), dtype=float)
    return bool(len(x)) and bool(np.all(x > 0)) and x.max() / x.min() > LOG_RATIO


def _key(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if isinstance(value, np.generic) else value


def seed_groups(df: pd.DataFrame, settings) -> dict:
    """Runs grouped by their settings other than the seed: ``{(value, ...): [run ids]}``,
    keyed in the order of ``settings`` (without :data:`SEED`)."""
    cols = [s for s in settings if s != SEED and s in df]
    groups: dict = {}
    for rec in df.to_dict("records"):
        key = tuple(_key(rec.get(c)) for c in cols)
        groups.setdefault(key, []).append(rec["run_id"])
    return groups


def _band(values: np.ndarray, band: str) -> tuple:
    """(mean, low, high) over axis 0, NaN ignored; ``band`` "minmax" or "sd"."""
    if band not in BAND_WORDS:
        raise ValueError(f"band must be one of {', '.join(BAND_WORDS)}; got {band!r}.")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an iteration no run reached
        mean = np.nanmean(values, axis=0)
        if band == "minmax":
            return mean, np.nanmin(values, axis=0), np.nanmax(values, axis=0)
        sd = np.nanstd(values, axis=0)
        return mean, mean - sd, mean + sd


def _layout(fig: go.Figure, title: str) -> go.Figure:
    fig.update_layout(template=TEMPLATE, title=plain(title), margin=dict(l=60, r=30, t=60,
                                                                           b=50))
    return fig


def parallel_coordinates_figure(df: pd.DataFrame, settings, metric: str, *,
                                metric_label: str | None = None) -> go.Figure:
    """One line per run across one axis per setting and a last axis for ``metric``,
    coloured by the metric. Numeric settings spanning more than two decades are drawn as
    log10 (the axis says so); settings with text values get one tick per value."""
    if metric not in df:
        raise ValueError(f"no run has the metric {metric!r}.")
    dims = []
    for s in [s for s in settings if s in df]:
        values = df[s]
        if _numeric(values):
            x = np.asarray(values, dtype=float)
            if wants_log(values):
                dims.append(dict(label=f"log10 {s}", values=np.log10(x)))
            else:
                dims.append(dict(label=s, values=x))
        else:
            cats = [str(v) for v in pd.unique(values.astype(str))]
            codes = [cats.index(str(v)) for v in values]
            dims.append(dict(label=s, values=codes, tickvals=list(range(len(cats))),
                             ticktext=[plain(c) for c in cats]))
    y = np.asarray(df[metric], dtype=float)
    dims.append(dict(label=metric_label or metric, values=y))
    fig = go.Figure(go.Parcoords(
        line=dict(color=y, colorscale="Viridis", showscale=True,
                  colorbar=dict(title=plain(metric_label or metric))),
        dimensions=dims, labelside="bottom"))  # above, the names ran into the title
    return _layout(fig, f"Settings and {metric_label or metric}, one line per run "
                        f"({len(df)} runs)")


def metric_scatter_figure(df: pd.DataFrame, setting: str, metric: str, *, settings=(),
                          band: str = "minmax", metric_label: str | None = None) -> go.Figure:
    """``metric`` against ``setting``, one marker per run; runs that differ only in their
    seed (same ``settings`` apart from :data:`SEED`) also get their mean as a larger marker
    with error bars spanning the band. The x-axis is logarithmic when the setting's values
    span more than two decades."""
    for c in (setting, metric):
        if c not in df:
            raise ValueError(f"no run has {c!r}.")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=list(df[setting]), y=list(df[metric]), mode="markers",
                             name="runs", marker=dict(color=COLORS[0], size=7, opacity=0.6),
                             text=[plain(t) for t in df.get("label", df["run_id"])],
                             hovertemplate="%{text}<br>%{x}: %{y:.4g}<extra></extra>"))
    groups = seed_groups(df, list(settings) or [setting])
    by_id = df.set_index("run_id")
    if any(len(ids) > 1 for ids in groups.values()):
        xs, means, lows, highs = [], [], [], []
        for ids in groups.values():
            vals = np.asarray(by_id.loc[ids, metric], dtype=float)[None, :].T
            mean, low, high = _band(vals, band)
            xs.append(by_id.loc[ids[0], setting])
            means.append(float(mean[0]))
            lows.append(float(low[0]))
            highs.append(float(high[0]))
        order = np.argsort(np.asarray(xs, dtype=float)) if _numeric(xs) else range(len(xs))
        xs = [xs[i] for i in order]
        means, lows, highs = ([v[i] for i in order] for v in (means, lows, highs))
        fig.add_trace(go.Scatter(
            x=xs, y=means, mode="markers", name=f"mean over seeds ({BAND_WORDS[band]})",
            marker=dict(color=COLORS[1], size=11, symbol="diamond"),
            error_y=dict(type="data", symmetric=False,
                         array=[h - m for h, m in zip(highs, means)],
                         arrayminus=[m - lo for m, lo in zip(means, lows)])))
    log_x = wants_log(df[setting])
    fig.update_xaxes(title=plain(setting), type="log" if log_x else None)
    values = pd.to_numeric(df[setting], errors="coerce").dropna().to_numpy(dtype=float)
    if not log_x and len(values) and np.all(values == np.round(values)) and \
            np.ptp(values) <= 20:  # an integer setting (D, max_iter): its own ticks only
        fig.update_xaxes(tickmode="array", tickvals=sorted({int(v) for v in values}))
    fig.update_yaxes(title=plain(metric_label or metric), **value_axis())
    return _layout(fig, f"{metric_label or metric} against {setting}")


def seed_band_traces(traces: Mapping, groups: Mapping, column: str, *, band: str = "minmax"
                     ) -> dict:
    """``{group name: (iterations, mean, low, high, n_runs)}`` of a trace column over the
    runs of each group (``groups``: name -> labels of ``traces``), aligned by iteration
    (each iteration averaged over the runs that reached it)."""
    out = {}
    for name, labels in groups.items():
        frames = []
        for lab in labels:
            t = traces[lab]
            frame = t.to_frame() if hasattr(t, "to_frame") else pd.DataFrame(t)
            if column in frame and "iteration" in frame:
                frames.append(frame.set_index("iteration")[column].astype(float))
        if not frames:
            continue
        table = pd.concat(frames, axis=1)
        mean, low, high = _band(table.to_numpy().T, band)
        out[name] = (table.index.to_numpy(), mean, low, high, len(frames))
    return out


def convergence_overlay_figure(traces: Mapping, column: str, *, groups: Mapping | None = None,
                               band: str = "minmax", log_y: bool = False,
                               column_label: str | None = None) -> go.Figure:
    """The trace column ``column`` per iteration for several runs, overlaid. With
    ``groups`` (name -> labels of ``traces`` that differ only in their seed), each group
    of two or more runs is one mean line and a shaded band; single runs are plain lines."""
    fig = go.Figure()
    groups = dict(groups) if groups is not None else {lab: [lab] for lab in traces}
    stats = seed_band_traces(traces, groups, column, band=band)
    for k, (name, (it, mean, low, high, n)) in enumerate(stats.items()):
        color = COLORS[k % len(COLORS)]
        label = plain(name) + (f" (mean of {n} seeds)" if n > 1 else "")
        if n > 1:
            fig.add_trace(go.Scatter(
                x=np.concatenate([it, it[::-1]]), y=np.concatenate([high, low[::-1]]),
                fill="toself", fillcolor=color, opacity=0.2, line=dict(width=0),
                hoverinfo="skip", showlegend=False, name=f"{label} band"))
        fig.add_trace(go.Scatter(x=it, y=mean, mode="lines+markers", name=label,
                                 line=dict(color=color)))
    fig.update_xaxes(title="iteration")
    fig.update_yaxes(title=plain(column_label or column), **value_axis(log_y))
    banded = any(v[4] > 1 for v in stats.values())
    return _layout(fig, f"{column_label or column} per iteration" +
                   (f" ({BAND_WORDS[band]})" if banded else ""))
