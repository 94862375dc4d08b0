"""Baselines for the one-pass gFM: alternating least squares on eq. (3) and exact least squares.

- :func:`als_fit`: the usual non-convex approach the paper contrasts with (Sec. 2, eq. (3)):
  ``min_{w,U,V} 1/(2N) ||y - X w - A(U V^T)||^2`` over ALL the data, alternating two linear
  least-squares problems (fix V: linear in (w, U); fix U: linear in (w, V)), each solved by
  LSQR on a matrix-free operator and warm-started; several passes. No guarantees (the paper's
  point), a good spectral start by default.
- :func:`exact_ls_fit`: the convex oracle for small d: ordinary least squares on all d
  first-order and d(d+1)/2 second-order features ``x_a x_b`` (a <= b). It needs
  N >= d + d(d+1)/2 instances and, with explicit features, O(N d^2) memory;
  ``method="lsqr"`` solves the same problem matrix-free (O(d^2 + N d) memory, products
  ``X M X^T`` row sums and ``X^T diag(r) X``).

Both take rows as instances (N x d) and return a :class:`BaselineResult` whose ``trace``
has one row per pass (ALS) or one row (exact), with the recovery errors when ``truth`` is
given.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh, lsqr

from .recovery import as_truth, recovery_errors


@dataclass
class BaselineResult:
    """A fitted baseline: ``y ≈ b + X w + x^T M x``.

    Attributes
    ----------
    w : ndarray (d,)
    U, V : ndarray (d, k) or None
        Factors (ALS; ``M = (U V^T + V U^T)/2``); None for the exact fit.
    M : ndarray (d, d) or None
        Dense M (exact fit only).
    b : float
    rows : list of dict
        Per pass: ``pass``, ``wall_s`` (cumulative fitting time, the rows' own bookkeeping
        left out), ``objective``, ``train_rmse``,
        ``n_inner`` (LSQR iterations), recovery errors with a truth.
    method : str
    """

    w: np.ndarray
    U: np.ndarray | None
    V: np.ndarray | None
    M: np.ndarray | None
    b: float
    rows: list = field(default_factory=list)
    method: str = ""

    def predict(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if self.M is not None:
            quad = np.einsum("ij,ij->i", X @ self.M, X)
        else:
            quad = np.einsum("ij,ij->i", X @ self.U, X @ self.V)
        return self.b + X @ self.w + quad


# ----------------------------------------------------------------------------- ALS
def _sub_problem(X, Q, fit_intercept):
    """Operator ``(w, U, b) -> X w + rowsum((X U) * Q) + b`` and its adjoint, Q = X V fixed."""
    N, d = X.shape
    k = Q.shape[1]
    n_par = d * (k + 1) + int(fit_intercept)

    def matvec(theta):
        theta = np.ravel(theta)
        w = theta[:d]
        U = theta[d:d * (k + 1)].reshape(d, k)
        out = X @ w + np.einsum("ij,ij->i", X @ U, Q)
        if fit_intercept:
            out = out + theta[-1]
        return out

    def rmatvec(r):
        r = np.ravel(r)
        G = np.empty((N, k + 1))
        G[:, 0] = r
        G[:, 1:] = r[:, None] * Q
        S = X.T @ G
        out = np.empty(n_par)
        out[:d] = S[:, 0]
        out[d:d * (k + 1)] = S[:, 1:].ravel()
        if fit_intercept:
            out[-1] = r.sum()
        return out

    return LinearOperator((N, n_par), matvec=matvec, rmatvec=rmatvec, dtype=np.float64)


def als_fit(X, y, rank: int, *, n_passes: int = 10, init: str = "spectral",
            fit_intercept: bool = False, inner_tol: float = 1e-10, inner_max_iter: int = 100,
            random_state=None, truth=None, callback=None) -> BaselineResult:
    """Alternating least squares on eq. (3) over all of (X, y), ``n_passes`` sweeps.

    Parameters
    ----------
    X : ndarray (N, d)
    y : ndarray (N,)
    rank : int
        k, the columns of U and V.
    n_passes : int
        Sweeps; each solves for (w, U) with V fixed, then for (w, V) with U fixed.
    init : {"spectral", "random"}
        "spectral": U = top-k eigenvectors by magnitude of ``(1/2N) A'(y) - (1/2N)(1^T y) I``
        (the paper's initialization on all the data), ``V = U diag(ritz values)``, w = 0;
        "random": small Gaussian U, V.
    inner_tol, inner_max_iter : LSQR's atol = btol and iteration cap per sub-problem.
    truth : optional
        As in :meth:`GeneralizedFM.fit`: adds the recovery errors to each row.
    callback : callable, optional
        ``callback(row)`` after each sweep; returning False stops.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    N, d = X.shape
    k = int(rank)
    rng = np.random.default_rng(random_state)
    truth = None if truth is None else as_truth(truth, d=d)
    t0 = time.perf_counter()
    b = float(y.mean()) if fit_intercept else 0.0
    if init == "spectral":
        r = y - b
        h2 = float(r.mean())
        op = LinearOperator(
            (d, d), dtype=np.float64,
            matvec=lambda v: X.T @ (r * (X @ np.ravel(v))) / (2.0 * N) - 0.5 * h2 * np.ravel(v))
        vals, U = eigsh(op, k=k, which="LM", v0=rng.standard_normal(d), tol=1e-6)
        V = U * vals
    elif init == "random":
        U = rng.standard_normal((d, k)) / np.sqrt(d)
        V = rng.standard_normal((d, k)) / np.sqrt(d)
    else:
        raise ValueError(f"init must be 'spectral' or 'random'; got {init!r}.")
    w = np.zeros(d)
    rows = []
    booked = [0.0]  # seconds spent on the rows' bookkeeping, left out of wall_s

    def record(p, n_inner):
        start = time.perf_counter()
        pred = b + X @ w + np.einsum("ij,ij->i", X @ U, X @ V)
        mse = float(np.mean((y - pred) ** 2))
        row = {"pass": p, "wall_s": start - t0 - booked[0], "objective": 0.5 * mse,
               "train_rmse": float(np.sqrt(mse)), "n_inner": int(n_inner)}
        if truth is not None:
            row.update(recovery_errors(truth, w, U, V))
        rows.append(row)
        booked[0] += time.perf_counter() - start
        return row

    for p in range(1, n_passes + 1):
        n_inner = 0
        for side in (0, 1):  # 0: solve (w, U) with V fixed; 1: (w, V) with U fixed
            fixed = V if side == 0 else U
            free = U if side == 0 else V
            op = _sub_problem(X, X @ fixed, fit_intercept)
            x0 = np.concatenate([w, free.ravel()] + ([[b]] if fit_intercept else []))
            sol = lsqr(op, y, x0=x0, atol=inner_tol, btol=inner_tol, iter_lim=inner_max_iter)
            theta, n_inner = sol[0], n_inner + int(sol[2])
            w = theta[:d].copy()
            new = theta[d:d * (k + 1)].reshape(d, k).copy()
            if fit_intercept:
                b = float(theta[-1])
            if side == 0:
                U = new
            else:
                V = new
        row = record(p, n_inner)
        if callback is not None and callback(row) is False:
            break
    return BaselineResult(w=w, U=U, V=V, M=None, b=b, rows=rows, method="als")


# ----------------------------------------------------------------------------- exact LS
def second_order_features(X) -> np.ndarray:
    """``[x, x_a x_b for a <= b]`` per row: N x (d + d(d+1)/2), the pairs in np.triu order."""
    X = np.asarray(X, dtype=np.float64)
    a, b = np.triu_indices(X.shape[1])
    return np.hstack([X, X[:, a] * X[:, b]])


def _unpack(theta, d):
    """(w, M) from [w, theta_ab (a <= b)] with ``M_aa = theta_aa``, ``M_ab = theta_ab / 2``."""
    a, b = np.triu_indices(d)
    M = np.zeros((d, d))
    M[a, b] = theta[d:d + a.size]
    M = 0.5 * (M + M.T)  # off the diagonal theta_ab / 2 on both sides; diagonal theta_aa
    return theta[:d].copy(), M


def exact_ls_fit(X, y, *, fit_intercept: bool = False, method: str = "auto",
                 tol: float = 1e-12, max_iter: int = 2000, truth=None) -> BaselineResult:
    """Least squares over all first- and second-order features (the convex oracle).

    Parameters
    ----------
    method : {"auto", "lstsq", "lsqr"}
        "lstsq": explicit N x (d + d(d+1)/2) features and LAPACK (O(N d^2) memory);
        "lsqr": the same problem matrix-free (``x^T M x`` as row sums of ``(X M) * X``, the
        adjoint ``X^T diag(r) X``), O(d^2 + N d) memory; "auto": lstsq up to d = 100.
    tol, max_iter : LSQR's atol = btol and iteration cap ("lsqr" only).

    Returns
    -------
    BaselineResult
        ``M`` dense (d x d); one row with ``wall_s``, ``train_rmse``, ``n_inner`` and the
        recovery errors when ``truth`` is given (from M's eigendecomposition).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    N, d = X.shape
    p = d + d * (d + 1) // 2 + int(fit_intercept)
    if method == "auto":
        method = "lstsq" if d <= 100 else "lsqr"
    t0 = time.perf_counter()
    n_inner = 0
    if method == "lstsq":
        F = second_order_features(X)
        if fit_intercept:
            F = np.hstack([F, np.ones((N, 1))])
        theta = np.linalg.lstsq(F, y, rcond=None)[0]
        del F
        w, M = _unpack(theta, d)
        b = float(theta[-1]) if fit_intercept else 0.0
    elif method == "lsqr":
        n_par = d + d * d + int(fit_intercept)

        def matvec(theta):
            theta = np.ravel(theta)
            Mv = theta[d:d + d * d].reshape(d, d)
            out = X @ theta[:d] + np.einsum("ij,ij->i", X @ Mv, X)
            return out + theta[-1] if fit_intercept else out

        def rmatvec(r):
            r = np.ravel(r)
            out = np.empty(n_par)
            out[:d] = X.T @ r
            out[d:d + d * d] = (X.T @ (r[:, None] * X)).ravel()
            if fit_intercept:
                out[-1] = r.sum()
            return out

        op = LinearOperator((N, n_par), matvec=matvec, rmatvec=rmatvec, dtype=np.float64)
        sol = lsqr(op, y, atol=tol, btol=tol, iter_lim=max_iter)
        theta, n_inner = sol[0], int(sol[2])
        w = theta[:d].copy()
        M = theta[d:d + d * d].reshape(d, d)
        M = 0.5 * (M + M.T)
        b = float(theta[-1]) if fit_intercept else 0.0
    else:
        raise ValueError(f"method must be 'auto', 'lstsq' or 'lsqr'; got {method!r}.")
    wall = time.perf_counter() - t0
    pred = b + X @ w + np.einsum("ij,ij->i", X @ M, X)
    row = {"pass": 1, "wall_s": wall, "objective": 0.5 * float(np.mean((y - pred) ** 2)),
           "train_rmse": float(np.sqrt(np.mean((y - pred) ** 2))), "n_inner": n_inner,
           "n_features": p, "underdetermined": bool(N < p)}
    if truth is not None:
        t = as_truth(truth, d=d)
        err_w = float(np.linalg.norm(t.w - w))
        diff = t.M - M
        err_M = float(np.linalg.norm(diff))
        err_spec = float(np.max(np.abs(np.linalg.eigvalsh(diff))))
        scale = t.w_norm + t.M_fro
        row.update({"err_w": err_w, "err_M": err_M, "err_M_spec": err_spec,
                    "eps": err_w + err_M, "eps_spec": err_w + err_spec,
                    "rel_err": (err_w + err_M) / scale if scale > 0 else float("nan")})
    return BaselineResult(w=w, U=None, V=None, M=M, b=b, rows=[row], method=f"exact_{method}")
