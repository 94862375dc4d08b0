"""KKMCEX (3.45)-(3.46) on dense side kernels, as functions.

``K_OO = S (K_col ⊗ K_row) S^T`` formed (:func:`kkmcex_gram`) and solved by a Cholesky,
float64 or float32 with float64 refinement (:func:`kkmcex_cholesky`); the matrix-free
product :class:`KronGram` (the vec trick) and the conjugate gradients on it
(:class:`KKMCEXConjugateGradient`); predictions at index pairs (:func:`kkmcex_predict`).
The base of :mod:`kmviz.kmc.krr`: the chunk size its modules share and the NMSE (3.68) every
method is scored by live here too. Notation in the package's docstring.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla

from ..rkhs import blas_threads, factor_threads

#: Observed entries per matrix cell below which :class:`KronGram` uses its sparse route (its
#: O(s (N + L)) serial Numba kernel against the O(N L (N + L)) of two BLAS products). Measured
#: by bench/kmc/kmc_timing.py on the shared 2-core box (two runs), best-of ratio dense / sparse:
#: 250 x 250: 7-600x at 1 %, 1.1-2x at 10 %, 0.6-0.8x at 25 %, 0.3-0.5x at 50 %; 500 x 500:
#: 17-60x, 1.7-2.3x, 0.6-4x, 0.4-1x. The sparse kernel's times vary far less under load.
SPARSE_DENSITY = 0.15
#: Rows of a gathered block (entries x features) kept under this many float64 values.
CHUNK_VALUES = 4_000_000


# ----------------------------------------------------------------------------- KKMCEX
#: ``precision="auto"`` of :func:`kkmcex_cholesky` factors in float32 from this many
#: observations up (below it the float64 factor takes well under a second).
MIXED_MIN_S = 2000
#: Refinement sweeps of the mixed-precision solve before it falls back to float64.
REFINE_MAX_ITER = 30


def _gathered(K, idx):
    """``K[:, idx]``, C-contiguous float64 (N x s): row ``K[r]`` restricted to the entries."""
    return np.ascontiguousarray(np.take(np.asarray(K, dtype=np.float64), idx, axis=1))


def kkmcex_gram(K_row, K_col, rows, cols, *, dtype=np.float64, lower_only=False,
                parallel=True) -> np.ndarray:
    """``K_OO = S K_f S^T`` (s x s): ``K_OO[k, k'] = K_row[rows[k], rows[k']] *
    K_col[cols[k], cols[k']]``.

    Row k is ``K_row[:, rows][rows[k]] * K_col[:, cols][cols[k]]``, the product of two
    contiguous rows of the gathered kernels (N x s and L x s), written by a Numba kernel
    (:func:`kmviz.kmc._kernels.kron_gram_fill`; a double ``np.take`` gather took 2 s at
    s = 6,250, this 0.05-0.15 s). ``lower_only`` fills only ``k' <= k`` (the rest is left
    uninitialized: what a lower Cholesky reads); ``dtype`` float32 halves memory and
    traffic.
    """
    from .._kernels import kron_gram_fill, kron_gram_fill_serial

    rows = np.ascontiguousarray(rows, dtype=np.int64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    s = rows.shape[0]
    out = np.empty((s, s), dtype=dtype)
    fill = kron_gram_fill if parallel else kron_gram_fill_serial
    fill(_gathered(K_row, rows), _gathered(K_col, cols), rows, cols, bool(lower_only), out)
    return out


def _kron_abs_row_sums(gram: "KronGram") -> np.ndarray:
    """``sum_k' |K_OO[k, k']|`` for every k, by one product with ``|K_row|``, ``|K_col|``
    (``|a b| = |a| |b|``), never forming K_OO."""
    g = KronGram(np.abs(gram.K_row), np.abs(gram.K_col), gram.rows, gram.cols)
    return g.matvec(np.ones(gram.s))


def kkmcex_cholesky(K_row, K_col, rows, cols, m, mu, *, ridge=None, precision="auto",
                    threads=None):
    """KKMCEX coefficients ``c = (K_OO + diag(ridge))^-1 m`` by a dense Cholesky.

    ``precision="double"``: one float64 LAPACK ``potrf`` of K_OO + mu I (s^3 / 3 flops).
    ``"mixed"``: the classic mixed-precision solve (LAPACK's ``dsposv``, Buttari et al.,
    2007): factor a float32 copy (half the memory, about twice the flop rate), then refine
    in float64 by conjugate gradients preconditioned with that factor, each residual taken
    by the exact float64 matrix-free product (:class:`KronGram`, O(s (N + L))). It stops at
    ``dsposv``'s backward-error test ``||r||_inf <= sqrt(s) eps ||A||_inf ||c||_inf``
    (eps = float64 rounding; ``||A||_inf`` from one product with the absolute kernels):
    the accuracy a float64 Cholesky guarantees. If the float32 matrix is not positive
    definite (mu below float32 resolution on an ill-conditioned K_OO) or the refinement
    stalls, it falls back to ``"double"``. ``"auto"``: mixed from :data:`MIXED_MIN_S`
    observations up.

    Both factor the lower triangle in place (``overwrite_a``, ``check_finite=False``),
    built in C order and handed to LAPACK as the upper triangle of its transpose, which is
    Fortran-ordered: no copy of the s x s matrix is made. The triangle is written by the
    serial Numba kernel (memory-bound: the parallel one measured no faster, and its thread
    pool would spin next to OpenBLAS's); the factor runs with ``threads`` BLAS threads
    (default :func:`factor_threads`).

    Returns
    -------
    c : ndarray (s,)
    info : dict
        ``precision`` used, ``refine_iter``, ``backward_error`` (``||r||_inf / (||A||_inf
        ||c||_inf)``), ``fallback`` (why float64 was needed, or ""), and the seconds of
        ``gram``, ``factor``, ``refine`` and ``solve``.
    """
    import time

    rows = np.ascontiguousarray(rows, dtype=np.int64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    b = np.asarray(m, dtype=np.float64)
    s = rows.shape[0]
    diag = np.full(s, float(mu)) if ridge is None else np.asarray(ridge, dtype=np.float64)
    if precision == "auto":
        precision = "mixed" if s >= MIXED_MIN_S else "double"
    threads = factor_threads(s) if threads is None else int(threads)
    info = {"precision": precision, "refine_iter": 0, "backward_error": math.nan,
            "fallback": "", "threads": threads, "gram": 0.0, "factor": 0.0, "refine": 0.0,
            "solve": 0.0}
    if precision == "mixed":
        c = _mixed_solve(K_row, K_col, rows, cols, b, diag, info, threads)
        if c is not None:
            return c, info
        info["precision"] = "double"
    t0 = time.perf_counter()
    A = kkmcex_gram(K_row, K_col, rows, cols, lower_only=True, parallel=False)
    info["gram"] += time.perf_counter() - t0
    return _double_solve(A, b, diag, threads, info), info


def _double_solve(A, b, diag, threads, info):
    """``(A + diag(diag))^-1 b`` by one float64 Cholesky of the lower triangle of the
    C-ordered s x s ``A`` (changed in place), with ``threads`` BLAS threads; adds the
    seconds of ``factor`` and ``solve`` to ``info``."""
    import time

    A[np.diag_indices_from(A)] += diag
    t1 = time.perf_counter()
    with blas_threads(threads):
        U = sla.cho_factor(A.T, lower=False, overwrite_a=True, check_finite=False)
    t2 = time.perf_counter()
    with blas_threads(threads):
        c = sla.cho_solve(U, b, check_finite=False)
    info["factor"] += t2 - t1
    info["solve"] += time.perf_counter() - t2
    return c


def _mixed_solve(K_row, K_col, rows, cols, b, diag, info, threads):
    """The float32-factor + float64-refinement path of :func:`kkmcex_cholesky`; None when it
    must fall back to float64 (``info["fallback"]`` says why)."""
    import time

    from scipy.linalg import lapack

    s = rows.shape[0]
    t0 = time.perf_counter()
    A = kkmcex_gram(K_row, K_col, rows, cols, dtype=np.float32, lower_only=True,
                    parallel=False)
    A[np.diag_indices_from(A)] += diag.astype(np.float32)
    t1 = time.perf_counter()
    with blas_threads(threads):
        U, fail = lapack.spotrf(A.T, lower=0, clean=0, overwrite_a=1)
    t2 = time.perf_counter()
    info["gram"] += t1 - t0
    info["factor"] += t2 - t1
    if fail != 0:
        info["fallback"] = (f"the float32 K_OO + mu I is not positive definite (spotrf info "
                            f"{fail}): mu is below float32 resolution for this K_OO")
        return None
    del A

    def psolve(r):
        with blas_threads(threads):
            z, _ = lapack.spotrs(U, r.astype(np.float32), lower=0)
        return z.astype(np.float64)

    gram = KronGram(K_row, K_col, rows, cols)
    eps = np.finfo(np.float64).eps
    a_inf = float(np.max(_kron_abs_row_sums(gram) + np.abs(diag)))
    tol = math.sqrt(s) * eps * a_inf

    def apply(v):
        return gram.matvec(v) + diag * v

    # PCG from x = U^-1 U^-T b (the float32 solution); with a float32 factor the
    # preconditioned spectrum is within about cond(A) eps32 of 1, so each sweep gains that
    # factor (a few sweeps at cond 1e4), and CG still converges when refinement alone would
    # stall (cond eps32 near 1)
    t3 = time.perf_counter()
    x = psolve(b)
    r = b - apply(x)
    z = psolve(r)
    p = z.copy()
    rz = float(r @ z)
    best = math.inf
    it = 0
    ok = False
    stall = 0
    while it < REFINE_MAX_ITER:
        rnorm = float(np.max(np.abs(r)))
        xnorm = float(np.max(np.abs(x)))
        if rnorm <= tol * max(xnorm, 1e-300) or rnorm == 0.0:
            ok = True
            break
        # a sweep that does not halve the residual twice in a row: the float32 factor is
        # too far from A for refinement to pay; fall back to float64
        stall = stall + 1 if rnorm > 0.5 * best else 0
        best = min(best, rnorm)
        if stall >= 2:
            break
        Ap = apply(p)
        alpha = rz / float(p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        it += 1
        if it % 10 == 0:  # the recurrence drifts from the true residual: re-anchor
            r = b - apply(x)
        z = psolve(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    if ok:  # confirm on the true residual
        r = b - apply(x)
        ok = float(np.max(np.abs(r))) <= 2 * tol * max(float(np.max(np.abs(x))), 1e-300) \
            or not np.any(r)
    info["refine"] += time.perf_counter() - t3
    info["refine_iter"] = it
    info["backward_error"] = float(np.max(np.abs(r))) / max(
        a_inf * float(np.max(np.abs(x))), 1e-300)
    if not ok:
        info["fallback"] = (f"mixed-precision refinement stopped at backward error "
                            f"{info['backward_error']:.2g} after {it} sweeps (K_OO + mu I too "
                            f"ill-conditioned for a float32 factor)")
        return None
    return x


def kkmcex_direct(K_row, K_col, rows, cols, m, mu, *, ridge=None, precision="auto"):
    """KKMCEX coefficients ``c = (K_OO + diag(ridge))^-1 m`` by a dense Cholesky.

    Parameters
    ----------
    K_row, K_col : ndarray (N, N), (L, L)
    rows, cols : int arrays (s,)
    m : float array (s,)
        Observed values (as given: center them first if wanted).
    mu : float > 0
        Ridge weight (3.40).
    ridge : float array (s,), optional
        A per-sample ridge instead of ``mu`` (the weighted-sampling form of §5.2.1:
        ``ridge = mu s p_k``, see :func:`weighted_ridge`).
    precision : {"auto", "mixed", "double"}, default="auto"
        See :func:`kkmcex_cholesky`.

    Returns
    -------
    c : ndarray (s,)
    """
    return kkmcex_cholesky(K_row, K_col, rows, cols, m, mu, ridge=ridge,
                           precision=precision)[0]


def weighted_ridge(mu, probabilities, s=None) -> np.ndarray:
    """Per-sample ridge ``mu s p_k`` of KKMCEX with the weighted sampling matrix of §5.2.1.

    With ``S = D S_0`` (``S_0`` binary, ``D = diag(1 / sqrt(s p_k))``), the estimate (5.14)
    ``K_f S^T (S K_f S^T + mu I)^-1 S m`` equals ``K_f S_0^T (S_0 K_f S_0^T + mu D^-2)^-1 S_0 m``:
    binary KKMCEX whose sample k is regularized by ``mu s p_k`` (high-leverage samples more).
    """
    p = np.asarray(probabilities, dtype=np.float64)
    s = p.shape[0] if s is None else int(s)
    return float(mu) * s * p


def kkmcex_objective(Kc, c, m, mu) -> float:
    """The KRR objective (3.40) ``||m - K_OO c||^2 + mu c^T K_OO c`` given ``Kc = K_OO c``."""
    r = m - Kc
    return float(r @ r + mu * (c @ Kc))


class KronGram:
    """The matrix-free ``K_OO = S (K_col ⊗ K_row) S^T`` of KKMCEX (the vec trick).

    ``matvec(v) = (K_row unvec(S^T v) K_col)[rows, cols]``; K_OO is never formed. Two routes:
    ``"dense"``, two BLAS products with the N x L matrix ``unvec(S^T v)``
    (``N^2 L + N L^2`` multiply-adds); ``"sparse"``, a Numba kernel that touches only the s
    observed entries (``s (N + L)``; :func:`kmviz.kmc._kernels.kron_gram_matvec`). ``"auto"``
    takes the sparse route below :data:`SPARSE_DENSITY` observed entries per cell. Memory is
    O(N L) either way. Repeated pairs (sampling with replacement) are summed in
    ``unvec(S^T v)``, as S^T does.
    """

    def __init__(self, K_row, K_col, rows, cols, *, route="auto"):
        self.K_row = np.ascontiguousarray(K_row, dtype=np.float64)
        self.K_col = np.ascontiguousarray(K_col, dtype=np.float64)
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.cols = np.ascontiguousarray(cols, dtype=np.int64)
        self.N, self.L = self.K_row.shape[0], self.K_col.shape[0]
        self.flat = self.rows + self.cols * self.N
        self.unique = np.unique(self.flat).shape[0] == self.flat.shape[0]
        if route == "auto":
            route = "sparse" if self.s < SPARSE_DENSITY * self.N * self.L else "dense"
        self.route = route
        if route == "sparse":
            self._order = np.lexsort((self.rows, self.cols)).astype(np.int64)
            self._colptr = np.zeros(self.L + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.cols, minlength=self.L), out=self._colptr[1:])
            self._TT = np.empty((self.L, self.N))
            self._T = np.empty((self.N, self.L))
        self.n_matvec = 0

    @property
    def s(self) -> int:
        return int(self.rows.shape[0])

    def unvec(self, v) -> np.ndarray:
        """``Gamma = unvec(S^T v)``, N x L (repeated pairs summed)."""
        if self.unique:
            G = np.zeros((self.N, self.L))
            G[self.rows, self.cols] = v
            return G
        flat = np.bincount(self.flat, weights=v, minlength=self.N * self.L)
        return np.ascontiguousarray(flat.reshape(self.L, self.N).T)

    def full(self, v) -> np.ndarray:
        """``K_row unvec(S^T v) K_col``: the whole N x L matrix (F_hat for v = c)."""
        G = self.unvec(v)
        if self.N <= self.L:
            return (self.K_row @ G) @ self.K_col
        return self.K_row @ (G @ self.K_col)

    def matvec(self, v) -> np.ndarray:
        self.n_matvec += 1
        if self.route == "sparse":
            from .._kernels import kron_gram_matvec

            out = np.empty(self.s)
            kron_gram_matvec(self.K_row, self.K_col, self.rows, self.cols, self._colptr,
                             self._order, np.ascontiguousarray(v, dtype=np.float64), self._TT,
                             self._T, out)
            return out
        return self.full(v)[self.rows, self.cols]

    def diagonal(self) -> np.ndarray:
        return self.K_row[self.rows, self.rows] * self.K_col[self.cols, self.cols]



def kkmcex_predict(K_row, K_col, rows, cols, c, users, items, *, K_row_users=None,
                   K_col_items=None, route="auto") -> np.ndarray:
    """``sum_k K_row[u, rows[k]] K_col[i, cols[k]] c[k]`` for each pair (u, i).

    With ``Gamma`` the N x L matrix holding c at the observed cells (repeats summed), the
    prediction is ``K_row[u] Gamma K_col[:, i]``. Picks the cheapest of: the users' rows
    first (``Y = K_row[U] Gamma`` for the distinct users U, then one length-L dot product
    per pair: ``s |U| + P L`` multiply-adds), the items' columns first (``s |I| + P N``),
    the per-pair sums (``P s``) and the whole matrix (``N^2 L + N L^2``, then a gather).
    ``K_row_users`` (P' x N rows of the row kernel for new entities, with ``users`` indexing
    them) and ``K_col_items`` let the same formula extrapolate to entities outside the
    kernels (§3.3). ``route`` ("rows", "cols", "pairs", "full") forces one way (tests).
    """
    import scipy.sparse as sp

    users = np.asarray(users, dtype=np.int64).ravel()
    items = np.asarray(items, dtype=np.int64).ravel()
    P = users.shape[0]
    s = c.shape[0]
    if P == 0:
        return np.zeros(0)
    Kr = K_row if K_row_users is None else K_row_users
    Kc = K_col if K_col_items is None else K_col_items
    N, L = K_row.shape[0], K_col.shape[0]
    U, u_at = np.unique(users, return_inverse=True)
    I, i_at = np.unique(items, return_inverse=True)
    costs = {"rows": s * U.size + P * L, "cols": s * I.size + P * N, "pairs": P * s}
    if K_row_users is None and K_col_items is None:
        costs["full"] = N * N * L + N * L * L
    if route == "auto":
        route = min(costs, key=costs.get)
    if route == "full":
        F = KronGram(K_row, K_col, rows, cols).full(c)
        return F[users, items]
    out = np.empty(P)
    if route == "pairs":
        chunk = max(1, CHUNK_VALUES // max(s, 1))
        for lo in range(0, P, chunk):
            u = users[lo:lo + chunk]
            i = items[lo:lo + chunk]
            B = np.take(np.take(Kr, u, axis=0), rows, axis=1)
            B *= np.take(np.take(Kc, i, axis=0), cols, axis=1)
            out[lo:lo + chunk] = B @ c
        return out
    gamma = sp.csr_matrix((np.asarray(c, dtype=np.float64), (rows, cols)), shape=(N, L))
    if route == "rows":  # Y = K_row[U] Gamma (|U| x L), then Y[u] . K_col[i]
        Y = np.asarray((gamma.T @ np.ascontiguousarray(Kr[U].T)).T)
        first, first_at, other = Y, u_at, np.asarray(Kc)
        second = items
    else:  # Z^T = K_col[I] Gamma^T (|I| x N), then K_row[u] . Z^T[i]
        Z = np.asarray((gamma @ np.ascontiguousarray(Kc[I].T)).T)
        first, first_at, other = Z, i_at, np.asarray(Kr)
        second = users
    chunk = max(1, CHUNK_VALUES // max(first.shape[1], 1))
    for lo in range(0, P, chunk):
        hi = min(P, lo + chunk)
        out[lo:hi] = np.einsum("pk,pk->p", first[first_at[lo:hi]], other[second[lo:hi]])
    return out


class KKMCEXConjugateGradient:
    """Preconditioned conjugate gradients on ``(K_OO + mu I) c = m``, one iteration per step.

    Matrix-free (:class:`KronGram`). Preconditioners: ``"eigen"``, ``P = Phi Phi^T + mu I``
    with the d leading Kronecker eigen features of the observed entries (applied by the
    Woodbury identity in O(s d); the preconditioned spectrum lies in
    ``[1, 1 + sigma_(d+1)(K_f) / mu]``); ``"jacobi"``, ``diag(K_OO) + mu``; ``"none"``.

    After each :meth:`step`: ``x`` (the coefficients), ``residual`` (``||m - (K_OO + mu I) x||``
    by the recurrence) and ``Kx`` (``K_OO x``, for the objective (3.40)).
    """

    def __init__(self, gram: KronGram, m, mu, *, preconditioner="eigen", features=None):
        self.A = gram
        self.b = np.asarray(m, dtype=np.float64)
        self.mu = float(mu)
        s = self.b.shape[0]
        self.bnorm = float(np.linalg.norm(self.b))
        self.kind = preconditioner
        if preconditioner == "eigen":
            Phi = features  # (s, d) observed rows of the eigen features
            G = Phi.T @ Phi
            G[np.diag_indices_from(G)] += self.mu
            self._Phi = Phi
            self._G = sla.cho_factor(G, lower=True, check_finite=False)
        elif preconditioner == "jacobi":
            self._dinv = 1.0 / (gram.diagonal() + self.mu)
        self.x = np.zeros(s)
        self.r = self.b.copy()
        self.Kx = np.zeros(s)
        self.z = self.apply_preconditioner(self.r)
        self.p = self.z.copy()
        self.rz = float(self.r @ self.z)
        self.n_iter = 0

    def apply_preconditioner(self, r):
        if self.kind == "eigen":
            t = sla.cho_solve(self._G, self._Phi.T @ r, check_finite=False)
            return (r - self._Phi @ t) / self.mu
        if self.kind == "jacobi":
            return r * self._dinv
        return r.copy()

    @property
    def residual(self) -> float:
        return float(np.linalg.norm(self.r))

    @property
    def relative_residual(self) -> float:
        return self.residual / self.bnorm if self.bnorm > 0 else 0.0

    def step(self):
        if self.rz == 0.0:  # exact solution reached (b = 0 or converged to rounding)
            self.n_iter += 1
            return
        Kp = self.A.matvec(self.p)
        Ap = Kp + self.mu * self.p
        pAp = float(self.p @ Ap)
        if not pAp > 0:
            raise np.linalg.LinAlgError(
                f"p^T (K_OO + mu I) p = {pAp:.3g} <= 0 at CG iteration {self.n_iter + 1}: the "
                f"kernels are not positive semidefinite")
        alpha = self.rz / pAp
        self.x += alpha * self.p
        self.Kx += alpha * Kp
        self.r -= alpha * Ap
        self.z = self.apply_preconditioner(self.r)
        rz = float(self.r @ self.z)
        beta = rz / self.rz
        self.rz = rz
        self.p = self.z + beta * self.p
        self.n_iter += 1

    def objective(self) -> float:
        return kkmcex_objective(self.Kx, self.x, self.b, self.mu)



def nmse(estimate, truth) -> float:
    """The thesis's NMSE (3.68) of one estimate: ``||F_hat - F||_F^2 / ||F||_F^2``."""
    e = np.asarray(estimate, dtype=np.float64) - np.asarray(truth, dtype=np.float64)
    t = np.asarray(truth, dtype=np.float64)
    den = float(np.sum(t * t))
    return float(np.sum(e * e)) / den if den > 0 else math.nan



__all__ = [
    "CHUNK_VALUES",
    "KKMCEXConjugateGradient",
    "KronGram",
    "MIXED_MIN_S",
    "REFINE_MAX_ITER",
    "SPARSE_DENSITY",
    "kkmcex_cholesky",
    "kkmcex_direct",
    "kkmcex_gram",
    "kkmcex_objective",
    "kkmcex_predict",
    "nmse",
    "weighted_ridge",
]
