"""Objective and error axes read as numbers: every figure builder of the package is listed
here, either built on small inputs (objectives in the tens of millions, errors down to
1e-6) and its objective, error and relative-error axes read from its layout, as drawn in the
app (:func:`kmviz.viz._theme.themed`), or named with why it has no such axis. A linear
axis must carry a plain tick format (digits with thousands separators: 25,473,000, never
"0.2e+7" or "25.5M"); a log axis powers of ten (10⁻⁴, never "100µ"); no axis an SI or
"B" exponent format."""

from __future__ import annotations

import importlib
import inspect
import re

import numpy as np
import pandas as pd
import pytest

from kmviz.trace import Trace
from kmviz.viz._theme import themed

MODULES = ["kmviz.viz.convergence", "kmviz.viz.data", "kmviz.viz.phases",
           "kmviz.viz.runs_figures", "kmviz.gfm.figures", "kmviz.kmc.figures",
           "kmviz.ocmf.figures", "kmviz.similarity.figures", "kmviz.km.figures.implications",
           "kmviz.km.figures.lanczos"]

#: Builders without an objective or error axis, and what their axes show instead.
NO_VALUE_AXIS = {
    "rating_histogram_figure": "rating values and counts",
    "count_distribution_figure": "ratings per user or item",
    "phase_share_figure": "shares of the phases",
    "phase_time_figure": "seconds per iteration",
    "evd_savings_figure": "EVD counts",
    "parallel_coordinates_figure": "parallel axes of settings, not x / y axes",
    "heatmaps_figure": "matrix rows and columns",
    "spectrum_figure": "eigenvalues",
    "phase_figure": "batch size against rank (a grid)",
    "predictions_figure": "rating values (truth against prediction)",
    "weights_figure": "first-order weights",
    "completion_map_figure": "matrix rows and columns",
    "spectra_figure": "singular values",
    "leverage_map_figure": "principal components",
    "score_scatter_figure": "leverage scores",
    "landmarks_figure": "principal components",
    "kron_scores_figure": "matrix rows and columns",
    "grid_figure": "rho against lambda (a grid)",
    "embedding_figure": "principal components",
    "tower_layers_figure": "units of a layer",
    "cold_scores_figure": "scores",
    "influence_figure": "influence scores",
    "implication_graph_figure": "a graph layout",
    "ego_graph_figure": "a graph layout",
    "stability_figure": "refits",
    "relation_scatter_figure": "support and confidence",
    "ritz_values_figure": "eigenvalues",
}


def _trace(n=4, scale=25_473_000.0):
    t = Trace(solver="x")
    for k in range(n):
        t.record(objective=scale / (k + 1), train_rmse=1e-6 * (k + 1),
                 val_nrmse=0.3 + 0.01 * k, wall_s=0.1 * (k + 1))
    return t


def _builders():
    """name -> (figure, the axes (layout names) that show an objective or an error)."""
    from kmviz.gfm import figures as gfm
    from kmviz.km.figures import lanczos
    from kmviz.kmc import figures as kmc
    from kmviz.similarity import figures as sim
    from kmviz.viz import convergence as conv
    from kmviz.viz import runs_figures as runs

    out = {}
    fig = conv.convergence_figure({"a": _trace(), "b": _trace(3)})
    out["convergence_figure"] = (fig, [n for n in fig.layout if n.startswith("yaxis")])
    log = conv.convergence_figure({"a": _trace()}, log_y=True)
    out["convergence_figure (log)"] = (log, [n for n in log.layout if n.startswith("yaxis")])
    gaps = pd.DataFrame({"iteration": np.arange(1, 6), "gap": np.logspace(0, -6, 5),
                         "phase": ["I-A", "I-A", "I-B", "II-A", "II-B"],
                         "n_evd": np.arange(1, 6)})
    out["dual_gap_figure"] = (conv.dual_gap_figure({"enhanced": gaps}, title="gap"), ["yaxis"])
    df = pd.DataFrame({"run_id": list("abcd"), "label": list("abcd"), "D": [2, 3, 4, 5],
                       "test_rmse": [25_473.0, 24_000.0, 23_500.0, 23_000.0]})
    out["metric_scatter_figure"] = (runs.metric_scatter_figure(df, "D", "test_rmse"),
                                    ["yaxis"])
    out["convergence_overlay_figure"] = (
        runs.convergence_overlay_figure({"a": _trace(), "b": _trace()}, "objective"),
        ["yaxis"])
    table = pd.DataFrame({"t": np.arange(5), "n_seen": 100 * np.arange(1, 6),
                          "eps": np.logspace(0, -6, 5), "err_w": np.logspace(-1, -6, 5),
                          "err_M": np.logspace(0, -6, 5), "fitted": np.logspace(0, -6, 5),
                          "predicted": np.logspace(0, -5, 5),
                          "tan_theta": np.logspace(0, -6, 5),
                          "contraction": [np.nan, 0.1, 0.1, 0.1, 0.1]})
    out["recovery_figure"] = (gfm.recovery_figure(table, fitted_rate=0.1, predicted_rate=0.2),
                              ["yaxis"])
    out["angle_contraction_figure"] = (gfm.angle_contraction_figure(table),
                                       ["yaxis", "yaxis2"])
    curve = pd.DataFrame({"method": ["kkmcex"] * 3, "observed_fraction": [0.1, 0.2, 0.4],
                          "nmse": [1e-2, 1e-4, 1e-6], "time_s": [0.1, 0.2, 0.4],
                          "error": ["", "", ""]})
    out["fraction_curve_figure"] = (kmc.fraction_curve_figure(curve), ["yaxis"])
    bands = pd.DataFrame({"measure": ["trace"] * 3, "sampling": ["uniform"] * 3,
                          "m": [5, 10, 20], "median": [1e-2, 1e-4, 1e-6],
                          "low": [1e-3, 1e-5, 1e-7], "high": [1e-1, 1e-3, 1e-5]})
    out["nystrom_error_figure"] = (kmc.nystrom_error_figure(bands), ["yaxis"])
    race = pd.DataFrame({"solver": ["gd"] * 3, "label": ["GD"] * 3, "iteration": [0, 1, 2],
                         "time_s": [0.0, 1.0, 2.0], "objective": [3e7, 2e7, 1e7],
                         "relative_objective_difference": [2.0, 1e-2, 1e-6],
                         "validation_map_at_5": [np.nan, 0.1, 0.2]})
    out["solver_comparison_figure"] = (sim.solver_comparison_figure(race), ["yaxis"])
    diag = pd.DataFrame({"m": [1, 2, 3], "lower": [1e-1, 1e-4, 1e-9],
                         "upper": [1.0, 1e-3, 1e-8], "error": [1e-1, 1e-4, 1e-9]})
    out["lanczos_bounds_figure"] = (lanczos.lanczos_bounds_figure(diag, delta=1e-3),
                                    ["yaxis"])
    return out


#: Words of an axis title (or its panel's title) that name an objective or an error.
VALUE_WORDS = re.compile(r"objective|error|loss|rmse|nmse|gap|\(L − L\*\)", re.I)


def _format_problem(axis) -> str | None:
    if axis.exponentformat in ("SI", "B"):
        return f"exponentformat {axis.exponentformat!r} (SI prefixes: '100µ', '25.5k')"
    if axis.type == "log":
        if axis.exponentformat not in ("power", "e"):
            return f"log axis with exponentformat {axis.exponentformat!r}"
        if axis.tickformat and re.search(r"[sSeE]$", axis.tickformat.rstrip("~")):
            return f"log axis with tickformat {axis.tickformat!r}"
        return None
    fmt = axis.tickformat or ""
    if not re.fullmatch(r",(\.\d+)?~?[rdf]", fmt):
        return (f"linear axis with tickformat {fmt!r}: an exponent ('0.2e+7') or a prefix "
                "may show; use kmviz.viz._theme.value_axis()")
    return None


BUILT = _builders()


def test_every_figure_builder_is_checked_or_named():
    found = set()
    for name in MODULES:
        module = importlib.import_module(name)
        found |= {n for n, f in inspect.getmembers(module, inspect.isfunction)
                  if n.endswith("_figure") and f.__module__ == name}
    built = {n.split(" ")[0] for n in BUILT}
    missing = found - built - set(NO_VALUE_AXIS)
    assert not missing, f"figure builders neither checked nor named here: {sorted(missing)}"
    assert not (built | set(NO_VALUE_AXIS)) - found - {"empty_figure"}, "listed but gone"


@pytest.mark.parametrize("name", sorted(BUILT))
def test_objective_and_error_axes_read_as_plain_numbers(name):
    fig, axes = BUILT[name]
    for shown in (fig, themed(fig), themed(fig, presentation=True)):
        layout = shown.layout
        titled = [n for n in layout if n.startswith(("xaxis", "yaxis")) and layout[n]
                  and VALUE_WORDS.search(layout[n].title.text or "")]
        for axis_name in sorted(set(axes) | set(titled)):
            problem = _format_problem(layout[axis_name])
            assert problem is None, f"{name}: {axis_name} ({layout[axis_name].title.text!r}): " \
                                    f"{problem}"

