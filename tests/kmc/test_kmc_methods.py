"""The thesis's baselines: corrected ALS (Alg. 2), SGD on (3.28), nuclear-norm PG (Ch. 2)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kmviz.exceptions import ConvergenceWarning, DataValueError
from kmviz.kmc import KernelMatrixCompletion, factorization as fz, nmse, rkhs as kn
from kmviz.kmc.synthetic import make_graph_lowrank, make_kernel_mc


def _problem(seed=0, N=20, L=15, observed=0.4):
    rng = np.random.default_rng(seed)
    K_row = kn.diffusion_kernel(kn.erdos_renyi_graph(N, 0.2, random_state=seed), 0.5)
    K_col = kn.gaussian_kernel(rng.standard_normal((L, 2)), gamma=0.5) + 1e-3 * np.eye(L)
    F = K_row @ rng.standard_normal((N, L)) @ K_col
    flat = np.sort(rng.choice(N * L, int(observed * N * L), replace=False))
    rows, cols = flat % N, flat // N
    return K_row, K_col, F, rows, cols


def test_kmc_gradient_matches_finite_differences():
    K_row, K_col, F, rows, cols = _problem()
    Aw, Ah = fz.kernel_inverse(K_row), fz.kernel_inverse(K_col)
    rng = np.random.default_rng(1)
    W, H = rng.standard_normal((20, 3)), rng.standard_normal((15, 3))
    m, mu = F[rows, cols], 0.3

    def f(W, H):
        return fz.kmc_objective(rows, cols, m, W, H, Aw @ W, Ah @ H, mu)[0]

    gW, gH = fz.kmc_gradient(rows, cols, m, W, H, Aw, Ah, mu)
    eps = 1e-6
    for (i, j) in [(0, 0), (5, 2), (19, 1)]:
        E = np.zeros_like(W)
        E[i, j] = eps
        assert (f(W + E, H) - f(W - E, H)) / (2 * eps) == pytest.approx(gW[i, j], rel=1e-5,
                                                                         abs=1e-5)
    for (i, j) in [(0, 0), (14, 2)]:
        E = np.zeros_like(H)
        E[i, j] = eps
        assert (f(W, H + E) - f(W, H - E)) / (2 * eps) == pytest.approx(gH[i, j], rel=1e-5,
                                                                         abs=1e-5)


@pytest.mark.slow
def test_corrected_als_reaches_a_stationary_point():
    """At convergence the gradient of (3.28) vanishes (checked against finite differences
    above), and every sweep lowers the objective (each block update is an exact minimizer)."""
    K_row, K_col, F, rows, cols = _problem()
    Aw, Ah = fz.kernel_inverse(K_row), fz.kernel_inverse(K_col)
    als = fz.KernelALS(rows, cols, F[rows, cols], 20, 15, Aw, Ah, 0.1, 4,
                       np.random.default_rng(0))
    g0 = max(np.abs(g).max() for g in als.gradient())
    objs = []
    for _ in range(3000):
        als.step()
        objs.append(als.objective()[0])
    assert np.all(np.diff(objs) <= 1e-12 * np.abs(objs[:-1]))
    gW, gH = als.gradient()
    assert max(np.abs(gW).max(), np.abs(gH).max()) < 1e-5 * g0
    # and the estimator stops there on its tol
    ratings, _ = make_kernel_mc(20, 15, edge_prob=0.2, observed=0.4, random_state=0)
    m = KernelMatrixCompletion(method="als", mu=0.1, rank=4, max_iter=5000, tol=1e-10,
                               random_state=0).fit(ratings)
    assert m.trace_.stop_reason == "converged"
    assert m.trace_.stop_message.startswith("relative objective change ")
    assert m.trace_.stop_message.endswith(" below tol 1e-10")


def test_als_with_identity_kernels_is_regularized_als():
    """K = 2I turns (3.28) into the base MC (3.23): the ALS row update is the plain ridge one."""
    _, _, F, rows, cols = _problem()
    A = fz.kernel_inverse(2 * np.eye(20))
    B = fz.kernel_inverse(2 * np.eye(15))
    als = fz.KernelALS(rows, cols, F[rows, cols], 20, 15, A, B, 0.4, 3,
                       np.random.default_rng(0))
    H = als.H.copy()
    als._half_sweep(als.W, als.AW, als.Aw, als.H, als.row_idx, als.row_val, als.mu)
    n = 3
    j = cols[rows == n]
    Hn = H[j]
    w = np.linalg.solve(Hn.T @ Hn + 0.2 * np.eye(3), Hn.T @ F[n, j])
    np.testing.assert_allclose(als.W[n], w, atol=1e-12)


def test_kernel_inverse_refuses_a_singular_kernel():
    X = np.random.default_rng(0).standard_normal((6, 2))
    with pytest.raises(DataValueError, match="singular.*jitter="):
        fz.kernel_inverse(X @ X.T, "row_kernel")


def test_sgd_lowers_the_objective_and_fills_unvisited_rows_from_the_prior():
    ratings, truth = make_kernel_mc(30, 20, edge_prob=0.2, observed=0.4, cold_rows=2,
                                    random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = KernelMatrixCompletion(method="sgd", mu=1e-4, rank=5, max_iter=30,
                                   random_state=0).fit(ratings)
    obj = m.trace_.column("objective")
    assert obj[-1] < obj[0]
    cold = ratings.info["cold_rows"]
    Aw = fz.kernel_inverse(m.row_kernel_)
    known = m.known_rows_
    W = m.row_factors_
    expected = -np.linalg.solve(Aw[np.ix_(~known, ~known)], Aw[np.ix_(~known, known)] @ W[known])
    np.testing.assert_allclose(W[cold], expected, atol=1e-10)


# ----------------------------------------------------------------------------- PG
def test_proximal_step_shrinks_singular_values_by_exactly_t_mu():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((12, 9))
    tau = 0.8
    F, sv_in, sv_out = fz.shrink(Z, tau)
    np.testing.assert_allclose(sv_in, np.linalg.svd(Z, compute_uv=False))
    np.testing.assert_allclose(np.linalg.svd(F, compute_uv=False),
                               np.maximum(sv_in - tau, 0.0), atol=1e-10)
    # as the prox of tau ||.||_*: 1/2 ||F - Z||^2 + tau ||F||_* is smallest at F
    def g(X):
        return 0.5 * np.sum((X - Z) ** 2) + tau * np.linalg.svd(X, compute_uv=False).sum()
    for _ in range(5):
        assert g(F) <= g(F + 1e-3 * rng.standard_normal(F.shape))
    # inside the estimator: one PG step from zero shrinks M's singular values by t mu
    M = np.zeros((12, 9))
    mask = rng.random((12, 9)) < 0.5
    M[mask] = Z[mask]
    pg = fz.NuclearPG(M, mask, 0.3, schedule="pg", step=0.5)
    pg.step()
    np.testing.assert_allclose(np.linalg.svd(pg.F, compute_uv=False),
                               np.maximum(np.linalg.svd(0.5 * M, compute_uv=False) - 0.15, 0),
                               atol=1e-10)


@pytest.mark.parametrize("schedule", ["pg", "fpc", "spg", "vpg"])
def test_pg_schedules_reach_the_final_mu_and_converge(schedule):
    ratings, truth = make_graph_lowrank(40, 30, 3, n_side=5, observed=0.5, random_state=0)
    scale = np.linalg.svd(truth.matrix, compute_uv=False)[0]
    m = KernelMatrixCompletion(method="pg", schedule=schedule, mu=0.01 * scale, max_iter=3000,
                               tol=1e-6).fit(ratings)
    assert m.trace_.stop_reason == "converged"
    last = m.trace_.rows[-1]  # the real reason: the change at the final mu
    assert m.trace_.stop_message == (f"PG converged at mu = {last['mu']:g}: relative change "
                                     f"{last['rel_change']:.3g} < tol 1e-06")
    mus = m.trace_.column("mu")
    assert mus[-1] == pytest.approx(0.01 * scale)
    if schedule != "pg":
        assert mus[0] == pytest.approx(10 * 0.01 * scale) and np.all(np.diff(mus) <= 0)
    assert nmse(m.completed_matrix(), truth.matrix) < 0.05
    assert m.trace_.column("rank")[-1] <= 10


def test_pg_schedules_end_at_the_same_solution():
    ratings, truth = make_graph_lowrank(50, 40, 3, n_side=5, observed=0.5, random_state=1)
    mu = 0.01 * np.linalg.svd(truth.matrix, compute_uv=False)[0]
    F = {s: KernelMatrixCompletion(method="pg", schedule=s, mu=mu, max_iter=5000,
                                   tol=1e-9).fit(ratings).completed_matrix()
         for s in ("pg", "fpc", "spg", "vpg")}
    for s in ("fpc", "spg", "vpg"):
        np.testing.assert_allclose(F[s], F["pg"], atol=1e-5 * np.abs(F["pg"]).max())


@pytest.mark.slow
def test_graph_initialization_starts_closer():
    ratings, truth = make_graph_lowrank(80, 60, 4, n_side=8, observed=0.3, random_state=2)
    M = np.zeros(truth.matrix.shape)
    M[truth.mask] = truth.matrix[truth.mask]
    # A = U_T U_T^T is a projector: its leading eigenspace is the whole span of U_T (P = 8)
    F0 = fz.graph_init(M, truth.mask, truth.row_graph, 8)
    np.testing.assert_array_equal(F0[truth.mask], M[truth.mask])
    assert nmse(F0, truth.matrix) < 0.5 * nmse(M, truth.matrix)
    mu = 0.01 * np.linalg.svd(truth.matrix, compute_uv=False)[0]
    zi = KernelMatrixCompletion(method="pg", mu=mu, max_iter=3000, tol=1e-4).fit(ratings)
    gi = KernelMatrixCompletion(method="pg", mu=mu, pg_init="graph", rank=8, max_iter=3000,
                                tol=1e-4).fit(ratings)
    assert gi.trace_.column("mu")[0] == pytest.approx(5 * mu)  # Table 2.2: 5 mu_bar with GI
    assert gi.n_iter_ < zi.n_iter_


def test_laplacian_regularized_pg_uses_the_inverse_lipschitz_step():
    ratings, truth = make_kernel_mc(25, 20, edge_prob=0.2, observed=0.4, random_state=0)
    A = truth.row_graph.toarray()
    lam_max = np.linalg.eigvalsh(np.diag(A.sum(1)) - A)[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = KernelMatrixCompletion(method="pg", mu=1e-3, lap_weight=0.5, max_iter=3).fit(
            ratings)
    row = m.trace_.rows[0]
    assert row["shrink"] == pytest.approx(1e-3 * 10 / (1 + 2 * 0.5 * lam_max))


def test_warmup_compiles_every_kernel(kernel_calls):
    from numba.core.registry import CPUDispatcher

    from kmviz.kmc import _kernels as _numba, warmup

    warmup.compile_kernels()
    kernels = {name: k for name, k in vars(_numba).items()
               if isinstance(k, CPUDispatcher) and k.py_func.__module__ == _numba.__name__}
    assert {"kron_gram_matvec", "kron_gram_fill", "sgd_factor_epoch"} <= set(kernels)
    missed = [name for name, k in kernels.items()
              if not any(k is called for called in kernel_calls.dispatchers)]
    assert not missed, f"the warm-up does not call {missed}"
    assert all(k.signatures for k in kernels.values())
    for fill in (_numba.kron_gram_fill, _numba.kron_gram_fill_serial):  # both precisions
        assert {str(sig[-1].dtype) for sig in fill.signatures} >= {"float32", "float64"}


@pytest.mark.parametrize("method", ["kkmcex", "rrmcex", "online_rrmcex", "als", "sgd", "pg"])
def test_each_method_is_a_solver_module_and_leaves_no_fit_state_on_the_estimator(method):
    """One dispatch, method -> solver module (start / step / estimate / publish / predict);
    the estimate a step reports (truth_nmse) is the published model's; nothing of the fit
    but the fitted arrays stays on the estimator."""
    from kmviz.kmc.solvers import MODULES

    solver = MODULES[method]
    for name in ("start", "name", "step", "estimate", "publish", "predict", "completed"):
        assert callable(getattr(solver, name)), name
    ratings, truth = make_kernel_mc(20, 15, edge_prob=0.3, observed=0.5, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = KernelMatrixCompletion(method=method, max_iter=5, jitter=1e-4, random_state=0,
                                   n_components=50).fit(ratings, truth=truth.matrix)
    F = m.completed_matrix()
    assert np.isfinite(F).all()
    assert m.trace_.rows[-1]["truth_nmse"] == pytest.approx(nmse(F, truth.matrix), rel=1e-9)
    assert m.trace_.solver.startswith(f"kmc.{method}")
    assert m.trace_.stop_message
    private = {k for k in vars(m) if k.startswith("_")}
    assert private == {"_arrays", "_matrix_cache", "_kernel_cache"}, private
    params = set(m.get_params())
    assert all(k in params or k.endswith("_") or k in private for k in vars(m))
