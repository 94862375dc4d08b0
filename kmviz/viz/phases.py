"""Where an iterative solver spends its iterations and time (for KM: paper Table II, Sec. IV).

Model-agnostic: the figures read the trace conventions (``n_phase_<name>`` iteration counts,
``t_<name>_s`` timers) and name columns after themselves unless given labels and colours
(for KM, :data:`kmviz.km.telemetry.FIGURE_OPTIONS`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._theme import distinct_colors, empty_figure, label_of, styled
from .convergence import _word, iteration_dtick

PHASE_COUNT_PREFIX = "n_phase_"
#: ``first_apart="auto"`` draws the first iteration on its own axis when its total time is
#: more than this many times the median of the others.
FIRST_APART_RATIO = 5.0


def _frame(trace) -> pd.DataFrame:
    return trace if isinstance(trace, pd.DataFrame) else trace.to_frame()


def _phase_columns(df: pd.DataFrame, labels) -> dict:
    """Phase count column -> phase name: the labelled columns present, else every
    ``n_phase_<name>`` column (named ``<name>``)."""
    if labels:
        return {c: str(name) for c, name in labels.items() if c in df}
    return {c: c[len(PHASE_COUNT_PREFIX):] for c in df.columns
            if str(c).startswith(PHASE_COUNT_PREFIX)}


def phase_shares(trace, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Share of iterations per phase, per outer iteration plus an ``all`` row.

    Parameters
    ----------
    trace : Trace or DataFrame
    labels : mapping count column -> phase name, optional
        Default: every ``n_phase_<name>`` column, named ``<name>``. For KM pass
        :data:`kmviz.km.telemetry.PHASE_COUNT_LABELS` (columns "I-A" ... "II-B").

    Returns
    -------
    DataFrame
        Column ``iteration`` (str; "all" first), then one column of shares in [0, 1] per
        phase name.
    """
    df = _frame(trace)
    cols = _phase_columns(df, labels)
    if not cols:
        return pd.DataFrame(columns=["iteration", *(labels.values() if labels else [])])
    counts = df[list(cols)].fillna(0).astype(float)
    counts.columns = list(cols.values())
    names = list(counts.columns)
    counts.insert(0, "iteration", df["iteration"].astype(str))
    total = counts[names].sum()
    counts = pd.concat([pd.DataFrame([{"iteration": "all", **total.to_dict()}]), counts],
                       ignore_index=True)
    sums = counts[names].sum(axis=1).replace(0, np.nan)
    for p in names:
        counts[p] = counts[p] / sums
    return counts


def phase_share_figure(trace, *, labels: Mapping[str, str] | None = None,
                       colors: Mapping[str, str] | None = None,
                       title: str = "Share of iterations per phase",
                       y: str = "share of iterations (%)",
                       iteration: str = "iteration") -> go.Figure:
    """Stacked bars: share of iterations in each phase, per outer iteration and overall.

    Parameters
    ----------
    trace : Trace or DataFrame
    labels : mapping count column -> phase name, optional
        See :func:`phase_shares`; legend entries read "phase <name>".
    colors : mapping count column -> colour, optional
        Others get distinct palette colours.
    title, y : str
        Figure title and y-axis title.
    iteration : str, default="iteration"
        What one row of the trace is (the x-axis title): the family's own word.
    """
    df = _frame(trace)
    cols = _phase_columns(df, labels)
    shares = phase_shares(trace, labels)
    names = list(cols.values())
    if shares.empty or shares[names].isna().all().all():
        return empty_figure(title, "This run recorded no phase counts (solver without phases).")
    colours = distinct_colors(list(cols), colors)
    fig = go.Figure()
    for c, p in cols.items():
        fig.add_bar(x=shares["iteration"], y=shares[p] * 100, name=f"phase {p}",
                    marker_color=colours[c],
                    hovertemplate=(f"iteration %{{x}}<br>phase {p}: %{{y:.1f}}% of "
                                   "iterations<extra></extra>"))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(type="category")
    return styled(fig, title=title, x=f"{iteration} ('all' = whole run)", y=y)


def _has(df, col):
    return col in df and df[col].notna().any()


def _timed_parts(df: pd.DataFrame, nested) -> list[str]:
    """The non-overlapping timers to stack, adding ``t_<parent>_other_s`` columns to ``df``.

    A timer listed in ``nested`` with recorded children is replaced by them (recursively)
    plus the rest of its time, kept when it is not negligible.
    """
    timers = [c for c in df.columns if isinstance(c, str) and c.startswith("t_")
              and c.endswith("_s") and _has(df, c)]
    nested = {p: [k for k in kids if _has(df, k)] for p, kids in (nested or {}).items()
              if _has(df, p)}
    covered = {k for kids in nested.values() for k in kids}

    def expand(col, seen=()):
        kids = [k for k in nested.get(col, []) if k not in seen]
        if not kids:
            return [col]
        parts = [part for k in kids for part in expand(k, (*seen, col))]
        rest = (df[col].fillna(0) - df[kids].fillna(0).sum(axis=1)).clip(lower=0)
        if rest.max() > 1e-3 * max(float(df[col].abs().max()), 1e-12):
            other = col[:-2] + "_other_s"
            df[other] = rest
            parts.append(other)
        return parts

    return [p for c in timers if c not in covered for p in expand(c)]


def phase_time_figure(trace, labels: Mapping[str, str] | None = None, *,
                      colors: Mapping[str, str] | None = None,
                      nested: Mapping[str, tuple] | None = None, log_y: bool = False,
                      first_apart: bool | str = "auto",
                      iteration: str = "iteration") -> go.Figure:
    """Stacked bars: wall time of each timed part of one outer iteration, per iteration.

    Parameters
    ----------
    trace : Trace or DataFrame
        Timers are the columns ``t_<name>_s``.
    labels : mapping column -> str, optional
        Display names, also the drawing order; other timers are named after their column
        (``t_build_s`` -> "build"). KM: :data:`kmviz.km.telemetry.PHASE_LABELS`.
    colors : mapping column -> colour, optional
        No two parts share a colour: missing or repeated ones are replaced by palette colours.
    nested : mapping column -> child columns, optional
        Timers that contain others (KM: t_bqp_s holds the dual GD, EVD ... parts). A parent
        is drawn as its children plus its remaining time ``t_<parent>_other_s`` (named
        "other <parent>" unless labelled), so the stack never counts a second twice.
    log_y : bool, default=False
        One line per part, plus their total, on a log axis instead of stacked bars (stacked
        segments cannot be compared on a log axis): parts and iterations that differ by
        orders of magnitude stay readable. ``first_apart`` is then not needed and ignored.
    first_apart : bool or "auto", default="auto"
        Draw the first iteration in a narrow panel on its own y axis, so a slow first
        iteration (set-up, compilation) does not flatten the others. "auto" does so when its
        total exceeds :data:`FIRST_APART_RATIO` times the median of the others.
    iteration : str, default="iteration"
        What one row of the trace is (the x-axis title): the family's own word.
    """
    word = _word(iteration)
    title = f"Wall time per {word}, by part"
    df = _frame(trace).copy()
    parts = _timed_parts(df, nested)
    if df.empty or not parts:
        return empty_figure(title, "This run recorded no phase timings.")
    rank = {c: k for k, c in enumerate(labels or {})}
    found = {c: k for k, c in enumerate(parts)}
    parts = sorted(parts, key=lambda c: (rank.get(c, len(rank)), found[c]))
    colours = distinct_colors(parts, colors)
    names = {}
    for c in parts:
        parent = c[:-len("_other_s")] + "_s" if c.endswith("_other_s") else None
        names[c] = label_of(c, labels) if labels and c in labels or parent is None \
            else f"other {label_of(parent, labels)}"
    totals = df[parts].fillna(0).sum(axis=1).to_numpy()
    if log_y:
        return _phase_time_lines(df, parts, names, colours, totals, title, iteration)
    if first_apart == "auto":
        first_apart = len(df) >= 2 and totals[0] > FIRST_APART_RATIO * np.median(totals[1:])
    apart = bool(first_apart) and len(df) >= 2
    if apart:
        fig = make_subplots(rows=1, cols=2, column_widths=[0.16, 0.84],
                            horizontal_spacing=0.09,
                            subplot_titles=["first iteration (own scale)",
                                            f"iterations 2-{len(df)}" if len(df) > 2
                                            else "iteration 2"])
        panels = [(df.iloc[:1], 1), (df.iloc[1:], 2)]
    else:
        fig = go.Figure()
        panels = [(df, None)]
    for rows, col in panels:
        for c in parts:
            bar = go.Bar(x=rows["iteration"], y=rows[c], name=names[c], legendgroup=c,
                         showlegend=col in (None, 2), marker_color=colours[c],
                         hovertemplate=(f"{word} %{{x}}<br>{names[c]}: %{{y:.3g}} s"
                                        "<extra></extra>"))
            if col is None:
                fig.add_trace(bar)
            else:
                fig.add_trace(bar, row=1, col=col)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(tick0=0, dtick=iteration_dtick(len(df), 2 if apart else 1), tickangle=0)
    fig = styled(fig, title=title)
    if apart:
        fig.update_xaxes(title_text=iteration, row=1, col=2)
        fig.update_yaxes(title_text=f"s per {word}", row=1, col=1)
        fig.update_annotations(font_size=12)
        fig.update_layout(margin=dict(t=90))
    else:
        fig.update_xaxes(title_text=iteration)
        fig.update_yaxes(title_text=f"s per {word}")
    return fig


def _phase_time_lines(df, parts, names, colours, totals, title, iteration) -> go.Figure:
    """The log-scale view of :func:`phase_time_figure`: a line per part and the total."""
    word = _word(iteration)
    fig = go.Figure()
    for c in parts:
        y = df[c].where(df[c] > 0)  # a zero has no place on a log axis: a gap
        fig.add_trace(go.Scatter(
            x=df["iteration"], y=y, mode="lines+markers", name=names[c], legendgroup=c,
            line=dict(color=colours[c], width=2), marker=dict(size=6),
            hovertemplate=f"{word} %{{x}}<br>{names[c]}: %{{y:.3g}} s<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=df["iteration"], y=np.where(totals > 0, totals, np.nan), mode="lines+markers",
        name="total", line=dict(color="#222222", width=2, dash="dash"),
        marker=dict(size=6, symbol="diamond"),
        hovertemplate=f"{word} %{{x}}<br>total: %{{y:.3g}} s<extra></extra>"))
    fig.update_yaxes(type="log", exponentformat="power")
    fig.update_xaxes(tick0=0, dtick=iteration_dtick(len(df)), tickangle=0)
    return styled(fig, title=title, x=iteration, y=f"s per {word} (log scale)")


def evd_savings_figure(trace, *, no_evd: Mapping[str, str] | None = None,
                       title: str = "EVD elimination",
                       iteration: str = "iteration") -> go.Figure:
    """Per outer iteration: dual iterations (``n_dual_iter``), those of the phases that need
    no EVD for their direction, and the EVDs computed (``n_evd``, line search included).

    Parameters
    ----------
    trace : Trace or DataFrame
    no_evd : mapping count column -> phase name, optional
        The phases whose iterations need no EVD (KM: :data:`kmviz.km.telemetry.NO_EVD_PHASES`,
        I-A, I-B and II-A of Alg. 2). Without it that bar and the share in the title are left
        out.
    title : str
    iteration : str, default="iteration"
        What one row of the trace is (the x-axis title): the family's own word.
    """
    df = _frame(trace)
    if df.empty or "n_evd" not in df or "n_dual_iter" not in df:
        return empty_figure(title, "This run recorded no EVD counts.")
    total = df["n_dual_iter"].fillna(0).astype(float)
    evd = df["n_evd"].fillna(0).astype(float)
    free_cols = {c: name for c, name in (no_evd or {}).items() if c in df}
    free = df[list(free_cols)].fillna(0).astype(float).sum(axis=1) if free_cols else None
    fig = go.Figure()
    fig.add_bar(x=df["iteration"], y=total, name="dual iterations", marker_color="#9ecae1",
                hovertemplate="iteration %{x}<br>%{y:,} dual iterations<extra></extra>")
    if free is not None:
        fig.add_bar(x=df["iteration"], y=free,
                    name=f"iterations without EVD ({', '.join(free_cols.values())})",
                    marker_color="#72b7b2",
                    hovertemplate="iteration %{x}<br>%{y:,} iterations needed no EVD"
                                  "<extra></extra>")
    fig.add_bar(x=df["iteration"], y=evd, name="EVDs computed (line search included)",
                marker_color="#e45756",
                hovertemplate="iteration %{x}<br>%{y:,} EVDs<extra></extra>")
    fig.update_layout(barmode="group")
    if free is not None and total.sum() > 0:
        title += f": {free.sum() / total.sum():.0%} of dual iterations need no EVD"
    return styled(fig, title=title, x=iteration, y="count (all items)")
