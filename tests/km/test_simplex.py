"""Frank-Wolfe for the simplex QP (3) and the per-item statistics of the BQP (4)."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from kmviz.km._kernels import simplex as _simplex
from kmviz.km._kernels.simplex import (
    FW_VARIANTS,
    _build_item_stats_reference,
    _fw_reference,
    _user_qp_reference,
    build_item_stats,
    build_item_stats_rows,
    fw_users,
    fw_users_rows,
    predict_pairs,
    predict_pairs_rows,
)


def _random_problem(seed, n_users=30, n_items=25, D=5, density=0.4):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    mask[np.arange(n_users), rng.integers(0, n_items, n_users)] = True  # no empty user
    users, items = np.nonzero(mask)
    p = rng.random(users.size)
    psi = (rng.random((n_items, D)) < 0.5).astype(float)
    theta = rng.dirichlet(np.ones(D), n_users)
    return users, items, p, psi, theta


def _compress(major, minor, data, n):
    order = np.lexsort((minor, major))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(major, minlength=n), out=indptr[1:])
    return indptr, minor[order].astype(np.int64), data[order].astype(float)


def _fw_all(users, items, p, psi, theta, lam=0.0, tol=1e-10, max_iter=5000, variant="pairwise"):
    n_users = theta.shape[0]
    ptr, idx, dat = _compress(users, items, p, n_users)
    th = theta.copy()
    gap, nit, obj = np.empty(n_users), np.empty(n_users, np.int64), np.empty(n_users)
    fw_users(ptr, idx, dat, psi, lam, tol, max_iter, FW_VARIANTS[variant], th, gap, nit, obj)
    return th, gap, nit, obj, (ptr, idx, dat)


def _simplex_qp_slsqp(Q, w):
    D = w.size
    res = minimize(lambda t: t @ Q @ t - 2 * t @ w, np.full(D, 1.0 / D),
                   jac=lambda t: 2 * (Q @ t - w), method="SLSQP",
                   bounds=[(0, 1)] * D,
                   constraints=[{"type": "eq", "fun": lambda t: t.sum() - 1,
                                 "jac": lambda t: np.ones(D)}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    return res.x, res.fun


def _simplex_qp_faces(Q, w):
    """Global optimum by enumerating faces: on each face solve the KKT system."""
    D = w.size
    best = (None, np.inf)
    for k in range(1, D + 1):
        for face in itertools.combinations(range(D), k):
            f = list(face)
            K = np.zeros((k + 1, k + 1))
            K[:k, :k] = 2 * Q[np.ix_(f, f)]
            K[:k, k] = 1
            K[k, :k] = 1
            rhs = np.concatenate([2 * w[f], [1.0]])
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
            t = np.zeros(D)
            t[f] = sol[:k]
            if t.min() < -1e-12 or abs(t.sum() - 1) > 1e-9:
                continue
            t = np.maximum(t, 0)
            val = t @ Q @ t - 2 * t @ w
            if val < best[1]:
                best = (t, val)
    return best


@pytest.mark.parametrize("variant", ["plain", "away", "pairwise"])
@pytest.mark.parametrize("lam", [0.0, 0.7])
def test_fw_kernel_matches_reference(variant, lam):
    users, items, p, psi, theta = _random_problem(1, density=0.9)
    # Step for step: an interior pairwise/away step ends where the two vertices' gradients
    # are equal, so the next step's choice is a tie decided by rounding (the kernel keeps
    # Q theta updated incrementally). Paths are compared for one step (all variants) and
    # six steps (plain FW, which creates no such ties); converged objectives for all.
    n_steps = 6 if variant == "plain" else 1
    th, gap, nit, obj, (ptr, idx, dat) = _fw_all(users, items, p, psi, theta, lam=lam,
                                                 tol=0.0, max_iter=n_steps, variant=variant)
    thc, _, _, objc, _ = _fw_all(users, items, p, psi, theta, lam=lam, tol=1e-10,
                                 max_iter=3000, variant=variant)
    for u in range(theta.shape[0]):
        sl = slice(ptr[u], ptr[u + 1])
        Q, w, rho = _user_qp_reference(psi, idx[sl], dat[sl], lam)
        ref, it, g = _fw_reference(Q, w, theta[u], tol=0.0, max_iter=n_steps,
                                   variant=variant, scale=rho)
        np.testing.assert_allclose(th[u], ref, atol=1e-12)
        assert nit[u] == it
        assert obj[u] == pytest.approx(th[u] @ Q @ th[u] - 2 * th[u] @ w + rho, abs=1e-9)
        ref, it, g = _fw_reference(Q, w, theta[u], tol=1e-10, max_iter=3000,
                                   variant=variant, scale=rho)
        ref_obj = ref @ Q @ ref - 2 * ref @ w + rho
        assert objc[u] == pytest.approx(ref_obj, abs=2e-10 * rho + 1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fw_matches_generic_qp_solver(seed):
    users, items, p, psi, theta = _random_problem(seed, D=4)
    th, gap, nit, obj, (ptr, idx, dat) = _fw_all(users, items, p, psi, theta, lam=0.1)
    for u in range(theta.shape[0]):
        sl = slice(ptr[u], ptr[u + 1])
        Q, w, rho = _user_qp_reference(psi, idx[sl], dat[sl], 0.1)
        fw_val = th[u] @ Q @ th[u] - 2 * th[u] @ w
        _, slsqp_val = _simplex_qp_slsqp(Q, w)
        _, face_val = _simplex_qp_faces(Q, w)
        # FW gap <= 1e-10 * rho bounds the suboptimality
        assert fw_val <= face_val + 1e-8 * max(rho, 1)
        assert fw_val == pytest.approx(face_val, abs=1e-8 * max(rho, 1))
        assert fw_val <= slsqp_val + 1e-7
        assert abs(th[u].sum() - 1) < 1e-12 and th[u].min() >= 0


def test_fw_reaches_gap_and_never_increases_objective():
    users, items, p, psi, theta = _random_problem(3, n_users=50, D=6)
    _, _, _, obj0, (ptr, idx, dat) = _fw_all(users, items, p, psi, theta, max_iter=0)
    th, gap, nit, obj, _ = _fw_all(users, items, p, psi, theta, tol=1e-8)
    assert np.all(obj <= obj0 + 1e-12)
    assert np.all(gap <= 1e-8)
    # warm start from the solution: nothing left to do
    th2, gap2, nit2, obj2, _ = _fw_all(users, items, p, psi, th, tol=1e-8)
    assert np.all(nit2 == 0) and np.array_equal(th2, th)


def test_pairwise_converges_where_plain_stalls():
    # the optimum lies on a face: plain FW zig-zags, pairwise drops the bad vertex
    users, items, p, psi, theta = _random_problem(4, n_users=40, D=6)
    _, _, nit_plain, _, _ = _fw_all(users, items, p, psi, theta, tol=1e-9, max_iter=2000,
                                    variant="plain")
    _, gap, nit_pw, _, _ = _fw_all(users, items, p, psi, theta, tol=1e-9, max_iter=2000,
                                   variant="pairwise")
    assert np.all(gap <= 1e-9)
    assert nit_pw.sum() < nit_plain.sum()


def test_users_without_ratings_untouched():
    users, items, p, psi, theta = _random_problem(5)
    keep = users != 3
    th, gap, nit, obj, _ = _fw_all(users[keep], items[keep], p[keep], psi, theta)
    np.testing.assert_array_equal(th[3], theta[3])
    assert nit[3] == 0 and obj[3] == 0


def test_build_item_stats_matches_reference():
    users, items, p, psi, theta = _random_problem(6, n_items=40)
    n_items = 40
    ptr, idx, dat = _compress(items, users, p, n_items)
    S, v, rho = np.empty((n_items, 5, 5)), np.empty((n_items, 5)), np.empty(n_items)
    build_item_stats(ptr, idx, dat, theta, S, v, rho)
    S_ref, v_ref, rho_ref = _build_item_stats_reference(ptr, idx, dat, theta)
    np.testing.assert_allclose(S, S_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(v, v_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rho, rho_ref, rtol=1e-12)
    # the BQP objective of eq. (4) equals the items' share of eq. (2)
    pred = np.empty(users.size)
    predict_pairs(users.astype(np.int64), items.astype(np.int64), theta, psi, pred)
    total = np.einsum("id,ide,ie->", psi, S, psi) - 2 * np.sum(psi * v) + rho.sum()
    assert total == pytest.approx(np.sum((pred - p) ** 2), rel=1e-10)


def test_kernels_compiled():
    assert (build_item_stats_rows.signatures and fw_users_rows.signatures
            and predict_pairs_rows.signatures)
    assert set(_simplex.FW_VARIANTS) == {"plain", "away", "pairwise"}
