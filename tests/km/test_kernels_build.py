"""build_item_stats eight ratings at a time (issue 36) against its definitions: the NumPy
reference, exact symmetry, and bit for bit the one-rating-at-a-time sums (the psi step's
randomization turns a one-ulp change of S_i on items with few ratings into other samples,
so the statistics must not change at all)."""

import numpy as np
import pytest
from numba import njit

from kmviz.km._kernels.simplex import (BUILD_BLOCK, _build_item_stats_reference,
                                       build_item_stats)


@pytest.mark.parametrize("D", [1, 3, 20])
def test_build_item_stats_in_blocks_is_the_sum(D):
    # item sizes around the blocks (BUILD_BLOCK = 8 ratings): none, the tail alone, whole
    # blocks, blocks and a tail
    assert BUILD_BLOCK == 8
    rng = np.random.default_rng(D)
    sizes = np.array([0, 1, 3, 7, 8, 9, 15, 16, 17, 39])
    n_users = 40
    indptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    indices = np.concatenate([rng.choice(n_users, s, replace=False) for s in sizes]
                             ).astype(np.int64)
    p = rng.random(indices.size)
    theta = rng.dirichlet(np.ones(D), n_users)
    n_items = sizes.size
    S, v, rho = np.full((n_items, D, D), np.nan), np.full((n_items, D), np.nan), \
        np.full(n_items, np.nan)
    build_item_stats(indptr, indices, p, theta, S, v, rho)
    S0, v0, rho0 = _build_item_stats_reference(indptr, indices, p, theta)
    np.testing.assert_allclose(S, S0, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(v, v0, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(rho, rho0, rtol=1e-13, atol=1e-15)
    assert np.array_equal(S, np.swapaxes(S, 1, 2))   # the psi step trusts exact symmetry
    assert np.all(S[0] == 0.0) and np.all(v[0] == 0.0) and rho[0] == 0.0
    # bit for bit the sums of one rating at a time, in rating order (fused multiply-adds,
    # as the compiler contracts them): the blocks change the memory traffic, not the sums
    one = np.zeros((n_items, D, D))
    one_v = np.zeros((n_items, D))
    one_rho = np.zeros(n_items)
    _one_at_a_time(indptr, indices, p, theta, one, one_v, one_rho)
    assert np.array_equal(S, one) and np.array_equal(v, one_v) and np.array_equal(rho, one_rho)


@njit(cache=False, fastmath={"contract"})
def _one_at_a_time(indptr, indices, p, theta, S, v, rho):
    # the former kernel's loop: each sum a chain over the ratings in order
    D = theta.shape[1]
    for i in range(indptr.shape[0] - 1):
        for k in range(indptr[i], indptr[i + 1]):
            u = indices[k]
            rho[i] += p[k] * p[k]
            for a in range(D):
                v[i, a] += theta[u, a] * p[k]
                for b in range(D):
                    S[i, a, b] += theta[u, a] * theta[u, b]
