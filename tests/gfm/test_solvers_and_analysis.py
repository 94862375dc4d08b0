"""The ALS solver of GeneralizedFM (objective non-increasing, same fitted representation,
save/open for both solvers), the automatic design and solver choices, the early divergence
warning, and the analyses behind the Recovery and Interactions pages."""

import math

import numpy as np
import pytest

from kmviz.data import load
from kmviz.data.splits import make_split
from kmviz.exceptions import InvalidParameterError
from kmviz.gfm import GeneralizedFM, make_gfm
from kmviz.gfm import analysis as A
from kmviz.runs import RunStore, load_model_file, open_run, save_model_file, save_run


@pytest.fixture(scope="module")
def ratings_split():
    whole = load("planted-lowrank", n_users=60, n_items=40, rank=3, random_state=1)
    return whole, make_split(whole, val_size=0.1, test_size=0.2, seed=0)


@pytest.fixture(scope="module")
def boston_split():
    whole = load("boston")
    return whole, make_split(whole, val_size=0.1, test_size=0.2, seed=0)


# ----------------------------------------------------------------------------- ALS
def test_als_objective_never_increases_and_beats_the_mean(ratings_split):
    _, split = ratings_split
    model = GeneralizedFM(2, solver="als", n_passes=8, tol=0.0, random_state=0)
    model.fit(split.train, validation=split.validation)
    obj = model.trace_.column("objective")
    assert len(obj) == 8 and model.solver_ == "als" and model.trace_.solver == "gfm.als"
    assert np.all(np.diff(obj) <= 1e-12 * np.abs(obj[:-1])), obj
    assert model.trace_.column("objective_increase").max() == 0.0
    mean = split.train.values.mean()
    mean_rmse = math.sqrt(np.mean((split.test.values - mean) ** 2))
    assert model.evaluate(split.test)["rmse"] < 0.5 * mean_rmse


def test_als_recovers_a_planted_gfm_on_gaussian_data():
    p = make_gfm(20, 2, 3000, random_state=3)
    model = GeneralizedFM(2, solver="als", n_passes=15, l2=0.0, tol=0.0, standardize=False,
                          fit_intercept=False, random_state=0)
    model.fit(p.X, p.y, truth=p)
    assert model.trace_.rows[-1]["rel_err"] < 1e-3
    np.testing.assert_allclose(model.predict(p.X[:50]), p.y[:50], atol=1e-2)


@pytest.mark.parametrize("solver", ["onepass", "als"])
def test_both_solvers_save_and_open_with_the_same_predictions(ratings_split, solver, tmp_path):
    whole, split = ratings_split
    model = GeneralizedFM(2, solver=solver, n_batches=3, n_passes=3, random_state=0)
    with np.errstate(all="ignore"):
        model.fit(split.train)
    run_id = save_run(model, split, dataset=whole, store=RunStore(tmp_path / "s"))
    opened = open_run(run_id, RunStore(tmp_path / "s")).model
    assert opened.solver_ == solver == model.solver_
    np.testing.assert_array_equal(opened.predict(split.test), model.predict(split.test))
    for name in ("coef_", "U_", "V_"):
        np.testing.assert_array_equal(getattr(opened, name), getattr(model, name))
    assert opened.intercept_ == model.intercept_
    path = save_model_file(tmp_path / "m.kmviz", model)
    again, _ = load_model_file(path)
    np.testing.assert_array_equal(again.predict(split.test), model.predict(split.test))


def test_auto_solver_is_als_for_ratings_and_onepass_for_arrays(ratings_split):
    _, split = ratings_split
    assert GeneralizedFM(2, n_passes=2).fit(split.train).solver_ == "als"
    p = make_gfm(10, 1, 400, random_state=0)
    assert GeneralizedFM(1, batch_size=100, n_batches=4).fit(p.X, p.y).solver_ == "onepass"
    assert GeneralizedFM(2, n_passes=7).planned_iterations(split.train) == 7
    assert GeneralizedFM(2, solver="onepass", n_batches=5).planned_iterations() == 5


def test_als_refuses_streams_and_partial_fit():
    p = make_gfm(10, 1, 400, random_state=0)
    with pytest.raises(InvalidParameterError, match="'als', which cannot stream"):
        GeneralizedFM(1, solver="als").partial_fit(p.X[:100], p.y[:100])
    with pytest.raises(InvalidParameterError, match="needs all the data at once"):
        GeneralizedFM(1, solver="als").fit(p.batches(100))


def test_boston_is_plain_regression_and_als_learns_it(boston_split):
    _, split = boston_split
    model = GeneralizedFM(2, random_state=0).fit(split.train)
    names = list(model.feature_names_in_)
    assert len(names) == 13 and all(n.startswith("user:") for n in names), names
    assert any("ids left out" in e["message"] for e in model.trace_.events)
    mean = split.train.values.mean()
    mean_rmse = math.sqrt(np.mean((split.test.values - mean) ** 2))
    assert model.evaluate(split.test)["rmse"] < 0.5 * mean_rmse
    # the ids can be forced back in
    forced = GeneralizedFM(2, user_ids=True, n_passes=2, random_state=0).fit(split.train)
    assert forced.n_features_in_ == 13 + split.train.n_users


def test_onepass_divergence_is_reported_early_in_plain_words(ratings_split):
    _, split = ratings_split
    model = GeneralizedFM(2, solver="onepass", n_batches=6, random_state=0)
    with np.errstate(all="ignore"):
        model.fit(split.train)
    warned = [e for e in model.trace_.events if e["kind"] == "warning"]
    assert len(warned) == 1 and warned[0]["advice"]
    assert warned[0]["iteration"] <= 3  # within the first three batches
    assert "solver='als'" in warned[0]["message"] and "larger batches" in warned[0]["message"]


# ----------------------------------------------------------------------------- analyses
def test_fit_geometric_rate_recovers_an_exact_rate_and_stops_at_the_floor():
    t = np.arange(12)
    eps = 2.0 * 0.3 ** t
    eps[9:] = eps[8]  # a floor
    q, line = A.fit_geometric_rate(t, eps)
    assert q == pytest.approx(0.3, rel=1e-6)
    assert line[4] == pytest.approx(eps[4], rel=1e-6)


def test_recovery_experiment_reports_the_papers_quantities():
    seen = []
    res = A.recovery_experiment("gfm", d=30, k=2, ratio=20, n_batches=10,
                                progress=lambda i, n: seen.append((i, n)))
    assert seen[-1] == (10, 10)
    assert res.batch_size == 20 * 2 * 30
    t = res.table
    assert {"eps", "err_w", "err_M", "tan_theta", "contraction", "fitted",
            "predicted"} <= set(t.columns)
    assert t["eps"].iloc[-1] < 1e-3 and 0.1 < res.fitted_rate < 0.7
    assert res.predicted_rate == pytest.approx(math.sqrt(1 / 20))
    M, M_star = A.dense_pair(res)
    np.testing.assert_allclose(M, M_star, atol=1e-3)
    sp = A.spectra(res)
    learned = sp[sp["matrix"] == "learned M"]["eigenvalue"].to_numpy()
    np.testing.assert_allclose(np.sort(learned[:2]), np.sort(res.truth.lam), atol=1e-3)


def test_phase_retrieval_preset_keeps_k_1():
    res = A.recovery_experiment("phase_retrieval", d=20, k=4, ratio=20, n_batches=6)
    assert res.model.rank == 1 and np.linalg.norm(res.truth.w) == 0.0


def test_phase_diagram_separates_small_and_large_batches_and_is_size_guarded():
    calls = []
    table = A.phase_diagram([2, 20], [1, 2], d=20, seeds=1,
                            progress=lambda i, n: calls.append(i))
    assert calls == [1, 2, 3, 4] and len(table) == 4
    small = table[table["ratio"] == 2]["rel_err"].to_numpy()
    large = table[table["ratio"] == 20]["rel_err"].to_numpy()
    assert large.max() < 1e-2 < small.min()
    assert set(table[table["ratio"] == 20]["success"]) == {1.0}
    by_cond = A.phase_diagram([20], [2], d=20, seeds=1, conditions=[1, 4])
    assert list(by_cond["condition"]) == [1.0, 4.0] and set(by_cond["k"]) == {2}
    with pytest.raises(ValueError, match="times the work the page allows"):
        A.phase_diagram([40] * 50, [5], d=200, seeds=4)


def test_interactions_weights_and_held_out_predictions(ratings_split):
    _, split = ratings_split
    model = GeneralizedFM(2, n_passes=4, random_state=0).fit(split.train)
    table = A.interaction_table(model, 10)
    assert len(table) == 10 and (table["a"] < table["b"]).all()
    np.testing.assert_allclose(table["effect"], 2 * table["M_ab"])
    M = model.interaction_matrix()
    off = np.abs(M[np.triu_indices_from(M, 1)])
    assert abs(table["M_ab"].iloc[0]) == pytest.approx(off.max())
    assert all(n.split("=")[0].split(":")[0] in ("user", "item")
               for n in table["feature_a"])
    w = A.first_order_table(model, 5)
    assert len(w) == 5 and np.all(np.diff(np.abs(w["w"].to_numpy())) <= 0)
    spec = A.interaction_spectrum(model)
    assert len(spec) == 4 and set(spec["sign"]) <= {"positive", "negative"}
    frame, summary = A.held_out_predictions(model, split, max_points=30)
    assert len(frame) == 30 and summary["part"] == "test" and summary["n"] == split.test.n_ratings
    assert summary["rmse"] == pytest.approx(model.evaluate(split.test)["rmse"])
    assert summary["rmse"] < summary["mean_rmse"]


def test_kmviz_train_gfm_on_planted_ratings(capsys, tmp_path):
    from kmviz.cli import main

    assert main(["train", "gfm", "--data", "planted-lowrank", "--option", "n_users=40",
                 "--option", "n_items=30", "--rank", "2", "--iters", "3", "--save",
                 "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "solver=auto, at most 3 iterations" in out and "iter 3/3" in out
    assert "test_rmse" in out
    (run_id,) = RunStore(tmp_path).ids()
    assert open_run(run_id, RunStore(tmp_path)).model.solver_ == "als"
