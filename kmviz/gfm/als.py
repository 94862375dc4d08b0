"""The eq. (3) baseline as a solver of :class:`~kmviz.gfm.GeneralizedFM` (``solver="als"``).

Alternating least squares on all the training data, one pass per outer iteration::

    min_{b, w, U, V}  1/(2N) ||y - b - Z w - A(U V^T)||^2 + l2/2 (||w||^2 + ||U||_F^2 + ||V||_F^2)

with Z the (implicitly) standardized rows. A pass solves two linear least-squares problems:
(b, w, U) with V fixed, then (b, w, V) with U fixed; in each the quadratic term
``A(U V^T)_i = (z_i^T U)(z_i^T V)`` is linear in the free factor. Each is solved by LSQR on a
matrix-free operator, warm-started at the current values, with the ridge as extra rows
``sqrt(N l2) I`` (so the warm start and the penalty agree; LSQR's own ``damp`` would shrink
the correction instead of the coefficients). LSQR's residual norm never increases from its
starting point, so the objective is non-increasing over passes even when LSQR stops early.

The state is the one-pass state (:class:`~kmviz.gfm.onepass.OnePassState`: w, U, V, b and the
scaling), so prediction, the fitted attributes and saved runs are the same for both solvers.
Unlike Algorithm 1 it reads every instance on every pass and makes no assumption about the
distribution of x: it is the solver for real data (one-hot FM designs, skewed features).

The start is small random factors (:func:`start`); V = 0 would leave U undetermined in
the first half-pass.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import LinearOperator, lsqr

from . import onepass
from .operators import Standardizer, project

#: LSQR's stopping tolerances (atol = btol) and iteration cap per half-pass. The sub-problems
#: are ridge-regularized, so LSQR converges in a few dozen iterations on the data we measured
#: (bench/gfm_peers.py); the cap bounds a pass's time on ill-conditioned data.
INNER_TOL = 1e-6
INNER_MAX_ITER = 50
#: Standard deviation (times sqrt(k)) of the random start of U and V, as FM solvers do
#: (libFM's init_stdev is 0.1).
INIT_SCALE = 0.1


def start(X, y, rank: int, *, standardize: bool, fit_intercept: bool, rng=None):
    """The start of the passes: ``b`` the mean of y (or 0), ``w = 0`` and small random U, V
    (entries N(0, INIT_SCALE^2 / k)); returns the state.

    A spectral start (Algorithm 1's line 2 on all the data) is what the one-pass theory
    uses, but on one-hot designs its matrix is dominated by the diagonal and the start can be
    far worse than the mean; from a small random start the first pass already improves on
    the mean, and the passes never go back.
    """
    rng = np.random.default_rng(rng)
    d = X.shape[1]
    std = Standardizer.from_data(X) if standardize else Standardizer.identity(d)
    scale = INIT_SCALE / np.sqrt(rank)
    return onepass.OnePassState(
        w=np.zeros(d), U=scale * rng.standard_normal((d, rank)),
        V=scale * rng.standard_normal((d, rank)),
        b=float(np.mean(y)) if fit_intercept else 0.0, std=std,
        fit_intercept=bool(fit_intercept), n_batches=0, n_seen=0)


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
    pass, ``train_rmse``, ``n_inner`` LSQR iterations, ``n`` instances read)."""
    import contextlib

    phase = timer or (lambda name: contextlib.nullcontext())
    N, d = X.shape
    k = state.rank
    ridge = float(np.sqrt(N * l2))
    rhs = np.concatenate([y, np.zeros(d * (k + 1))])
    n_inner = 0
    for side, name in ((0, "solve_U"), (1, "solve_V")):
        with phase(name):
            fixed = state.V if side == 0 else state.U
            free = state.U if side == 0 else state.V
            Q = project(X, fixed, state.std)
            op = _half_operator(X, Q, state.std, state.fit_intercept, ridge)
            x0 = np.concatenate([state.w, free.ravel()] +
                                ([[state.b]] if state.fit_intercept else []))
            sol = lsqr(op, rhs, x0=x0, atol=INNER_TOL, btol=INNER_TOL,
                       iter_lim=INNER_MAX_ITER)
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
