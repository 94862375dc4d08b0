"""Sweeps: the plan checks every value against the declarations; a sweep's runs equal
single fits with the same settings (in Python and from the command line); stop keeps the
points done; the runs carry their sweep id and tag."""

import threading

import numpy as np
import pytest

from kmviz import families
from kmviz.cli import main
from kmviz.data import load
from kmviz.data.splits import make_split
from kmviz.exceptions import InvalidParameterError
from kmviz.runs import RunStore
from kmviz.sweep import MAX_POINTS, parse_grid, plan_sweep, run_sweep

KM = families.get("km")
DATA = {"n_users": 30, "n_items": 20, "D": 3}


def test_grid_times_seeds_points_with_seeds_as_random_state():
    plan = plan_sweep(KM, {"D": [2, 3], "lambda_theta": [0.0, 10.0, 100.0]},
                      base={"max_iter": 2}, seeds=3, seed=5)
    assert len(plan.points) == 2 * 3 * 3 and plan.varied == ["D", "lambda_theta"]
    combos = {(p["D"], p["lambda_theta"], p["random_state"]) for p in plan.points}
    assert len(combos) == 18
    assert {p["random_state"] for p in plan.points} == {5, 6, 7}
    assert all(p["max_iter"] == 2 for p in plan.points)


@pytest.mark.parametrize("specs,words", [
    (["D=0,4"], "D"),
    (["D=4,eight"], "D"),
    (["bqp_solver=fast,quantum"], "bqp_solver"),
    (["gamma"], "expected NAME=V1,V2"),
    (["nope=1,2"], "has no setting 'nope'"),
    (["D=2", "D=3"], "names 'D' twice"),
])
def test_values_outside_the_declarations_are_refused_naming_the_setting(specs, words):
    with pytest.raises(InvalidParameterError, match=words):
        plan_sweep(KM, parse_grid(KM, specs))


def test_sizes_are_bounded_before_anything_runs():
    with pytest.raises(InvalidParameterError, match="more than the"):
        plan_sweep(KM, {"D": list(range(1, 41)), "n_rand": list(range(1, 30))})
    with pytest.raises(InvalidParameterError, match="seeds must be"):
        plan_sweep(KM, {"D": [2]}, seeds=0)
    with pytest.raises(InvalidParameterError, match="at least one setting"):
        plan_sweep(KM, {})
    assert MAX_POINTS >= 27


def test_random_points_stay_between_the_values_given_and_in_the_declared_range():
    plan = plan_sweep(KM, {"D": [2, 16], "gamma": [0.1, 1000.0],
                           "bqp_solver": ["fast", "exact"]}, random=300, seed=1)
    assert len(plan.points) == 300 and plan.mode == "random"
    d = np.array([p["D"] for p in plan.points])
    g = np.array([p["gamma"] for p in plan.points])
    assert d.min() >= 2 and d.max() <= 16 and all(isinstance(x, int) for x in d.tolist())
    assert g.min() >= 0.1 and g.max() <= 1000.0
    # log-uniform over four decades: about half the draws below the geometric mean 10
    assert 0.35 < np.mean(g < 10.0) < 0.65
    assert {p["bqp_solver"] for p in plan.points} == {"fast", "exact"}
    constraints = KM.constraints()
    for p in plan.points[:20]:  # every draw passes the declarations
        for k, v in p.items():
            constraints[k].check("KolmogorovModel", k, v)


@pytest.fixture(scope="module")
def data():
    whole = load("planted-km", **DATA)
    return whole, make_split(whole, val_size=0.1, test_size=0.2, seed=0)


@pytest.mark.slow  # fits KM
def test_a_sweeps_runs_equal_single_fits_with_the_same_settings(tmp_path, data):
    whole, split = data
    store = RunStore(tmp_path / "s")
    plan = plan_sweep(KM, {"D": [2, 3], "lambda_theta": [0.0, 10.0]}, base={"max_iter": 2},
                      seeds=2)
    result = run_sweep(plan, whole, split, store=store, tags=["class"])
    assert not result.stopped and len(result.rows) == 8
    listing = store.list().set_index("run_id")
    assert set(listing.index) == {r["run_id"] for r in result.rows}
    assert (listing["sweep"] == plan.sweep_id).all()
    assert (listing["tags"] == "sweep, class").all()
    assert listing["label"].nunique() == 8  # settings and seed in every name
    for row, params in zip(result.rows, plan.points):
        single = KM.make(params).fit(split.train, validation=split.validation)
        run = store.load(row["run_id"])
        np.testing.assert_array_equal(run.arrays["theta"], single.theta_)
        np.testing.assert_array_equal(run.arrays["psi"], single.psi_)
        assert run.meta["sweep"]["id"] == plan.sweep_id and run.meta["tags"] == [
            "sweep", "class"]
        assert row["validation_nrmse"] == pytest.approx(
            single.evaluate(split.validation)["nrmse"], rel=0, abs=0)


@pytest.mark.slow  # fits KM
def test_a_sweep_point_equals_the_same_fit_from_the_command_line(tmp_path, capsys):
    store = tmp_path / "s"
    data = ["--data", "planted-km"] + [a for k, v in DATA.items()
                                       for a in ("--option", f"{k}={v}")]
    assert main(["sweep", "km", *data, "--grid", "D=2,3", "--set", "max_iter=2",
                 "--set", "lambda_theta=10", "--save", "--dir", str(store)]) == 0
    out = capsys.readouterr().out
    assert "[2/2] D=3" in out and "Summary (2 of 2 point(s)" in out
    assert main(["train", "km", *data, "--D", "3", "--max-iter", "2", "--set",
                 "lambda_theta=10", "--save", "--dir", str(store)]) == 0
    s = RunStore(store)
    df = s.list()
    single = df[df["sweep"].isna()]["run_id"].item()
    point = df[(df["sweep"].notna()) & (df["D"] == 3)]["run_id"].item()
    a, b = s.load(single), s.load(point)
    for k in ("theta", "psi", "dual_u"):
        np.testing.assert_array_equal(a.arrays[k], b.arrays[k])
    assert {k: v for k, v in a.metrics.items() if k != "wall_s"} == {
        k: v for k, v in b.metrics.items() if k != "wall_s"}


@pytest.mark.slow  # fits KM
def test_stop_keeps_the_points_done(tmp_path, data):
    whole, split = data
    store = RunStore(tmp_path / "s")
    plan = plan_sweep(KM, {"D": [2, 3, 4]}, base={"max_iter": 2})
    stop = threading.Event()
    seen = []

    def on_point(i, n, row):
        seen.append((i, n))
        if i == 2:
            stop.set()
    result = run_sweep(plan, whole, split, store=store, stop_event=stop, on_point=on_point)
    assert result.stopped and seen == [(1, 3), (2, 3)]
    assert len(store) == 2 and sorted(store.list()["D"]) == [2, 3]
    # a stop during a fit: that point is not saved
    stop2 = threading.Event()
    rows = []

    def on_row(row):
        rows.append(row)
        stop2.set()
    result = run_sweep(plan, whole, split, store=store, stop_event=stop2, on_row=on_row)
    assert result.stopped and result.rows == [] and len(rows) == 1 and len(store) == 2


@pytest.mark.slow  # fits KM
def test_a_gate_that_refuses_stops_the_sweep(tmp_path, data):
    import contextlib

    whole, split = data
    calls = []

    @contextlib.contextmanager
    def gate():
        calls.append(1)
        yield len(calls) < 2
    plan = plan_sweep(KM, {"D": [2, 3, 4]}, base={"max_iter": 1})
    result = run_sweep(plan, whole, split, save=False, gate=gate)
    assert result.stopped and len(result.rows) == 1 and result.rows[0]["run_id"] is None


def test_automatic_names_name_what_differs_from_the_defaults():
    d = KM.default_params()
    a = KM.label({**d, "D": 16, "lambda_theta": 10.0}, "my_ratings.csv")
    b = KM.label({**d, "D": 16, "lambda_theta": 100.0}, "my_ratings.csv")
    assert a != b and a == "KM D=16 fast on my_ratings.csv, lambda_theta=10"
    assert KM.label({**d, "D": 16}, "x") == "KM D=16 fast on x"  # defaults: nothing added
    assert KM.label({**d, "random_state": 3}, "x") == KM.label(d, "x")  # seed not named
