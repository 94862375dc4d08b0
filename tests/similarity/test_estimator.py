"""SimilarityLearning: recovery on planted data, the loop contract, inputs and persistence."""

import math
import warnings

import numpy as np
import pytest

from kmviz import metrics
from kmviz._base import clone
from kmviz._params import docstring_mismatches
from kmviz.exceptions import DataError, InvalidParameterError, NotFittedError
from kmviz.ocmf import make_planted_pu, popularity_scores
from kmviz.similarity import SOLVERS, SimilarityLearning, relative_objective_difference

QUICK = dict(k=8, max_iter=8, omega=0.1, lambda_theta=1.0, random_state=0)


@pytest.fixture(scope="module")
def planted():
    ratings, truth = make_planted_pu(300, 200, 4, n_user_features=6, n_item_features=4,
                                     feature_share=0.8, density=0.06, random_state=0)
    train, test = ratings.split(0.1, random_state=1)
    return ratings, train, test


@pytest.fixture(scope="module")
def fitted(planted):
    _, train, test = planted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SimilarityLearning(**QUICK).fit(train, validation=test)


def _popularity_p5(train, test):
    return metrics.ranking_metrics(popularity_scores(train), test.csr, ks=(5,),
                                   exclude=train.csr)["precision@5"]


def test_docstring_agrees_with_the_declarations():
    assert docstring_mismatches(SimilarityLearning) == []


def test_planted_recovery_beats_popularity(planted, fitted):
    _, train, test = planted
    scores = fitted.evaluate(test)
    assert scores["precision_at_5"] > 1.3 * _popularity_p5(train, test)
    assert set(scores) >= {"precision_at_1", "precision_at_5", "map_at_5", "ndcg_at_5"}
    # the paper's MAP@5 is the mean of P@K, K = 1..5
    assert min(scores[f"precision_at_{k}"] for k in (1, 3, 5)) - 1e-12 <= scores["map_at_5"]
    assert fitted.score(test) == scores["map_at_5"]


def test_trace_rows(fitted):
    tr = fitted.trace_
    assert tr.solver == "similarity.newton"
    row = tr.rows[0]
    for name in ("objective", "relative_decrease", "grad_norm", "n_cg", "n_line_search",
                 "step_size", "cg_seconds", "line_search_seconds", "t_tower_forward_s",
                 "relative_objective_difference",
                 "t_vjp_s", "t_jvp_s", "t_gramians_s", "t_observed_pairs_s",
                 "validation_map_at_5"):
        assert name in row, name
    obj = tr.column("objective")
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1]))
    assert math.isclose(fitted.objective_, obj[-1])
    rel = relative_objective_difference(obj)
    assert rel[-1] == 0 and (rel >= 0).all()


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_fits(planted, solver):
    _, train, _ = planted
    model = SimilarityLearning(k=4, max_iter=2, omega=0.1, lambda_theta=1.0, solver=solver,
                               sample_ratio=0.05, random_state=0, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(train)
    assert model.trace_.n_iter >= 1 and np.isfinite(model.objective_)


def test_mlp_towers_with_features(planted):
    ratings, train, test = planted
    model = SimilarityLearning(k=6, user_tower="mlp:16", item_tower="linear",
                               side_features="both", max_iter=4, omega=0.1, lambda_theta=1.0,
                               random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(train)
    assert model.user_factors_.shape == (train.n_users, 6)
    assert model.evaluate(test)["precision_at_5"] > _popularity_p5(train, test)


def test_cold_items_are_scored_from_features(planted):
    ratings, train, _ = planted
    model = SimilarityLearning(k=4, item_tower="linear", item_ids="known",
                               side_features="item", max_iter=2, random_state=0, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(train)
    assert np.isfinite(model.item_factors_).all()


def test_known_item_ids_leave_cold_items_to_their_features(planted):
    """With item_ids="known" a cold item has no id column at all: its embedding is the MLP
    of its features alone, untouched by any id row of the first layer (no id weight at its
    random init reaches it), and equal to the tower applied to the features."""
    from kmviz.ocmf import cold_item_split

    ratings, _, _ = planted
    train, _, cold = cold_item_split(ratings, 0.2, random_state=5)
    model = SimilarityLearning(k=4, item_tower="mlp:6", item_ids="known",
                               side_features="item", max_iter=3, tol=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(train)
    known = np.bincount(np.asarray(train.items), minlength=train.n_items) > 0
    assert not known[cold].any() and cold.sum() >= 10
    cold = ~known                # the split's cold items and any item without positives
    n_ids = int(known.sum())
    X = model.item_input_
    assert X.shape[1] == n_ids + ratings.item_features.shape[1]
    assert X[np.flatnonzero(cold)][:, :n_ids].nnz == 0          # no id column for cold items
    assert (X[np.flatnonzero(known)][:, :n_ids].getnnz(axis=1) == 1).all()
    tower, theta_v = model.item_tower_, model.theta_[model.n_user_params_:]
    shifted = theta_v.copy()
    tower.unpack(shifted)[0][0][:n_ids] += 1.0                 # every id row of layer 1
    P = tower.forward(shifted, X)
    np.testing.assert_array_equal(P[cold], model.item_factors_[cold])
    assert np.abs(P[known] - model.item_factors_[known]).min(axis=1).max() > 1e-3
    features_only = X[:, n_ids:]
    W, b = tower.unpack(theta_v)[0]
    from kmviz.similarity.towers import MLPTower

    alone = MLPTower(features_only.shape[1], (6,), 4)
    params = np.concatenate([W[n_ids:].ravel(), b, theta_v[tower.offsets[0][2]:]])
    np.testing.assert_allclose(alone.forward(params, features_only)[cold],
                               model.item_factors_[cold], rtol=1e-12, atol=1e-12)


def test_seed_reproducibility_and_clone(planted):
    _, train, _ = planted
    a = SimilarityLearning(k=4, max_iter=2, random_state=3, tol=0)
    b = clone(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a.fit(train)
        b.fit(train)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    assert a.trace_.column("objective").tolist() == b.trace_.column("objective").tolist()


def test_callback_stops(planted):
    _, train, _ = planted
    model = SimilarityLearning(k=4, max_iter=10, random_state=0)
    model.fit(train, callback=lambda row: row["iteration"] < 2)
    assert model.trace_.n_iter == 2 and model.trace_.stop_reason == "callback"


def test_predict_recommend_and_round_trip(fitted, planted):
    _, train, test = planted
    users, items = np.array([0, 1, 2]), np.array([3, 4, 5])
    np.testing.assert_allclose(fitted.predict(users, items),
                               np.sum(fitted.user_factors_[users] * fitted.item_factors_[items],
                                      axis=1))
    rec = fitted.recommend([0, 1], k=5)
    assert rec.shape == (2, 5)
    seen = set(train.items[train.users == 0].tolist())
    assert not seen & set(rec[0].tolist())
    assert fitted.recommend(0, k=3).shape == (3,)
    arrays = fitted._fitted_arrays()
    assert all(isinstance(v, np.ndarray) and v.dtype != object for v in arrays.values())
    again = SimilarityLearning._from_fitted_arrays(arrays, fitted.get_params(), fitted.trace_)
    assert again.evaluate(test) == fitted.evaluate(test)
    np.testing.assert_array_equal(again.recommend([0, 1], k=5), rec)


def test_bad_inputs(planted):
    _, train, _ = planted
    with pytest.raises(InvalidParameterError, match="unknown tower"):
        SimilarityLearning(user_tower="cnn").fit(train)
    with pytest.raises(InvalidParameterError):
        SimilarityLearning(solver="adam").fit(train)
    with pytest.raises(DataError, match="item_ids='none'"):
        SimilarityLearning(item_tower="linear", item_ids="none").fit(train)
    with pytest.raises(NotFittedError):
        SimilarityLearning().predict([0], [0])
    with pytest.raises(ValueError, match="out of range"):
        model = SimilarityLearning(k=2, max_iter=1, random_state=0, tol=0).fit(train)
        model.predict([10**6], [0])


def test_family_entry_is_registered():
    from kmviz.families import get

    FAMILY = get("similarity")

    cls = FAMILY.estimator_class()
    assert cls is SimilarityLearning and FAMILY.name == "similarity"
    assert set(FAMILY.quick_params) <= set(cls._parameter_constraints)
    assert FAMILY.metric_labels() and FAMILY.phase_labels()
    model = FAMILY.make(FAMILY.quick_params)
    assert model.get_params()["k"] == FAMILY.quick_params["k"]


def test_warmup_compiles():
    from kmviz.similarity.warmup import compile_kernels

    assert compile_kernels() >= 0


def test_evaluate_agrees_with_kmviz_metrics(fitted, planted):
    _, train, test = planted
    n = train.n_items
    users, items = np.asarray(test.users), np.asarray(test.items)
    eval_users = np.unique(users)
    top = fitted._top(eval_users, 5, drop=users * n + items)
    relevant = [set(items[users == u].tolist()) for u in eval_users]
    got = fitted.evaluate(test)
    for k in (1, 3, 5):
        assert got[f"precision_at_{k}"] == pytest.approx(metrics.precision_at_k(top, relevant, k))
    paper_map = np.mean([metrics.precision_at_k(top, relevant, k) for k in range(1, 6)])
    assert got["map_at_5"] == pytest.approx(paper_map)


def test_a_tower_object_and_prior_imputation(planted):
    from kmviz.similarity import LinearTower

    _, train, test = planted
    m = train.n_users
    # a user-supplied tower gets the same input as "linear": here one-hot ids only, so a
    # linear tower on them is an embedding table
    custom = SimilarityLearning(k=4, user_tower=LinearTower(m, 4), max_iter=3, tol=0,
                                random_state=0)
    table = SimilarityLearning(k=4, max_iter=3, tol=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        custom.fit(train)
        table.fit(train)
    np.testing.assert_allclose(custom.objective_, table.objective_, rtol=1e-10)
    # Ytilde from a prior model's factors: a constant -1 written as factors is the default
    Pt, Qt = -np.ones((m, 1)), np.ones((train.n_items, 1))
    prior = clone(table)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prior.fit(train, imputed_factors=(Pt, Qt))
    np.testing.assert_allclose(prior.theta_, table.theta_, rtol=1e-10, atol=1e-12)


def test_stochastic_solvers_ignore_tol(planted):
    _, train, _ = planted
    model = SimilarityLearning(k=4, max_iter=3, solver="sampling-diag", sample_ratio=0.1,
                               tol=0.5, random_state=0).fit(train)
    assert model.trace_.n_iter == 3 and model.trace_.stop_reason == "max_iter"


def test_family_module_imports_without_numba():
    import subprocess
    import sys

    code = ("import sys; from kmviz import families; "
            "assert 'numba' not in sys.modules, 'numba imported'; "
            "print(families.get('similarity').name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "similarity"
