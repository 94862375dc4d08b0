"""A TPE search (kmviz.search, Optuna): points chosen between the values given, one after
the other, each an ordinary saved run of the sweep; the sampler is told every result."""

import builtins

import numpy as np
import pytest

from kmviz import families
from kmviz.cli import main
from kmviz.data import load
from kmviz.data.splits import make_split
from kmviz.exceptions import InvalidParameterError
from kmviz.runs import RunStore
from kmviz.search import objective_metric, plan_search
from kmviz.sweep import run_sweep

KM = families.get("km")
DATA = {"n_users": 40, "n_items": 16, "D": 3}


def test_the_objective_is_the_first_validation_metric_with_its_direction():
    assert objective_metric(KM) == ("validation_nrmse", "minimize")
    metric, direction = objective_metric(families.get("ocmf"))
    assert metric.startswith("validation_") and direction == "maximize"


@pytest.mark.parametrize("grid, words", [
    ({"D": [4]}, "two or more values"),
    ({"D": [2, 0]}, "D"),
    ({"nope": [1, 2]}, "nope"),
])
def test_bad_searches_are_refused_naming_the_problem(grid, words):
    with pytest.raises(InvalidParameterError, match=words):
        plan_search(KM, grid, trials=3)


def test_trials_are_bounded_and_optuna_missing_says_how_to_install(monkeypatch):
    with pytest.raises(InvalidParameterError, match="trials"):
        plan_search(KM, {"D": [2, 8]}, trials=0)
    real = builtins.__import__

    def no_optuna(name, *a, **k):
        if name == "optuna":
            raise ImportError("no optuna")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_optuna)
    with pytest.raises(InvalidParameterError, match=r"kmviz\[search\]"):
        plan_search(KM, {"D": [2, 8]}, trials=3)


def test_the_sampler_stays_in_the_ranges_and_the_seed_repeats_it():
    def draws(seed):
        plan = plan_search(KM, {"D": [2, 16], "lambda_theta": [0.1, 1000.0],
                                "bqp_solver": ["fast", "exact"]}, base={"max_iter": 3},
                           trials=12, seed=seed)
        out = []
        for _ in range(12):
            p = plan.sampler.ask()
            out.append(p)
            plan.sampler.tell({"validation_nrmse": float(p["D"])})  # smaller D is better
        return plan, out
    plan, a = draws(0)
    assert plan.mode == "tpe" and len(plan.points) == 12 and plan.points[0]["max_iter"] == 3
    d = np.array([p["D"] for p in a])
    lam = np.array([p["lambda_theta"] for p in a])
    assert all(isinstance(x, int) for x in d.tolist()) and d.min() >= 2 and d.max() <= 16
    assert lam.min() >= 0.1 and lam.max() <= 1000.0
    assert {p["bqp_solver"] for p in a} <= {"fast", "exact"}
    assert draws(0)[1] == a and draws(1)[1] != a
    best = plan.sampler.best()
    assert best["validation_nrmse"] == d.min() and best["D"] == d.min()


@pytest.mark.slow  # fits KM
def test_a_search_saves_runs_that_equal_single_fits_and_tells_the_sampler(tmp_path):
    whole = load("planted-km", **DATA)
    split = make_split(whole, val_size=0.1, test_size=0.2, seed=0)
    store = RunStore(tmp_path / "s")
    plan = plan_search(KM, {"D": [2, 6], "lambda_theta": [0.1, 100.0]},
                       base={"max_iter": 2}, trials=5, seed=0)
    result = run_sweep(plan, whole, split, store=store)
    assert not result.stopped and len(result.rows) == 5
    listing = store.list().set_index("run_id")
    assert (listing["sweep"] == plan.sweep_id).all()
    for row in result.rows:
        run = store.load(row["run_id"])
        assert run.meta["sweep"]["mode"] == "tpe"
        params = {**plan.points[0], "D": row["D"], "lambda_theta": row["lambda_theta"]}
        single = KM.make(params).fit(split.train, validation=split.validation)
        np.testing.assert_array_equal(run.arrays["psi"], single.psi_)
        assert row["validation_nrmse"] == single.evaluate(split.validation)["nrmse"]
    best = plan.sampler.best()
    assert best["validation_nrmse"] == min(r["validation_nrmse"] for r in result.rows)


@pytest.mark.slow  # fits KM
def test_the_command_line_search(capsys):
    data = ["--data", "planted-km"] + [a for k, v in DATA.items()
                                       for a in ("--option", f"{k}={v}")]
    assert main(["sweep", "km", *data, "--grid", "D=2,6", "--grid", "lambda_theta=0.1,100",
                 "--tpe", "4", "--set", "max_iter=2"]) == 0
    out = capsys.readouterr().out
    assert "tpe search" in out and "minimizing validation_nrmse" in out
    assert "[4/4] D=" in out and "Summary (4 of 4 point(s)" in out
    assert main(["sweep", "km", *data, "--grid", "D=2,6", "--tpe", "4", "--seeds",
                 "2"]) == 2
    assert "--seeds 1" in capsys.readouterr().err
