"""Kernel MC's Numba kernels against their plain NumPy spellings (kmviz.kmc._reference)."""

import numpy as np
import pytest

from kmviz.kmc import _kernels as K
from kmviz.kmc import _reference as R


def _spd(n, rng):
    A = rng.normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    N, L, s = 7, 5, 13
    flat = rng.choice(N * L, size=s, replace=False)
    rows, cols = (flat % N).astype(np.int64), (flat // N).astype(np.int64)
    return rng, _spd(N, rng), _spd(L, rng), rows, cols


@pytest.mark.parametrize("fill", [K.kron_gram_fill, K.kron_gram_fill_serial])
@pytest.mark.parametrize("lower", [False, True])
def test_kron_gram_fill_is_the_observed_block_of_the_kronecker_kernel(problem, fill, lower):
    _, Kr, Kc, rows, cols = problem
    want = R.kron_gram(Kr, Kc, rows, cols)
    out = np.zeros((rows.size, rows.size))
    fill(np.ascontiguousarray(Kr[:, rows]), np.ascontiguousarray(Kc[:, cols]), rows, cols,
         lower, out)
    got = np.tril(out) if lower else out
    np.testing.assert_allclose(got, np.tril(want) if lower else want, rtol=1e-12)


def test_kron_gram_matvec(problem):
    rng, Kr, Kc, rows, cols = problem
    v = rng.normal(size=rows.size)
    order = np.argsort(cols, kind="stable").astype(np.int64)
    colptr = np.zeros(Kc.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(cols, minlength=Kc.shape[0]), out=colptr[1:])
    out = np.empty(rows.size)
    K.kron_gram_matvec(Kr, Kc, rows, cols, colptr, order, v, np.empty((Kc.shape[0],
                       Kr.shape[0])), np.empty((Kr.shape[0], Kc.shape[0])), out)
    np.testing.assert_allclose(out, R.kron_gram_matvec(Kr, Kc, rows, cols, v), rtol=1e-11)


def test_online_rrmcex_kernels(problem):
    rng, _, _, rows, cols = problem
    d = 4
    U, V = rng.normal(size=(7, d)), rng.normal(size=(5, d))
    w, vals, xi = rng.random(d) + 0.5, rng.normal(size=rows.size), rng.normal(size=d)
    assert K.online_rr_sse(U, V, w, rows, cols, vals, xi) == pytest.approx(
        R.online_rr_sse(U, V, w, rows, cols, vals, xi), rel=1e-12)
    assert K.online_rr_feature_norms(U, V, w, rows, cols) == pytest.approx(
        R.online_rr_feature_norms(U, V, w, rows, cols), rel=1e-12)
    order = rng.permutation(rows.size).astype(np.int64)
    got = xi.copy()
    K.online_rr_block(U, V, w, rows, cols, vals, order, 3, 20, 5, got, 0.01, 0.5)
    np.testing.assert_allclose(
        got, R.online_rr_block(U, V, w, rows, cols, vals, order, 3, 20, 5, xi, 0.01, 0.5),
        rtol=1e-11)


def test_sgd_factor_epoch(problem):
    rng, Kr, Kc, rows, cols = problem
    p = 3
    W, H = rng.normal(size=(7, p)), rng.normal(size=(5, p))
    Aw, Ah = np.linalg.inv(Kr), np.linalg.inv(Kc)
    vals = rng.normal(size=rows.size)
    order = rng.permutation(rows.size).astype(np.int64)
    rc = np.maximum(np.bincount(rows, minlength=7), 1).astype(float)
    cc = np.maximum(np.bincount(cols, minlength=5), 1).astype(float)
    W2, H2, sse_ref = R.sgd_factor_epoch(rows, cols, vals, order, W, H, Aw, Ah, rc, cc,
                                         0.3, 0.05)
    Wk, Hk = W.copy(), H.copy()
    sse = K.sgd_factor_epoch(rows, cols, vals, order, Wk, Hk, Aw, Ah, Aw @ W, Ah @ H, rc, cc,
                             0.3, 0.05)
    assert sse == pytest.approx(sse_ref, rel=1e-10)
    np.testing.assert_allclose(Wk, W2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Hk, H2, rtol=1e-9, atol=1e-12)


def test_pair_rowdot_and_csr_times_dense(problem):
    rng, _, _, rows, cols = problem
    Y, B = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    out = np.empty(rows.size)
    K.pair_rowdot(Y, B, rows, cols, out)
    np.testing.assert_allclose(out, R.pair_rowdot(Y, B, rows, cols), rtol=1e-12)
    order = np.lexsort((cols, rows))
    indptr = np.zeros(8, np.int64)
    np.cumsum(np.bincount(rows, minlength=7), out=indptr[1:])
    data = rng.normal(size=rows.size)
    got = np.empty((7, 3))
    K.csr_times_dense(indptr, cols[order], data, B, got)
    np.testing.assert_allclose(got, R.csr_times_dense(indptr, cols[order], data, B),
                               rtol=1e-12)
