"""Completion's heat maps print tick labels that fit (one per line of text, vertical column
labels that cannot run past the left edge), and one teal frame per run of cold-start rows
or columns; checked on the figure's own data."""

from types import SimpleNamespace

import numpy as np
import pytest

from kmviz.kmc.figures import (HEATMAP_PLOT_WIDTH, HEATMAP_TICK_FONT, completion_map_figure,
                               heatmap_tick_layout)
from kmviz.viz.labels import LINE_EM


def _view(n_r=80, n_c=80, cold_rows=(), cold_cols=()):
    rng = np.random.default_rng(0)
    truth = rng.normal(size=(n_r, n_c))
    cr, cc = np.zeros(n_r, bool), np.zeros(n_c, bool)
    cr[list(cold_rows)] = True
    cc[list(cold_cols)] = True
    return SimpleNamespace(
        rows=np.arange(n_r), cols=np.arange(n_c),
        row_labels=[f"user {k}" for k in range(n_r)],
        col_labels=[f"Terminator {k}: Judgment Day (1991)" for k in range(n_c)],
        truth=truth, estimate=truth + 0.1, error=np.full((n_r, n_c), 0.1),
        part=rng.integers(0, 4, size=(n_r, n_c)), cold_rows=cr, cold_cols=cc)


@pytest.mark.parametrize("which", ["truth", "mask", "estimate", "error"])
@pytest.mark.parametrize("shape", [(80, 80), (12, 9), (300, 40)])
def test_tick_labels_fit_their_axis(which, shape):
    view = _view(*shape, cold_cols=range(60, shape[1]) if shape[1] > 60 else ())
    fig = completion_map_figure(view, which)
    line = LINE_EM * HEATMAP_TICK_FONT
    x, y = fig.layout.xaxis, fig.layout.yaxis
    n_y, n_x = heatmap_tick_layout(shape[0], shape[1], fig.layout.height)
    assert len(y.tickvals) <= n_y and len(x.tickvals) <= n_x
    # one line of text per label along each axis, spaced evenly: none overlaps the next
    px_per_col = HEATMAP_PLOT_WIDTH / shape[1]
    gaps = np.diff(x.tickvals) * px_per_col
    assert len(x.tickvals) * line <= HEATMAP_PLOT_WIDTH and (gaps >= line - 1e-9).all()
    assert x.tickangle == -90  # no slanted label runs past the left edge
    assert all(len(t) <= 22 for t in x.ticktext) and all(len(t) <= 22 for t in y.ticktext)
    # few rows and columns: every one labelled
    if shape == (12, 9):
        assert list(x.tickvals) == list(range(9)) and list(y.tickvals) == list(range(12))


def test_cold_start_runs_get_one_frame_each_and_marked_labels():
    view = _view(cold_rows=[3, 4, 5, 40], cold_cols=list(range(60, 80)))
    fig = completion_map_figure(view, "truth")
    frames = [(s.x0, s.x1, s.y0, s.y1) for s in fig.layout.shapes]
    assert len(frames) == 3  # rows 3-5, row 40, columns 60-79
    assert (-0.5, 79.5, 2.5, 5.5) in frames and (-0.5, 79.5, 39.5, 40.5) in frames
    assert (59.5, 79.5, -0.5, 79.5) in frames
    x = fig.layout.xaxis
    for pos, text in zip(x.tickvals, x.ticktext):
        assert text.startswith("❄") == (pos >= 60)
    hover = fig.data[0].customdata
    assert hover[0, 60][1].startswith("❄ ") and not hover[0, 59][1].startswith("❄")


def test_entry_score_maps_thin_their_labels_too():
    from kmviz.kmc.figures import kron_scores_figure

    rng = np.random.default_rng(1)
    exact, approx = rng.random((200, 60)), rng.random((200, 60))
    fig = kron_scores_figure(exact, approx, [f"user {k}" for k in range(200)],
                             [f"A film with a long title {k}" for k in range(60)])
    n_y, n_x = heatmap_tick_layout(200, 60, fig.layout.height)
    for name in ("xaxis", "xaxis2"):
        axis = fig.layout[name]
        assert axis.tickangle == -90 and len(axis.tickvals) <= n_x
        assert (np.diff(axis.tickvals) * HEATMAP_PLOT_WIDTH / 60
                >= LINE_EM * HEATMAP_TICK_FONT - 1e-9).all()
    assert len(fig.layout.yaxis.tickvals) <= n_y
