"""Issue 36: warm-started Newton solves skip the EVD of -A (a Gershgorin bound on its
largest eigenvalue serves the II-A test instead). The skipped EVD must not change any
iterate: the old path (``warm_bound=False``) is the oracle."""

import numpy as np
import pytest

from kmviz.km.solvers import solve_bqp_batch


def _items(D, n_items, seed, n_users=40, drift=0.0, rng_theta=None):
    """S_i, v_i of n_items items rated by n_users Dirichlet(1) users; with ``drift`` the
    users' theta are moved a little (the next BCD iteration's inputs)."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.ones(D), n_users)
    if drift:
        theta = (1 - drift) * theta + drift * np.random.default_rng(rng_theta).dirichlet(
            np.ones(D), n_users)
    S = np.empty((n_items, D, D))
    v = np.empty((n_items, D))
    for i in range(n_items):
        raters = rng.random(n_users) < 0.5
        raters[i % n_users] = True
        th = theta[raters]
        p = rng.integers(1, 6, raters.sum()) / 5.0
        S[i] = th.T @ th
        v[i] = th.T @ p
    return S, v


@pytest.mark.parametrize("D", [4, 8, 20, 23])
def test_warm_bound_gives_the_iterates_of_the_full_evd(D):
    n_items, n_rand = 12, 30
    S0, v0 = _items(D, n_items, seed=D)
    cold = solve_bqp_batch(S0, v0, np.zeros((n_items, D)), rng=1, n_rand=n_rand)
    # the next BCD iteration: theta moved, warm duals, the incumbent psi
    S1, v1 = _items(D, n_items, seed=D, drift=0.05, rng_theta=7)
    xi = np.random.default_rng(3).standard_normal((n_items, n_rand, D + 1))
    new = solve_bqp_batch(S1, v1, cold.psi, cold.u, xi=xi, n_rand=n_rand)
    old = solve_bqp_batch(S1, v1, cold.psi, cold.u, xi=xi, n_rand=n_rand, warm_bound=False)
    np.testing.assert_array_equal(new.psi, old.psi)
    np.testing.assert_array_equal(new.u, old.u)
    np.testing.assert_array_equal(new.objective, old.objective)
    np.testing.assert_array_equal(new.n_iter, old.n_iter)
    np.testing.assert_array_equal(new.phase_counts, old.phase_counts)
    # exactly the one EVD of -A per warm item is saved
    np.testing.assert_array_equal(old.n_evd - new.n_evd, np.ones(n_items, dtype=np.int64))


def test_cold_items_still_decompose_minus_a():
    """Cold rows (u0 = 1: phase I needs the pairs of -A) take the old path either way."""
    D, n_items = 8, 6
    S, v = _items(D, n_items, seed=11)
    xi = np.random.default_rng(0).standard_normal((n_items, 20, D + 1))
    a = solve_bqp_batch(S, v, np.zeros((n_items, D)), xi=xi, n_rand=20)
    b = solve_bqp_batch(S, v, np.zeros((n_items, D)), xi=xi, n_rand=20, warm_bound=False)
    np.testing.assert_array_equal(a.n_evd, b.n_evd)
    np.testing.assert_array_equal(a.psi, b.psi)
    np.testing.assert_array_equal(a.u, b.u)
