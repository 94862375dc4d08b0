"""KolmogorovModel: the BCD contract, oracles on the paper's example and planted models."""

import re

import numpy as np
import pytest
from kmviz._base import clone

from kmviz.data import Ratings
from kmviz.data.synthetic import make_planted_km
from kmviz.exceptions import EmptyDataError, InvalidParameterError, NotFittedError
from kmviz.km import KolmogorovModel
from kmviz.km._kernels.simplex import FW_VARIANTS, fw_users
from kmviz.km.solvers import solve_bqp_batch
from kmviz.km.interpret import implied_by_liking, implies, support_matrix

pytestmark = pytest.mark.filterwarnings("ignore::kmviz.exceptions.ConvergenceWarning")

# the paper's illustrative example (7): users 1, 2 and items 1, 2 are indices 0, 1 here
EXAMPLE_THETA = np.array([[0.4, 0.2, 0.1, 0.3], [0.1, 0.3, 0.1, 0.5]])
EXAMPLE_PSI = np.array([[1.0, 0, 1, 1], [0, 0, 1, 1]])


def example_ratings():
    return Ratings.from_arrays([0, 0, 1], [0, 1, 1], [0.8, 0.4, 0.6], r_min=0.0, r_max=1.0)


@pytest.fixture(scope="module")
def planted():
    ratings, truth = make_planted_km(60, 30, 4, noise=0.05, observed=0.5, random_state=7)
    return ratings, truth


def _pairs(psi):
    N = support_matrix(psi)
    np.fill_diagonal(N, False)
    cons, ante = np.nonzero(N)  # N[i, j]: liking j implies liking i
    return set(zip(ante.tolist(), cons.tolist()))


# ----------------------------------------------------------------------------- the example
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paper_example_is_fitted_exactly(seed):
    m = KolmogorovModel(4, max_iter=30, random_state=seed).fit(example_ratings())
    assert m.trace_.rows[-1]["train_nrmse"] < 1e-6
    np.testing.assert_allclose(m.predict([0, 0, 1], [0, 1, 1]), [0.8, 0.4, 0.6], atol=1e-6)
    assert set(np.unique(m.psi_)) <= {0.0, 1.0}
    np.testing.assert_allclose(m.theta_.sum(axis=1), 1.0)


def test_paper_solution_is_a_global_optimum_and_a_bcd_fixed_point():
    theta, psi = EXAMPLE_THETA, EXAMPLE_PSI
    pred = theta @ psi.T
    assert pred[0, 0] == pytest.approx(0.8)
    assert pred[0, 1] == pytest.approx(0.4)
    assert pred[1, 1] == pytest.approx(0.6)
    assert pred[1, 0] == pytest.approx(0.7)  # the paper's prediction of the '*' entry
    # objective (2) is a sum of squares, so 0 is the global minimum
    obs = [(0, 0, 0.8), (0, 1, 0.4), (1, 1, 0.6)]
    assert sum((pred[u, i] - p) ** 2 for u, i, p in obs) == pytest.approx(0.0, abs=1e-30)
    # neither block moves it: the exact BQP and Frank-Wolfe both keep objective 0
    S = np.stack([np.outer(theta[0], theta[0]),
                  np.outer(theta[0], theta[0]) + np.outer(theta[1], theta[1])])
    v = np.stack([0.8 * theta[0], 0.4 * theta[0] + 0.6 * theta[1]])
    rho = np.array([0.8 ** 2, 0.4 ** 2 + 0.6 ** 2])
    res = solve_bqp_batch(S, v, psi.copy(), method="exact")
    assert np.sum(res.objective) + rho.sum() == pytest.approx(0.0, abs=1e-12)
    th = theta.copy()
    gap, nit, obj = np.empty(2), np.empty(2, np.int64), np.empty(2)
    fw_users(np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([0.8, 0.4, 0.6]), psi, 0.0,
             1e-12, 100, FW_VARIANTS["pairwise"], th, gap, nit, obj)
    assert obj.sum() == pytest.approx(0.0, abs=1e-14)


def test_paper_example_implication_direction():
    # supp(psi_2) ⊆ supp(psi_1): liking item 2 implies liking item 1 (the paper states the
    # converse); every user is at least as likely to like item 1 as item 2
    psi = EXAMPLE_PSI
    assert support_matrix(psi)[0, 1] and not support_matrix(psi)[1, 0]
    assert implies(psi, 0).tolist() == [1]            # what implies liking item 1: item 2
    assert implied_by_liking(psi, 1).tolist() == [0]  # liking item 2 implies liking item 1
    assert implied_by_liking(psi, 0).tolist() == []
    P = EXAMPLE_THETA @ psi.T
    assert np.all(P[:, 0] >= P[:, 1])


# ----------------------------------------------------------------------------- BCD properties
@pytest.mark.parametrize("solver", ["gd", "enhanced", "fast", "exact"])
@pytest.mark.parametrize("seed", [0, 1])
def test_objective_never_rises(planted, solver, seed):
    ratings, _ = planted
    m = KolmogorovModel(4, bqp_solver=solver, max_iter=6, tol=0.0, random_state=seed,
                        lambda_theta=0.5 * seed, mu_psi=0.3 * seed).fit(ratings)
    obj = m.trace_.column("objective")
    assert m.n_iter_ == 6 and np.all(np.isfinite(obj))
    assert np.all(np.diff(obj) <= 1e-9 * obj[:-1])
    assert np.all(m.trace_.column("objective_increase") <= 1e-9 * obj.max())
    assert not [e for e in m.trace_.events if "rose" in e["message"]]


def test_objective_matches_definition(planted):
    ratings, _ = planted
    lam, mu = 0.7, 0.4
    m = KolmogorovModel(4, max_iter=3, lambda_theta=lam, mu_psi=mu, random_state=0).fit(ratings)
    pred = m.predict(ratings.users, ratings.items)
    expected = (np.sum((pred - ratings.values) ** 2) + lam * np.sum(m.theta_ ** 2)
                + mu * m.psi_.sum())
    assert m.trace_.rows[-1]["objective"] == pytest.approx(expected, rel=1e-10)


def test_trace_columns(planted):
    ratings, _ = planted
    train, val = ratings.split(0.2, random_state=0)
    m = KolmogorovModel(4, max_iter=2, tol=0.0, random_state=0).fit(train, validation=val)
    row = m.trace_.rows[-1]
    for col in ("objective", "train_nrmse", "validation_nrmse", "t_build_s", "t_bqp_dual_s",
                "t_dual_1a_s", "t_dual_1b_s", "t_dual_2a_s", "t_dual_2b_s", "t_lanczos_s",
                "t_evd_s", "t_randomization_s", "t_lcqp_s", "n_phase_1a", "n_phase_1b",
                "n_phase_2a", "n_phase_2b", "n_evd", "n_dual_iter", "n_psi_changed",
                "lanczos_m_mean", "lanczos_beta_mean", "fw_gap_max", "wall_s"):
        assert col in row
    assert row["validation_nrmse"] == pytest.approx(-m.score(val))
    assert m.trace_.solver == "km.fast" and m.trace_.stop_reason == "max_iter"


def test_score_is_minus_the_nrmse_of_evaluate_and_higher_for_a_better_model(planted):
    """score() means the same for every family: higher is better; for KM it is -NRMSE,
    exactly as KM's own score computed it before the shared rule."""
    ratings, _ = planted
    train, test = ratings.split(0.2, random_state=0)
    m = KolmogorovModel(4, max_iter=8, tol=0.0, random_state=0).fit(train)
    assert KolmogorovModel.score_metric == "-nrmse"
    assert m.score(test) == -m.evaluate(test)["nrmse"]
    assert m.score(test) == -m.nrmse(test)
    err = m.predict(test.users, test.items) - m._targets(test.values)
    assert m.score(test) == -float(np.sqrt(np.mean(err ** 2)))  # KM's score before
    # the fitted model against the same model with its predictions moved by a constant
    worse = clone(m).fit(train)
    worse.theta_ = worse.theta_ * 0.5  # halves every prediction
    assert m.score(train) > worse.score(train)
    one = KolmogorovModel(4, max_iter=1, random_state=0).fit(train)
    assert m.score(train) > one.score(train)


BQP_PARTS = ("t_dual_1a_s", "t_dual_1b_s", "t_dual_2a_s", "t_dual_2b_s", "t_evd_s",
             "t_lanczos_s", "t_randomization_s")


@pytest.mark.parametrize("evd", ["exact", "lanczos"])
def test_bqp_time_parts_tile_the_bqp_step(evd):
    # D = 16: n = 17 > LZ_DENSE_N, so the certified rule runs Lanczos in phase II-B
    ratings, _ = make_planted_km(150, 60, 16, noise=0.05, observed=0.5, random_state=3)
    m = KolmogorovModel(16, max_iter=2, tol=0.0, evd=evd, random_state=0).fit(ratings)
    for row in m.trace_.rows:
        parts = [row[c] for c in BQP_PARTS]
        assert all(np.isfinite(parts)) and min(parts) >= 0.0
        assert 0.5 * row["t_bqp_s"] <= sum(parts) <= 1.05 * row["t_bqp_s"]
        assert row["t_bqp_dual_s"] == pytest.approx(sum(parts[:4]))
    lanczos = m.trace_.column("t_lanczos_s")
    if evd == "exact":
        assert np.all(lanczos == 0.0)
    else:
        assert np.all(lanczos > 0.0)
    assert m.trace_.column("t_evd_s").min() > 0.0  # eigh of -A at least


def test_callback_and_stop(planted):
    ratings, _ = planted
    rows = []
    m = KolmogorovModel(4, max_iter=4, tol=0.0, random_state=0).fit(ratings, callback=rows.append)
    assert len(rows) == m.n_iter_ == m.trace_.n_iter == 4

    def stop_at_2(row):
        if row["iteration"] == 2:
            raise StopIteration

    m2 = KolmogorovModel(4, max_iter=10, tol=0.0, random_state=0).fit(ratings, callback=stop_at_2)
    assert m2.trace_.stop_reason == "callback" and m2.n_iter_ == 2
    assert m2.predict([0, 1], [0, 1]).shape == (2,)
    np.testing.assert_allclose(m2.trace_.column("objective"), m.trace_.column("objective")[:2])
    m3 = KolmogorovModel(4, max_iter=10, random_state=0).fit(ratings, callback=lambda r: False)
    assert m3.trace_.stop_reason == "callback" and m3.n_iter_ == 1


def test_same_seed_same_trace(planted):
    ratings, _ = planted
    a = KolmogorovModel(4, max_iter=3, tol=0.0, random_state=5).fit(ratings)
    b = KolmogorovModel(4, max_iter=3, tol=0.0, random_state=5).fit(ratings)
    np.testing.assert_array_equal(a.trace_.column("objective"), b.trace_.column("objective"))
    np.testing.assert_array_equal(a.psi_, b.psi_)


def test_converged_stop_reason():
    m = KolmogorovModel(4, max_iter=50, random_state=0).fit(example_ratings())
    assert m.trace_.stop_reason == "converged" and m.n_iter_ < 50


def test_clone_and_params():
    m = KolmogorovModel(5, bqp_solver="exact", gamma=10.0, lambda_theta=1.5, random_state=3)
    c = clone(m)
    assert c.get_params() == m.get_params() and c is not m
    assert c.set_params(D=6).D == 6 and m.D == 5
    assert set(m.get_params()) == {
        "D", "bqp_solver", "evd", "gamma", "n_rand", "max_iter", "tol", "lambda_theta",
        "mu_psi", "probability", "threshold", "init", "lanczos_a", "dual_eps", "random_state"}


def test_save_load_round_trip(planted, tmp_path):
    ratings, _ = planted
    m = KolmogorovModel(4, max_iter=2, random_state=0, mu_psi=0.1).fit(ratings)
    path = m.save(tmp_path / "km.npz")
    m2 = KolmogorovModel.load(path)
    assert m2.get_params() == m.get_params()
    for name in ("theta_", "psi_", "dual_u_", "known_users_", "known_items_"):
        np.testing.assert_array_equal(getattr(m2, name), getattr(m, name))
    assert m2.trace_.to_frame().equals(m.trace_.to_frame()) and m2.n_iter_ == m.n_iter_
    np.testing.assert_array_equal(m2.predict_ratings([0, 1], [2, 3]),
                                  m.predict_ratings([0, 1], [2, 3]))


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("params, msg", [
    ({"D": 0}, "The 'D' parameter of KolmogorovModel must be an int in [1, 1024]. Got 0 instead."),
    ({"D": 2.5}, "The 'D' parameter of KolmogorovModel must be an int"),
    ({"gamma": 0.0}, "The 'gamma' parameter of KolmogorovModel must be a float in (0, 1e+12). "
                     "Got 0.0 instead."),
    ({"gamma": -1.0}, "The 'gamma' parameter of KolmogorovModel must be a float in (0, 1e+12)"),
    ({"n_rand": 0}, "The 'n_rand' parameter"),
    ({"max_iter": 0}, "The 'max_iter' parameter"),
    ({"lambda_theta": -1.0}, "The 'lambda_theta' parameter"),
    ({"mu_psi": -0.1}, "The 'mu_psi' parameter"),
    ({"probability": "bogus"}, "The 'probability' parameter of KolmogorovModel must be one of"),
    ({"bqp_solver": "newton"}, "The 'bqp_solver' parameter"),
    ({"evd": "arnoldi"}, "The 'evd' parameter"),
])
def test_bad_parameters_rejected(params, msg):
    with pytest.raises(InvalidParameterError, match=re.escape(msg)):
        KolmogorovModel(**params).fit(example_ratings())


def test_empty_training_set_rejected():
    empty = example_ratings().subset(np.zeros(3, dtype=bool))
    with pytest.raises(EmptyDataError, match="the ratings hold no ratings"):
        KolmogorovModel(2).fit(empty)


def test_probability_modes():
    r = Ratings.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [1.0, 5.0, 3.0, 4.0], r_min=1, r_max=5)
    m = KolmogorovModel(2, max_iter=2, probability="max", random_state=0).fit(r)
    assert m.predict_ratings([0], [0])[0] == pytest.approx(5 * m.predict([0], [0])[0])
    m = KolmogorovModel(2, max_iter=2, random_state=0).fit(r)
    assert m.predict_ratings([0], [0])[0] == pytest.approx(1 + 4 * m.predict([0], [0])[0])
    with pytest.raises(ValueError, match="probability='identity'"):
        KolmogorovModel(2, probability="identity").fit(r)


def _stars(seed=0, n_users=40, n_items=12):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < 0.6
    mask[:, 0] = mask[0] = True
    u, i = np.nonzero(mask)
    v = rng.integers(1, 6, u.size).astype(float)
    return Ratings.from_arrays(u, i, v, r_min=1, r_max=5, user_ids=np.arange(n_users),
                               item_ids=np.arange(n_items))


def test_threshold_fits_the_liked_indicator(tmp_path):
    r = _stars()
    liked = (r.values >= 4).astype(float)
    likes01 = r._replace_entries(r.users, r.items, liked, r_min=0.0, r_max=1.0)
    m = KolmogorovModel(3, max_iter=4, threshold=4.0, random_state=0).fit(r)
    ref = KolmogorovModel(3, max_iter=4, random_state=0).fit(likes01)
    # the same targets give the same fit: the threshold only changes what p_ui is
    np.testing.assert_array_equal(m.psi_, ref.psi_)
    np.testing.assert_allclose(m.theta_, ref.theta_)
    assert m.threshold_ == 4.0 and m.mean_p_ == pytest.approx(liked.mean())
    pred = m.predict(r.users, r.items)
    np.testing.assert_allclose(m.predict_ratings(r.users, r.items), pred)  # P(like)
    rmse = float(np.sqrt(np.mean((pred - liked) ** 2)))
    assert m.evaluate(r) == pytest.approx({"nrmse": rmse, "rmse": rmse})
    assert m.nrmse(r) == pytest.approx(rmse)
    base = float(np.sqrt(np.mean((liked - liked.mean()) ** 2)))
    assert m.mean_predictor_metrics(r, r)["nrmse"] == pytest.approx(base)
    S, v = m.item_problem(r, 0)
    S_ref, v_ref = ref.item_problem(likes01, 0)
    np.testing.assert_allclose(v, v_ref)
    # without a threshold the same data are fitted as scaled stars: another fit
    plain = KolmogorovModel(3, max_iter=4, random_state=0).fit(r)
    assert plain.threshold_ is None
    assert not np.allclose(plain.predict(r.users, r.items), pred)
    # save / load keeps the threshold and what it means for every metric
    m2 = KolmogorovModel.load(m.save(tmp_path / "likes.kmviz"))
    assert m2.threshold == 4.0 and m2.threshold_ == 4.0
    assert m2.evaluate(r) == pytest.approx(m.evaluate(r))


def test_threshold_that_leaves_no_like_is_refused():
    with pytest.raises(ValueError, match=r"no training rating is >= threshold=6"):
        KolmogorovModel(2, threshold=6.0).fit(_stars())
    with pytest.raises(InvalidParameterError, match="The 'threshold' parameter"):
        KolmogorovModel(2, threshold="high").fit(_stars())


def test_not_fitted():
    with pytest.raises(NotFittedError, match="not fitted yet"):
        KolmogorovModel().predict([0], [0])


def test_unseen_users_and_items():
    # user 2 and item 2 exist in the index space but have no training rating
    r = Ratings.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [0.9, 0.2, 0.7, 0.3], r_min=0, r_max=1,
                            user_ids=[0, 1, 2], item_ids=[0, 1, 2])
    m = KolmogorovModel(3, max_iter=5, random_state=0).fit(r)
    assert m.known_users_.tolist() == [True, True, False]
    assert m.known_items_.tolist() == [True, True, False]
    np.testing.assert_allclose(m.theta_[2], m.theta_[:2].mean(axis=0))
    assert m.psi_[2].sum() == 0
    assert m.predict([0, 2], [2, 2]).tolist() == [m.mean_p_] * 2 == [0.525] * 2
    assert m.predict([2], [0])[0] == pytest.approx(m.theta_[:2].mean(axis=0) @ m.psi_[0])
    with pytest.raises(ValueError, match="users index 3 is out of range"):
        m.predict([3], [0])
    with pytest.raises(ValueError, match="items index -1 is out of range"):
        m.predict([0], [-1])


# ----------------------------------------------------------------------------- planted model
@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_planted_model_recovers_implications(noise):
    # The implications between items (supp(psi_j) ⊆ supp(psi_i)) do not depend on how the D
    # elementary events are numbered, so learned and true pairs are compared directly.
    # Measured on seeds 0-3 (150 users x 60 items, D=8, 4 chains, 30% observed, fast BQP):
    # precision and recall were 1.0 with and without noise, and a noiseless fit reached
    # objective 0. The thresholds leave room for a BCD run that ends in a local minimum
    # merging or splitting one support class; noise 0.1 on ~45 ratings per item moves an
    # item's v_i little relative to the gap between nested supports.
    ratings, truth = make_planted_km(150, 60, 8, noise=noise, observed=0.3, n_chains=4,
                                     random_state=1)
    m = KolmogorovModel(8, max_iter=30, random_state=1).fit(ratings)
    rmse = m.trace_.rows[-1]["train_nrmse"]
    if noise == 0.0:
        assert rmse < 1e-3
    else:
        assert rmse < noise  # no worse than the noise itself
    mined = _pairs(m.psi_)
    true = set(map(tuple, truth.implications.tolist()))
    tp = len(mined & true)
    precision, recall = tp / max(len(mined), 1), tp / len(true)
    floor = 0.95 if noise == 0.0 else 0.85
    assert precision >= floor and recall >= floor, (precision, recall)


# ----------------------------------------------------------------------------- item_problem
@pytest.mark.parametrize("mu_psi", [0.0, 0.4])
def test_item_problem_matches_the_fits_build(mu_psi):
    # The fit builds every item's (S_i, v_i) with build_item_stats over the CSC arrays of the
    # training probabilities; item_problem must give exactly that item's slice (mu shift
    # included) at the fitted theta, on a 1-5 star scale so the mapping matters.
    from kmviz.km._kernels.simplex import build_item_stats
    from kmviz.km.estimator import _compressed, to_probability

    ratings, _ = make_planted_km(30, 12, 4, observed=0.5, scale="stars", random_state=3)
    m = KolmogorovModel(4, max_iter=3, tol=0.0, mu_psi=mu_psi, random_state=0).fit(ratings)
    p = to_probability(ratings.values, ratings.r_min, ratings.r_max, "minmax")
    i_ptr, i_idx, i_p = _compressed(np.asarray(ratings.items), np.asarray(ratings.users), p,
                                    ratings.n_items)
    S = np.empty((ratings.n_items, 4, 4))
    v = np.empty((ratings.n_items, 4))
    build_item_stats(i_ptr, i_idx, i_p, m.theta_, S, v, np.empty(ratings.n_items))
    for item in (0, 5, ratings.n_items - 1):
        S_i, v_i = m.item_problem(ratings, item)
        np.testing.assert_array_equal(S_i, S[item])
        np.testing.assert_array_equal(v_i, v[item] - 0.5 * mu_psi)


def test_item_problem_errors():
    r = Ratings.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [0.9, 0.2, 0.7, 0.3], r_min=0, r_max=1,
                            item_ids=[0, 1, 2])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        KolmogorovModel(2).item_problem(r, 0)
    m = KolmogorovModel(2, max_iter=2, random_state=0).fit(r)
    with pytest.raises(ValueError, match="item 2 has no ratings"):
        m.item_problem(r, 2)
    with pytest.raises(ValueError, match="item index 3 is out of range"):
        m.item_problem(r, 3)
    with pytest.raises(ValueError, match="the model was fitted on"):
        m.item_problem(Ratings.from_arrays([0, 1], [0, 1], [0.1, 0.5]), 0)


def test_from_fitted_predicts_like_the_fitted_model(planted):
    ratings, _ = planted
    train, test = ratings.split(0.3, random_state=0)
    m = KolmogorovModel(D=4, max_iter=3, tol=0.0, random_state=0, probability="max").fit(train)
    r = KolmogorovModel.from_fitted(m.theta_, m.psi_, train, trace=m.trace_,
                                    **m.get_params())
    np.testing.assert_array_equal(r.predict(test.users, test.items),
                                  m.predict(test.users, test.items))
    assert r.nrmse(test) == m.nrmse(test)
    np.testing.assert_array_equal(r.known_items_, m.known_items_)
    with pytest.raises(ValueError, match="do not match the ratings and D=4"):
        KolmogorovModel.from_fitted(m.theta_[:, :3], m.psi_, train, D=4)


def test_nan_or_out_of_scale_validation_is_refused_at_fit(planted):
    from kmviz.exceptions import DataValueError

    ratings, _ = planted
    train, val = ratings.split(0.2, random_state=0)
    bad = val._replace_entries(val.users, val.items, np.where(np.arange(val.n_ratings) == 0,
                                                              np.nan, val.values))
    with pytest.raises(DataValueError, match="validation ratings"):
        KolmogorovModel(3, max_iter=1).fit(train, validation=bad)
    far = val._replace_entries(val.users, val.items, val.values + 100.0)
    with pytest.raises(DataValueError, match="validation ratings"):
        KolmogorovModel(3, max_iter=1).fit(train, validation=far)
