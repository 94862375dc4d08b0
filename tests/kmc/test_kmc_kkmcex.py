"""KKMCEX (3.46) and RRMCEX (3.59): dense oracles, the CG path, cold start, the estimator."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

from kmviz.data import Ratings
from kmviz.exceptions import ConvergenceWarning, DataValueError, InvalidParameterError
from kmviz.kmc import KernelMatrixCompletion, krr, make_kernel_mc, nmse, rkhs as kn
from kmviz.kmc.synthetic import observe


def _tiny(N=6, L=5, s=12, seed=0, cold_row=None):
    """Two kernels, a matrix, s observed entries (none in ``cold_row``)."""
    rng = np.random.default_rng(seed)
    K_row = kn.diffusion_kernel(kn.erdos_renyi_graph(N, 0.5, random_state=seed), 0.7)
    K_col = kn.gaussian_kernel(rng.standard_normal((L, 2)), gamma=0.5)
    F = rng.standard_normal((N, L))
    allowed = np.ones((N, L), bool)
    if cold_row is not None:
        allowed[cold_row] = False
    flat = np.sort(rng.choice(np.flatnonzero(allowed.ravel(order="F")), s, replace=False))
    return K_row, K_col, F, flat % N, flat // N


def _dense_kkmcex(K_row, K_col, rows, cols, m, mu, ridge=None):
    """(3.46) with the explicit Kronecker kernel: unvec(K_f S^T (S K_f S^T + mu I)^-1 m)."""
    N, L = K_row.shape[0], K_col.shape[0]
    Kf = np.kron(K_col, K_row)
    S = np.zeros((rows.shape[0], N * L))
    S[np.arange(rows.shape[0]), rows + cols * N] = 1.0
    R = np.diag(ridge) if ridge is not None else mu * np.eye(rows.shape[0])
    f = Kf @ S.T @ np.linalg.solve(S @ Kf @ S.T + R, m)
    return f.reshape((N, L), order="F")


def _ratings(rows, cols, values, N, L):
    return Ratings.from_arrays(rows, cols, values, user_ids=np.arange(N),
                               item_ids=np.arange(L))


def test_kkmcex_equals_dense_kernel_ridge_regression_with_np_kron():
    K_row, K_col, F, rows, cols = _tiny()
    m = F[rows, cols]
    mu = 0.05
    expected = _dense_kkmcex(K_row, K_col, rows, cols, m, mu)
    model = KernelMatrixCompletion(mu=mu, solver="direct").fit(
        _ratings(rows, cols, m, 6, 5), row_kernel=K_row, col_kernel=K_col)
    np.testing.assert_allclose(model.completed_matrix(), expected, atol=1e-10)
    uu, ii = np.meshgrid(np.arange(6), np.arange(5), indexing="ij")
    np.testing.assert_allclose(model.predict(uu, ii), expected, atol=1e-10)
    # the objective (3.40) at the solution, and the coefficients are gamma on Omega (3.45)
    rows, cols = model.train_rows_, model.train_cols_  # the ratings' (sorted) order
    m = F[rows, cols]
    c = np.linalg.solve(krr.kkmcex_gram(K_row, K_col, rows, cols) + mu * np.eye(12), m)
    np.testing.assert_allclose(model.coef_, c, atol=1e-10)
    row = model.trace_.rows[-1]
    Kc = krr.kkmcex_gram(K_row, K_col, rows, cols) @ c
    assert row["objective"] == pytest.approx(float((m - Kc) @ (m - Kc) + mu * c @ Kc))
    assert model.trace_.solver == "kmc.kkmcex.direct" and model.n_iter_ == 1
    for phase in ("kernels", "gram", "solve"):
        assert f"t_{phase}_s" in row


def test_weighted_sampling_form_equals_the_per_sample_ridge_form():
    """§5.2.1: S = D S_0 with D = diag(1/sqrt(s p)) (rows may repeat) equals binary KKMCEX with
    the ridge mu s p_k."""
    K_row, K_col, F, _, _ = _tiny()
    N, L = F.shape
    rng = np.random.default_rng(4)
    p_all = rng.random(N * L) + 0.1
    p_all /= p_all.sum()
    s, mu = 15, 0.2
    flat = rng.choice(N * L, s, replace=True, p=p_all)  # with replacement: repeats allowed
    rows, cols, p = flat % N, flat // N, p_all[flat]
    Kf = np.kron(K_col, K_row)
    S = np.zeros((s, N * L))
    S[np.arange(s), flat] = 1.0 / np.sqrt(s * p)
    m_full = F.ravel(order="F")
    weighted = Kf @ S.T @ np.linalg.solve(S @ Kf @ S.T + mu * np.eye(s), S @ m_full)
    c = krr.kkmcex_direct(K_row, K_col, rows, cols, F[rows, cols], mu,
                          ridge=krr.weighted_ridge(mu, p))
    ours = krr.KronGram(K_row, K_col, rows, cols).full(c)
    np.testing.assert_allclose(ours.ravel(order="F"), weighted, atol=1e-10)


def test_kron_gram_routes_agree_with_repeated_pairs():
    K_row, K_col, _, rows, cols = _tiny(N=9, L=7, s=20)
    rows = np.concatenate([rows, rows[:3]])
    cols = np.concatenate([cols, cols[:3]])
    v = np.random.default_rng(1).standard_normal(rows.shape[0])
    A = krr.kkmcex_gram(K_row, K_col, rows, cols)
    for route in ("dense", "sparse"):
        g = krr.KronGram(K_row, K_col, rows, cols, route=route)
        np.testing.assert_allclose(g.matvec(v), A @ v, atol=1e-12)
        np.testing.assert_allclose(g.diagonal(), np.diag(A))


@pytest.mark.parametrize("preconditioner", ["jacobi", "eigen", "none"])
def test_cg_path_equals_the_direct_solve_and_records_its_residual(preconditioner):
    ratings, truth = make_kernel_mc(30, 25, edge_prob=0.15, observed=0.3, random_state=1)
    kw = dict(mu=1e-3, row_kernel=truth.row_kernel, col_kernel=truth.col_kernel)
    direct = KernelMatrixCompletion(mu=kw["mu"], solver="direct").fit(
        ratings, row_kernel=truth.row_kernel, col_kernel=truth.col_kernel)
    cg = KernelMatrixCompletion(mu=kw["mu"], solver="cg", preconditioner=preconditioner,
                                n_components=150, tol=1e-12, max_iter=2000).fit(
        ratings, row_kernel=truth.row_kernel, col_kernel=truth.col_kernel)
    assert cg.trace_.stop_reason == "converged"
    assert cg.trace_.solver == "kmc.kkmcex.cg"
    np.testing.assert_allclose(cg.coef_, direct.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cg.completed_matrix(), direct.completed_matrix(), atol=1e-9)
    res = cg.trace_.column("cg_residual")
    assert res.shape[0] == cg.n_iter_ and res[-1] <= 1e-12 < res[0]
    assert cg.trace_.rows[-1]["objective"] == pytest.approx(
        direct.trace_.rows[-1]["objective"], rel=1e-8)
    assert any("CG converged" in e["message"] for e in cg.trace_.events)
    # the trace says the real reason: the CG residual, not the objective's decrease
    msg = cg.trace_.stop_message
    assert re.fullmatch(r"CG converged: relative residual \S+ <= tol 1e-12 after "
                        rf"{cg.n_iter_} iterations", msg), msg
    assert float(msg.split("residual ")[1].split(" ")[0]) == pytest.approx(res[-1], rel=1e-2)
    assert direct.trace_.stop_message == "closed-form solution"
    assert not any(e["message"] == "stopped by the user" for e in cg.trace_.events)


def test_solver_auto_switches_to_cg_above_the_direct_limit(monkeypatch):
    from kmviz.kmc import params

    ratings, truth = make_kernel_mc(20, 20, edge_prob=0.2, observed=0.2, random_state=0)
    assert KernelMatrixCompletion().fit(ratings).trace_.solver == "kmc.kkmcex.direct"
    monkeypatch.setattr(params, "DIRECT_MAX_S", 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert KernelMatrixCompletion().fit(ratings).trace_.solver == "kmc.kkmcex.cg"


def test_rrmcex_with_all_eigen_features_equals_kkmcex():
    K_row, K_col, F, rows, cols = _tiny()
    r = _ratings(rows, cols, F[rows, cols], 6, 5)
    k = KernelMatrixCompletion(mu=0.05).fit(r, row_kernel=K_row, col_kernel=K_col)
    rr = KernelMatrixCompletion(method="rrmcex", mu=0.05, n_components=30).fit(
        r, row_kernel=K_row, col_kernel=K_col)
    assert rr.coef_.shape == (30,) and rr.feature_pairs_.shape == (30, 2)
    np.testing.assert_allclose(rr.completed_matrix(), k.completed_matrix(), atol=1e-10)
    # fewer features: the top products of the two spectra, in decreasing order
    few = KernelMatrixCompletion(method="rrmcex", mu=0.05, n_components=7).fit(
        r, row_kernel=K_row, col_kernel=K_col)
    sr, sc = krr.kernel_eigen(K_row)[0], krr.kernel_eigen(K_col)[0]
    np.testing.assert_allclose(few.feature_eigenvalues_,
                               np.sort(np.outer(sr, sc).ravel())[::-1][:7])


def test_rrmcex_linear_features_equal_kkmcex_with_linear_kernels():
    import pandas as pd

    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((8, 3)), rng.standard_normal((6, 2))
    F = X @ rng.standard_normal((3, 2)) @ Y.T
    flat = rng.choice(48, 20, replace=False)
    rows, cols = flat % 8, flat // 8
    r = Ratings.from_arrays(rows, cols, F[rows, cols], user_ids=np.arange(8),
                            item_ids=np.arange(6), user_features=pd.DataFrame(X),
                            item_features=pd.DataFrame(Y))
    lin = KernelMatrixCompletion(method="rrmcex", rr_features="linear", mu=1e-3,
                                 n_components=6).fit(r)
    k = KernelMatrixCompletion(mu=1e-3, feature_kernel="linear").fit(r)
    np.testing.assert_allclose(lin.completed_matrix(), k.completed_matrix(), atol=1e-9)
    with pytest.raises(InvalidParameterError, match="rr_features='linear' needs user features"):
        KernelMatrixCompletion(method="rrmcex", rr_features="linear").fit(
            _ratings(rows, cols, F[rows, cols], 8, 6))


def test_online_rrmcex_approaches_the_rrmcex_solution():
    ratings, truth = make_kernel_mc(40, 30, edge_prob=0.1, observed=0.3, random_state=2)
    kw = dict(mu=1e-3, n_components=60)
    rr = KernelMatrixCompletion(method="rrmcex", **kw).fit(ratings)
    online = KernelMatrixCompletion(method="online_rrmcex", max_iter=60, tol=0.0,
                                    random_state=0, **kw).fit(ratings)
    obj = online.trace_.column("objective")
    assert obj[-1] < obj[0] and obj[-1] <= 1.2 * rr.trace_.rows[-1]["objective"]
    assert online.trace_.column("n_seen")[-1] == 60 * ratings.n_ratings
    e_rr = nmse(rr.completed_matrix(), truth.matrix)
    assert nmse(online.completed_matrix(), truth.matrix) < 1.5 * e_rr
    # batch_size rows: the same stream, finer rows
    fine = KernelMatrixCompletion(method="online_rrmcex", max_iter=4, tol=0.0, batch_size=50,
                                  random_state=0, **kw).fit(ratings)
    assert list(fine.trace_.column("n_seen")) == [50, 100, 150, 200]
    # the per-row objective (one O(s d) pass) is (3.62) at the current xi
    sr, Qr = krr.kernel_eigen(online.row_kernel_)
    sc, Qc = krr.kernel_eigen(online.col_kernel_)
    feats = krr.EigenFeatures(sr, Qr, sc, Qc, 60)
    rows, cols = np.asarray(ratings.users), np.asarray(ratings.items)
    m = np.asarray(ratings.values, dtype=np.float64)
    G, h = feats.gram_and_rhs(rows, cols, m)
    assert obj[-1] == pytest.approx(krr.rrmcex_objective(G, h, float(m @ m), online.coef_,
                                                         1e-3), rel=1e-9)


# ----------------------------------------------------------------------------- cold start
@pytest.mark.parametrize("method, params", [
    ("kkmcex", {}), ("kkmcex", {"solver": "cg", "tol": 1e-10, "max_iter": 3000}),
    ("rrmcex", {"n_components": 300}), ("als", {"rank": 10, "mu": 1e-5, "max_iter": 100}),
])
def test_cold_start_predictions_beat_the_mean_baseline(method, params):
    ratings, truth = make_kernel_mc(50, 40, edge_prob=0.12, eta=1.0, observed=0.3,
                                    cold_rows=5, cold_cols=4, random_state=5)
    cold_r, cold_c = ratings.info["cold_rows"], ratings.info["cold_cols"]
    prm = {"mu": 1e-4, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = KernelMatrixCompletion(method=method, random_state=0, **prm).fit(ratings)
    assert not model.known_rows_[cold_r].any() and model.predictable_rows_[cold_r].all()
    F = model.completed_matrix()
    mean = float(np.mean(ratings.values))
    for part in (F[cold_r], F[:, cold_c]):
        assert np.isfinite(part).all()
    err = np.mean((F[cold_r] - truth.matrix[cold_r]) ** 2)
    base = np.mean((mean - truth.matrix[cold_r]) ** 2)
    assert err < 0.5 * base, (err, base)
    err_c = np.mean((F[:, cold_c] - truth.matrix[:, cold_c]) ** 2)
    base_c = np.mean((mean - truth.matrix[:, cold_c]) ** 2)
    assert err_c < 0.5 * base_c, (err_c, base_c)


@pytest.mark.parametrize("method", ["kkmcex", "rrmcex", "als", "pg"])
def test_methods_that_cannot_extrapolate_say_so(method):
    K_row, K_col, F, rows, cols = _tiny(cold_row=2)
    r = _ratings(rows, cols, F[rows, cols], 6, 5)
    model = KernelMatrixCompletion(method=method, mu=0.1, max_iter=5, tol=0.0,
                                   row_prior="identity", col_prior="identity").fit(r)
    assert not model.predictable_rows_[2]
    with pytest.raises(ValueError, match=r"Cannot predict the requested pairs: user 2 has no "
                                         r"training entries"):
        model.predict([2, 0], [1, 1])
    assert np.isnan(model.completed_matrix()[2]).all()
    model.predict([0, 1], [1, 1])  # the others are fine


def test_pg_extrapolates_cold_rows_only_through_its_laplacian_term():
    ratings, truth = make_kernel_mc(30, 20, edge_prob=0.2, observed=0.4, cold_rows=2,
                                    random_state=3)
    cold = ratings.info["cold_rows"]
    plain = KernelMatrixCompletion(method="pg", mu=1e-3, max_iter=5, tol=0.0).fit(ratings)
    with pytest.raises(ValueError, match=r"nuclear-norm MC \(method='pg'\) cannot extrapolate"):
        plain.predict(cold, [0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lap = KernelMatrixCompletion(method="pg", mu=1e-3, lap_weight=0.5, max_iter=5).fit(
            ratings)
    assert lap.predictable_rows_[cold].all()
    assert np.isfinite(lap.predict(cold, [0, 0])).all()


def test_validation_with_unpredictable_pairs_fails_at_the_start():
    K_row, K_col, F, rows, cols = _tiny(cold_row=2)
    train = _ratings(rows, cols, F[rows, cols], 6, 5)
    val = Ratings(np.array([2]), np.array([0]), np.array([0.5]), n_users=6, n_items=5,
                  r_min=-5, r_max=5)
    with pytest.raises(ValueError, match="Cannot predict validation ratings: user 2"):
        KernelMatrixCompletion(row_prior="identity").fit(train, validation=val)


def test_predict_new_extrapolates_to_entities_outside_the_kernels():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((10, 2)), rng.standard_normal((8, 2))
    Xn = rng.standard_normal((3, 2))
    K_full = kn.gaussian_kernel(np.vstack([X, Xn]), gamma=0.5)
    K_col = kn.gaussian_kernel(Y, gamma=0.5)
    F = rng.standard_normal((13, 8))
    flat = rng.choice(80, 30, replace=False)
    rows, cols = flat % 10, flat // 10
    r = _ratings(rows, cols, F[rows, cols], 10, 8)
    m = KernelMatrixCompletion(mu=0.1).fit(r, row_kernel=K_full[:10, :10], col_kernel=K_col)
    # the same model with the new rows inside the index space (no entries there)
    r13 = _ratings(rows, cols, F[rows, cols], 13, 8)
    m13 = KernelMatrixCompletion(mu=0.1).fit(r13, row_kernel=K_full, col_kernel=K_col)
    np.testing.assert_allclose(m.predict_new(K_full[10:, :10]),
                               m13.completed_matrix()[10:], atol=1e-10)
    np.testing.assert_allclose(m.predict_new(), m.completed_matrix(), atol=1e-10)


# ----------------------------------------------------------------------------- the estimator
def test_mis_shaped_and_non_psd_kernels_are_refused_at_fit():
    K_row, K_col, F, rows, cols = _tiny()
    r = _ratings(rows, cols, F[rows, cols], 6, 5)
    with pytest.raises(DataValueError, match=r"row_kernel has shape \(5, 5\); expected shape "
                                             r"\(6, 6\)"):
        KernelMatrixCompletion().fit(r, row_kernel=K_col, col_kernel=K_col)
    bad = K_col.copy()
    bad[0, 1] = bad[1, 0] = 3.0
    with pytest.raises(DataValueError, match="col_kernel is not positive semidefinite"):
        KernelMatrixCompletion().fit(r, row_kernel=K_row, col_kernel=bad)
    lam = kn.min_eigenvalue(bad)
    model = KernelMatrixCompletion(jitter=-lam + 1e-3).fit(r, row_kernel=K_row,
                                                           col_kernel=bad)
    np.testing.assert_allclose(model.col_kernel_, bad + (-lam + 1e-3) * np.eye(5))


def test_missing_side_information_is_named():
    K_row, K_col, F, rows, cols = _tiny()
    r = _ratings(rows, cols, F[rows, cols], 6, 5)
    with pytest.raises(InvalidParameterError, match="row_prior='graph' but there is no user "
                                                    "graph"):
        KernelMatrixCompletion(row_prior="graph").fit(r)
    with pytest.raises(InvalidParameterError, match="col_prior='features' but there are no "
                                                    "numeric item features"):
        KernelMatrixCompletion(col_prior="features").fit(r)
    with pytest.raises(InvalidParameterError, match="needs a row \\(user\\) graph"):
        KernelMatrixCompletion(method="pg", pg_init="graph").fit(r)


@pytest.mark.parametrize("name, value", [
    ("method", "svd"), ("mu", 0.0), ("mu", -1.0), ("solver", "lu"), ("n_components", 0),
    ("rank", 0), ("eta", 0.0), ("tol", -1.0), ("decay", 1.0), ("center", "yes"),
    ("random_state", -1), ("schedule", "apg"), ("gamma", 0.0), ("jitter", -1e-3),
])
def test_out_of_range_settings_are_refused_with_the_template(name, value):
    K_row, K_col, F, rows, cols = _tiny()
    # a method-only setting is checked with a method that uses it
    when = KernelMatrixCompletion._parameter_constraints[name].when
    method = {"method": when["method"][-1]} if "method" in when else {}
    with pytest.raises(InvalidParameterError,
                       match=f"The '{name}' parameter of KernelMatrixCompletion must be"):
        KernelMatrixCompletion(**{**method, name: value}).fit(
            _ratings(rows, cols, F[rows, cols], 6, 5))


def test_settings_of_another_method_are_not_checked():
    """A setting whose ``when`` does not hold is not read, so validation does not refuse it
    (the Train form hides it); the method that uses it does."""
    K_row, K_col, F, rows, cols = _tiny()
    r = _ratings(rows, cols, F[rows, cols], 6, 5)
    KernelMatrixCompletion(schedule="apg", rank=0, batch_size=-1).fit(r)  # KKMCEX: unused
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        KernelMatrixCompletion(method="pg", solver="lu", eta=0.0, max_iter=3).fit(r)
        KernelMatrixCompletion(method="rrmcex", max_iter=0, n_components=5).fit(r)
    with pytest.raises(InvalidParameterError, match="The 'schedule' parameter"):
        KernelMatrixCompletion(method="pg", schedule="apg").fit(r)
    with pytest.raises(InvalidParameterError, match="The 'max_iter' parameter"):
        KernelMatrixCompletion(method="sgd", max_iter=0).fit(r)


def test_graph_and_feature_priors_come_from_the_ratings():
    ratings, truth = make_kernel_mc(25, 20, edge_prob=0.2, eta=0.5, observed=0.3,
                                    random_state=0)
    m = KernelMatrixCompletion(eta=0.5).fit(ratings)
    np.testing.assert_allclose(m.row_kernel_, truth.row_kernel, atol=1e-12)
    np.testing.assert_allclose(m.col_kernel_, truth.col_kernel, atol=1e-12)
    assert any("diffusion kernel of the user graph" in e["message"] for e in m.trace_.events)
    reg = KernelMatrixCompletion(graph_kernel="regularized_laplacian", eta=2.0).fit(ratings)
    np.testing.assert_allclose(reg.row_kernel_, kn.regularized_laplacian_kernel(
        truth.row_graph, 2.0), atol=1e-12)
    # fit-time graphs and features override the ratings'
    X = np.random.default_rng(0).standard_normal((25, 3))
    f = KernelMatrixCompletion(row_prior="features", gamma=0.3).fit(ratings, row_features=X)
    np.testing.assert_allclose(f.row_kernel_, kn.gaussian_kernel(X, gamma=0.3))


def test_centering_adds_the_mean_back():
    K_row, K_col, F, rows, cols = _tiny()
    vals = F[rows, cols] + 10.0
    r = _ratings(rows, cols, vals, 6, 5)
    c = KernelMatrixCompletion(mu=0.05, center=True).fit(r, row_kernel=K_row,
                                                         col_kernel=K_col)
    expected = _dense_kkmcex(K_row, K_col, rows, cols, vals - vals.mean(), 0.05) + vals.mean()
    np.testing.assert_allclose(c.completed_matrix(), expected, atol=1e-10)
    assert c.offset_ == pytest.approx(vals.mean())


def test_callback_stop_keeps_a_usable_model():
    ratings, truth = make_kernel_mc(30, 25, edge_prob=0.15, observed=0.3, random_state=1)
    train, test = ratings.split(0.2, random_state=0)
    seen = []

    def callback(row):
        seen.append(row["cg_residual"])
        return len(seen) < 3

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = KernelMatrixCompletion(solver="cg", mu=1e-3, tol=1e-12).fit(
            train, callback=callback, validation=test)
    assert m.n_iter_ == 3 and m.trace_.stop_reason == "callback"
    assert any(e["message"] == "stopped by the user" for e in m.trace_.events)
    metrics = m.evaluate(test)
    assert all(math.isfinite(v) for v in metrics.values())
    assert m.trace_.rows[-1]["validation_rmse"] == pytest.approx(metrics["rmse"], rel=1e-12)


def test_max_iter_without_convergence_warns():
    ratings, _ = make_kernel_mc(30, 25, edge_prob=0.15, observed=0.3, random_state=1)
    with pytest.warns(ConvergenceWarning, match="Maximum number of iterations 2 reached"):
        m = KernelMatrixCompletion(solver="cg", mu=1e-6, max_iter=2, tol=1e-12).fit(ratings)
    assert m.trace_.stop_reason == "max_iter"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        KernelMatrixCompletion(solver="cg", mu=1e-6, max_iter=2, tol=0.0).fit(ratings)


@pytest.mark.parametrize("params", [
    {"method": "kkmcex"}, {"method": "kkmcex", "solver": "cg", "max_iter": 20},
    {"method": "rrmcex", "n_components": 40}, {"method": "online_rrmcex", "max_iter": 3},
    {"method": "als", "max_iter": 3}, {"method": "sgd", "max_iter": 3},
    {"method": "pg", "max_iter": 3},
])
def test_same_random_state_same_result_and_fitted_arrays_round_trip(params):
    ratings, _ = make_kernel_mc(25, 20, edge_prob=0.2, observed=0.3, cold_rows=1,
                                random_state=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = KernelMatrixCompletion(random_state=3, mu=1e-3, **params).fit(ratings)
        b = KernelMatrixCompletion(random_state=3, mu=1e-3, **params).fit(ratings)
    np.testing.assert_array_equal(a.trace_.column("objective"), b.trace_.column("objective"))
    fa, fb = a._fitted_arrays(), b._fitted_arrays()
    assert set(fa) == set(fb)
    for k in fa:
        np.testing.assert_array_equal(fa[k], fb[k])
    c = KernelMatrixCompletion._from_fitted_arrays(fa, a.get_params(), a.trace_)
    users = np.flatnonzero(a.predictable_rows_)
    uu, ii = np.meshgrid(users, np.arange(20), indexing="ij")
    np.testing.assert_array_equal(c.predict(uu, ii), a.predict(uu, ii))
    assert c.evaluate(ratings) == a.evaluate(ratings)


def test_evaluate_and_the_mean_yardstick():
    ratings, truth = make_kernel_mc(30, 25, edge_prob=0.15, observed=0.3, random_state=1)
    train, test = ratings.split(0.2, random_state=0)
    m = KernelMatrixCompletion(mu=1e-4).fit(train)
    ev = m.evaluate(test)
    pred = m.predict(test.users, test.items)
    e = pred - test.values
    assert ev["nmse"] == pytest.approx(float(e @ e / (test.values @ test.values)))
    assert ev["rmse"] == pytest.approx(float(np.sqrt(np.mean(e * e))))
    base = m.mean_predictor_metrics(train, test)
    assert ev["rmse"] < base["rmse"]
    assert m.score(test) == -ev["nmse"]  # the headline metric (was -RMSE)


def test_observe_holds_out_whole_rows_and_columns():
    F = np.arange(48, dtype=float).reshape(8, 6)
    r, noisy, mask = observe(F, observed=0.5, cold_rows=2, cold_cols=1, rng=0)
    assert not mask[r.info["cold_rows"]].any() and not mask[:, r.info["cold_cols"]].any()
    assert r.n_users == 8 and r.n_items == 6 and mask.sum() == r.n_ratings
    np.testing.assert_array_equal(noisy, F)


@pytest.mark.parametrize("params", [
    {"method": "kkmcex", "solver": "cg", "max_iter": 5, "tol": 0.0},
    {"method": "online_rrmcex", "max_iter": 4, "batch_size": 30, "n_components": 50},
    {"method": "sgd", "max_iter": 2}, {"method": "pg", "max_iter": 2, "tol": 0.0},
])
def test_truth_adds_the_whole_matrix_nmse_to_every_row(params):
    ratings, truth = make_kernel_mc(20, 15, edge_prob=0.2, observed=0.3, cold_rows=1,
                                    random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = KernelMatrixCompletion(mu=1e-3, random_state=0, **params).fit(
            ratings, truth=truth.matrix)
    col = m.trace_.column("truth_nmse")
    assert col.shape == (m.n_iter_,) and np.isfinite(col).all()
    F = m.completed_matrix()
    if params["method"] != "pg":
        assert col[-1] == pytest.approx(nmse(F, truth.matrix), rel=1e-10)
    with pytest.raises(DataValueError, match=r"truth has shape \(3, 3\)"):
        KernelMatrixCompletion().fit(ratings, truth=np.zeros((3, 3)))


# ----------------------------------------------------------------------------- fast direct solve
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("parallel", [True, False])
def test_fast_gram_equals_np_kron_indexing(dtype, parallel):
    """The Numba K_OO build equals S K_f S^T taken from an explicit np.kron, repeats included;
    ``lower_only`` writes exactly the lower triangle."""
    K_row, K_col, _, rows, cols = _tiny(N=9, L=7, s=25)
    rows = np.concatenate([rows, rows[:4]])
    cols = np.concatenate([cols, cols[:4]])
    flat = rows + cols * 9
    expected = np.kron(K_col, K_row)[np.ix_(flat, flat)]
    full = krr.kkmcex_gram(K_row, K_col, rows, cols, dtype=dtype, parallel=parallel)
    assert full.dtype == dtype
    tol = 1e-15 if dtype == np.float64 else 1e-7
    np.testing.assert_allclose(full, expected, rtol=tol, atol=tol)
    low = krr.kkmcex_gram(K_row, K_col, rows, cols, dtype=dtype, lower_only=True,
                          parallel=parallel)
    np.testing.assert_array_equal(np.tril(low), np.tril(full))


def _mid_problem(s=400, seed=3):
    ratings, truth = make_kernel_mc(40, 35, edge_prob=0.1, observed=s / 1400,
                                    random_state=seed)
    return (truth.row_kernel, truth.col_kernel, np.asarray(ratings.users),
            np.asarray(ratings.items), np.asarray(ratings.values, dtype=np.float64))


@pytest.mark.parametrize("mu", [1e-2, 1e-5])
def test_mixed_precision_cholesky_reaches_float64_accuracy(mu):
    K_row, K_col, rows, cols, m = _mid_problem()
    A = krr.kkmcex_gram(K_row, K_col, rows, cols) + mu * np.eye(rows.shape[0])
    expected = np.linalg.solve(A, m)
    c64, i64 = krr.kkmcex_cholesky(K_row, K_col, rows, cols, m, mu, precision="double")
    c32, i32 = krr.kkmcex_cholesky(K_row, K_col, rows, cols, m, mu, precision="mixed")
    assert i64["precision"] == "double" and i32["precision"] == "mixed"
    assert i32["fallback"] == "" and i32["refine_iter"] >= 1
    # dsposv's test: ||r||_inf <= sqrt(s) eps ||A||_inf ||c||_inf
    eps = np.finfo(np.float64).eps
    r = m - A @ c32
    assert np.abs(r).max() <= math.sqrt(rows.shape[0]) * eps * np.abs(A).sum(1).max() \
        * np.abs(c32).max() * 2
    scale = np.linalg.norm(expected)
    assert np.linalg.norm(c32 - expected) / scale < 1e-9
    assert np.linalg.norm(c64 - expected) / scale < 1e-9
    # and with a per-sample ridge (the weighted-sampling form)
    ridge = mu * (1 + np.arange(rows.shape[0]) % 3)
    cr, _ = krr.kkmcex_cholesky(K_row, K_col, rows, cols, m, mu, ridge=ridge,
                                precision="mixed")
    A_r = A + np.diag(ridge - mu)
    np.testing.assert_allclose(cr, np.linalg.solve(A_r, m), rtol=1e-8,
                               atol=1e-10 * np.abs(cr).max())


def test_mixed_precision_falls_back_to_float64_when_float32_cannot_factor():
    """A rank-one row kernel and mu far below float32 resolution: K_OO + mu I is singular in
    float32, so the solve says so and uses the float64 factor."""
    K_row, K_col, rows, cols, m = _mid_problem(s=300)
    v = np.linspace(1.0, 2.0, K_row.shape[0])
    K_low = np.outer(v, v)
    mu = 1e-11
    c, info = krr.kkmcex_cholesky(K_low, K_col, rows, cols, m, mu, precision="mixed")
    assert info["precision"] == "double" and info["fallback"]
    c64, _ = krr.kkmcex_cholesky(K_low, K_col, rows, cols, m, mu, precision="double")
    np.testing.assert_array_equal(c, c64)


def test_direct_fit_records_the_factor_phases_and_precision(monkeypatch):
    monkeypatch.setattr(krr.dense, "MIXED_MIN_S", 50)
    ratings, truth = make_kernel_mc(30, 25, edge_prob=0.15, observed=0.3, random_state=1)
    kw = dict(row_kernel=truth.row_kernel, col_kernel=truth.col_kernel)
    mixed = KernelMatrixCompletion(mu=1e-3, solver="direct").fit(ratings, **kw)
    row = mixed.trace_.rows[-1]
    assert row["mixed_precision"] and row["refine_iter"] >= 1 and row["blas_threads"] >= 1
    for phase in ("gram", "factor", "refine"):
        assert f"t_{phase}_s" in row
    monkeypatch.setattr(krr.dense, "MIXED_MIN_S", 10 ** 9)
    double = KernelMatrixCompletion(mu=1e-3, solver="direct").fit(ratings, **kw)
    assert not double.trace_.rows[-1]["mixed_precision"]
    np.testing.assert_allclose(mixed.coef_, double.coef_, rtol=1e-9,
                               atol=1e-12 * np.abs(double.coef_).max())


def test_factor_threads_one_for_small_orders_and_within_the_cores():
    import os

    assert kn.factor_threads(10) == 1
    assert 1 <= kn.factor_threads() <= (os.cpu_count() or 1)


@pytest.mark.parametrize("route", ["auto", "rows", "cols", "pairs", "full"])
def test_kkmcex_predict_routes_equal_the_per_pair_sum(route):
    from kmviz.kmc import krr

    rng = np.random.default_rng(4)
    N, L, s, P = 7, 9, 25, 40
    A, B = rng.normal(size=(N, N)), rng.normal(size=(L, L))
    Kr, Kc = A @ A.T, B @ B.T
    rows, cols = rng.integers(0, N, s), rng.integers(0, L, s)  # repeats included
    c = rng.normal(size=s)
    users, items = rng.integers(0, N, P), rng.integers(0, L, P)
    want = np.array([sum(Kr[u, rows[k]] * Kc[i, cols[k]] * c[k] for k in range(s))
                     for u, i in zip(users, items)])
    got = krr.kkmcex_predict(Kr, Kc, rows, cols, c, users, items, route=route)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    if route != "full":  # new entities: rows of the kernel against the observed ones
        K_new = rng.normal(size=(3, L))
        new_items = rng.integers(0, 3, P)
        want = np.array([sum(Kr[u, rows[k]] * K_new[i, cols[k]] * c[k] for k in range(s))
                         for u, i in zip(users, new_items)])
        got = krr.kkmcex_predict(Kr, Kc, rows, cols, c, users, new_items, K_col_items=K_new,
                                 route=route)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
