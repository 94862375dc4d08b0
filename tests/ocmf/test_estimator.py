"""OneClassMF: recovery on planted positive-unlabeled data, cold start from features, the
inner solvers' guarantees, refused inputs, the outer-loop contract and persistence."""

import copy
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from kmviz import metrics
from kmviz._base import clone
from kmviz.exceptions import (
    ConvergenceWarning,
    DataError,
    DataValueError,
    EmptyDataError,
    InvalidParameterError,
    NotFittedError,
)
from kmviz.ocmf import (
    BlockProblem,
    OneClassMF,
    cold_item_split,
    cold_user_split,
    gradient_descent,
    make_planted_pu,
    popularity_scores,
    restrict_users,
    tron,
    user_groups,
)

QUICK = dict(k=8, max_iter=6, rho=0.05, lambda_w=0.5, lambda_h=0.5, random_state=0)


@pytest.fixture(scope="module")
def planted():
    ratings, truth = make_planted_pu(300, 200, 4, n_user_features=6, n_item_features=4,
                                     feature_share=0.8, density=0.06, random_state=0)
    train, test = ratings.split(0.1, random_state=1)
    return ratings, truth, train, test


@pytest.fixture(scope="module")
def fitted(planted):
    _, _, train, test = planted
    return OneClassMF(**QUICK).fit(train, validation=test)


def _popularity_p5(train, test):
    return metrics.ranking_metrics(popularity_scores(train), test.csr, ks=(5,),
                                   exclude=train.csr)["precision@5"]


# ----------------------------------------------------------------------------- recovery
def test_planted_recovery_beats_popularity_on_held_out_p5(planted, fitted):
    _, _, train, test = planted
    p5 = fitted.evaluate(test)["precision_at_5"]
    pop = _popularity_p5(train, test)
    assert p5 > 1.3 * pop, (p5, pop)


def test_score_is_the_precision_at_5_of_evaluate_and_higher_for_a_better_model(planted,
                                                                                fitted):
    """score() means the same for every family: higher is better; for OCMF it is the
    headline ranking metric, precision@5."""
    _, _, _, test = planted
    assert OneClassMF.score_metric == "precision_at_5"
    assert fitted.score(test) == fitted.evaluate(test)["precision_at_5"]
    # the fitted model against the same users ranking random item embeddings
    worse = copy.copy(fitted)  # shares the fitted arrays; item_factors_ is replaced below
    worse.item_factors_ = np.random.default_rng(0).standard_normal(fitted.item_factors_.shape)
    assert fitted.score(test) > worse.score(test)


def test_cold_users_ranked_from_features_beat_popularity(planted):
    ratings = planted[0]
    train, test, cold = cold_user_split(ratings, 0.2, random_state=3)
    model = OneClassMF(**QUICK, side_features="user").fit(train)
    assert not model.known_users_[cold].any()
    p5 = model.evaluate(test)["precision_at_5"]
    pop = _popularity_p5(train, test)
    assert p5 > 1.2 * pop, (p5, pop)
    # those users were scored from their features alone (no identity column)
    e = model.explain(int(np.flatnonzero(cold)[0]), 0)
    assert "identity" not in set(e.user_terms["feature"])
    assert e.user_rule == "features only (no positives)"


def test_cold_items_ranked_from_features_beat_popularity(planted):
    ratings = planted[0]
    train, test, cold = cold_item_split(ratings, 0.2, random_state=4)
    plain = OneClassMF(**QUICK).fit(train)
    new_items = OneClassMF(**QUICK, side_features="item", item_identity="known").fit(train)
    disliked = OneClassMF(**QUICK, side_features="item").fit(train)
    # popularity (and the plain model) can only put cold items last; their features rank
    # them when they are declared new (item_identity="known") ...
    p5 = new_items.evaluate(test)["precision_at_5"]
    assert p5 > 0.015 and p5 > 3 * _popularity_p5(train, test)
    assert plain.evaluate(test)["precision_at_5"] < 0.2 * p5
    # (warm items keep their identity part and outrank new ones; a purely inductive item
    # side ranks items by features only and finds many more of the new items' positives)
    inductive = OneClassMF(**QUICK, side_features="item", item_identity="none").fit(train)
    assert inductive.evaluate(test)["precision_at_5"] > 3 * p5
    # ... while the default ("all") fits an item without positives as disliked
    assert disliked.evaluate(test)["precision_at_5"] < 0.2 * p5
    j = int(np.flatnonzero(cold)[0])
    assert new_items.explain(0, j).item_rule == "features only (no positives)"
    assert disliked.explain(0, j).item_rule == "identity fitted without positives and features"


def test_user_graph_regularizer_is_used_and_documented(planted):
    _, _, train, test = planted
    model = OneClassMF(**{**QUICK, "max_iter": 3}, graph="ratings", lambda_g=1.0).fit(train)
    assert model.trace_.rows[-1]["reg_graph"] > 0
    assert model.evaluate(test)["precision_at_5"] > _popularity_p5(train, test)
    co = OneClassMF(**{**QUICK, "max_iter": 2}, graph="cointeraction", lambda_g=0.5).fit(train)
    assert co.trace_.rows[-1]["reg_graph"] > 0


# ----------------------------------------------------------------------------- solvers
def _tiny_block(seed=0, loss="logistic", lam=0.1):
    from kmviz.ocmf import AllPairsLoss, ObservedPairs, SideMatrix

    rng = np.random.default_rng(seed)
    Y = rng.random((40, 30)) < 0.1
    pairs = ObservedPairs.from_matrix(Y)
    loss_ = AllPairsLoss(pairs, loss, np.full(40, 0.2), np.ones(30), -1.0)
    X = SideMatrix(40, np.flatnonzero(Y.any(axis=1)), sp.csr_matrix(rng.standard_normal((40, 5))),
                   list("abcde"))
    Q = rng.standard_normal((30, 4))
    return BlockProblem(loss_.block("rows", Q), X, lam), X.d * 4


@pytest.mark.parametrize("loss", ["logistic", "squared", "squared_hinge"])
def test_tron_never_accepts_a_step_that_raises_the_objective(loss):
    for seed in range(3):
        prob, size = _tiny_block(seed, loss)
        x0 = np.random.default_rng(seed).standard_normal(size) * 3.0
        res = tron(prob, x0, eps=1e-10, max_iter=40)
        accepted = [s for s in res.steps if s["accepted"]]
        assert accepted
        for s in accepted:
            assert s["f_new"] <= s["f"]
        assert res.f == pytest.approx(prob.fun(res.x), rel=1e-12)
        assert res.gnorm <= 1e-6 * res.gnorm0 or res.stop != "max_iter"


def test_tron_rejects_a_bad_step_and_shrinks_the_radius():
    prob, size = _tiny_block(1)
    x0 = np.random.default_rng(1).standard_normal(size) * 10.0
    f0 = prob.fun(x0)
    res = tron(prob, x0, eps=1e-12, max_iter=30)
    assert res.f < f0
    for before, after in zip(res.steps, res.steps[1:]):
        if not before["accepted"]:
            assert after["delta"] < before["delta"]  # a rejected step shrinks Delta


def test_gradient_descent_decreases_and_agrees_with_tron():
    prob, size = _tiny_block(2, lam=3.0)   # well conditioned: GD converges in ~100 steps
    x0 = np.zeros(size)
    gd = gradient_descent(prob, x0, eps=1e-8, max_iter=400)
    for s in gd.steps:
        assert s["f_new"] <= s["f"]
    tr = tron(prob, x0, eps=1e-8, max_iter=50)
    assert gd.f == pytest.approx(tr.f, rel=1e-5)


def test_outer_objective_never_rises_and_telemetry_is_complete(fitted):
    rows = fitted.trace_.rows
    obj = [r["objective"] for r in rows]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(obj, obj[1:]))
    for r in rows:
        assert r["objective"] == pytest.approx(
            r["l_plus"] + r["l_minus"] + r["reg_w"] + r["reg_graph"] + r["reg_h"], rel=1e-12)
        for key in ("w_grad_norm", "h_grad_norm", "w_trust_radius", "n_w_cg", "n_h_cg",
                    "n_w_newton", "t_w_function_s", "t_h_gradient_s", "t_w_hessian_vector_s",
                    "validation_precision_at_5", "validation_ndcg_at_5"):
            assert key in r, key
    inner = fitted.inner_trace_
    acc = inner[inner["accepted"] == 1]
    assert (acc["f_new"] <= acc["f"]).all()
    assert set(inner["block"]) == {0.0, 1.0}


def test_gd_solver_fits_and_records_backtracking(planted):
    _, _, train, test = planted
    model = OneClassMF(**{**QUICK, "max_iter": 3}, solver="gd").fit(train)
    row = model.trace_.rows[-1]
    assert row["n_w_backtrack"] > 0 and row["w_step_size"] > 0
    obj = model.trace_.column("objective")
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1]))


def test_small_d_variant_gives_the_same_fit(planted):
    _, _, train, _ = planted
    params = {**QUICK, "max_iter": 2, "side_features": "both", "user_identity": "none",
              "item_identity": "none"}
    a = OneClassMF(**params, small_d="on").fit(train)
    b = OneClassMF(**params, small_d="off").fit(train)
    np.testing.assert_allclose(a.trace_.column("objective"), b.trace_.column("objective"),
                               rtol=1e-8)


# ----------------------------------------------------------------------------- prediction
def test_recommend_excludes_seen_and_matches_the_scores(planted, fitted):
    _, _, train, _ = planted
    users = np.array([0, 5, 17])
    rec = fitted.recommend(users, k=7)
    scores = fitted.score_items(users)
    seen = train.csr[users].toarray() > 0
    masked = np.where(seen, -np.inf, scores)
    expect = np.argsort(-masked, axis=1, kind="stable")[:, :7]
    np.testing.assert_array_equal(rec, expect)
    assert not seen[np.arange(3)[:, None], rec].any()
    everything = fitted.recommend(5, k=7, exclude_seen=False)
    np.testing.assert_array_equal(everything, np.argsort(-scores[1], kind="stable")[:7])
    assert fitted.score_items(5).shape == (train.n_items,)


def test_evaluate_matches_kmviz_metrics_on_the_score_matrix(planted, fitted):
    _, _, train, test = planted
    ours = fitted.evaluate(test)
    ref = metrics.ranking_metrics(fitted.score_items(np.arange(train.n_users)), test.csr,
                                  ks=(1, 3, 5), exclude=train.csr)
    for k in (1, 3, 5):
        assert ours[f"precision_at_{k}"] == pytest.approx(ref[f"precision@{k}"], abs=1e-12)
        assert ours[f"ndcg_at_{k}"] == pytest.approx(ref[f"ndcg@{k}"], abs=1e-12)
    assert ours["recall_at_5"] == pytest.approx(ref["recall@5"], abs=1e-12)
    # evaluating the training set ranks its own positives (the fit), not an empty list
    assert fitted.evaluate(train)["precision_at_5"] > ours["precision_at_5"]


def test_explain_splits_the_score_over_features(planted):
    _, _, train, _ = planted
    model = OneClassMF(**{**QUICK, "max_iter": 2}, side_features="both").fit(train)
    for u, i in [(0, 3), (10, 50), (299, 199)]:
        e = model.explain(u, i)
        assert e.score == pytest.approx(model.score_items(u)[i], rel=1e-12)
        assert e.user_terms["contribution"].sum() == pytest.approx(e.score, abs=1e-10)
        assert e.item_terms["contribution"].sum() == pytest.approx(e.score, abs=1e-10)
        assert list(e.user_terms.columns) == ["feature", "value", "contribution"]
    names = set(model.explain(0, 3).user_terms["feature"])
    assert {"u0", "u1"} <= names


def test_users_without_positives_or_features_get_the_mean_embedding():
    ratings, _ = make_planted_pu(60, 40, 3, density=0.15, random_state=5)
    users = np.asarray(ratings.users)
    train = ratings.subset(users != 0)       # user 0: no training positive
    feats = ratings.user_features.copy()
    feats.iloc[0] = np.nan                     # ... and no features
    model = OneClassMF(**{**QUICK, "max_iter": 2}).fit(train, user_features=feats)
    known = model.known_users_ & ~model.user_side_.empty_rows()
    np.testing.assert_allclose(model.user_factors_[0], model.user_factors_[known].mean(axis=0))
    e = model.explain(0, 1)
    assert e.user_rule.startswith("no positives and no features")
    assert e.user_terms["contribution"].sum() == pytest.approx(e.score, abs=1e-10)
    assert np.isfinite(model.score_items(0)).all()


# ----------------------------------------------------------------------------- refused input
@pytest.mark.parametrize("name, value, text", [
    ("k", 0, "an int in [1, 100000]. Got 0"),
    ("k", 2.5, "an int in [1, 100000]. Got 2.5"),
    ("rho", 0.0, "a float in (0, 1e+12). Got 0.0"),
    ("rho", math.nan, "a float in (0, 1e+12). Got nan"),
    ("loss", "hinge", "one of {'logistic', 'squared', 'squared_hinge'}. Got 'hinge'"),
    ("solver", "lbfgs", "one of {'tron', 'gd'}. Got 'lbfgs'"),
    ("lambda_w", -1.0, "a float in (0, 1e+12). Got -1.0"),
    ("max_iter", 0, "an int in [1, 100000]. Got 0"),
    ("threshold", "four", "a float"),
    ("random_state", -1, "None, a non-negative int or a numpy Generator. Got -1"),
])
def test_bad_parameters_are_refused_with_the_template(planted, name, value, text):
    _, _, train, _ = planted
    model = OneClassMF(**{**QUICK, name: value})
    with pytest.raises(InvalidParameterError,
                       match=re.escape(f"The '{name}' parameter of OneClassMF must be ") + ".*"
                       + re.escape(text)):
        model.fit(train)
    with pytest.raises(NotFittedError):
        model.score_items(0)


def test_empty_positives_are_refused(planted):
    ratings = planted[0]
    with pytest.raises(EmptyDataError, match=r"no positives.*threshold=2"):
        OneClassMF(**QUICK, threshold=2.0).fit(ratings)


def test_mismatched_and_nan_features_are_refused(planted):
    _, _, train, _ = planted
    with pytest.raises(DataValueError, match="user_features has 10 rows but there are 300 "
                                             "users"):
        OneClassMF(**QUICK).fit(train, user_features=np.ones((10, 3)))
    with pytest.raises(DataValueError, match="item_features has 3 rows but there are 200 "
                                             "items"):
        OneClassMF(**QUICK).fit(train, item_features=np.ones((3, 3)))
    bad = np.ones((300, 3))
    bad[7, 2] = np.nan
    with pytest.raises(DataValueError, match=r"1 NaN or infinite value\(s\), the first at "
                                             r"row 7, column 2"):
        OneClassMF(**QUICK).fit(train, user_features=bad)
    df = pd.DataFrame({"age": np.arange(300.0)})
    df.loc[4, "age"] = np.nan
    df["city"] = "x"
    with pytest.raises(DataValueError, match=r"column 'age' has 1 missing value"):
        OneClassMF(**QUICK).fit(train, user_features=df)
    with pytest.raises(DataValueError, match="user_graph has shape"):
        OneClassMF(**QUICK, lambda_g=1.0).fit(train, user_graph=sp.eye(5))
    with pytest.raises(DataValueError, match="negative weights"):
        OneClassMF(**QUICK, lambda_g=1.0).fit(train, user_graph=-sp.eye(300))


def test_settings_that_do_not_fit_the_data_are_refused(planted):
    _, _, train, _ = planted
    with pytest.raises(InvalidParameterError, match="lambda_g=1 weights a user graph"):
        OneClassMF(**QUICK, lambda_g=1.0).fit(train)
    plain = train._replace_entries(train.users, train.items, train.values,
                                   user_features=None)
    with pytest.raises(DataError, match="asks for the user features"):
        OneClassMF(**QUICK, side_features="user").fit(plain)
    with pytest.raises(DataError, match="validation has shape"):
        small, _ = make_planted_pu(10, 10, 2, density=0.3, random_state=0)
        OneClassMF(**QUICK).fit(train, validation=small)
    with pytest.raises(TypeError, match="must be a kmviz.data.Ratings"):
        OneClassMF(**QUICK).fit(np.ones((3, 3)))


def test_user_rows_without_features_are_accepted(planted):
    _, _, train, test = planted
    feats = np.array(train.user_features, dtype=float)
    feats[:30] = 0.0                       # 30 users "without features"
    model = OneClassMF(**{**QUICK, "max_iter": 2}).fit(train, user_features=feats)
    assert np.isfinite(model.user_factors_).all()
    assert model.evaluate(test)["precision_at_5"] > 0


# ----------------------------------------------------------------------------- the loop
def test_callback_stop_keeps_a_usable_model(planted):
    _, _, train, test = planted
    seen = []

    def stop_after_two(row):
        seen.append(row["iteration"])
        return row["iteration"] < 2

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = OneClassMF(**QUICK).fit(train, callback=stop_after_two, validation=test)
    assert seen == [1, 2] and model.n_iter_ == 2
    assert model.trace_.stop_reason == "callback"
    assert model.recommend(0, k=5).shape == (5,)
    assert all(math.isfinite(v) for v in model.evaluate(test).values())


def test_same_random_state_gives_the_same_model(planted):
    _, _, train, _ = planted
    a = OneClassMF(**{**QUICK, "max_iter": 3}).fit(train)
    b = OneClassMF(**{**QUICK, "max_iter": 3}).fit(train)
    np.testing.assert_array_equal(a.trace_.column("objective"), b.trace_.column("objective"))
    for name, arr in a._fitted_arrays().items():
        np.testing.assert_array_equal(arr, b._fitted_arrays()[name], err_msg=name)
    c = OneClassMF(**{**QUICK, "max_iter": 3, "random_state": 1}).fit(train)
    assert not np.array_equal(a.user_factors_, c.user_factors_)


def test_fitted_arrays_round_trip_gives_the_same_scores(planted):
    _, _, train, test = planted
    model = OneClassMF(**{**QUICK, "max_iter": 2}, side_features="both").fit(train)
    arrays = model._fitted_arrays()
    again = OneClassMF._from_fitted_arrays(arrays, model.get_params(), model.trace_)
    users = np.arange(train.n_users)
    np.testing.assert_array_equal(again.score_items(users), model.score_items(users))
    np.testing.assert_array_equal(again.recommend(users[:20], 5), model.recommend(users[:20], 5))
    assert again.evaluate(test) == model.evaluate(test)
    pd.testing.assert_frame_equal(again.explain(3, 4).user_terms, model.explain(3, 4).user_terms)
    pd.testing.assert_frame_equal(again.inner_trace_, model.inner_trace_)


def test_clone_and_params(fitted):
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params()
    assert set(copy.get_params()) == set(OneClassMF._parameter_constraints)
    with pytest.raises(NotFittedError):
        copy.evaluate(None)


def test_convergence_warning_only_with_a_tolerance(planted):
    _, _, train, _ = planted
    with pytest.warns(ConvergenceWarning):
        OneClassMF(**{**QUICK, "max_iter": 1, "tol": 1e-6}).fit(train)
    model = OneClassMF(**{**QUICK, "max_iter": 30, "tol": 1e-3}).fit(train)
    assert model.trace_.stop_reason == "converged" and model.n_iter_ < 30


def test_threshold_binarizes_ratings_like_binarize():
    ratings, _ = make_planted_pu(80, 60, 3, density=0.2, random_state=2)
    rng = np.random.default_rng(0)
    graded = ratings._replace_entries(ratings.users, ratings.items,
                                      rng.integers(1, 6, ratings.n_ratings).astype(float),
                                      r_min=1.0, r_max=5.0, implicit=False)
    a = OneClassMF(**{**QUICK, "max_iter": 2}, threshold=4.0).fit(graded)
    b = OneClassMF(**{**QUICK, "max_iter": 2}).fit(graded.binarize(4))
    np.testing.assert_array_equal(a.user_factors_, b.user_factors_)
    warned = OneClassMF(**{**QUICK, "max_iter": 1}).fit(graded)
    assert any("set threshold" in e["message"] for e in warned.trace_.events)


def test_user_groups_and_restrictions(planted):
    _, _, train, test = planted
    groups = user_groups(train, sparse_max=5)
    assert sum(int(g.sum()) for g in groups.values()) == train.n_users
    sub = restrict_users(test, groups["regular"])
    assert set(np.asarray(sub.users)) <= set(np.flatnonzero(groups["regular"]))


def test_predict_broadcasts_pairs(fitted):
    S = fitted.score_items(np.arange(5))
    assert fitted.predict(2, 7) == pytest.approx(S[2, 7])
    np.testing.assert_allclose(fitted.predict([0, 1, 2], [3, 3, 4]), S[[0, 1, 2], [3, 3, 4]])
    np.testing.assert_allclose(fitted.predict(np.arange(5)[:, None], np.arange(3)[None, :]),
                               S[:, :3])
    with pytest.raises(ValueError, match="user index 300 is out of range"):
        fitted.predict(300, 0)
    with pytest.raises(ValueError, match="item index -1 is out of range"):
        fitted.predict(0, -1)
