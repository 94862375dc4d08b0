"""Matrix-free sensing products against dense oracles, the Numba sweeps against NumPy, and the
moment identities of x ~ N(0, I) (digest B2; Theorem 4, Lemmas 5-9) by simulation."""

import numpy as np
import pytest
import scipy.sparse as sp

from kmviz.gfm import Standardizer, adjoint_apply, planted_truth, quadratic_form
from kmviz.gfm import _kernels
from kmviz.gfm import _reference as R
from kmviz.gfm.operators import (
    ChunkedBatch,
    check_rows,
    project,
    residual_pass,
    weighted_pass,
)


def _data(n=300, d=12, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 3, d) + rng.normal(0, 2, d)
    U = rng.standard_normal((d, k))
    V = rng.standard_normal((d, k))
    return X, U, V, rng


def _dense_std(X, std):
    return (X - std.mean) / std.scale


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_quadratic_form_and_adjoint_equal_dense(standardize, sparse):
    X, U, V, rng = _data()
    if sparse:
        X[rng.random(X.shape) < 0.7] = 0.0
    std = Standardizer.from_data(X) if standardize else None
    Z = _dense_std(X, std) if standardize else X
    Xin = sp.csr_matrix(X) if sparse else X
    M = 0.5 * (U @ V.T + V @ U.T)
    np.testing.assert_allclose(quadratic_form(Xin, U, V, std), R.sense(Z, M), rtol=1e-10,
                               atol=1e-9)
    z = rng.standard_normal(X.shape[0])
    A = rng.standard_normal((X.shape[1], 4))
    for engine in ("numpy", "numba"):
        got = adjoint_apply(Xin, z, A, std, engine=engine)
        np.testing.assert_allclose(got, R.adjoint(Z, z) @ A, rtol=1e-10, atol=1e-9)
    # a vector A gives a vector
    np.testing.assert_allclose(adjoint_apply(Xin, z, A[:, 0], std), R.adjoint(Z, z) @ A[:, 0],
                               rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(project(Xin, A, std), Z @ A, rtol=1e-10, atol=1e-9)


def test_standardizer_handles_constant_columns_and_sparse():
    X, *_ = _data()
    X[:, 3] = 5.0
    std = Standardizer.from_data(X)
    assert std.scale[3] == 1.0 and std.mean[3] == 5.0
    sps = Standardizer.from_data(sp.csr_matrix(X))
    np.testing.assert_allclose(sps.mean, std.mean)
    np.testing.assert_allclose(sps.scale, std.scale)
    assert Standardizer.identity(4).is_identity and not std.is_identity


@pytest.mark.parametrize("n,d,k", [(7, 5, 1), (500, 40, 2), (1000, 150, 3)])
def test_numba_sweeps_equal_numpy(n, d, k):
    """R4: the fused kernels and their NumPy twins (the engine="numpy" path) agree."""
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    U, V = rng.standard_normal((d, k)), rng.standard_normal((d, k))
    w = rng.standard_normal(d)
    std = Standardizer(rng.normal(0, 1, d), rng.uniform(0.5, 2, d))
    batch = ChunkedBatch.from_arrays(X, y)
    r_nb, S_nb = residual_pass(batch, U, V, w, 0.3, std, "numba")
    r_np, S_np = residual_pass(batch, U, V, w, 0.3, std, "numpy")
    np.testing.assert_allclose(r_nb, r_np, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(S_nb, S_np, rtol=1e-10, atol=1e-8)
    # against the literal formulas
    Z = _dense_std(X, std)
    M = 0.5 * (U @ V.T + V @ U.T)
    r = y - 0.3 - Z @ w - R.sense(Z, M)
    np.testing.assert_allclose(r_np, r, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(S_np[:, 0], Z.T @ r, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(S_np[:, 1:], R.adjoint(Z, r) @ U, rtol=1e-10, atol=1e-8)
    A = rng.standard_normal((d, 2))
    np.testing.assert_allclose(weighted_pass(batch, r, A, std, "numba"),
                               weighted_pass(batch, r, A, std, "numpy"), rtol=1e-10, atol=1e-8)
    assert _kernels.residual_sweep.signatures and _kernels.weighted_sweep.signatures


def test_chunked_batch_equals_one_chunk():
    X, U, V, rng = _data(n=257)
    y = rng.standard_normal(X.shape[0])
    w = rng.standard_normal(X.shape[1])
    std = Standardizer.from_data(X)
    one = residual_pass(ChunkedBatch.from_arrays(X, y), U, V, w, 0.0, std)
    many = residual_pass(ChunkedBatch.from_arrays(X, y, chunk_rows=50), U, V, w, 0.0, std)
    np.testing.assert_allclose(one[0], many[0], rtol=1e-12)
    np.testing.assert_allclose(one[1], many[1], rtol=1e-10, atol=1e-10)


def test_check_rows_messages():
    X = np.ones((4, 3))
    with pytest.raises(ValueError, match=r"non-finite value \(NaN or inf\) at row 2, column 1"):
        X2 = X.copy()
        X2[2, 1] = np.nan
        check_rows(X2, np.ones(4))
    with pytest.raises(ValueError, match=r"y has shape \(3,\) but X has 4 rows"):
        check_rows(X, np.ones(3))
    with pytest.raises(ValueError, match="2-D array"):
        check_rows(np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="has 3 features but the model has 5"):
        check_rows(X, np.ones(4), d=5)
    with pytest.raises(ValueError, match="y has a non-finite value at position 0"):
        check_rows(X, np.array([np.inf, 1, 1, 1]))


# ----------------------------------------------------------------------------- moments
# Max over 10 seeds of err * sqrt(n) measured at d = 10, k = 2, ||M||_2 = ||w|| = 1, n from 1e3
# to 6.4e4: 15.5, 5.8, 5.0, 13.5, 13.0, 1.7 for the six identities below. The tolerances are
# about twice that, so they shrink like 1/sqrt(n); a wrong identity (tr(M) instead of tr(M)/2,
# a missing factor 2) leaves an O(1) error that fails at the larger n.
D = 10
TOL = {"AA": 30.0, "trace": 12.0, "XX": 10.0, "Aw": 27.0, "XA": 26.0, "mean": 4.0}


def _moments(n, seed):
    t = planted_truth(D, 2, random_state=seed)
    M, w = t.M, t.w
    X = np.random.default_rng(1000 + seed).standard_normal((n, D))
    a = quadratic_form(X, t.U * t.lam, t.U)  # matrix-free A(M*) (U V^T with V = U diag(lam))
    AA = adjoint_apply(X, a, np.eye(D)) / (2 * n)  # the d x d product is formed in the test only
    return {
        # (1/2n) A'A(M) = M + tr(M)/2 I   (Theorem 4)
        "AA": np.linalg.norm(AA - M - 0.5 * np.trace(M) * np.eye(D), 2),
        # (1/n) 1^T A(M) = tr(M)          (Lemma 5)
        "trace": abs(a.mean() - np.trace(M)),
        # (1/n) X^T X w = w               (Lemma 9)
        "XX": np.linalg.norm(X.T @ (X @ w) / n - w),
        # (1/n) A'(X w) = 0               (Lemma 7, odd moment)
        "Aw": np.linalg.norm(adjoint_apply(X, X @ w, np.eye(D)) / n, 2),
        # (1/n) X^T A(M) = 0              (Lemma 8, odd moment)
        "XA": np.linalg.norm(X.T @ a / n),
        # (1/n) 1^T X w = 0               (Lemma 6)
        "mean": abs((X @ w).mean()),
    }


@pytest.mark.parametrize("n", [1000, 64000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_moment_identities_within_a_tolerance_shrinking_with_n(n, seed):
    errs = _moments(n, seed)
    for name, err in errs.items():
        assert err <= TOL[name] / np.sqrt(n), (name, err, TOL[name] / np.sqrt(n))


def test_moment_errors_shrink_with_n():
    small = [_moments(1000, s) for s in range(4)]
    large = [_moments(64000, s) for s in range(4)]
    for name in TOL:  # 64x the samples: 8x smaller errors in theory; at least 3x asked
        assert np.mean([e[name] for e in large]) < np.mean([e[name] for e in small]) / 3, name


def test_the_statistics_of_algorithm_1_estimate_the_truth():
    """With r = y - A(M) - X w for any fixed (w, M): H_1 - h_2/2 I + M ≈ M*, h_3 + w ≈ w*."""
    t = planted_truth(D, 2, random_state=3)
    rng = np.random.default_rng(4)
    w = rng.standard_normal(D) * 0.3
    U, V = rng.standard_normal((D, 2)) * 0.3, rng.standard_normal((D, 2)) * 0.3
    M = 0.5 * (U @ V.T + V @ U.T)
    errs = []
    for n in (2000, 128000):
        X = rng.standard_normal((n, D))
        y = X @ t.w + R.sense(X, t.M)
        H1, h2, h3 = R.statistics(X, y, w, M)
        err_M = np.linalg.norm(H1 - 0.5 * h2 * np.eye(D) + M - t.M, 2)
        err_w = np.linalg.norm(h3 + w - t.w)
        errs.append((err_M, err_w))
        assert err_M < 40 / np.sqrt(n) and err_w < 20 / np.sqrt(n), (n, err_M, err_w)
    assert errs[1][0] < errs[0][0] / 3 and errs[1][1] < errs[0][1] / 3
