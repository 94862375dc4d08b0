"""Figure builders on small inputs: titles, axis labels, trace counts and values."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from kmviz.km.figures import (
    filter_graph,
    graph_layout,
    implication_graph_figure,
    influence_figure,
    lanczos_bounds_figure,
    ritz_values_figure,
)
from kmviz.km.telemetry import FIGURE_OPTIONS
from kmviz.trace import Trace
from kmviz.viz import (
    convergence_figure,
    count_distribution_figure,
    dual_gap_figure,
    evd_savings_figure,
    phase_share_figure,
    phase_time_figure,
    rating_histogram_figure,
)
from kmviz.viz.phases import phase_shares


def _trace(n=3, seed=0):
    rng = np.random.default_rng(seed)
    t = Trace(solver="km.fast")
    for k in range(n):
        t.record(objective=10.0 / (k + 1), train_rmse=0.5 / (k + 1), val_nrmse=0.3 + 0.01 * k,
                 wall_s=0.1 * (k + 1), t_build_s=0.01, t_bqp_dual_s=0.02, t_evd_s=0.03,
                 t_randomization_s=0.005, t_lcqp_s=0.004, n_phase_1a=1, n_phase_1b=1,
                 n_phase_2a=2, n_phase_2b=6, n_evd=6, n_dual_iter=10)
    return t


def test_convergence_overlays_runs_per_metric():
    fig = convergence_figure({"run A": _trace(3), "run B": _trace(4, seed=1)},
                             **FIGURE_OPTIONS["convergence"])
    assert fig.layout.title.text == "Convergence per BCD iteration"
    assert len(fig.data) == 2 * 3  # two runs x three metrics
    names = {tr.name for tr in fig.data}
    assert names == {"run A", "run B"}
    assert list(fig.data[0].y) == pytest.approx([0.5, 0.25, 0.5 / 3])
    assert fig.layout.xaxis.title.text == "BCD iteration τ"
    assert "RMSE" in fig.layout.yaxis.title.text
    assert [a.text for a in fig.layout.annotations] == [
        "Training RMSE", "Objective of (2)", "Validation NRMSE"]


def test_convergence_drops_missing_metric_and_handles_empty():
    t = Trace(solver="x")
    t.record(objective=1.0, train_rmse=0.1)
    fig = convergence_figure({"a": t})
    assert len(fig.data) == 2
    empty = convergence_figure({})
    assert len(empty.data) == 0 and "No iterations" in empty.layout.annotations[0].text


def test_dual_gap_figure_colours_phases_and_uses_log_axis():
    df = pd.DataFrame({"iteration": range(5), "gap": [1, 0.1, 0.01, 1e-3, 0.0],
                       "phase": ["II-B", "I-B", "I-A", "II-A", "II-B"],
                       "n_evd": [0, 0, 0, 1, 2], "step": [1.0] * 5})
    fig = dual_gap_figure({"enhanced": df}, title="Fig. 1", subtitle="item x",
                          **FIGURE_OPTIONS["dual_gap"])
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.xaxis.title.text == "dual GD iteration i"
    key = [tr for tr in fig.data if tr.legend == "legend2"]
    assert [tr.name for tr in key] == ["phase I-A", "phase I-B", "phase II-A", "phase II-B"]
    assert [tr.marker.color for tr in key] == ["#4c78a8", "#72b7b2", "#f58518", "#e45756"]
    markers = [tr for tr in fig.data if tr.mode == "markers" and tr.legend != "legend2"][0]
    assert list(markers.marker.color) == ["#e45756", "#72b7b2", "#4c78a8", "#f58518",
                                          "#e45756"]
    line = [tr for tr in fig.data if tr.mode == "lines"][0]
    assert line.name == "enhanced"
    assert list(line.customdata[:, 0]) == list(df["phase"])  # the phase is on hover
    assert min(fig.data[0].y) > 0  # a zero gap is clipped for the log axis
    assert "Fig. 1" in fig.layout.title.text


def test_phase_figures():
    t = _trace(2)
    shares = phase_shares(t, FIGURE_OPTIONS["phase_share"]["labels"])
    assert list(shares["iteration"]) == ["all", "1", "2"]
    assert shares.loc[0, "II-B"] == pytest.approx(0.6)
    fig = phase_share_figure(t, **FIGURE_OPTIONS["phase_share"])
    assert len(fig.data) == 4 and fig.layout.barmode == "stack"
    assert fig.data[3].y[0] == pytest.approx(60.0) and fig.data[3].name == "phase II-B"
    assert "Table II" in fig.layout.title.text
    # a trace without the per-phase split: the dual GD in one bar
    tf = phase_time_figure(t, **FIGURE_OPTIONS["phase_time"])
    assert tf.layout.yaxis.title.text == "s per BCD iteration" and len(tf.data) == 5
    assert "BQP dual GD (all phases)" in [tr.name for tr in tf.data]
    ef = evd_savings_figure(t, **FIGURE_OPTIONS["evd_savings"])
    assert len(ef.data) == 3 and "40% of dual iterations need no EVD" in ef.layout.title.text
    assert ef.data[1].name == "iterations without EVD (I-A, I-B, II-A)"
    assert "no phase counts" in phase_share_figure(Trace(solver="x")).layout.annotations[0].text


def test_phase_time_figure_stacks_the_bqp_parts():
    t = Trace(solver="km.fast")
    for k in range(2):
        t.record(objective=1.0, t_build_s=0.01, t_bqp_s=1.0, t_bqp_dual_s=0.3,
                 t_dual_1a_s=0.01, t_dual_1b_s=0.04, t_dual_2a_s=0.0, t_dual_2b_s=0.25,
                 t_evd_s=0.4, t_lanczos_s=0.2, t_randomization_s=0.05, t_lcqp_s=0.02)
    fig = phase_time_figure(t, **FIGURE_OPTIONS["phase_time"])
    names = [tr.name for tr in fig.data]
    assert fig.layout.barmode == "stack" and fig.layout.yaxis.title.text == "s per BCD iteration"
    assert "BQP dual GD (all phases)" not in names  # drawn as its four phase parts
    for name in ("BQP dual GD, phase I-A", "BQP dual GD, phase II-B (EVD excluded)",
                 "dense EVD (eigh)", "Lanczos (Alg. 5)", "randomization (Alg. 3)",
                 "other BQP work (set-up, draws)"):
        assert name in names
    other = fig.data[names.index("other BQP work (set-up, draws)")]
    assert other.y[0] == pytest.approx(1.0 - 0.3 - 0.4 - 0.2 - 0.05)
    bqp = sum(tr.y[0] for tr in fig.data if tr.name not in ("build S_i, v_i",
                                                             "LCQP (Frank-Wolfe, θ)"))
    assert bqp == pytest.approx(1.0)  # the BQP parts stack to t_bqp_s


def test_lanczos_figures():
    diag = pd.DataFrame({"m": [1, 2, 3], "beta": [1.0, 0.1, 0.0], "max_err": [0.5, 0.05, 0],
                         "min_err": [0.1, 1e-3, 0], "beta_q_min": [0.2, 0.01, 0.0],
                         "lemma3_bound": [2, 4, 6]})
    fig = lanczos_bounds_figure(diag, delta=0.2, m_chosen=2, a=1.0, D=2)
    assert fig.layout.yaxis.type == "log"
    names = [tr.name for tr in fig.data]
    assert any(n.startswith("threshold δ") for n in names)
    assert len(fig.data) == 6  # five curves + δ
    assert fig.layout.shapes[0].x0 == 2  # the chosen m
    assert fig.layout.xaxis.title.text == "Lanczos iterations m"
    rf = ritz_values_figure(np.array([-1.0, 0.5, 2.0]),
                            pd.DataFrame({"m": [1, 2, 2], "value": [0.4, -0.9, 1.9]}))
    assert sum(tr.showlegend is not False for tr in rf.data) == 2
    assert list(rf.data[-1].y) == [0.4, -0.9, 1.9]


def test_influence_figure_bar_and_histogram():
    scores = np.array([0.2, 1.0, 0.5])
    fig = influence_figure(scores, ["a", "b", "c"], top=2)
    assert list(fig.data[0].x) == [1.0, 0.5]
    assert fig.data[0].y[0].startswith("b")
    hist = influence_figure(scores, kind="histogram")
    assert hist.data[0].type == "histogram"
    assert "Fig. 8" in hist.layout.title.text


def _graph():
    G = nx.DiGraph()
    G.add_node(0, members=[0], names=["Alien"], support=(1,), support_size=1, influence=0.25)
    G.add_node(1, members=[1, 2], names=["Heat", "Up"], support=(1, 2), support_size=2,
               influence=0.75)
    G.add_node(2, members=[3], names=["Jaws"], support=(0, 1, 2), support_size=3, influence=1.0)
    G.add_edges_from([(0, 1), (1, 2), (0, 2)])
    return G


def test_implication_graph_figure_layers_reduction_and_highlight():
    G = _graph()
    pos = graph_layout(G)
    assert pos[0][1] == 1 and pos[2][1] == 3
    fig = implication_graph_figure(G, selected=1)
    assert len(fig.layout.annotations) == 2  # 0->2 is implied by the path, not drawn
    nodes = [tr for tr in fig.data if tr.name == "item groups (same support)"][0]
    assert len(nodes.x) == 3
    assert "Heat" in nodes.hovertext[1] and "support {1, 2}" in nodes.hovertext[1]
    hover = [tr for tr in fig.data if tr.name == "implication (hover)"][0]
    assert any("Everyone who likes <b>Alien</b>" in t for t in hover.text)
    legend = {tr.name for tr in fig.data}
    assert {"selected", "implied by the selection", "implies the selection"} <= legend
    assert filter_graph(G, min_influence=0.5).number_of_nodes() == 2
    assert filter_graph(G, min_support=2, max_support=2).number_of_nodes() == 1
    assert len(implication_graph_figure(nx.DiGraph()).data) == 0


def test_data_figures():
    fig = rating_histogram_figure(np.array([1, 2, 2, 5.0]), r_min=1, r_max=5)
    assert list(fig.data[0].y) == [1, 2, 1]
    assert "scale 1 to 5" in fig.layout.xaxis.title.text
    many = np.random.default_rng(0).random(200_000)  # continuous: binned here
    fig = rating_histogram_figure(many, r_min=0, r_max=1)
    assert len(fig.data) == 1 and fig.data[0].type == "bar"
    assert len(fig.data[0].y) == 40 and sum(fig.data[0].y) == many.size
    assert len(fig.to_json()) < 20_000   # bins, not 200,000 values, go to the browser
    cf = count_distribution_figure(np.array([1, 2, 3, 10]), what="item")
    assert cf.layout.title.text.startswith("Ratings per item")
    assert cf.layout.yaxis.title.text == "number of items"


def test_influence_figure_on_a_subset_keeps_item_indices():
    scores = np.array([0.2, 1.0, 0.5, 0.9])
    fig = influence_figure(scores, ["a", "b", "c", "d"], items=[0, 2, 3], top=10)
    assert list(fig.data[0].y) == ["d [3]", "c [2]", "a [0]"]
    assert list(fig.data[0].x) == pytest.approx([0.9, 0.5, 0.2])
    empty = influence_figure(scores, items=[])
    assert "No items to show" in empty.layout.annotations[0].text


def test_convergence_axes_for_a_flat_zero_run():
    t = Trace(solver="km.fast")
    for _ in range(2):
        t.record(objective=0.0, train_rmse=0.0)
    fig = convergence_figure({"run": t})
    assert fig.layout.yaxis.rangemode == "nonnegative"
    assert fig.layout.xaxis.dtick == 1


def test_graph_nodes_carry_their_first_item_for_clicks():
    from kmviz.ui.families.km import clicked_item

    fig = implication_graph_figure(_graph())
    nodes = [tr for tr in fig.data if tr.name == "item groups (same support)"][0]
    assert sorted(nodes.customdata) == [0, 1, 3]  # node {Heat, Up} answers with item 1
    assert clicked_item({"selection": {"points": [{"point_index": 1, "customdata": 3}]}}) == 3
    assert clicked_item({"selection": {"points": [{"customdata": [1]}]}}) == 1
    assert clicked_item({"selection": {"points": [{"x": 0.5}]}}) is None  # an edge marker
    assert clicked_item(None) is None and clicked_item({"selection": {"points": []}}) is None


def test_each_family_names_its_own_iteration_on_the_generic_figures():
    from kmviz import families
    from kmviz.viz import phase_time_figure

    fam = families.get("ocmf")
    fig = convergence_figure({"run": _trace(3)}, **fam.figure_options("convergence"))
    assert fig.layout.title.text == "Convergence per outer iteration"
    assert fig.layout.xaxis.title.text == "outer iteration"
    for log_y in (False, True):
        fig = phase_time_figure(_trace(3), log_y=log_y, **fam.figure_options("phase_time"))
        assert fig.layout.title.text == "Wall time per outer iteration, by part"
        assert "BCD" not in fig.layout.yaxis.title.text
    # KM keeps the paper's BCD iteration tau
    km = families.get("km")
    fig = phase_time_figure(_trace(3), **km.figure_options("phase_time"))
    assert fig.layout.title.text == "Wall time per BCD iteration, by part"
