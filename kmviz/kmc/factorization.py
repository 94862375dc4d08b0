"""The thesis's baselines: kernel-regularized factorization (ALS, SGD) and nuclear-norm PG.

Kernel MC (3.28), with ``A_w = K_row^-1`` and ``A_h = K_col^-1``::

    min_{W (N x p), H (L x p)}  ||P_Omega(M - W H^T)||_F^2 + mu Tr(W^T A_w W) + mu Tr(H^T A_h H)

:class:`KernelALS` is the corrected Algorithm 2 (see the digest §3.4: the printed algorithm has
wrong indices and drops mu on the cross term). One sweep, Gauss-Seidel order::

    w_n <- (sum_{j in Omega_n} h_j h_j^T + mu (A_w)_nn I)^-1
           (sum_{j in Omega_n} M_nj h_j - mu sum_{i != n} (A_w)_ni w_i)

and the same for every h_l. A row without observations gets the kernel prior's conditional
mean ``-(A_w)_nn^-1 sum_{i != n} (A_w)_ni w_i``: ALS extrapolates through the kernel (with
``K = I`` it is 0, and K = 2I gives the base MC (3.23)).

:class:`KernelSGD` runs per-entry SGD on the same objective (KPMF-style, the thesis's "SGD
[24]"): the regularizer of row i is shared among its |Omega_i| entries.

:class:`NuclearPG` is proximal gradient on (2.15)/(2.51)::

    min_F 1/2 ||P_Omega(F) - M||_F^2 + mu ||F||_* + alpha Tr(F^T L F)
    F_k = S_{t mu_k}(F_{k-1} - t (P_Omega(F_{k-1}) - M + 2 alpha L F_{k-1}))      (2.24), (2.53)

with the matrix shrinkage operator ``S_tau(Z) = U max(Sigma - tau, 0) V^T`` (the thesis's
(2.23) prints the shrink as mu; it is t mu) and the mu schedules of Table 2.1 (conventional PG,
FPC, SPG, VPG), started from zero or from the graph-based initialization (2.42)-(2.45).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla

SCHEDULES = ("pg", "fpc", "spg", "vpg")
#: Table 2.2 (synthetic column): (eta, eps) of each schedule; eps is the switching tolerance.
SCHEDULE_DEFAULTS = {"pg": (1.0, 0.0), "fpc": (0.75, 1e-4), "spg": (0.65, 0.06),
                     "vpg": (0.85, 0.0)}


def _by_row(major, minor, vals, n):
    """Per ``major`` index: the ``minor`` indices and values (lists of arrays)."""
    order = np.argsort(major, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(major, minlength=n), out=ptr[1:])
    mi, va = minor[order], vals[order]
    return [mi[ptr[k]:ptr[k + 1]] for k in range(n)], [va[ptr[k]:ptr[k + 1]] for k in range(n)]


def cholesky_condition(c) -> float:
    """A cheap lower estimate of cond(K) from its Cholesky factor: (max L_ii / min L_ii)^2."""
    d = np.abs(np.diag(c[0]))
    return float((d.max() / max(d.min(), 1e-300)) ** 2) if d.size else 1.0


def kernel_inverse(K, name="kernel", *, return_condition=False):
    """``K^-1`` of a positive definite kernel by Cholesky; a clear error if it is singular.

    With ``return_condition``, also a lower estimate of cond(K) (:func:`cholesky_condition`):
    diffusion kernels are numerically singular (cond ~1e15 at eta = 2 on the thesis's
    graphs), and ALS / SGD on (3.28) with such an inverse fit badly (NMSE ~1 where
    ``jitter=1e-4`` gives 0.01).
    """
    try:
        c = sla.cho_factor(K, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        from ..exceptions import DataValueError

        raise DataValueError(
            f"{name} is singular, and kernel MC by ALS/SGD needs its inverse (3.28)",
            expected="a positive definite kernel",
            fix="pass jitter= (e.g. 1e-6 times its largest diagonal entry) to add to its "
                "diagonal, or use method='kkmcex', which needs no inverse") from None
    Ainv = sla.cho_solve(c, np.eye(K.shape[0]), check_finite=False)
    Ainv = 0.5 * (Ainv + Ainv.T)
    return (Ainv, cholesky_condition(c)) if return_condition else Ainv


def init_factors(rng, N, L, p, m):
    """Random factors whose product has about the scale of the data (the thesis starts ALS
    and SGD from "a product of two random factor matrices")."""
    rms = float(np.sqrt(np.mean(m * m))) if m.size else 1.0
    scale = math.sqrt(max(rms, 1e-12) / math.sqrt(p)) * 0.1
    return scale * rng.standard_normal((N, p)), scale * rng.standard_normal((L, p))


def kmc_objective(rows, cols, m, W, H, AW, AH, mu):
    """(3.28) at (W, H), given ``AW = A_w W`` and ``AH = A_h H``; also the data SSE."""
    e = m - np.einsum("ij,ij->i", W[rows], H[cols])
    sse = float(e @ e)
    return sse + mu * float(np.sum(W * AW) + np.sum(H * AH)), sse


def kmc_gradient(rows, cols, m, W, H, Aw, Ah, mu):
    """Gradient of (3.28): ``-2 P(M - W H^T) H + 2 mu A_w W`` and the same for H."""
    N, L = W.shape[0], H.shape[0]
    e = m - np.einsum("ij,ij->i", W[rows], H[cols])
    R = np.zeros((N, L))
    R[rows, cols] = e
    return -2.0 * R @ H + 2.0 * mu * Aw @ W, -2.0 * R.T @ W + 2.0 * mu * Ah @ H


class KernelALS:
    """The corrected Algorithm 2 on (3.28): one Gauss-Seidel sweep per :meth:`step`."""

    def __init__(self, rows, cols, m, N, L, Aw, Ah, mu, rank, rng):
        self.rows, self.cols, self.m = rows, cols, m
        self.Aw, self.Ah, self.mu = Aw, Ah, float(mu)
        self.W, self.H = init_factors(rng, N, L, rank, m)
        self.AW = Aw @ self.W
        self.AH = Ah @ self.H
        self.row_idx, self.row_val = _by_row(rows, cols, m, N)
        self.col_idx, self.col_val = _by_row(cols, rows, m, L)

    @staticmethod
    def _half_sweep(X, AX, A, Y, idx, val, mu):
        p = X.shape[1]
        eye = np.eye(p)
        for n in range(X.shape[0]):
            j = idx[n]
            Yn = Y[j]
            a = A[n, n]
            G = Yn.T @ Yn + (mu * a) * eye
            rhs = Yn.T @ val[n] - mu * (AX[n] - a * X[n])
            new = np.linalg.solve(G, rhs)
            delta = new - X[n]
            X[n] = new
            AX += np.outer(A[:, n], delta)

    def step(self):
        self._half_sweep(self.W, self.AW, self.Aw, self.H, self.row_idx, self.row_val, self.mu)
        self._half_sweep(self.H, self.AH, self.Ah, self.W, self.col_idx, self.col_val, self.mu)
        # refresh the running products against drift (O(N^2 p + L^2 p), as the sweep)
        self.AW = self.Aw @ self.W
        self.AH = self.Ah @ self.H

    def objective(self):
        return kmc_objective(self.rows, self.cols, self.m, self.W, self.H, self.AW, self.AH,
                             self.mu)

    def gradient(self):
        return kmc_gradient(self.rows, self.cols, self.m, self.W, self.H, self.Aw, self.Ah,
                            self.mu)


class KernelSGD:
    """Per-entry SGD on (3.28) (KPMF-style), one epoch over the shuffled entries per step.

    Rows or columns without observations are never visited; :meth:`factors` gives them the
    kernel prior's conditional mean given the others (the minimizer of (3.28) over them).
    """

    def __init__(self, rows, cols, m, N, L, Aw, Ah, mu, rank, rng, learning_rate=None):
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.cols = np.ascontiguousarray(cols, dtype=np.int64)
        self.m = np.ascontiguousarray(m, dtype=np.float64)
        self.Aw = np.ascontiguousarray(Aw)
        self.Ah = np.ascontiguousarray(Ah)
        self.mu = float(mu)
        self.rng = rng
        self.W, self.H = init_factors(rng, N, L, rank, m)
        self.AW = self.Aw @ self.W
        self.AH = self.Ah @ self.H
        self.row_count = np.maximum(np.bincount(self.rows, minlength=N), 1).astype(np.float64)
        self.col_count = np.maximum(np.bincount(self.cols, minlength=L), 1).astype(np.float64)
        rms = float(np.sqrt(np.mean(self.m ** 2))) if self.m.size else 1.0
        self.lr = float(learning_rate) if learning_rate is not None else 0.05 / max(rms, 1e-12)
        self.known_rows = np.bincount(self.rows, minlength=N) > 0
        self.known_cols = np.bincount(self.cols, minlength=L) > 0

    def step(self):
        from ._kernels import sgd_factor_epoch

        order = self.rng.permutation(self.rows.shape[0]).astype(np.int64)
        sgd_factor_epoch(self.rows, self.cols, self.m, order, self.W, self.H, self.Aw,
                         self.Ah, self.AW, self.AH, self.row_count, self.col_count, self.mu,
                         self.lr)
        self.AW = self.Aw @ self.W
        self.AH = self.Ah @ self.H

    def objective(self):
        return kmc_objective(self.rows, self.cols, self.m, self.W, self.H, self.AW, self.AH,
                             self.mu)

    def factors(self):
        """(W, H) with unvisited rows/columns set to the prior's conditional mean."""
        return (conditional_fill(self.W, self.Aw, self.known_rows),
                conditional_fill(self.H, self.Ah, self.known_cols))


def conditional_fill(X, A, known):
    """Rows of X outside ``known`` replaced by ``-A_cc^-1 A_co X_o`` (Gaussian prior with
    precision A: the conditional mean of the unknown rows given the known ones)."""
    if known.all() or not known.any():
        return X.copy() if known.all() else np.zeros_like(X)
    c = ~known
    out = X.copy()
    Acc = A[np.ix_(c, c)]
    Aco = A[np.ix_(c, known)]
    out[c] = -np.linalg.solve(Acc, Aco @ X[known])
    return out


# ----------------------------------------------------------------------------- PG
def shrink(Z, tau):
    """The matrix shrinkage operator ``S_tau(Z)`` (prox of ``tau ||.||_*``, (2.21)-(2.23)).

    Returns ``(F, singular values of Z, singular values of F)``; every singular value of Z
    is lowered by exactly tau (and clipped at 0).
    """
    U, sv, Vt = sla.svd(Z, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    new = np.maximum(sv - tau, 0.0)
    k = int(np.count_nonzero(new))
    F = (U[:, :k] * new[:k]) @ Vt[:k]
    return F, sv, new


def graph_init(M, mask, A, P):
    """The graph-based initialization (2.42)-(2.45): ``F_0 = P_Omega^c(Q_0 C_0) + M``.

    ``Q_0`` holds the P leading eigenvectors of the (row) adjacency A; column l's coefficients
    are the least-squares fit to its observed rows (minimum-norm when a column has fewer than
    P observations, where (2.45) is singular).
    """
    lam, Q = np.linalg.eigh(A)
    Q0 = Q[:, np.argsort(lam)[::-1][:P]]
    F0 = M.copy()
    for l in range(M.shape[1]):
        obs = mask[:, l]
        if not obs.any():
            continue
        c, *_ = np.linalg.lstsq(Q0[obs], M[obs, l], rcond=None)
        fill = Q0 @ c
        F0[~obs, l] = fill[~obs]
    return F0


class NuclearPG:
    """Proximal gradient on (2.15) / (2.51) with the mu schedules of Table 2.1, one
    iteration per :meth:`step`.

    ``schedule``: ``"pg"`` (fixed mu), ``"fpc"`` (switch when ``||F_k - F_k-1||^2 /
    ||F_k-1||^2 < eps``), ``"spg"`` (switch when the observed-entry error decreases by less
    than ``eps`` relative, or rises), ``"vpg"`` (``mu_k = max(mu_0 eta^k, mu)`` each
    iteration). Switching sets ``mu <- max(mu eta, mu_bar)``. Converged (ours; the thesis stops
    on an oracle NMSE change) when mu has reached mu_bar and ``||F_k - F_k-1||_F /
    ||F_k-1||_F < tol``.
    """

    def __init__(self, M, mask, mu, *, schedule="pg", mu0=None, decay=None, switch_tol=None,
                 step=None, lap=None, lap_weight=0.0, F0=None, tol=1e-6):
        self.M = M
        self.mask = mask
        self.mu_bar = float(mu)
        self.schedule = schedule
        eta, eps = SCHEDULE_DEFAULTS[schedule]
        self.eta = float(decay) if decay is not None else eta
        self.eps = float(switch_tol) if switch_tol is not None else eps
        self.mu0 = float(mu0) if mu0 is not None else 10.0 * self.mu_bar
        self.mu = self.mu_bar if schedule == "pg" else max(self.mu0, self.mu_bar)
        self.lap = lap
        self.alpha = float(lap_weight)
        if step is None:
            lip = 1.0
            if lap is not None and self.alpha > 0:
                lip += 2.0 * self.alpha * float(sla.eigvalsh(
                    lap, subset_by_index=[lap.shape[0] - 1, lap.shape[0] - 1])[0])
            step = 1.0 / lip
        self.t = float(step)
        self.F = np.zeros_like(M) if F0 is None else np.array(F0, dtype=np.float64)
        self.e_M = self._observed_error(self.F)
        self.tol = float(tol)
        self.k = 0
        self.converged = False
        self.n_switch = 0
        self.last = {}

    def _observed_error(self, F):
        D = np.where(self.mask, F - self.M, 0.0)
        return float(np.sum(D * D))

    def step(self):
        F_prev = self.F
        grad = np.where(self.mask, F_prev - self.M, 0.0)
        if self.lap is not None and self.alpha > 0:
            grad = grad + 2.0 * self.alpha * (self.lap @ F_prev)
        mu_used = self.mu
        F, sv_in, sv_out = shrink(F_prev - self.t * grad, self.t * mu_used)
        self.k += 1
        e_M = self._observed_error(F)
        dF = F - F_prev
        change2 = float(np.sum(dF * dF))
        norm2 = float(np.sum(F_prev * F_prev))
        rel2 = change2 / norm2 if norm2 > 0 else (0.0 if change2 == 0 else math.inf)
        # the schedule (Table 2.1)
        switch = False
        if self.schedule == "fpc":
            switch = rel2 < self.eps
        elif self.schedule == "spg":
            switch = (self.e_M - e_M) / max(self.e_M, 1e-300) < self.eps
        elif self.schedule == "vpg":
            self.mu = max(self.mu0 * self.eta ** self.k, self.mu_bar)
        if switch and self.mu > self.mu_bar:
            self.mu = max(self.mu * self.eta, self.mu_bar)
            self.n_switch += 1
        at_bar = mu_used <= self.mu_bar * (1 + 1e-12)
        self.converged = at_bar and math.sqrt(rel2) < self.tol
        self.F = F
        self.e_M = e_M
        nuc = float(np.sum(sv_out))
        obj = 0.5 * e_M + mu_used * nuc
        if self.lap is not None and self.alpha > 0:
            obj += self.alpha * float(np.sum(F * (self.lap @ F)))
        self.last = dict(objective=obj, mu=mu_used, rank=int(np.count_nonzero(sv_out)),
                         nuclear_norm=nuc, rel_change=math.sqrt(rel2), observed_sse=e_M,
                         shrink=self.t * mu_used)
        return self.last
