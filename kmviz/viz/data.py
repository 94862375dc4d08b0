"""Dataset views: rating histogram and per-user / per-item count distributions."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._theme import color, styled


def rating_histogram_figure(values, *, r_min: float, r_max: float, implicit: bool = False,
                            title: str = "Rating values") -> go.Figure:
    """Bar chart of how often each rating value occurs (binned when there are many)."""
    values = np.asarray(values, dtype=float)
    uniq, counts = np.unique(values, return_counts=True)
    fig = go.Figure()
    if uniq.size <= 40:
        fig.add_bar(x=uniq, y=counts, name="ratings", marker_color=color(0),
                    hovertemplate="rating %{x:g}: %{y:,} ratings<extra></extra>")
    else:
        fig.add_histogram(x=values, nbinsx=40, name="ratings", marker_color=color(0),
                          hovertemplate="rating %{x}: %{y:,} ratings<extra></extra>")
    kind = "interaction (1 = observed)" if implicit else f"rating (scale {r_min:g} to {r_max:g})"
    return styled(fig, title=title, x=kind, y="number of ratings", height=340)


def count_distribution_figure(counts, *, what: str = "user", log_x: bool = False) -> go.Figure:
    """Histogram of the number of ratings per user (or per item)."""
    counts = np.asarray(counts, dtype=float)
    fig = go.Figure()
    fig.add_histogram(x=counts, nbinsx=min(50, max(5, int(np.sqrt(counts.size)) + 1)),
                      name=f"{what}s", marker_color=color(1 if what == "user" else 2),
                      hovertemplate=(f"%{{x}} ratings: %{{y}} {what}s<extra></extra>"))
    if log_x:
        fig.update_xaxes(type="log")
    median = float(np.median(counts)) if counts.size else 0.0
    return styled(fig, title=f"Ratings per {what} (median {median:g})",
                  x=f"ratings per {what}", y=f"number of {what}s", height=340)
