"""Dense eigensolver, inertia count, Cholesky and the certified one-sided Lanczos (_eigen.py)."""

import numpy as np
import pytest

from kmviz.km._kernels import eigen as E
from kmviz.km import _kernels as K
from kmviz.km._kernels import newton_hessian as KH
from kmviz.km import solvers as bqp

from tests.km.instances import km_instance, random_symmetric


@pytest.mark.parametrize("n", [1, 2, 3, 5, 9, 13, 17, 24, 30, 50])
@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_sym_eig_matches_numpy_eigh(n, kind):
    A = random_symmetric(n, 10 * n + kind, kind)
    w, V, e = np.empty(n), np.empty((n, n)), np.empty(n)
    assert E.sym_eig(A, w, V, e) == 0
    lam, U = np.linalg.eigh(A)
    scale = max(1.0, np.abs(lam).max())
    np.testing.assert_allclose(w, lam, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(V.T @ V, np.eye(n), atol=1e-12)
    np.testing.assert_allclose(A @ V, V * w, atol=1e-11 * scale)
    gaps = np.diff(lam)
    simple = np.ones(n, bool)
    if n > 1:
        simple[:-1] &= gaps > 1e-6
        simple[1:] &= gaps > 1e-6
    # eigenvectors of simple eigenvalues equal eigh's up to sign
    for j in np.flatnonzero(simple):
        assert min(np.abs(V[:, j] - U[:, j]).max(), np.abs(V[:, j] + U[:, j]).max()) < 1e-8


@pytest.mark.parametrize("amp", [1e-200, 1e200])
def test_sym_eig_and_tridiag_eig_extreme_scales(amp):
    # the QL radii are sqrt(p^2 + e^2): without the input scaling these squares under- or
    # overflow at such scales and the eigenvalues come out wrong or non-finite
    n = 9
    A = random_symmetric(n, 5) * amp
    w, V, e = np.empty(n), np.empty((n, n)), np.empty(n)
    assert E.sym_eig(A, w, V, e) == 0
    lam = np.linalg.eigvalsh(A / amp) * amp
    np.testing.assert_allclose(w, lam, rtol=1e-10, atol=1e-12 * amp)
    np.testing.assert_allclose(V.T @ V, np.eye(n), atol=1e-12)
    a, b = np.arange(1.0, n + 1) * amp, np.full(n, 0.5 * amp)
    T = np.diag(a) + np.diag(b[:-1], 1) + np.diag(b[:-1], -1)
    Q = np.empty((n, n))
    assert E.tridiag_eig(a, b, n, w, Q, e) == 0
    np.testing.assert_allclose(w, np.linalg.eigvalsh(T / amp) * amp, rtol=1e-10)
    np.testing.assert_allclose(Q.T @ Q, np.eye(n), atol=1e-12)


def test_eigh_into_switches_to_lapack_above_small_n():
    n = E.DENSE_N + 5
    A = random_symmetric(n, 3)
    w, V, e = np.empty(n), np.empty((n, n)), np.empty(n)
    E.eigh_into(A, w, V, e)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(A), atol=1e-11)


def test_sym_eig_reports_non_finite_input():
    A = np.full((4, 4), np.nan)
    w, V, e = np.empty(4), np.empty((4, 4)), np.empty(4)
    code = E.sym_eig(A, w, V, e)  # must terminate (no infinite QL loop)
    # and say so: the non-convergence code, or eigenvalues that are not numbers
    assert code == 1 or not np.isfinite(w).any(), (code, w)


@pytest.mark.parametrize("m", [1, 2, 7, 30])
def test_tridiag_eig(m):
    rng = np.random.default_rng(m)
    a, b = rng.standard_normal(m), rng.standard_normal(m)
    T = np.diag(a) + np.diag(b[: m - 1], 1) + np.diag(b[: m - 1], -1)
    w, Q, e = np.empty(m), np.empty((m, m)), np.empty(m)
    assert E.tridiag_eig(a, b, m, w, Q, e) == 0
    np.testing.assert_allclose(w, np.linalg.eigvalsh(T), atol=1e-12)
    np.testing.assert_allclose(T @ Q, Q * w, atol=1e-12)


@pytest.mark.parametrize("n", [3, 9, 50, 101])
def test_inertia_count_and_cholesky(n):
    rng = np.random.default_rng(n)
    for _ in range(3):
        X = rng.standard_normal((n, n))
        C = (X + X.T) / 2
        lam = np.linalg.eigvalsh(C)
        W = np.empty((n, n))
        assert E.count_above(C, 1.0, W) == (lam > 0).sum()
        assert E.count_above(C, -1.0, W) == (lam < 0).sum()
        M = X @ X.T + np.eye(n)
        b, x = rng.standard_normal(n), np.empty(n)
        assert E.cholesky_solve(M, b, x, W) == 0
        np.testing.assert_allclose(M @ x, b, atol=1e-9)
    # PSD Cholesky of a rank-deficient matrix
    Y = rng.standard_normal((n, n // 3 + 1))
    X = Y @ Y.T
    L = np.empty((n, n))
    E.psd_cholesky(X, L)
    np.testing.assert_allclose(L @ L.T, X, atol=1e-8 * np.abs(X).max())


def _side(C, sign, p1=None, tol=1e-10):
    n = C.shape[0]
    if p1 is None:
        p1 = np.empty(n)
        K.lanczos_start(n, p1)
    ws = [np.empty(n), np.empty((n, n)), np.empty((n, n)), np.empty(n), np.empty(n),
          np.empty(n), np.empty((n, n)), np.empty(n), np.empty(n), np.empty((n, n))]
    k, m, beta = E.lanczos_side(C, sign, p1, tol, *ws)
    return k, m, beta, ws[0][:k].copy(), ws[1][:, :k].copy()


def _dual_mats():
    out = []
    for D, seed in ((20, 1), (40, 2), (100, 3)):
        S, v = km_instance(D, seed)
        r = bqp.solve_bqp(S, v, method="fast", random_state=0)
        out.append(bqp.dual_matrix(S, v, r.u))
        out.append(bqp.dual_matrix(S, v, r.u - 0.01))
    return out


@pytest.mark.parametrize("C", [random_symmetric(n, s) for n, s in ((5, 0), (20, 1), (101, 2))]
                         + [random_symmetric(40, 5) - 1.5 * np.eye(40)] + _dual_mats())
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_certified_lanczos_side_matches_eigh(C, sign):
    # every eigenpair of C on the wanted side, within the certified residual tolerance
    tol = 1e-10 * np.abs(C).max()
    k, m, beta, w, V = _side(C, sign, tol=tol)
    lam = np.linalg.eigvalsh(C)
    want = np.sort(lam[sign * lam > 0])
    assert k == want.size and 1 <= m <= C.shape[0]
    np.testing.assert_allclose(np.sort(w), want, atol=tol * 10 + 1e-13)
    assert np.abs(C @ V - V * w).max() <= 10 * tol + 1e-13
    np.testing.assert_allclose(V.T @ V, np.eye(k), atol=1e-8)


def test_capped_lanczos_side_gives_up_or_matches():
    # a dense cluster around 0 (the warm D = 100 situation): the capped run must either
    # certify the same pairs as the uncapped one or report k = -2 within m_max steps
    n = 101
    rng = np.random.default_rng(7)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    lam = np.concatenate([[-5.0], rng.uniform(-0.05, 0.05, n - 1)])
    C = (Q * lam) @ Q.T
    C = 0.5 * (C + C.T)
    p1 = np.empty(n)
    K.lanczos_start(n, p1)
    ws = [np.empty(n), np.empty((n, n)), np.empty((n, n)), np.empty(n), np.empty(n),
          np.empty(n), np.empty((n, n)), np.empty(n), np.empty(n), np.empty((n, n))]
    tol = 1e-10 * np.abs(C).max()
    k, m, beta = E.lanczos_side_capped(C, -1.0, p1, tol, *ws, 25)
    assert k == -2 and m == 25
    k, m, beta = E.lanczos_side_capped(C, -1.0, p1, tol, *ws, n)
    assert k == (lam < 0).sum()


@pytest.mark.parametrize("n", [1, 2, 9, 23, E.SMALL_N + 7])
@pytest.mark.parametrize("shift", [0.0, 50.0, -50.0])
def test_newton_matrix_all_matches_einsum(n, shift):
    # exact generalized Hessian sum_ij Omega_ij z_ij z_ij^T: the direct loops (n <= SMALL_N)
    # and the GEMM form (larger n) vs the definition; shifts give C with no negative / no
    # positive eigenvalue (M = I / M = 0)
    C = random_symmetric(n, 4) + shift * np.eye(n)
    lam, V = np.linalg.eigh(C)
    lp = np.maximum(lam, 0.0)
    L1, L2 = np.meshgrid(lam, lam, indexing="ij")
    P1, P2 = np.meshgrid(lp, lp, indexing="ij")
    with np.errstate(invalid="ignore", divide="ignore"):
        Om = (P1 - P2) / (L1 - L2)
    same = np.abs(L1 - L2) < 1e-14
    Om[same] = (L1[same] > 0).astype(float)
    Z = np.einsum("ki,kj->kij", V, V).reshape(n, -1)
    ref = 2.0 * (Z * Om.reshape(-1)) @ Z.T
    M = np.empty((n, n))
    KH._newton_matrix(C, 2.0, lam.copy(), V.copy(), n, K.SIDE_ALL, M, np.empty((n, n)),
                     np.empty((n, n)))
    np.testing.assert_allclose(M, ref, atol=1e-12)
