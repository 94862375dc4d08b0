"""The figures without a family's vocabulary, KM's vocabulary in kmviz.km.telemetry, the
mean-predictor yardstick, readable dual-gap curves and phase-time charts."""

import inspect

import numpy as np
import pandas as pd
import pytest

import kmviz.viz._theme as theme
from kmviz.km import telemetry
from kmviz.trace import Trace
from kmviz.viz import (
    convergence_figure,
    dual_gap_figure,
    evd_savings_figure,
    phase_share_figure,
    phase_time_figure,
)
from kmviz.viz._theme import column_label, distinct_colors
from kmviz.viz.convergence import mean_predictor_rmse
from kmviz.viz.phases import phase_shares

ALL_PARTS = dict(t_lcqp_s=0.02, t_build_s=0.01, t_bqp_s=1.0, t_bqp_dual_s=0.3,
                 t_dual_1a_s=0.01, t_dual_1b_s=0.04, t_dual_2a_s=0.02, t_dual_2b_s=0.23,
                 t_evd_s=0.4, t_lanczos_s=0.1, t_randomization_s=0.05, t_objective_s=0.01)


def _timed(first=1.0, n=4, **parts):
    t = Trace(solver="x")
    for k in range(n):
        f = first if k == 0 else 1.0
        t.record(objective=1.0, **{c: v * f for c, v in (parts or ALL_PARTS).items()})
    return t


# --------------------------------------------------------------------------- telemetry
def test_theme_holds_no_km_names_and_telemetry_has_them():
    for name in ("PHASES", "PHASE_COLORS", "TIMED_PARTS"):
        assert not hasattr(theme, name)
    assert telemetry.PHASES == ("I-A", "I-B", "II-A", "II-B")
    assert telemetry.PHASE_LABELS["t_build_s"] == "build S_i, v_i"
    assert set(telemetry.PHASE_TIME_COLUMNS.values()) <= set(telemetry.PHASE_LABELS)
    colours = list(telemetry.PART_COLORS.values())
    assert len(set(colours)) == len(colours)  # no two timed parts alike
    assert set(telemetry.PART_COLORS) == set(telemetry.PHASE_LABELS)


def test_telemetry_phases_match_the_solver():
    from kmviz.km import solvers as bqp

    assert tuple(bqp.PHASES) == telemetry.PHASES


@pytest.mark.parametrize("name, func", [
    ("convergence", convergence_figure), ("dual_gap", dual_gap_figure),
    ("phase_share", phase_share_figure), ("phase_time", phase_time_figure),
    ("evd_savings", evd_savings_figure)])
def test_figure_options_are_keywords_of_their_figure(name, func):
    params = inspect.signature(func).parameters
    assert set(telemetry.FIGURE_OPTIONS[name]) <= set(params)


@pytest.mark.parametrize("column, label", [
    ("t_build_s", "build"), ("t_bqp_other_s", "bqp other"), ("n_phase_1a", "phase 1a"),
    ("train_rmse", "train rmse"), ("t_s", "t s")])
def test_column_label(column, label):
    assert column_label(column) == label


def test_distinct_colors_replaces_repeats_and_avoids():
    keys = [f"k{i}" for i in range(40)]
    out = distinct_colors(keys, {"k0": "#111111", "k1": "#111111"}, avoid=["#1f77b4"])
    assert out["k0"] == "#111111" and out["k1"] != "#111111"
    assert len(set(out.values())) == 40 and "#1f77b4" not in out.values()


# --------------------------------------------------------------------------- phase time
def test_phase_time_without_labels_names_parts_after_their_columns():
    fig = phase_time_figure(_timed(t_build_s=0.1, t_lcqp_s=0.2), first_apart=False)
    assert [tr.name for tr in fig.data] == ["build", "lcqp"]  # in the trace's order


def test_phase_time_labels_order_and_nesting():
    labels = {"t_lcqp_s": "θ step", "t_build_s": "build"}
    fig = phase_time_figure(_timed(t_build_s=0.1, t_lcqp_s=0.2, t_outer_s=1.0, t_inner_s=0.4),
                            labels, nested={"t_outer_s": ("t_inner_s",)})
    names = [tr.name for tr in fig.data]
    assert names == ["θ step", "build", "inner", "other outer"]  # labelled first, in order
    assert fig.data[3].y[0] == pytest.approx(0.6)  # t_outer_s minus its part
    assert sum(tr.y[0] for tr in fig.data) == pytest.approx(0.2 + 0.1 + 1.0)


@pytest.mark.parametrize("options", [{}, telemetry.FIGURE_OPTIONS["phase_time"]])
def test_phase_time_parts_have_distinct_colours(options):
    fig = phase_time_figure(_timed(), first_apart=False, **options)
    colours = [tr.marker.color for tr in fig.data]
    assert len(fig.data) >= 11 and len(set(colours)) == len(colours)


def test_phase_time_draws_a_slow_first_iteration_apart():
    opts = telemetry.FIGURE_OPTIONS["phase_time"]
    fig = phase_time_figure(_timed(first=50.0), **opts)  # "auto"
    left = [tr for tr in fig.data if tr.xaxis == "x"]
    right = [tr for tr in fig.data if tr.xaxis == "x2"]
    assert left and right and len(left) == len(right)
    assert all(list(tr.x) == [1] for tr in left)
    assert all(list(tr.x) == [2, 3, 4] for tr in right)
    assert not any(tr.showlegend for tr in left)  # one legend entry per part
    assert fig.layout.yaxis.title.text == "s per BCD iteration"
    assert "first iteration" in fig.layout.annotations[0].text
    for one_panel in (phase_time_figure(_timed(first=50.0), first_apart=False, **opts),
                      phase_time_figure(_timed(first=1.5), **opts)):
        assert {tr.xaxis for tr in one_panel.data} <= {None, "x"}
        assert len(one_panel.data[0].x) == 4


def test_phase_time_log_scale_draws_lines_and_the_total():
    fig = phase_time_figure(_timed(first=50.0), log_y=True,
                            **telemetry.FIGURE_OPTIONS["phase_time"])
    assert fig.layout.yaxis.type == "log"
    assert all(tr.type == "scatter" for tr in fig.data)
    total = fig.data[-1]
    assert total.name == "total" and total.y[0] == pytest.approx(50 * (1.0 + 0.02 + 0.01
                                                                       + 0.01))
    assert total.y[1] == pytest.approx(1.04)


# --------------------------------------------------------------------------- phase share, EVD
def test_phase_share_and_evd_savings_without_labels():
    t = Trace(solver="x")
    t.record(objective=1.0, n_phase_a=3, n_phase_b=1, n_dual_iter=4, n_evd=1)
    shares = phase_shares(t)
    assert list(shares.columns) == ["iteration", "a", "b"]
    assert shares.loc[0, "a"] == pytest.approx(0.75)
    fig = phase_share_figure(t)
    assert [tr.name for tr in fig.data] == ["phase a", "phase b"]
    assert fig.data[0].marker.color != fig.data[1].marker.color
    ev = evd_savings_figure(t)
    assert len(ev.data) == 2 and "need no EVD" not in ev.layout.title.text


# --------------------------------------------------------------------------- mean predictor
def test_mean_predictor_rmse():
    assert mean_predictor_rmse([0.0, 1.0], [0.5, 1.5]) == pytest.approx(np.sqrt(0.5))
    assert mean_predictor_rmse([1.0, 2.0, 3.0]) == pytest.approx(np.std([1.0, 2.0, 3.0]))
    assert mean_predictor_rmse([2.0, 2.0], [2.0]) == 0.0
    assert np.isnan(mean_predictor_rmse([], [1.0]))


def _metric_trace(column="validation_nrmse"):
    t = Trace(solver="x")
    for k in range(3):
        t.record(objective=3.0 - k, train_rmse=0.3 - 0.1 * k, **{column: 0.25 + 0.01 * k})
    return t


@pytest.mark.parametrize("column", ["validation_nrmse", "val_nrmse"])
def test_convergence_draws_the_mean_predictor_per_panel(column):
    fig = convergence_figure({"run": _metric_trace(column)},
                                 baselines={"train_rmse": 0.31, "validation_nrmse": 0.3,
                                            "test_rmse": 9.0})
    assert [a.text for a in fig.layout.annotations] == [
        "Training RMSE", "Objective", "Validation NRMSE"]
    base = [tr for tr in fig.data if tr.name == "mean predictor"]
    assert [(tr.xaxis, tr.y[0], tr.y[1]) for tr in base] == [("x", 0.31, 0.31),
                                                              ("x3", 0.3, 0.3)]
    assert all(tr.line.dash == "dash" for tr in base)
    assert list(base[0].x) == [1, 3]  # across the iterations
    assert [tr.showlegend for tr in base] == [True, False]
    run = [tr for tr in fig.data if tr.name == "run"]
    assert len(run) == 3 and list(run[2].y) == pytest.approx([0.25, 0.26, 0.27])


def test_convergence_baseline_key_alias_and_new_column_wins():
    t = Trace(solver="x")
    t.record(objective=1.0, val_nrmse=0.9, validation_nrmse=0.2)
    t.record(objective=0.5, val_nrmse=0.8)
    fig = convergence_figure({"old+new": t}, baselines={"val_nrmse": 0.4})
    val = [tr for tr in fig.data if tr.name == "old+new" and tr.xaxis == "x2"][0]
    assert list(val.y) == pytest.approx([0.2, 0.8])  # validation_nrmse first, then val_nrmse
    assert [tr.y[0] for tr in fig.data if tr.name == "mean predictor"] == [0.4]
    none = convergence_figure({"a": _metric_trace()})
    assert not [tr for tr in none.data if tr.name == "mean predictor"]


def test_convergence_labels_from_the_family():
    fig = convergence_figure({"r": _metric_trace()},
                             labels={"objective": ("Objective of (2)", "SSE"),
                                     "train_rmse": "RMSE on p"})
    assert [a.text for a in fig.layout.annotations] == [
        "RMSE on p", "Objective of (2)", "Validation NRMSE"]
    assert fig.layout.yaxis2.title.text == "SSE"


# --------------------------------------------------------------------------- dual gap
def _coinciding():
    df = pd.DataFrame({"iteration": range(100), "gap": np.logspace(0, -8, 100),
                       "phase": ["I-A"] * 10 + ["I-B"] * 5 + ["II-B"] * 85})
    return {"original GD (Alg. 1)": df, "enhanced GD (Alg. 2)": df.copy()}


def test_dual_gap_coinciding_curves_stay_distinguishable():
    fig = dual_gap_figure(_coinciding(), title="Fig. 1", **telemetry.FIGURE_OPTIONS["dual_gap"])
    lines = [tr for tr in fig.data if tr.mode == "lines"]
    assert [tr.name for tr in lines] == ["original GD (Alg. 1)", "enhanced GD (Alg. 2)"]
    a, b = (tr.line for tr in lines)
    assert a.color != b.color and a.dash != b.dash and a.width > b.width
    # the lines lie over every marker, the thinner one drawn last
    kinds = [tr.mode for tr in fig.data if tr.legend != "legend2"]
    assert kinds == ["markers", "markers", "lines", "lines"]
    m1, m2 = [tr for tr in fig.data if tr.mode == "markers" and tr.legend != "legend2"]
    assert m1.marker.symbol != m2.marker.symbol
    assert m1.marker.symbol.endswith("-open") and m2.marker.symbol.endswith("-open")
    assert not m1.showlegend and m1.legendgroup == "original GD (Alg. 1)"
    # thinned: about 40 markers, every phase change kept, methods on different iterates
    assert len(m1.x) <= 45 and {10, 15} <= set(m1.x) and set(m1.x) != set(m2.x)
    key = [tr for tr in fig.data if tr.legend == "legend2"]
    assert [tr.name for tr in key] == ["phase I-A", "phase I-B", "phase II-B"]
    assert fig.layout.legend2.title.text == "phase (marker colour)"


def test_dual_gap_default_phase_colours_and_no_phase_column():
    data = _coinciding()
    fig = dual_gap_figure(data, title="t")
    key = [tr.marker.color for tr in fig.data if tr.legend == "legend2"]
    lines = [tr.line.color for tr in fig.data if tr.mode == "lines"]
    assert len(set(key)) == 3 and not set(key) & set(lines)
    plain = dual_gap_figure({"a": data["original GD (Alg. 1)"].drop(columns="phase")},
                            title="t")
    assert [tr.mode for tr in plain.data] == ["lines"]
    assert "gap" in plain.data[0].hovertemplate


def test_dual_gap_on_the_evd_axis_parts_the_same_iterates():
    """Alg. 1 computes an EVD every iteration, Alg. 2 fewer: on the EVD axis the same
    iterates end at different x, and the axis says what it counts."""
    traj = _coinciding()
    a, b = traj.values()
    a["n_evd"] = np.arange(1, 101)
    b["n_evd"] = np.minimum(np.arange(1, 101), 40)
    fig = dual_gap_figure(traj, title="Fig. 1", x="n_evd")
    ends = [max(tr.x) for tr in fig.data if tr.mode == "lines"]
    assert ends == [100, 40]
    assert fig.layout.xaxis.title.text == "EVDs computed so far"
    assert all("EVDs so far" in tr.hovertemplate for tr in fig.data if tr.mode == "lines")
    # without EVD counts the iterations are the axis
    plain = dual_gap_figure(_coinciding(), title="Fig. 1", x="n_evd")
    assert plain.layout.xaxis.title.text == "dual GD iteration i"
    with pytest.raises(ValueError, match="x must be"):
        dual_gap_figure(_coinciding(), title="Fig. 1", x="time")
