"""Figures across runs: values drawn equal the runs' (oracles: the listing itself, numpy
means and extremes), log axes exactly when the values span more than two decades, and the
seed band's meaning stated."""

import numpy as np
import pandas as pd
import pytest

from kmviz.trace import Trace
from kmviz.viz.runs_figures import (BAND_WORDS, convergence_overlay_figure,
                                    metric_scatter_figure, parallel_coordinates_figure,
                                    seed_band_traces, seed_groups, wants_log)


def listing():
    rows = []
    for d in (4, 8):
        for lam in (0.1, 10.0, 100.0):
            for seed in (0, 1, 2):
                rows.append({"run_id": f"r{d}-{lam}-{seed}", "label": f"<b>D={d}</b>",
                             "D": d, "lambda_theta": lam, "bqp_solver": "fast" if d == 4
                             else "exact", "random_state": seed,
                             "validation_nrmse": 0.3 - 0.01 * d + 0.001 * lam + 0.01 * seed})
    return pd.DataFrame(rows)


def test_wants_log_only_beyond_two_decades():
    assert wants_log([0.1, 10.0, 100.0]) and not wants_log([1, 50, 100])
    assert not wants_log([0.0, 10.0, 1000.0])  # zero cannot be on a log axis
    assert not wants_log(["fast", "exact"])


def test_seed_groups_gather_runs_that_differ_only_in_the_seed():
    df = listing()
    groups = seed_groups(df, ["D", "lambda_theta", "random_state"])
    assert len(groups) == 6 and all(len(v) == 3 for v in groups.values())
    assert groups[(4, 10.0)] == ["r4-10.0-0", "r4-10.0-1", "r4-10.0-2"]


def test_parallel_coordinates_draw_every_run_with_log_where_asked():
    df = listing()
    fig = parallel_coordinates_figure(df, ["D", "lambda_theta", "bqp_solver"],
                                      "validation_nrmse")
    dims = fig.data[0].dimensions
    assert [d.label for d in dims] == ["D", "log10 lambda_theta", "bqp_solver",
                                       "validation_nrmse"]
    np.testing.assert_allclose(dims[0].values, df["D"])
    np.testing.assert_allclose(dims[1].values, np.log10(df["lambda_theta"]))
    assert list(dims[2].ticktext) == ["fast", "exact"]
    assert [list(dims[2].ticktext)[c] for c in dims[2].values] == list(df["bqp_solver"])
    np.testing.assert_allclose(dims[3].values, df["validation_nrmse"])
    with pytest.raises(ValueError, match="no run has the metric"):
        parallel_coordinates_figure(df, ["D"], "test_nrmse")


@pytest.mark.parametrize("band", ["minmax", "sd"])
def test_scatter_means_and_bands_equal_numpy_over_the_seeds(band):
    df = listing()
    fig = metric_scatter_figure(df, "lambda_theta", "validation_nrmse",
                                settings=["D", "lambda_theta", "random_state"], band=band)
    runs, mean = fig.data
    assert len(runs.x) == len(df) and fig.layout.xaxis.type == "log"
    assert BAND_WORDS[band] in mean.name
    assert "<b>" not in runs.text[0]  # run names are user text, shown as typed
    for x, m, hi, lo in zip(mean.x, mean.y, mean.error_y.array, mean.error_y.arrayminus):
        # the group at this x: the one whose mean this is (two D values share each x)
        cands = [g for _, g in df[df["lambda_theta"] == x].groupby("D")]
        vals = [np.asarray(g["validation_nrmse"]) for g in cands]
        match = [v for v in vals if abs(v.mean() - m) < 1e-12]
        assert match, (x, m)
        v = match[0]
        if band == "minmax":
            assert m + hi == pytest.approx(v.max()) and m - lo == pytest.approx(v.min())
        else:
            assert hi == pytest.approx(v.std()) and lo == pytest.approx(v.std())
    linear = metric_scatter_figure(df, "D", "validation_nrmse", settings=["D"])
    assert linear.layout.xaxis.type is None
    # an integer setting ticks at its values only (no "2.2" between D = 2 and D = 3)
    assert list(linear.layout.xaxis.tickvals) == sorted(set(int(d) for d in df["D"]))
    assert linear.layout.xaxis.tickvals is not None
    assert metric_scatter_figure(df, "lambda_theta", "validation_nrmse"
                                 ).layout.xaxis.tickvals is None


def test_no_band_when_no_two_runs_share_their_settings():
    df = listing().drop_duplicates(["D", "lambda_theta"])
    fig = metric_scatter_figure(df, "D", "validation_nrmse",
                                settings=["D", "lambda_theta", "random_state"])
    assert len(fig.data) == 1


def make_trace(values):
    t = Trace("km.x", {})
    for v in values:
        t.record(validation_nrmse=v)
    return t


def test_convergence_overlay_draws_a_mean_and_band_per_seed_group():
    traces = {"a0": make_trace([0.5, 0.4, 0.3]), "a1": make_trace([0.7, 0.5]),
              "a2": make_trace([0.6, 0.45, 0.35]), "b": make_trace([0.9, 0.8])}
    groups = {"D=4": ["a0", "a1", "a2"], "D=8": ["b"]}
    stats = seed_band_traces(traces, groups, "validation_nrmse")
    it, mean, low, high, n = stats["D=4"]
    assert n == 3 and list(it) == [1, 2, 3]
    np.testing.assert_allclose(mean, [0.6, 0.45, 0.325])  # the 3rd: the runs that got there
    np.testing.assert_allclose(low, [0.5, 0.4, 0.3])
    np.testing.assert_allclose(high, [0.7, 0.5, 0.35])
    fig = convergence_overlay_figure(traces, "validation_nrmse", groups=groups)
    names = [d.name for d in fig.data]
    assert "D=4 (mean of 3 seeds)" in names and "D=8" in names
    band = next(d for d in fig.data if d.fill == "toself")
    np.testing.assert_allclose(band.y, [0.7, 0.5, 0.35, 0.3, 0.4, 0.5])
    assert BAND_WORDS["minmax"] in fig.layout.title.text
    plain = convergence_overlay_figure({"b": traces["b"]}, "validation_nrmse")
    assert len(plain.data) == 1 and "band" not in plain.layout.title.text
    with pytest.raises(ValueError, match="band must be one of"):
        seed_band_traces(traces, groups, "validation_nrmse", band="iqr")
