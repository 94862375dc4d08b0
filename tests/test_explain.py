"""Why one run beat another (kmviz.runs.explain), on runs whose story is known."""

import pandas as pd

from kmviz.runs.explain import explain_comparison, lower_is_better
from kmviz.trace import Trace


def _trace(values, *, warn=None, key="validation_nrmse"):
    t = Trace(solver="km.fast")
    for v in values:
        t.rows.append({key: v})
    if warn:
        t.events.append({"iteration": len(values), "kind": "warning", "message": warn})
    return t


def _runs(rows):
    return pd.DataFrame(rows).set_index("run_id")


def test_the_direction_of_a_metric_is_read_from_its_name():
    assert lower_is_better("validation_nrmse") and lower_is_better("test_rmse")
    assert not lower_is_better("validation_precision_at_5")
    assert not lower_is_better("validation_map_at_5")


def test_a_setting_and_a_cut_fit_are_named_with_the_curves():
    runs = _runs([
        {"run_id": "a", "label": "D=3", "status": "converged", "n_iter": 4, "D": 3,
         "random_state": 0, "validation_nrmse": 0.07, "train_nrmse": 0.04},
        {"run_id": "b", "label": "D=2", "status": "max_iter", "n_iter": 4, "D": 2,
         "random_state": 0, "validation_nrmse": 0.14, "train_nrmse": 0.10},
    ])
    traces = {"a": _trace([0.30, 0.10, 0.08, 0.07]),
              "b": _trace([0.20, 0.16, 0.15, 0.14], warn="stopped at max_iter=4")}
    lines = explain_comparison(runs, traces, "validation_nrmse", settings=["D", "random_state"])
    assert lines[0] == "“D=3” has the lowest validation_nrmse: 0.07; it converged after 4 " \
                       "iterations."
    assert "“D=2”: validation_nrmse 0.14 (2.00× the best's)" in lines[1]
    assert "differs in D = 2 (best: 3)" in lines[1]
    assert "cut at its iteration limit after 4 iterations" in lines[1]
    # b was ahead at iteration 1 (0.20 < 0.30), a from iteration 2 on
    assert "behind until iteration 1, ahead from iteration 2" in lines[1]
    assert "its trace warns: stopped at max_iter=4" in lines[1]
    assert "overfitting" not in lines[1]


def test_runs_that_differ_only_in_the_seed_are_called_spread():
    runs = _runs([
        {"run_id": "a", "label": "s0", "status": "converged", "n_iter": 3, "D": 3,
         "random_state": 0, "validation_nrmse": 0.100},
        {"run_id": "b", "label": "s1", "status": "converged", "n_iter": 3, "D": 3,
         "random_state": 1, "validation_nrmse": 0.104},
    ])
    lines = explain_comparison(runs, {}, "validation_nrmse", settings=["D", "random_state"])
    assert "same settings as the best but the seed" in lines[1]
    assert "spread of the fit over seeds" in lines[1]


def test_overfitting_and_a_higher_is_better_metric():
    runs = _runs([
        {"run_id": "a", "label": "small", "status": "converged", "n_iter": 5, "k": 8,
         "validation_precision_at_5": 0.30, "train_precision_at_5": 0.40},
        {"run_id": "b", "label": "big", "status": "converged", "n_iter": 5, "k": 64,
         "validation_precision_at_5": 0.20, "train_precision_at_5": 0.90},
        {"run_id": "c", "label": "none", "status": "failed", "n_iter": 0, "k": 16,
         "validation_precision_at_5": None},
    ])
    key = "validation_precision_at_5"
    traces = {"a": _trace([0.1, 0.3], key=key), "b": _trace([0.2, 0.2], key=key)}
    lines = explain_comparison(runs, traces, key, settings=["k"])
    assert lines[0].startswith("“small” has the highest validation_precision_at_5: 0.3")
    assert "(the best's is 1.50× as high)" in lines[1] and "differs in k = 64 (best: 8)" in lines[1]
    assert "fits its training part better (train_precision_at_5 0.9 against 0.4)" in lines[1]
    assert "behind at iteration 1 (the last both ran)" not in lines[1]
    assert lines[-1] == "“none” has no validation_precision_at_5: not ranked."


def test_nothing_to_rank_is_said():
    runs = _runs([{"run_id": "a", "label": "x", "validation_nrmse": 0.1},
                  {"run_id": "b", "label": "y", "validation_nrmse": None}])
    assert explain_comparison(runs, {}, "validation_nrmse") == [
        "Fewer than two of these runs have validation_nrmse: nothing to rank."]
    assert explain_comparison(runs.iloc[:1], {}, "validation_nrmse") == []
