"""GeneralizedFM: recovery on planted data, Algorithm 1 against its dense spelling, the
stream contract (partial_fit == fit), determinism, persistence, and refused settings."""

import math
import re
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from kmviz._base import clone
from kmviz._params import RANDOM_STATE
from kmviz.data import load
from kmviz.exceptions import ConvergenceWarning, InvalidParameterError, NotFittedError
from kmviz.gfm import (
    ChunkedBatch,
    GeneralizedFM,
    GFMStream,
    RegressionData,
    Truth,
    make_gfm,
    make_preset,
    planted_truth,
)
from kmviz.gfm import _reference as R
from kmviz.gfm.recovery import recovery_errors, tan_theta

PAPER = dict(standardize=False, fit_intercept=False)  # exactly Algorithm 1


def _fit(problem, batch_size, n_batches, **params):
    model = GeneralizedFM(params.pop("rank", problem.truth.rank), batch_size=batch_size,
                          n_batches=n_batches, **params)
    return model.fit(problem.X, problem.y, truth=problem)


@pytest.fixture(scope="module")
def sanity():
    """The digest's sanity setting: d = 50, k = 2, n = 2,000, noiseless, 11 batches."""
    return make_gfm(50, 2, 2000 * 11, random_state=0)


# ----------------------------------------------------------------------------- recovery
@pytest.mark.parametrize("params", [PAPER, {}], ids=["algorithm-1", "defaults"])
def test_noiseless_recovery_below_1e3_within_10_batches_on_8_seeds(params):
    for seed in range(8):
        p = make_gfm(50, 2, 2000 * 10, random_state=seed)
        model = _fit(p, 2000, 10, random_state=seed, **params)
        eps = model.trace_.column("eps")
        assert eps[0] == pytest.approx(1.0 + math.sqrt(2.0))  # M^(0) = 0, w^(0) = 0
        assert eps[-1] < 1e-3, (seed, eps)
        # linear rate: every step from the second on contracts (empirically ~0.35)
        ratios = model.trace_.column("contraction")[2:]
        assert np.all(ratios < 0.7), (seed, ratios)


@pytest.mark.parametrize("preset,k,n,batches,target", [
    ("matrix_sensing", 2, 2000, 11, 1e-3),
    ("phase_retrieval", 1, 1000, 12, 2e-3),
    ("indefinite", 3, 3000, 9, 1e-3),
    ("psd", 2, 2000, 11, 1e-3),
])
def test_presets_are_recovered(preset, k, n, batches, target):
    p = make_preset(preset, n * batches, random_state=1)
    assert p.truth.U.shape[1] == k
    model = _fit(p, n, batches, random_state=1)
    row = model.trace_.rows[-1]
    assert row["rel_err"] < target, row
    assert row["tan_theta"] < 1e-2
    if preset in ("matrix_sensing", "phase_retrieval"):
        assert np.linalg.norm(model.coef_) < 1e-2
    if preset == "indefinite":  # the learned M has the mixed signs of M*
        vals, _ = model.spectrum()
        np.testing.assert_allclose(np.sort(vals[:3]), np.sort(p.truth.lam), atol=1e-3)


def test_noisy_recovery_levels_at_a_floor():
    p = make_gfm(50, 2, 2000 * 16, noise=0.1, random_state=2)
    eps = _fit(p, 2000, 16, random_state=2).trace_.column("eps")
    assert eps[-1] < 0.1
    floor = eps[8:]
    assert floor.min() > 5e-3 and floor.max() < 3 * floor.min()  # flat, not still falling


def test_standardization_recovers_in_the_original_units():
    """Features with scales and offsets: the raw-unit coef_, U_, V_, intercept_ match the
    planted model mapped to those units; without standardization the same data fails."""
    d, k, n, T = 30, 2, 2000, 12
    tz = planted_truth(d, k, random_state=3)
    rng = np.random.default_rng(4)
    mu, s = rng.normal(0.0, 3.0, d), rng.uniform(0.3, 4.0, d)
    Z = rng.standard_normal((n * T, d))
    X = mu + s * Z
    y = Z @ tz.w + ((Z @ tz.U) ** 2) @ tz.lam + 0.7
    # the same model in x units: M_x = S^-1 M S^-1, w_x = S^-1 w - 2 M_x mu, b_x
    Ux = tz.U / s[:, None]
    Mx = (Ux * tz.lam) @ Ux.T
    wx = tz.w / s - 2 * Mx @ mu
    bx = 0.7 - mu @ (tz.w / s) + mu @ Mx @ mu
    truth = (wx, Mx)
    model = GeneralizedFM(k, batch_size=n, n_batches=T, random_state=0).fit(X, y, truth=truth)
    assert model.trace_.rows[-1]["rel_err"] < 1e-3
    assert model.intercept_ == pytest.approx(bx, abs=1e-2)
    np.testing.assert_allclose(model.interaction_matrix(), Mx, atol=1e-3)
    plain = GeneralizedFM(k, batch_size=n, n_batches=T, standardize=False, random_state=0)
    with np.errstate(all="ignore"):
        plain.fit(X, y, truth=truth)
    assert plain.trace_.rows[-1]["rel_err"] > 1e3  # diverges: far from x ~ N(0, I)
    assert any(e["kind"] == "warning" and "grew" in e["message"] for e in plain.trace_.events)
    assert not any(e["kind"] == "warning" for e in model.trace_.events)


def test_raw_unit_attributes_reproduce_predict():
    p = make_gfm(20, 2, 600 * 4, random_state=5)
    X = p.X * 2.0 + 1.0
    model = GeneralizedFM(2, batch_size=600, n_batches=4, random_state=0).fit(X, p.y)
    Xt = np.random.default_rng(0).standard_normal((50, 20)) * 2 + 1
    by_hand = (model.intercept_ + Xt @ model.coef_
               + np.einsum("ij,ij->i", Xt @ model.U_, Xt @ model.V_))
    np.testing.assert_allclose(model.predict(Xt), by_hand, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.predict(Xt),
                               model.intercept_ + Xt @ model.coef_
                               + R.sense(Xt, model.interaction_matrix()), rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- Algorithm 1
def test_steps_equal_the_dense_spelling_of_algorithm_1(sanity):
    """Matrix-free initialization and steps == line 2 and lines 4-8 with dense H_1."""
    batches = sanity.batches(2000)[:4]
    model = GeneralizedFM(2, **PAPER, random_state=0)
    model.partial_fit(*batches[0])
    st = model.stream_.model
    _, U0 = R.initialize(*batches[0], 2)
    assert tan_theta(st.U, U0) < 1e-3  # same eigenspace (Lanczos to INIT_TOL vs dense eigh)
    w, U, V = st.w.copy(), st.U.copy(), st.V.copy()
    for X, y in batches[1:]:
        w, U, V = R.step(X, y, w, U, V)
        model.partial_fit(X, y)
        st = model.stream_.model
        np.testing.assert_allclose(st.w, w, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(0.5 * (st.U @ st.V.T + st.V @ st.U.T),
                                   0.5 * (U @ V.T + V @ U.T), rtol=1e-9, atol=1e-12)


def test_recovery_errors_equal_dense_norms(sanity):
    model = _fit(sanity, 2000, 3, random_state=0)
    M = model.interaction_matrix()
    diff = sanity.M_star - M
    row = model.trace_.rows[-1]
    assert row["err_M"] == pytest.approx(np.linalg.norm(diff), rel=1e-9)
    assert row["err_M_spec"] == pytest.approx(np.linalg.norm(diff, 2), rel=1e-9)
    assert row["err_w"] == pytest.approx(np.linalg.norm(sanity.w_star - model.coef_), rel=1e-9)
    # tan theta with an explicit orthogonal complement (the paper's definition)
    Ustar = sanity.truth.U
    Q = np.linalg.qr(np.hstack([Ustar, np.random.default_rng(0).standard_normal((50, 48))]))[0]
    perp = Q[:, 2:]
    U = np.linalg.qr(model.U_)[0]
    expected = np.linalg.norm(perp.T @ U @ np.linalg.inv(Ustar.T @ U), 2)
    assert row["tan_theta"] == pytest.approx(expected, rel=1e-8)
    eps = model.trace_.column("eps")
    np.testing.assert_allclose(model.trace_.column("contraction")[1:], eps[1:] / eps[:-1])


def test_dense_truth_factored_truth_and_problem_give_the_same_errors(sanity):
    a = _fit(sanity, 2000, 3, random_state=0).trace_.column("eps")
    model = GeneralizedFM(2, batch_size=2000, n_batches=3, random_state=0)
    b = model.fit(sanity.X, sanity.y, truth=(sanity.w_star, sanity.M_star)).trace_.column("eps")
    c = model.fit(sanity.X, sanity.y,
                  truth=(sanity.w_star, (sanity.truth.U, sanity.truth.lam))).trace_.column("eps")
    np.testing.assert_allclose(a, b, rtol=1e-9)
    np.testing.assert_allclose(a, c, rtol=1e-9)


# ----------------------------------------------------------------------------- streams
def _rows_without_times(trace):
    return [{k: v for k, v in r.items() if k != "wall_s" and not k.startswith("t_")}
            for r in trace.rows]


def test_partial_fit_over_batches_equals_fit(sanity):
    fitted = _fit(sanity, 2000, 5, random_state=3)
    streamed = GeneralizedFM(2, random_state=3)
    for X, y in sanity.batches(2000)[:5]:
        streamed.partial_fit(X, y, truth=sanity)
    for name, value in fitted._fitted_arrays().items():
        np.testing.assert_array_equal(streamed._fitted_arrays()[name], value, err_msg=name)
    assert _rows_without_times(streamed.trace_) == _rows_without_times(fitted.trace_)
    assert streamed.n_iter_ == fitted.n_iter_ == 5
    assert streamed.n_seen_ == 10000


def test_partial_fit_after_fit_continues_the_stream(sanity):
    batches = sanity.batches(2000)
    five = GeneralizedFM(2, batch_size=2000, n_batches=5, random_state=0)
    five.fit(sanity.X[:10000], sanity.y[:10000]).partial_fit(*batches[5])
    six = GeneralizedFM(2, batch_size=2000, n_batches=6, random_state=0)
    six.fit(sanity.X[:12000], sanity.y[:12000])
    np.testing.assert_array_equal(five.coef_, six.coef_)
    np.testing.assert_array_equal(five.U_, six.U_)
    assert five.n_iter_ == 6 and five.trace_.rows[-1]["t"] == 5


def test_a_stream_of_chunked_batches_equals_arrays():
    truth = planted_truth(40, 2, random_state=6)
    stream = GFMStream(truth, batch_size=1600, n_batches=4, chunk_rows=300, seed=1)
    X = np.vstack([stream.arrays(t)[0] for t in range(4)])
    y = np.concatenate([stream.arrays(t)[1] for t in range(4)])
    a = GeneralizedFM(2, n_batches=None, random_state=0).fit(stream, truth=truth)
    b = GeneralizedFM(2, batch_size=1600, n_batches=4, random_state=0).fit(X, y, truth=truth)
    np.testing.assert_allclose(a.trace_.column("eps"), b.trace_.column("eps"), rtol=1e-6)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-10)
    # a list of (X, y) batches is a stream too
    c = GeneralizedFM(2, n_batches=None, random_state=0).fit(
        [stream.arrays(t) for t in range(4)], truth=truth)
    np.testing.assert_allclose(c.coef_, b.coef_, rtol=1e-10, atol=1e-12)


def test_sparse_input_and_both_engines_agree():
    p = make_gfm(160, 2, 4000 * 4, random_state=7)
    ref = GeneralizedFM(2, batch_size=4000, n_batches=4, engine="numpy", random_state=0)
    ref.fit(p.X, p.y)
    nb = GeneralizedFM(2, batch_size=4000, n_batches=4, engine="numba", random_state=0)
    nb.fit(p.X, p.y)
    spm = GeneralizedFM(2, batch_size=4000, n_batches=4, random_state=0)
    spm.fit(sp.csr_matrix(p.X), p.y)
    for other in (nb, spm):
        np.testing.assert_allclose(other.interaction_matrix(), ref.interaction_matrix(),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(other.coef_, ref.coef_, rtol=1e-6, atol=1e-9)
    Xt = p.X[:100]
    np.testing.assert_allclose(spm.predict(sp.csr_matrix(Xt)), ref.predict(Xt), rtol=1e-6)


@pytest.mark.slow
def test_state_stays_o_kd_without_d_by_d_matrices():
    """d = 3,000: a d x d float64 matrix is 72 MB; a fit on a chunked stream peaks far below."""
    d = 3000
    truth = planted_truth(d, 2, random_state=0)
    stream = GFMStream(truth, batch_size=600, n_batches=3, chunk_rows=200, seed=0)
    model = GeneralizedFM(2, n_batches=None, random_state=0)
    model.fit(stream)  # compile / warm up outside the measurement
    tracemalloc.start()
    model.fit(stream, truth=truth)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.25 * d * d * 8, peak / 1e6


# ----------------------------------------------------------------------------- the loop
def test_trace_rows_validation_and_counts(sanity):
    val = make_gfm(50, 2, 500, random_state=0)
    val = (val.X, val.X @ sanity.w_star + R.sense(val.X, sanity.M_star))
    model = GeneralizedFM(2, batch_size=2000, n_batches=6, random_state=0)
    model.fit(sanity.X, sanity.y, validation=val, truth=sanity)
    rows = model.trace_.rows
    assert [r["t"] for r in rows] == list(range(6))
    assert [r["n_seen"] for r in rows] == [2000 * (i + 1) for i in range(6)]
    assert rows[0]["n_matvec"] > 0 and all(r["n_matvec"] == 0 for r in rows[1:])
    assert rows[-1]["validation_rmse"] == pytest.approx(model.evaluate(val)["rmse"], rel=1e-12)
    vr = model.trace_.column("validation_rmse")
    assert vr[-1] < 0.05 * vr[1]
    assert model.trace_.stop_reason == "max_iter"
    assert model.trace_.solver == "gfm.onepass"
    assert model.trace_.events[0]["rows_unused"] == 22000 - 12000


def test_stop_message_says_why_each_solver_ended():
    p = make_gfm(20, 1, 500 * 3, random_state=1)
    onepass = GeneralizedFM(1, batch_size=500, n_batches=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # using every batch is no failure
        onepass.fit(p.X, p.y)
    assert onepass.trace_.stop_reason == "max_iter"
    assert onepass.trace_.stop_message == "all 3 batches used"
    assert onepass.trace_.solver == "gfm.onepass"
    onepass.partial_fit(p.X[:500], p.y[:500])
    assert onepass.trace_.stop_reason == "partial_fit"
    assert onepass.trace_.stop_message == "4 batch(es) consumed, the last by partial_fit"

    ratings = load("planted-lowrank", n_users=60, n_items=40, rank=3, random_state=1)
    with pytest.warns(ConvergenceWarning, match="increase n_passes or tol"):
        budget = GeneralizedFM(2, n_passes=2, tol=1e-12, random_state=0).fit(ratings)
    assert budget.trace_.solver == "gfm.als"  # "auto" on ratings, named by the first step
    assert (budget.trace_.stop_reason, budget.trace_.stop_message) == (
        "max_iter", "n_passes=2 reached")
    no_rule = GeneralizedFM(2, n_passes=2, tol=0.0, random_state=0).fit(ratings)
    assert no_rule.trace_.stop_message == "all 2 ALS passes done"
    loose = GeneralizedFM(2, n_passes=50, tol=0.5, random_state=0).fit(ratings)
    assert loose.trace_.stop_reason == "converged" and loose.n_iter_ < 50
    assert re.fullmatch(r"the objective's relative decrease \S+ is below tol 0.5",
                        loose.trace_.stop_message)


def test_callback_stop_keeps_a_usable_model(sanity):
    seen = []

    def callback(row):
        seen.append(row["t"])
        if row["t"] == 2:
            raise StopIteration

    model = GeneralizedFM(2, batch_size=2000, n_batches=11, random_state=0)
    model.fit(sanity.X, sanity.y, callback=callback)
    assert seen == [0, 1, 2] and model.n_iter_ == 3
    assert model.trace_.stop_reason == "callback"
    metrics = model.evaluate((sanity.X[-500:], sanity.y[-500:]))
    assert all(math.isfinite(v) for v in metrics.values())
    # the stopped stream can go on with partial_fit
    model.partial_fit(*sanity.batches(2000)[3])
    assert model.n_iter_ == 4


def test_same_random_state_same_model_and_different_seeds_differ_only_slightly(sanity):
    a = _fit(sanity, 2000, 4, random_state=11)
    b = _fit(sanity, 2000, 4, random_state=11)
    for name, value in a._fitted_arrays().items():
        np.testing.assert_array_equal(b._fitted_arrays()[name], value, err_msg=name)
    np.testing.assert_array_equal(a.trace_.column("eps"), b.trace_.column("eps"))


def test_fitted_arrays_round_trip_predicts_the_same_and_continues(sanity):
    model = _fit(sanity, 2000, 4, random_state=0)
    arrays = {k: np.array(v) for k, v in model._fitted_arrays().items()}
    back = GeneralizedFM._from_fitted_arrays(arrays, model.get_params(), model.trace_)
    Xt = sanity.X[-300:]
    np.testing.assert_array_equal(back.predict(Xt), model.predict(Xt))
    assert back.evaluate((Xt, sanity.y[-300:])) == model.evaluate((Xt, sanity.y[-300:]))
    batch = sanity.batches(2000)[4]
    model.partial_fit(*batch)
    back.partial_fit(*batch)
    np.testing.assert_array_equal(back.coef_, model.coef_)


def test_saved_arrays_keep_their_layout_and_older_runs_still_open():
    """The fitted state moved into model_, design_ and stream_; the arrays a run saves did
    not change, and runs saved before 'solver' and the design's side rows were kept open."""
    ratings = load("planted-lowrank", n_users=60, n_items=40, rank=3, random_state=1)
    model = GeneralizedFM(2, n_passes=2, tol=0.0, random_state=0).fit(ratings)
    arrays = model._fitted_arrays()
    assert set(arrays) == {"w", "U", "V", "intercept", "mean", "scale", "counts", "solver",
                           "feature_names", "design_shape", "design_flags",
                           "design_user_columns", "design_item_columns", "design_user_fill",
                           "design_item_fill", "design_user_side", "design_item_side"}
    assert str(arrays["solver"]) == "als" and model.stream_ is None
    assert model.model_.n_seen == arrays["counts"][1]
    back = GeneralizedFM._from_fitted_arrays(arrays, model.get_params(), model.trace_)
    assert back.solver_ == "als" and back.stream_ is None
    np.testing.assert_array_equal(back.predict(ratings), model.predict(ratings))
    older = {k: v for k, v in arrays.items()
             if k not in ("solver", "design_user_side", "design_item_side")}
    old = GeneralizedFM._from_fitted_arrays(older, model.get_params(), None)
    assert old.solver_ == "onepass" and old.stream_.model is old.model_
    np.testing.assert_array_equal(old.predict(ratings), model.predict(ratings))


def test_evaluate_and_score():
    p = make_gfm(20, 1, 1000 * 8, random_state=1)
    model = GeneralizedFM(1, batch_size=1000, n_batches=8, random_state=0).fit((p.X, p.y))
    m = model.evaluate(RegressionData(p.X[:500], p.y[:500]))
    assert set(m) == {"rmse", "nmse"} and m["nmse"] < 1e-4
    # score() is the same rule for every family: -RMSE here (it was R^2 = 1 - nmse)
    assert GeneralizedFM.score_metric == "-rmse"
    assert model.score(p.X[:500], p.y[:500]) == -m["rmse"]
    assert model.score((p.X[:500], p.y[:500])) == -m["rmse"]
    assert model.score(RegressionData(p.X[:500], p.y[:500])) == -m["rmse"]


def test_score_is_higher_for_a_better_model():
    p = make_gfm(20, 1, 1000 * 8, random_state=1)
    held = (p.X[-500:], p.y[-500:])
    eight = GeneralizedFM(1, batch_size=1000, n_batches=8, random_state=0).fit(p.X, p.y)
    two = GeneralizedFM(1, batch_size=1000, n_batches=2, random_state=0).fit(p.X, p.y)
    assert eight.score(*held) > two.score(*held)
    shifted = GeneralizedFM._from_fitted_arrays(
        {**eight._fitted_arrays(), "intercept": np.array([eight.model_.b + 1.0])},
        eight.get_params(), eight.trace_)
    assert shifted.score(*held) < eight.score(*held)
    assert shifted.score(*held) == -shifted.evaluate(held)["rmse"]


def test_score_of_ratings_is_minus_the_rmse_of_evaluate():
    ratings = load("planted-lowrank", n_users=60, n_items=40, rank=3, random_state=1)
    train, test = ratings.split(0.2, random_state=0)
    one = GeneralizedFM(2, n_passes=1, random_state=0).fit(train)
    five = GeneralizedFM(2, n_passes=5, tol=0.0, random_state=0).fit(train)
    assert five.score(test) == -five.evaluate(test)["rmse"]
    assert five.score(train) > one.score(train)  # ALS passes never raise the objective


def test_interaction_views_equal_the_dense_matrix():
    p = make_gfm(15, 2, 800 * 5, random_state=2)
    model = GeneralizedFM(2, batch_size=800, n_batches=5, random_state=0).fit(p)
    M = model.interaction_matrix()
    np.testing.assert_allclose(M, M.T)
    vals, vecs = model.spectrum()
    dense = np.linalg.eigvalsh(M)
    np.testing.assert_allclose(np.sort(vals), np.sort(dense[np.argsort(-np.abs(dense))[:4]]),
                               atol=1e-10)
    np.testing.assert_allclose((vecs * vals) @ vecs.T, M, atol=1e-10)
    Z = np.random.default_rng(0).standard_normal((15, 3))
    np.testing.assert_allclose(model.M_apply(Z), M @ Z, atol=1e-12)
    top = model.top_interactions(5, feature_names=[f"f{i}" for i in range(15)])
    a, b = np.triu_indices(15)
    best = np.sort(np.abs(M[a, b]))[::-1][:5]
    np.testing.assert_allclose(np.abs(top["M_ab"].to_numpy()), best)
    assert top["feature_a"][0] == f"f{top['a'][0]}"


# ----------------------------------------------------------------------------- refusals
def test_parameters_follow_the_estimator_contract():
    model = GeneralizedFM(3, batch_size=100, random_state=0)
    params = model.get_params()
    assert set(params) == set(GeneralizedFM._parameter_constraints)
    assert clone(model).get_params() == params
    assert repr(model) == "GeneralizedFM(rank=3, batch_size=100, random_state=0)"
    for name, spec in GeneralizedFM._parameter_constraints.items():
        assert spec.label and spec.help, name
    with pytest.raises(NotFittedError):
        model.predict(np.zeros((1, 3)))


def _bad_values(param):
    if param.kind == RANDOM_STATE:
        return ["seed", 1.5, -1]
    if param.kind is bool:
        return ["yes", 1] if param.none_ok else ["yes", 1, None]
    if param.options:
        return ["__nope__"]
    out = ["abc", param.kind(param.low - 1)] + ([1.5] if param.kind is int else [])
    return out if param.none_ok else out + [None]


def test_every_declared_parameter_is_validated_with_the_template(sanity):
    for name, param in GeneralizedFM._parameter_constraints.items():
        for bad in _bad_values(param):
            model = GeneralizedFM(2, batch_size=2000, n_batches=2).set_params(**{name: bad})
            with pytest.raises(InvalidParameterError,
                               match=re.escape(f"The '{name}' parameter of GeneralizedFM must")):
                model.fit(sanity.X, sanity.y)
            assert not hasattr(model, "coef_")


def test_bad_settings_are_refused_with_the_fix():
    p = make_gfm(5, 2, 200, random_state=0)
    X, y = p.X, p.y
    with pytest.raises(InvalidParameterError, match=r"'rank' parameter of GeneralizedFM must "
                                                    r"be an int in \[1, 10000\]\. Got 0"):
        GeneralizedFM(0).fit(X, y)
    with pytest.raises(InvalidParameterError, match=r"'rank' .* at most the number of features "
                                                    r"d=5\. Got 7"):
        GeneralizedFM(7, batch_size=50).fit(X, y)
    with pytest.raises(InvalidParameterError, match=r"'batch_size' .* at least rank=3.* Got 2"):
        GeneralizedFM(3, batch_size=2).fit(X, y)
    with pytest.raises(ValueError, match=r"n_batches=150 batches would hold 1 rows each, fewer "
                                         r"than rank=2; lower n_batches"):
        GeneralizedFM(2, n_batches=150).fit(X, y)
    with pytest.raises(ValueError, match=r"batch_size=100 x n_batches=3 needs 300; lower"):
        GeneralizedFM(2, batch_size=100, n_batches=3).fit(X, y)
    with pytest.raises(InvalidParameterError, match="set batch_size or n_batches"):
        GeneralizedFM(2, n_batches=None).fit(X, y)
    Xn = X.copy()
    Xn[17, 3] = np.nan
    with pytest.raises(ValueError, match=r"X has a non-finite value .* at row 17, column 3; "
                                         r"remove or impute"):
        GeneralizedFM(2, n_batches=2).fit(Xn, y)
    with pytest.raises(ValueError, match=r"y has shape \(199,\) but X has 200 rows; pass one "
                                         r"target per row"):
        GeneralizedFM(2, n_batches=2).fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"y has shape \(199,\) but X has 200 rows"):
        GeneralizedFM(2).partial_fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"the batch has 1 rows, fewer than rank=2"):
        GeneralizedFM(2).partial_fit(X[:1], y[:1])
    model = GeneralizedFM(2).partial_fit(X[:100], y[:100])
    with pytest.raises(ValueError, match=r"has 4 features but the model has 5"):
        model.partial_fit(X[100:, :4], y[100:])
    with pytest.raises(ValueError, match=r"has 4 features but the model has 5"):
        model.predict(X[:, :4])
    with pytest.raises(ValueError, match=r"truth has dimension 4 but the model has d=5"):
        GeneralizedFM(2, n_batches=2).fit(X, y, truth=(np.zeros(4), np.eye(4)))
    with pytest.raises(ValueError, match=r"validation X has 4 features|has 4 features"):
        GeneralizedFM(2, n_batches=2).fit(X, y, validation=(X[:, :4], y))
    with pytest.raises(ValueError, match=r"the stream holds 2 batches but n_batches=11"):
        GeneralizedFM(2).fit([(X[:100], y[:100]), (X[100:], y[100:])])
    with pytest.raises(TypeError, match="fit takes X and y arrays"):
        GeneralizedFM(2).fit(42)


def test_truth_forms():
    t = planted_truth(8, 2, random_state=0)
    assert isinstance(t, Truth) and t.U.shape == (8, 2)
    with pytest.raises(ValueError, match="square"):
        GeneralizedFM(2, n_batches=2).fit(np.ones((10, 8)), np.ones(10),
                                          truth=(t.w, np.ones((8, 3))))
    errs = recovery_errors(t, t.w, t.U * t.lam, t.U)  # M = (U V^T + V U^T)/2 = M*
    assert errs["eps"] < 1e-12 and errs["tan_theta"] < 1e-7


def test_chunked_batch_takes_a_callable():
    with pytest.raises(TypeError, match="callable"):
        ChunkedBatch([(np.ones((2, 2)), np.ones(2))])
