"""A replayed convergence figure keeps the whole fit's x axis: its range and its tick
spacing (the spacing of the cut figure, 1, ran "10111213" together over 15 iterations in
the OCMF page's narrow panels)."""

from kmviz.history import trace_until
from kmviz.trace import Trace
from kmviz.ui.replay import hold_iteration_axis
from kmviz.viz import convergence_figure


def _trace(n=15):
    t = Trace(solver="x")
    for k in range(n):
        t.record(objective=100.0 / (k + 1), train_rmse=1.0 / (k + 1), val_nrmse=0.5)
    return t


def test_a_replayed_figure_has_the_whole_fits_range_and_ticks():
    whole = _trace()
    live = convergence_figure({"run": whole}, metrics=["objective", "train_rmse", "val_nrmse"])
    cut = convergence_figure({"run": trace_until(whole, 2)},
                             metrics=["objective", "train_rmse", "val_nrmse"])
    assert cut.layout.xaxis.dtick == 1 and live.layout.xaxis.dtick > 1
    held = hold_iteration_axis(cut, {"run": whole})
    for name in ("xaxis", "xaxis2", "xaxis3"):
        axis = held.layout[name]
        assert tuple(axis.range) == (0.75, 15.25) and axis.autorange is False
        assert axis.dtick == live.layout[name].dtick
    assert len(held.data[0].x) == 2   # the curves are still the cut ones


def test_the_whole_fit_is_drawn_faintly_behind_the_replayed_curves():
    whole = _trace()
    metrics = ["objective", "train_rmse"]
    live = convergence_figure({"run": whole}, metrics=metrics)
    cut = convergence_figure({"run": trace_until(whole, 3)}, metrics=metrics)
    n_cut = len(cut.data)
    held = hold_iteration_axis(cut, {"run": whole}, whole_figure=live)
    ghosts, solid = held.data[:len(live.data)], held.data[len(live.data):]
    assert len(solid) == n_cut and all(len(t.x) == 3 for t in solid)  # on top, as replayed
    for ghost, full in zip(ghosts, live.data):
        assert list(ghost.x) == list(full.x) and list(ghost.y) == list(full.y)
        assert ghost.opacity < 1 and ghost.showlegend is False and ghost.hoverinfo == "skip"
        assert (ghost.xaxis, ghost.yaxis) == (full.xaxis, full.yaxis)   # the same panel
    assert {t.name for t in held.data if t.showlegend is not False} == {"run"}
