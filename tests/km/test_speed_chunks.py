"""Issue 36: the psi step solves its items in chunks (each drawing its part of the same
Gaussian stream) and the objective is summed in one pass without a prediction array. The
oracles: the fit in one chunk, and the plain NumPy sum."""

import numba
import numpy as np
import pytest

from kmviz.data.synthetic import make_planted_km
from kmviz.km import KolmogorovModel
from kmviz.km._kernels import simplex as _simplex
from kmviz.km import estimator as E

pytestmark = pytest.mark.filterwarnings("ignore::kmviz.exceptions.ConvergenceWarning")


def _fit(ratings, **params):
    return KolmogorovModel(D=5, max_iter=4, tol=0.0, random_state=3, **params).fit(ratings)


@pytest.mark.parametrize("solver", ["fast", "enhanced"])
def test_chunked_psi_step_gives_the_fit_of_one_chunk(monkeypatch, solver):
    ratings, _ = make_planted_km(50, 30, 5, noise=0.1, observed=0.6, random_state=2)
    one = _fit(ratings, bqp_solver=solver)
    monkeypatch.setattr(E, "BQP_CHUNK_BYTES", 1)
    monkeypatch.setattr(E, "BQP_CHUNK_MIN", 7)    # 30 items: chunks of 7, 7, 7, 7, 2
    assert E._bqp_chunk(30, 50, 5) == 7
    chunked = _fit(ratings, bqp_solver=solver)
    np.testing.assert_array_equal(chunked.theta_, one.theta_)
    np.testing.assert_array_equal(chunked.psi_, one.psi_)
    np.testing.assert_array_equal(chunked.dual_u_, one.dual_u_)
    for key in ("objective", "n_evd", "n_dual_iter", "n_psi_changed", "bqp_improved"):
        assert chunked.trace_.column(key).tolist() == one.trace_.column(key).tolist(), key


def test_squared_error_matches_the_numpy_sum_on_any_thread_count():
    rng = np.random.default_rng(0)
    n_users, n_items, D, nnz = 40, 30, 6, 3 * _simplex.SSE_CHUNK + 123
    users = rng.integers(0, n_users, nnz)
    items = rng.integers(0, n_items, nnz)
    p = rng.random(nnz)
    theta = rng.dirichlet(np.ones(D), n_users)
    psi = (rng.random((n_items, D)) < 0.5).astype(float)
    naive = float(np.sum((np.einsum("kd,kd->k", theta[users], psi[items]) - p) ** 2))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _simplex.squared_error(users, items, p, theta, psi)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = _simplex.squared_error(users, items, p, theta, psi)
    finally:
        numba.set_num_threads(before)
    assert one == many                      # the chunks fix the order, not the threads
    assert one == pytest.approx(naive, rel=1e-12)
    assert _simplex.squared_error(users[:0], items[:0], p[:0], theta, psi) == 0.0


def test_memory_estimate_counts_one_chunk_of_draws(monkeypatch):
    ratings, _ = make_planted_km(50, 30, 5, random_state=2)
    monkeypatch.setattr(E, "BQP_CHUNK_BYTES", 1)
    monkeypatch.setattr(E, "BQP_CHUNK_MIN", 7)
    est = KolmogorovModel(D=5)._memory_estimate({"D": 5, "n_rand": 50}, ratings)
    draws = [v for k, v in est.items() if k.startswith("random draws")]
    assert draws == [8 * 7 * 50 * 6]


@pytest.mark.parametrize("D", [5, 20, 33])
def test_the_fits_item_statistics_are_symmetric_bit_for_bit(D):
    """The psi step trusts build_item_stats' S (``validate=False``: no symmetrization),
    which is what the checked path computes exactly when S == S^T bit for bit."""
    from kmviz.km.solvers import solve_bqp_batch

    rng = np.random.default_rng(D)
    n_users, n_items, nnz = 80, 25, 900
    users, items = rng.integers(0, n_users, nnz), rng.integers(0, n_items, nnz)
    order = np.lexsort((users, items))
    ptr = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(np.bincount(items, minlength=n_items), out=ptr[1:])
    theta = rng.dirichlet(np.ones(D), n_users)
    S, v, rho = np.empty((n_items, D, D)), np.empty((n_items, D)), np.empty(n_items)
    _simplex.build_item_stats(ptr, users[order].astype(np.int64), rng.random(nnz), theta,
                              S, v, rho)
    assert np.array_equal(S, np.swapaxes(S, 1, 2))
    psi0 = np.zeros((n_items, D))
    xi = np.random.default_rng(1).standard_normal((n_items, 10, D + 1))
    a = solve_bqp_batch(S, v, psi0, xi=xi, n_rand=10)
    b = solve_bqp_batch(S, v, psi0, xi=xi, n_rand=10, validate=False)
    np.testing.assert_array_equal(a.psi, b.psi)
    np.testing.assert_array_equal(a.u, b.u)
    with pytest.raises(ValueError, match="must be"):
        solve_bqp_batch(S, v[:, :-1], psi0, xi=xi, n_rand=10, validate=False)
