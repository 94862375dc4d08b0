"""Dataset views: rating histogram and per-row / per-column count distributions."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from ._theme import color, plain, plural, styled

#: Up to this many distinct counts, one bar per count (width 1); above, equal-width bins.
MAX_EXACT_COUNTS = 60
#: Bins of the count histogram when counts spread wider than :data:`MAX_EXACT_COUNTS`.
MAX_BINS = 50


#: Bins of the rating histogram when there are more distinct values than this.
RATING_BINS = 40
_PEEK = 100_000  # values looked at first to tell many distinct values from few


def rating_histogram_figure(values, *, r_min: float, r_max: float, implicit: bool = False,
                            title: str = "Rating values") -> go.Figure:
    """Bar chart of how often each rating value occurs (binned when there are many).

    The bins are counted here, so the figure holds at most :data:`RATING_BINS` bars
    whatever the number of ratings (a plotly histogram of the values themselves sent every
    value to the browser: 31 MB for 2.4M ratings, and about 190 MB of temporary memory in
    the server to encode them)."""
    values = np.asarray(values, dtype=float)
    # many distinct values among the first ones already: bin without sorting them all
    few = not values.size or np.unique(values[:_PEEK]).size <= RATING_BINS
    uniq, counts = np.unique(values, return_counts=True) if few else (None, None)
    fig = go.Figure()
    if uniq is not None and uniq.size <= RATING_BINS:
        fig.add_bar(x=uniq, y=counts, name="ratings", marker_color=color(0),
                    hovertemplate="rating %{x:g}: %{y:,} ratings<extra></extra>")
    else:
        lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
        number, edges = np.histogram(values, bins=RATING_BINS, range=(lo, hi))
        left, right = edges[:-1], edges[1:]
        labels = np.array([f"{a:.3g} to {b:.3g}" for a, b in zip(left, right)], dtype=object)
        fig.add_bar(x=(left + right) / 2, y=number, width=(right - left) * 0.95,
                    customdata=labels, name="ratings", marker_color=color(0),
                    hovertemplate="ratings %{customdata}: %{y:,}<extra></extra>")
    kind = "interaction (1 = observed)" if implicit else f"rating (scale {r_min:g} to {r_max:g})"
    return styled(fig, title=title, x=kind, y="number of ratings", height=340)


def count_bins(counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(left, right, number)`` of the bins of a count histogram: one bin per whole count
    when the counts span at most :data:`MAX_EXACT_COUNTS` values, else at most
    :data:`MAX_BINS` bins of equal whole-number width. Bins nobody falls in are dropped."""
    counts = np.asarray(counts, dtype=float)
    counts = counts[np.isfinite(counts)]
    if counts.size == 0:
        empty = np.zeros(0)
        return empty, empty, empty.astype(np.int64)
    lo, hi = math.floor(counts.min()), math.floor(counts.max())
    width = 1 if hi - lo + 1 <= MAX_EXACT_COUNTS else math.ceil((hi - lo + 1) / MAX_BINS)
    edges = np.arange(lo, hi + width + 1, width, dtype=float)
    number, edges = np.histogram(counts, bins=edges)
    keep = number > 0
    return edges[:-1][keep], edges[1:][keep], number[keep]


def count_distribution_figure(counts, *, what: str = "user", log_x: bool = False) -> go.Figure:
    """Bars of how many rows (``what="user"``) or columns have each number of ratings.

    ``what`` is the dataset's own noun for a row or a column, singular (``Ratings.nouns``:
    "user", "item", "country", "year", "tract", "target"). Every count gets its own bar
    while there are few distinct counts (the bins are :func:`count_bins`); when every one
    has the same count, the title says so instead of drawing one wide block.
    """
    counts = np.asarray(counts, dtype=float)
    many = plural(what)
    left, right, number = count_bins(counts)
    fig = go.Figure()
    exact = bool(len(left)) and bool(np.all(right - left == 1))
    label = (left if exact else [f"{a:g}-{b - 1:g}" for a, b in zip(left, right)])
    fig.add_bar(x=(left if exact else (left + right - 1) / 2), y=number,
                width=(0.8 if exact else (right - left) * 0.9),
                customdata=np.asarray(label, dtype=object), name=plain(many),
                marker_color=color(1 if what == "user" else 2),
                hovertemplate=(f"%{{customdata}} ratings: %{{y:,}} {plain(many)}"
                               "<extra></extra>"))
    if log_x:
        fig.update_xaxes(type="log")
    median = float(np.median(counts)) if counts.size else 0.0
    if counts.size and counts.min() == counts.max():
        n = counts.size
        word = "rating" if counts[0] == 1 else "ratings"
        title = (f"Every {what}: {counts[0]:g} {word}" if n > 1 else
                 f"The one {what}: {counts[0]:g} {word}")
        fig.update_xaxes(tickvals=[counts[0]], range=[counts[0] - 3, counts[0] + 3])
    else:
        title = f"Ratings per {what} (median {median:g})"
    return styled(fig, title=plain(title), x=f"ratings per {what}", y=f"number of {many}",
                  height=340)
