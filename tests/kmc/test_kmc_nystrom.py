"""Ridge leverage scores, Kronecker scores without the Kronecker product, and Nystroem."""

from __future__ import annotations

import numpy as np
import pytest

from kmviz.exceptions import DataValueError, InvalidParameterError, NotFittedError
from kmviz.kmc import rkhs as kn, nystrom as ny
from kmviz.kmc.synthetic import gaussian_mixture


def _kernels(N=7, L=5, seed=0):
    rng = np.random.default_rng(seed)
    K_row = kn.gaussian_kernel(rng.standard_normal((N, 2)), gamma=0.8)
    K_col = kn.diffusion_kernel(kn.erdos_renyi_graph(L, 0.5, random_state=seed), 0.5)
    return K_row, K_col


def test_ridge_leverage_scores_are_the_diagonal_of_the_hat_matrix():
    K, _ = _kernels(12)
    alpha = 0.05
    hat = K @ np.linalg.inv(K + alpha * np.eye(12))
    lev = ny.ridge_leverage_scores(K, alpha)
    np.testing.assert_allclose(lev, np.diag(hat), atol=1e-12)
    assert lev.sum() == pytest.approx(ny.effective_dimension(K, alpha))
    assert ((lev > 0) & (lev < 1)).all()
    # alpha -> 0 on a full-rank kernel: every score tends to 1
    np.testing.assert_allclose(ny.ridge_leverage_scores(K + np.eye(12), 1e-10), 1.0, atol=1e-8)


@pytest.mark.parametrize("alpha", [1e-3, 0.1, 2.0])
def test_exact_kronecker_scores_equal_the_explicit_kron_and_sum_to_d_eff(alpha):
    K_row, K_col = _kernels()
    Kf = np.kron(K_col, K_row)
    expected = np.diag(Kf @ np.linalg.inv(Kf + alpha * np.eye(35)))
    lev = ny.kron_ridge_leverage_scores(K_row, K_col, alpha)
    assert lev.shape == (7, 5)
    np.testing.assert_allclose(lev.ravel(order="F"), expected, atol=1e-12)
    d_eff = np.trace(Kf @ np.linalg.inv(Kf + alpha * np.eye(35)))
    assert lev.sum() == pytest.approx(d_eff, rel=1e-12)
    assert ny.kron_effective_dimension(K_row, K_col, alpha) == pytest.approx(d_eff, rel=1e-12)


def test_approximate_kronecker_scores_are_the_outer_product_5_23():
    K_row, K_col = _kernels()
    alpha = 0.04
    approx = ny.approximate_kron_leverage_scores(K_row, K_col, alpha)
    expected = np.outer(ny.ridge_leverage_scores(K_row, 0.2), ny.ridge_leverage_scores(K_col, 0.2))
    np.testing.assert_allclose(approx, expected, atol=1e-14)
    exact = ny.kron_ridge_leverage_scores(K_row, K_col, alpha)
    assert np.corrcoef(approx.ravel(), exact.ravel())[0, 1] > 0.8
    # the vector case (K_col = 1): exact and approximate coincide for alpha_row = alpha
    one = np.ones((1, 1))
    np.testing.assert_allclose(
        ny.approximate_kron_leverage_scores(K_row, one, alpha, alpha_row=alpha,
                                            alpha_col=1e-300)[:, 0],
        ny.kron_ridge_leverage_scores(K_row, one, alpha)[:, 0], rtol=1e-10)


def test_sample_entries_follows_the_scores_and_reports_probabilities():
    scores = np.zeros((4, 3))
    scores[1, 2] = 3.0
    scores[0, 0] = 1.0
    rows, cols, p = ny.sample_entries(scores, 2000, random_state=0)
    assert set(zip(rows.tolist(), cols.tolist())) == {(1, 2), (0, 0)}
    assert np.mean((rows == 1) & (cols == 2)) == pytest.approx(0.75, abs=0.04)
    np.testing.assert_allclose(p[(rows == 1)], 0.75)
    r1 = ny.sample_entries(scores + 1, 10, random_state=5)
    r2 = ny.sample_entries(scores + 1, 10, random_state=5)
    for a, b in zip(r1, r2):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(DataValueError, match="non-negative"):
        ny.sample_entries(-scores, 3)
    with pytest.raises(InvalidParameterError, match="'s' parameter"):
        ny.sample_entries(scores, 3, replace=False)  # only 2 entries have a positive score


def test_nystrom_approximation_and_its_errors():
    X, _ = gaussian_mixture(60, random_state=0)
    K = kn.gaussian_kernel(X, gamma=0.3)
    all_pts = ny.nystrom_approximation(K, np.arange(60))
    np.testing.assert_allclose(all_pts, K, atol=1e-8)
    S = np.array([0, 5, 9, 30])
    T = ny.nystrom_approximation(K, S)
    C = K[:, S]
    np.testing.assert_allclose(T, C @ np.linalg.pinv(K[np.ix_(S, S)]) @ C.T, atol=1e-10)
    # weights cancel in the unregularized approximation
    np.testing.assert_allclose(ny.nystrom_approximation(K, S, [1.0, 3.0, 0.5, 2.0]), T,
                               atol=1e-10)
    np.testing.assert_allclose(ny.residual_diagonal(K, S), np.diag(K - T), atol=1e-10)
    err = ny.nystrom_errors(K, T)
    assert err["trace"] == pytest.approx(np.trace(K - T))
    assert err["frobenius"] == pytest.approx(np.linalg.norm(K - T))
    assert err["spectral"] == pytest.approx(np.linalg.eigvalsh(K - T).max())
    assert err["trace_relative"] == pytest.approx(np.trace(K - T) / 60)
    assert ny.residual_diagonal(K, S)[S] == pytest.approx(0.0, abs=1e-10)


# ----------------------------------------------------------------------------- Nystroem
@pytest.mark.parametrize("sampling", ny.SAMPLINGS)
def test_nystroem_with_all_points_reproduces_the_kernel(sampling):
    X, _ = gaussian_mixture(80, random_state=1)
    K = kn.gaussian_kernel(X, gamma=0.5)
    nm = ny.Nystroem(gamma=0.5, n_components=80, sampling=sampling, random_state=0)
    if sampling in ("uniform", "recursive"):  # without replacement: every point is a landmark
        Z = nm.fit_transform(X)
        np.testing.assert_array_equal(np.sort(nm.component_indices_), np.arange(80))
        np.testing.assert_allclose(Z @ Z.T, K, atol=1e-7)
    nm = ny.Nystroem(gamma=0.5, n_components=10, sampling=sampling,
                     landmarks=np.arange(80), random_state=0).fit(X)
    Z = nm.transform(X)
    np.testing.assert_allclose(Z @ Z.T, K, atol=1e-7)
    assert nm.sampling_ == "given"


def test_nystroem_matches_the_dense_nystrom_approximation_and_accepts_points():
    X, _ = gaussian_mixture(100, random_state=2)
    K = kn.gaussian_kernel(X, gamma=0.2)
    nm = ny.Nystroem(gamma=0.2, n_components=15, random_state=3).fit(X)
    Z = nm.transform(X)
    np.testing.assert_allclose(Z @ Z.T, ny.nystrom_approximation(K, nm.component_indices_),
                               atol=1e-8)
    np.testing.assert_array_equal(nm.components_, X[nm.component_indices_])
    assert nm.trace_error(X) == pytest.approx(
        ny.nystrom_errors(K, Z @ Z.T)["trace_relative"], rel=1e-6)
    P = np.array([[0.0, 0.0], [1.0, 2.0], [5.0, -1.0]])
    pts = ny.Nystroem(gamma=0.2, landmarks=P).fit(X)
    assert pts.component_indices_ is None
    Zp = pts.transform(X)
    C = kn.gaussian_kernel(X, P, gamma=0.2)
    np.testing.assert_allclose(Zp @ Zp.T, C @ np.linalg.pinv(kn.gaussian_kernel(P, gamma=0.2))
                               @ C.T, atol=1e-8)


def test_leverage_sampling_by_p_with_1_over_sqrt_sp_weights():
    X, labels = gaussian_mixture(300, far_fraction=0.03, random_state=0)
    nm = ny.Nystroem(gamma=0.1, n_components=40, sampling="leverage", random_state=0).fit(X)
    K = kn.gaussian_kernel(X, gamma=0.1)
    lev = ny.ridge_leverage_scores(K, nm.alpha_)
    np.testing.assert_allclose(nm.leverage_scores_, lev, atol=1e-10)
    assert nm.effective_dimension_ == pytest.approx(lev.sum())
    p = lev / lev.sum()
    np.testing.assert_allclose(nm.component_weights_, 1 / np.sqrt(40 * p[nm.component_indices_]))
    Z = nm.transform(X)  # weights do not change the approximation
    np.testing.assert_allclose(Z @ Z.T, ny.nystrom_approximation(K, nm.component_indices_),
                               atol=1e-7)
    # m distinct landmarks by default
    assert np.unique(nm.component_indices_).shape[0] == 40
    # the default alpha: the tail rule with k = ceil(m / (2 ln m)) = 6 for m = 40
    sig = np.linalg.eigvalsh(K)
    assert nm.alpha_ == pytest.approx(ny.default_alpha(sig, 40), rel=1e-8)
    assert nm.alpha_ == pytest.approx(ny.tail_alpha(sig, 6), rel=1e-8)
    # distinct=False: the thesis's s-tuple, m draws with replacement (repeats kept)
    rep = ny.Nystroem(gamma=0.1, n_components=200, sampling="leverage", distinct=False,
                      random_state=0).fit(X)
    assert rep.component_indices_.shape[0] == 200
    assert np.unique(rep.component_indices_).shape[0] < 200  # 200 draws from 300 points
    dis = ny.Nystroem(gamma=0.1, n_components=200, sampling="leverage",
                      random_state=0).fit(X)
    assert np.unique(dis.component_indices_).shape[0] == 200


def test_dropping_repeated_landmarks_never_changes_the_nystrom_approximation():
    """T depends only on the span of the landmark columns: a draw with repeats (weighted
    1 / sqrt(s p)) and its distinct landmarks give the same T, hence the same trace error."""
    X, _ = gaussian_mixture(200, far_fraction=0.03, random_state=1)
    K = kn.gaussian_kernel(X, gamma=0.2)
    lev = ny.ridge_leverage_scores(K, 1.0)
    p = lev / lev.sum()
    for seed in range(5):
        idx = np.random.default_rng(seed).choice(200, 60, replace=True, p=p)
        assert np.unique(idx).shape[0] < 60
        T_rep = ny.nystrom_approximation(K, idx, weights=1 / np.sqrt(60 * p[idx]))
        T_uni = ny.nystrom_approximation(K, np.unique(idx))
        np.testing.assert_allclose(T_rep, T_uni, atol=1e-8)
        e_rep = ny.nystrom_errors(K, T_rep)["trace"]
        e_uni = ny.nystrom_errors(K, T_uni)["trace"]
        assert e_uni <= e_rep + 1e-8


def test_alpha_for_dimension_inverts_the_effective_dimension():
    sig = np.array([5.0, 2.0, 1.0, 0.5, 0.1, 0.0])
    for d in (0.3, 1.0, 2.5, 4.0):
        a = ny.alpha_for_dimension(sig, d)
        assert ny.effective_dimension(eigenvalues=sig, alpha=a) == pytest.approx(d, rel=1e-8)
    # at or above the rank (5 positive eigenvalues): the floor
    assert ny.alpha_for_dimension(sig, 5.0) == pytest.approx(5e-12)


def test_sample_distinct_draws_m_distinct_points_by_p():
    rng = np.random.default_rng(0)
    p = np.array([0.5, 0.3, 0.1, 0.1, 0.0])
    idx = ny.sample_distinct(p, 4, rng)
    assert sorted(idx.tolist()) == [0, 1, 2, 3]  # the zero-probability point never drawn
    counts = np.zeros(5)
    for _ in range(2000):
        counts[ny.sample_distinct(p, 1, rng)] += 1
    np.testing.assert_allclose(counts / 2000, p, atol=0.04)
    assert sorted(ny.sample_distinct(p, 5, rng).tolist()) == [0, 1, 2, 3, 4]


@pytest.mark.slow
def test_recursive_scores_correlate_with_the_exact_ones():
    X, _ = gaussian_mixture(1500, far_fraction=0.01, far_distance=12.0, random_state=0)
    K = kn.gaussian_kernel(X, gamma=0.5)
    exact_default = ny.default_alpha(np.linalg.eigvalsh(K), 60)
    for seed in range(3):
        for top, band, corr in ((1.0, (0.5, 3.0), 0.75), (3.0, (0.6, 1.6), 0.9)):
            idx, scores, lam = ny.recursive_rls_sample(
                1500, 60, lambda r, c: K[np.ix_(r, c)], np.ones(1500), random_state=seed,
                return_scores=True, top_oversample=top)
            exact = ny.ridge_leverage_scores(K, lam)
            # Musco & Musco's guarantee is a constant factor, l <= l~ <= 3 l w.h.p.
            # (measured, top_oversample 1: 1-99 % quantiles of l~ / l in [0.90, 2.6],
            # correlation 0.82-0.91; 3, the default: [0.77, 1.25], 0.95-0.97)
            q = np.quantile(scores / exact, [0.01, 0.99])
            assert band[0] <= q[0] and q[1] <= band[1], (top, q)
            assert np.corrcoef(scores, exact)[0, 1] > corr
            assert np.unique(idx).shape[0] == 60
            # lambda estimates the exact default's (measured 0.95-1.05 of it)
            assert 0.7 <= lam / exact_default <= 1.4
    with pytest.raises(DataValueError, match="top_lambda"):
        ny.recursive_rls_sample(1500, 60, lambda r, c: K[np.ix_(r, c)], np.ones(1500),
                                top_lambda="exact")


def test_leverage_sampling_finds_the_small_far_cluster():
    X, labels = gaussian_mixture(400, far_fraction=0.02, far_distance=15, random_state=0)
    far = np.flatnonzero(labels == labels.max())  # 8 of 400 points
    hits = {s: np.array([np.isin(ny.Nystroem(gamma=0.05, n_components=30, sampling=s,
                                             random_state=seed).fit(X).component_indices_,
                                 far).sum() for seed in range(8)])
            for s in ny.SAMPLINGS}
    # uniform sampling misses the cluster in some draws; the score-based ones never do
    # (one landmark covers a tight cluster)
    assert (hits["uniform"] == 0).any()
    assert (hits["leverage"] > 0).all() and (hits["recursive"] > 0).all()
    for s in ("leverage", "approximate_leverage", "recursive"):
        assert hits[s].mean() >= 1.5 * hits["uniform"].mean(), hits


def test_recursive_sampling_never_forms_the_n_by_n_kernel(monkeypatch):
    X, _ = gaussian_mixture(1200, random_state=0)
    seen = []
    real = kn.gaussian_kernel

    def spy(A, B=None, gamma=None):
        out = real(A, B, gamma=gamma)
        seen.append(out.shape)
        return out

    monkeypatch.setattr(ny.approximation, "gaussian_kernel", spy)
    nm = ny.Nystroem(gamma=0.5, n_components=40, sampling="recursive", random_state=0).fit(X)
    assert len(np.unique(nm.component_indices_)) == 40
    assert max(a * b for a, b in seen) < 1200 * 1200 / 4
    assert nm.trace_error(X) < ny.Nystroem(gamma=0.5, n_components=10, random_state=0).fit(
        X).trace_error(X)


def test_precomputed_and_linear_kernels():
    X, _ = gaussian_mixture(50, random_state=4)
    K = kn.gaussian_kernel(X, gamma=0.4)
    nm = ny.Nystroem(kernel="precomputed", n_components=12, sampling="leverage",
                     random_state=0).fit(K)
    Z = nm.transform(K)
    np.testing.assert_allclose(Z @ Z.T, ny.nystrom_approximation(K, nm.component_indices_),
                               atol=1e-8)
    assert nm.components_ is None
    assert nm.trace_error(K, K_diag=np.diag(K)) >= 0
    lin = ny.Nystroem(kernel="linear", n_components=5, random_state=0).fit(X)
    Zl = lin.transform(X)
    np.testing.assert_allclose(Zl @ Zl.T, X @ X.T, atol=1e-8)  # rank 2 <= 5 landmarks
    call = ny.Nystroem(kernel=lambda A, B: (A @ B.T + 1.0) ** 2, n_components=50,
                       random_state=0).fit(X)
    Zc = call.transform(X)
    np.testing.assert_allclose(Zc @ Zc.T, (X @ X.T + 1) ** 2, atol=1e-6)


def test_same_random_state_same_landmarks():
    X, _ = gaussian_mixture(200, random_state=0)
    for sampling in ny.SAMPLINGS:
        a = ny.Nystroem(n_components=20, sampling=sampling, random_state=7).fit(X)
        b = ny.Nystroem(n_components=20, sampling=sampling, random_state=7).fit(X)
        np.testing.assert_array_equal(a.component_indices_, b.component_indices_)


def test_nystroem_settings_and_inputs_are_checked():
    X, _ = gaussian_mixture(30, random_state=0)
    with pytest.raises(InvalidParameterError, match="The 'sampling' parameter of Nystroem"):
        ny.Nystroem(sampling="kmeans").fit(X)
    with pytest.raises(InvalidParameterError, match="The 'n_components' parameter"):
        ny.Nystroem(n_components=0).fit(X)
    with pytest.raises(InvalidParameterError, match="The 'alpha' parameter"):
        ny.Nystroem(alpha=-1.0).fit(X)
    with pytest.raises(DataValueError, match="landmarks holds indices outside 0..29"):
        ny.Nystroem(landmarks=np.array([0, 30])).fit(X)
    with pytest.raises(NotFittedError):
        ny.Nystroem().transform(X)
    with pytest.warns(UserWarning, match="n_components=40 > n_samples=30"):
        ny.Nystroem(n_components=40).fit(X)
    with pytest.raises(InvalidParameterError, match="The 'alpha' parameter"):
        ny.ridge_leverage_scores(np.eye(3), 0.0)
    with pytest.raises(DataValueError, match="not positive semidefinite"):
        ny.ridge_leverage_scores(np.array([[1.0, 2.0], [2.0, 1.0]]), 0.1)


@pytest.mark.parametrize("dtype, atol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_cholesky_scores_equal_the_eigendecomposition_ones(dtype, atol):
    X, _ = gaussian_mixture(300, far_fraction=0.02, far_distance=12.0, random_state=1)
    K = kn.gaussian_kernel(X, gamma=0.5)
    for alpha in (0.05, 1.0, 10.0):
        exact = ny.ridge_leverage_scores(K, alpha)
        chol = ny.ridge_leverage_scores_cholesky(K, alpha, dtype=dtype)
        np.testing.assert_allclose(chol, exact, atol=atol)
        assert chol.sum() == pytest.approx(ny.effective_dimension(K, alpha), abs=300 * atol)
    # overwrite=True consumes a K of the same dtype, and the result is the same
    K32 = K.astype(np.float32, order="F")
    np.testing.assert_allclose(ny.ridge_leverage_scores_cholesky(K32, 1.0, dtype=np.float32,
                                                                 overwrite=True),
                               ny.ridge_leverage_scores(K, 1.0), atol=1e-4)
    with pytest.raises(DataValueError, match="positive definite"):
        ny.ridge_leverage_scores_cholesky(-K, 1e-3)


@pytest.mark.parametrize("n", [400, pytest.param(2100, marks=pytest.mark.slow)])
def test_default_alpha_of_kernel_needs_only_the_top_eigenvalues(n):
    # n = 2,100 goes through Lanczos (eigsh), n = 400 through eigvalsh
    X, _ = gaussian_mixture(n, random_state=2)
    K = kn.gaussian_kernel(X, gamma=0.5)
    sig = np.linalg.eigvalsh(K)
    for m in (20, 100):
        assert ny.default_alpha_of_kernel(K, m) == pytest.approx(ny.default_alpha(sig, m),
                                                                 rel=1e-6)
    np.testing.assert_allclose(ny.top_eigenvalues(K, 5), np.sort(sig)[::-1][:5], rtol=1e-8)


def test_leverage_fit_leaves_a_precomputed_kernel_intact():
    X, _ = gaussian_mixture(120, random_state=5)
    K = kn.gaussian_kernel(X, gamma=0.4)
    K0 = K.copy()
    nm = ny.Nystroem(kernel="precomputed", n_components=15, sampling="leverage",
                     random_state=0).fit(K)
    np.testing.assert_array_equal(K, K0)
    np.testing.assert_allclose(nm.leverage_scores_, ny.ridge_leverage_scores(K, nm.alpha_),
                               atol=1e-10)
