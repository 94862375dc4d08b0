"""The eq. (3) baseline as a solver of :class:`~kmviz.gfm.GeneralizedFM` (``solver="als"``).

Alternating least squares on all the training data, one pass per outer iteration::

    min_{b, w, U, V}  1/(2N) ||y - b - Z w - A(U V^T)||^2 + l2/2 (||w||^2 + ||U||_F^2 + ||V||_F^2)

with Z the (implicitly) standardized rows. A pass improves two linear least-squares problems:
(b, w, U) with V fixed, then (b, w, V) with U fixed; in each the quadratic term
``A(U V^T)_i = (z_i^T U)(z_i^T V)`` is linear in the free factor.

Each half is improved by exact coordinate minimization (:func:`coordinate_pass`, the Numba
sweep :func:`kmviz.gfm._kernels.cd_sweep`, Rendle's ALS for factorization machines): every
coordinate in turn is set to the minimizer of its 1-D quadratic (jointly with the
unpenalized intercept), with the residual kept up to date over the nonzeros of that
coordinate's column, so a sweep costs O(nnz(Z) k), reads only those nonzeros, and no
coordinate's update can raise the objective. A half makes at most :data:`INNER_MAX_ITER`
sweeps (fewer once a sweep gains less than :data:`INNER_TOL` of the objective); run to
convergence it reaches the half's unique minimizer, what an exact LSQR solve gives.
A standardized *sparse* design has a dense Z; its halves are solved by LSQR on a matrix-free
operator instead (:func:`lsqr_pass`, the solver of earlier versions), warm-started, with the
ridge as extra rows ``sqrt(N l2) I``. Both are monotone: the objective never increases over
passes.

The state is the one-pass state (:class:`~kmviz.gfm.onepass.OnePassState`: w, U, V, b and the
scaling), so prediction, the fitted attributes and saved runs are the same for both solvers.
Unlike Algorithm 1 it reads every instance on every pass and makes no assumption about the
distribution of x: it is the solver for real data (one-hot FM designs, skewed features).

The start is small random factors (:func:`start`), each feature's row divided by the
feature's largest |z| when above 1 (a raw year column of ~2000 would otherwise start the
quadratic term at ~1e4); V = 0 would leave U undetermined in the first half-pass.
"""

from __future__ import annotations

import contextlib

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, lsqr

from . import onepass
from .operators import Standardizer, project

#: Coordinate sweeps of a half-pass stop when a sweep lowers the half's objective by less
#: than this fraction of it, or after INNER_MAX_ITER sweeps. On MovieLens 100K's FM design
#: at k = 8 (l2 = 0.01) 5 sweeps per half reached the training objective of 10 LSQR passes
#: (0.4356) in 2-3 passes, 2 sweeps in 5 passes, 1 full sweep over (w, U, V) in 11: about
#: the same work; 5 keeps a pass close to an exact ALS pass (test RMSE 0.937 at 5 passes,
#: as LSQR's 10), so ``n_passes`` and ``tol`` mean what they did.
INNER_TOL = 1e-6
INNER_MAX_ITER = 5
#: LSQR's stopping tolerances (atol = btol) and iteration cap per half-pass (a standardized
#: sparse design). The sub-problems are ridge-regularized, so LSQR converges in a few dozen
#: iterations on the data we measured (bench/gfm/gfm_peers.py).
LSQR_TOL = 1e-6
LSQR_MAX_ITER = 50
#: Standard deviation (times sqrt(k)) of the random start of U and V, as FM solvers do
#: (libFM's init_stdev is 0.1).
INIT_SCALE = 0.1


def start(X, y, rank: int, *, standardize: bool, fit_intercept: bool, rng=None):
    """The start of the passes: ``b`` the mean of y (or 0), ``w = 0`` and small random U, V
    (entries N(0, INIT_SCALE^2 / k), feature j's row divided by ``max(1, max_i |z_ij|)``);
    returns the state.

    A spectral start (Algorithm 1's line 2 on all the data) is what the one-pass theory
    uses, but on one-hot designs its matrix is dominated by the diagonal and the start can be
    far worse than the mean; from a small random start the first pass already improves on
    the mean, and the passes never go back.
    """
    rng = np.random.default_rng(rng)
    d = X.shape[1]
    std = Standardizer.from_data(X) if standardize else Standardizer.identity(d)
    scale = INIT_SCALE / np.sqrt(rank)
    U = scale * rng.standard_normal((d, rank))
    V = scale * rng.standard_normal((d, rank))
    big = 1.0 / np.maximum(1.0, _column_max(X, std))
    U *= big[:, None]
    V *= big[:, None]
    return onepass.OnePassState(
        w=np.zeros(d), U=U, V=V,
        b=float(np.mean(y)) if fit_intercept else 0.0, std=std,
        fit_intercept=bool(fit_intercept), n_batches=0, n_seen=0)


def _column_max(X, std: Standardizer) -> np.ndarray:
    """``max_i |z_ij|`` per feature of the standardized rows."""
    if sp.issparse(X):
        if std.is_identity:
            return np.asarray(abs(sp.csc_matrix(X)).max(axis=0).todense()).ravel()
        A = sp.csc_matrix(X)
        hi = np.asarray(A.max(axis=0).todense()).ravel()
        lo = np.asarray(A.min(axis=0).todense()).ravel()
        return np.maximum(np.abs(hi - std.mean), np.abs(lo - std.mean)) / std.scale
    A = np.asarray(X, dtype=np.float64)
    if A.shape[0] == 0:
        return np.zeros(A.shape[1])
    return np.max(np.abs((A - std.mean) / std.scale), axis=0)


def objective(state: onepass.OnePassState, X, y, l2: float):
    """``(objective, training RMSE)`` of the state on ``(X, y)`` (eq. (3) plus the ridge)."""
    r = residual(state, X, y)
    mse = float(np.mean(r * r))
    penalty = float(np.sum(state.w ** 2) + np.sum(state.U ** 2) + np.sum(state.V ** 2))
    return 0.5 * mse + 0.5 * l2 * penalty, float(np.sqrt(mse))


def residual(state: onepass.OnePassState, X, y) -> np.ndarray:
    """``y - b - Z w - A(M)`` for every row."""
    k = state.rank
    P = project(X, np.hstack([state.U, state.V, state.w[:, None]]), state.std)
    return y - state.b - P[:, 2 * k] - np.einsum("ij,ij->i", P[:, :k], P[:, k:2 * k])


def _half_operator(X, Q, std: Standardizer, fit_intercept: bool, ridge: float):
    """``theta = [w, vec(F), b] -> [Z w + rowsum((Z F) * Q) + b ; ridge [w, vec(F)]]``."""
    N, d = X.shape
    k = Q.shape[1]
    n_pen = d * (k + 1)
    n_par = n_pen + int(fit_intercept)

    def matvec(theta):
        theta = np.ravel(theta)
        A = np.empty((d, k + 1))
        A[:, 0] = theta[:d]
        A[:, 1:] = theta[d:n_pen].reshape(d, k)
        P = project(X, A, std)
        top = P[:, 0] + np.einsum("ij,ij->i", P[:, 1:], Q)
        if fit_intercept:
            top = top + theta[-1]
        return np.concatenate([top, ridge * theta[:n_pen]])

    def rmatvec(z):
        z = np.ravel(z)
        r = z[:N]
        G = np.empty((N, k + 1))
        G[:, 0] = r
        np.multiply(r[:, None], Q, out=G[:, 1:])
        S = std.unfold(np.asarray(X.T @ G), G.sum(axis=0))  # Z^T G, d x (k+1)
        out = np.empty(n_par)
        out[:d] = S[:, 0]
        out[d:n_pen] = S[:, 1:].ravel()
        out[:n_pen] += ridge * z[N:]
        if fit_intercept:
            out[-1] = r.sum()
        return out

    return LinearOperator((N + n_pen, n_par), matvec=matvec, rmatvec=rmatvec,
                          dtype=np.float64)


def one_pass(state: onepass.OnePassState, X, y, *, l2: float, timer=None) -> dict:
    """One ALS pass over all of ``(X, y)``: (b, w, U) with V fixed, then (b, w, V) with U
    fixed. Updates ``state`` in place; returns the row's values (``objective`` after the
    pass, ``train_rmse``, ``n_inner`` inner iterations: coordinate sweeps, or LSQR
    iterations on a standardized sparse design; ``n`` instances read)."""
    if sp.issparse(X) and not state.std.is_identity:
        return lsqr_pass(state, X, y, l2=l2, timer=timer)
    return coordinate_pass(state, X, y, l2=l2, timer=timer)


def columns(X, std: Standardizer):
    """The standardized rows Z of X as CSC arrays ``(indptr, indices, data, colsq)``
    (int64 indices, ``colsq`` the squared column norms), for :func:`coordinate_pass`.

    A sparse X with the identity scaling keeps its sparsity; a dense X is scaled and its
    zeros dropped. (A sparse X with a scaling would turn dense: :func:`one_pass` solves it
    with LSQR instead.)"""
    if sp.issparse(X):
        if not std.is_identity:
            raise ValueError("columns: a standardized sparse design is dense; use "
                             "lsqr_pass for it.")
        Zc = sp.csc_matrix(X, dtype=np.float64, copy=True)
    else:
        A = np.asarray(X, dtype=np.float64)
        if not std.is_identity:
            A = (A - std.mean) / std.scale
        Zc = sp.csc_matrix(A)
    Zc.sum_duplicates()
    Zc.eliminate_zeros()
    data = np.ascontiguousarray(Zc.data, dtype=np.float64)
    indptr = np.ascontiguousarray(Zc.indptr, dtype=np.int64)
    d = Zc.shape[1]
    colsq = np.bincount(np.repeat(np.arange(d), np.diff(indptr)), weights=data * data,
                        minlength=d).astype(np.float64)
    return indptr, np.ascontiguousarray(Zc.indices, dtype=np.int64), data, colsq


def coordinate_pass(state: onepass.OnePassState, X, y, *, l2: float, timer=None,
                    inner_tol: float | None = None, inner_max: int | None = None,
                    halves: bool = True) -> dict:
    """One ALS pass by exact coordinate minimization, O(nnz(Z) k) per sweep.

    The residual and the projections ``Z U``, ``Z V`` are built once (phase ``caches``),
    then kept up to date over each coordinate's column by the sweeps. By default
    (``halves=True``) the pass sweeps (b, w, U) with V fixed, then (b, w, V) with U fixed
    (phases ``solve_U``, ``solve_V``; :func:`._kernels.cd_sweep`), each half at most
    ``inner_max`` times (default :data:`INNER_MAX_ITER`), fewer once a sweep lowers the
    objective by less than ``inner_tol`` (default :data:`INNER_TOL`) of it; with many
    sweeps each half reaches its unique minimizer, the result of an exact
    :func:`lsqr_pass`. ``halves=False`` sweeps all of (w, U, V) at once, both projections
    kept (:func:`._kernels.cd_full_sweep`, phase ``sweep``), as Rendle's ALS for FMs does;
    per unit of work it lowered the loss as fast as the halves on MovieLens 100K
    (bench/gfm/gfm_als.py). Same state, problem and row as :func:`lsqr_pass`."""
    from ._kernels import cd_full_sweep, cd_sweep

    phase = timer or (lambda name: contextlib.nullcontext())
    inner_tol = INNER_TOL if inner_tol is None else float(inner_tol)
    inner_max = max(1, INNER_MAX_ITER if inner_max is None else int(inner_max))
    N, d = X.shape
    lam = float(N * l2)
    fit_b = bool(state.fit_intercept)
    n_inner = 0
    with phase("caches"):
        cols = columns(X, state.std)
        w = np.array(state.w, dtype=np.float64)
        U = np.array(state.U, dtype=np.float64, order="C")
        V = np.array(state.V, dtype=np.float64, order="C")
        b = np.array([state.b if fit_b else 0.0])
        k = U.shape[1]
        PS = project(X, np.hstack([U, V, w[:, None]]), state.std).T  # one pass over X
        PT, ST = np.ascontiguousarray(PS[:k]), np.ascontiguousarray(PS[k:2 * k])
        r = np.asarray(y, dtype=np.float64) - b[0] - PS[2 * k] - np.einsum("ij,ij->j",
                                                                           PT, ST)

    def total():
        return 0.5 * (float(r @ r) + lam * float(w @ w + np.sum(U * U) + np.sum(V * V)))

    if halves:
        for free, name in ((U, "solve_U"), (V, "solve_V")):
            with phase(name):
                GT = ST if name == "solve_U" else np.ascontiguousarray(
                    project(X, U, state.std).T)
                obj = total()
                for _ in range(inner_max):
                    dec = cd_sweep(*cols, r, GT, free, w, b, lam, fit_b)
                    n_inner += 1
                    if not dec > inner_tol * obj:  # also stops on a NaN decrease
                        break
                    obj -= dec
    else:
        with phase("sweep"):
            obj = total()
            for _ in range(inner_max):
                dec = cd_full_sweep(*cols, r, PT, ST, U, V, w, b, lam, fit_b)
                n_inner += 1
                if not dec > inner_tol * obj:
                    break
                obj -= dec
    state.w, state.U, state.V = w, U, V
    if fit_b:
        state.b = float(b[0])
    state.n_batches += 1
    state.n_seen += N
    with phase("objective"):  # from the residual kept through the sweeps
        mse = float(r @ r) / N
        penalty = float(w @ w + np.sum(U * U) + np.sum(V * V))
    return {"n": N, "objective": 0.5 * mse + 0.5 * l2 * penalty, "rmse": float(np.sqrt(mse)),
            "n_inner": n_inner}


def lsqr_pass(state: onepass.OnePassState, X, y, *, l2: float, timer=None,
              inner_tol: float = LSQR_TOL, inner_max: int = LSQR_MAX_ITER) -> dict:
    """One ALS pass with each half solved by LSQR on a matrix-free operator (the solver
    before :func:`coordinate_pass`, and the one for a standardized sparse design, whose Z
    is dense). Same state, problem and row as :func:`coordinate_pass`."""
    phase = timer or (lambda name: contextlib.nullcontext())
    N, d = X.shape
    k = state.rank
    ridge = float(np.sqrt(N * l2))
    rhs = np.concatenate([y, np.zeros(d * (k + 1))])
    n_inner = 0
    for side, name in ((0, "solve_U"), (1, "solve_V")):
        with phase(name):
            fixed = state.V if side == 0 else state.U
            Q = project(X, fixed, state.std)
            op = _half_operator(X, Q, state.std, state.fit_intercept, ridge)
            x0 = np.concatenate([state.w, (state.U if side == 0 else state.V).ravel()] +
                                ([[state.b]] if state.fit_intercept else []))
            sol = lsqr(op, rhs, x0=x0, atol=inner_tol, btol=inner_tol, iter_lim=inner_max)
            theta = sol[0]
            n_inner += int(sol[2])
            state.w = theta[:d].copy()
            new = np.ascontiguousarray(theta[d:d * (k + 1)].reshape(d, k))
            if side == 0:
                state.U = new
            else:
                state.V = new
            if state.fit_intercept:
                state.b = float(theta[-1])
    state.n_batches += 1
    state.n_seen += N
    with phase("objective"):
        obj, rmse = objective(state, X, y, l2)
    return {"n": N, "objective": obj, "rmse": rmse, "n_inner": n_inner}
