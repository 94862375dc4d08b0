"""Issue 36: Frank-Wolfe builds each user's Q_u = sum_i psi_i psi_i^T (integer counts) from
popcounts of per-event bitsets when that is cheaper. The oracle: the pairs of every rated
item's support (the previous path, ``q_mode=Q_PAIRS``); the counts are exact, so theta,
the gaps, the step counts and the objectives must be equal bit for bit."""

import numpy as np
import pytest

from kmviz.km._kernels import simplex as _simplex
from kmviz.km._scale import _compressed


def _problem(seed, n_users, n_items, D, density, support):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    mask[:, 0] = True   # every user rates something
    users, items = np.nonzero(mask)
    p = rng.random(users.size)
    ptr, idx, dat = _compressed(users.astype(np.int64), items.astype(np.int64), p, n_users)
    psi = (rng.random((n_items, D)) < support).astype(float)
    psi[1] = 0.0        # an empty support
    psi[2] = 1.0        # a full one
    theta = rng.dirichlet(np.ones(D), n_users)
    return ptr, idx, dat, psi, theta


def _fw(problem, q_mode, lam):
    ptr, idx, dat, psi, theta = problem
    n = ptr.shape[0] - 1
    th = theta.copy()
    gap, nit, obj = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n)
    _simplex.fw_users(ptr, idx, dat, psi, lam, 1e-7, 1000, _simplex.FW_VARIANTS["pairwise"],
                      th, gap, nit, obj, q_mode=q_mode)
    return th, gap, nit, obj


@pytest.mark.parametrize("n_items, D, density, support, lam", [
    (30, 5, 0.5, 0.5, 0.0),      # one word per user
    (300, 20, 0.6, 0.4, 0.0),    # ~180 ratings per user: three words
    (200, 70, 0.4, 0.1, 1.5),    # D > 64, sparse supports, lambda_theta > 0
])
def test_bitset_counts_give_the_pairs_path_bit_for_bit(n_items, D, density, support, lam):
    problem = _problem(n_items + D, 25, n_items, D, density, support)
    want = _fw(problem, _simplex.Q_PAIRS, lam)
    for mode in (_simplex.Q_BITSETS, _simplex.Q_AUTO):
        got = _fw(problem, mode, lam)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    # and the pairs path is the LCQP (3): its objective at the returned theta
    ptr, idx, dat, psi, theta = problem
    th, gap, nit, obj = want
    u = 3
    Q, w, rho = _simplex._user_qp_reference(psi, idx[ptr[u]:ptr[u + 1]], dat[ptr[u]:ptr[u + 1]],
                                            lam)
    assert obj[u] == pytest.approx(th[u] @ Q @ th[u] - 2 * th[u] @ w + rho, rel=1e-10)


def test_popcount_intrinsic():
    from numba import njit

    @njit
    def count(x):
        return _simplex._popcount(x)

    for x in (0, 1, 2**63, 2**64 - 1, 0b1011_0110):
        assert count(np.uint64(x)) == bin(x).count("1")
