"""Small dense symmetric eigensolver in Numba (Householder tridiagonalization + implicit QL).

Why not ``np.linalg.eigh``: inside Numba it calls LAPACK ``dsyevd`` through a wrapper that
allocates the outputs, copies the input and checks it for NaN on every call. For the
(D+1) x (D+1) dual matrices of the binary QP at D <= ~20 that overhead dominates the
O(n^3) work (about 7 us for a 9 x 9 matrix, most of it not arithmetic). ``sym_eig`` works in
caller-provided buffers and does no allocation; it is the classic EISPACK pair tred2 / tql2
(as in JAMA), whose accuracy is that of LAPACK's QL/QR path (backward stable, eigenvalues to
a few ulps of ||C||). Above ``DENSE_N`` the kernels call ``np.linalg.eigh`` (the cache-blocked
LAPACK routine wins there).

The twin for tests is ``numpy.linalg.eigh`` itself (eigenvalues, eigenvectors up to sign).

Changing the order of any sum here (or in the Newton Hessian, or in S_i's build) changes
KM's iterates, not just their last bits (issue 36, measured): on items with few ratings S_i
has zero rows (every rater has theta_a = 0), C(u*) then has a degenerate eigenspace, and its
basis, which rounding picks, decides the randomization's samples L xi. tred2 run on the
rows of V^T (inner loops contiguous, 16% faster at n = 21) with the Newton Hessian as row
dot products (2.7x faster) left u* within 1e-14 but changed psi on 112 of ML-100K's 1,682
items at BCD iteration 2, and the objective by up to 2e-3 by iteration 6 (commit 44e8881,
backed out). A faster solver here must give the same bits, or come with a randomization
that does not depend on the eigenbasis.
"""

import math

import numpy as np
from numba import njit

from kmviz._jit import JIT

# Below this size the dual solvers treat a (D+1) x (D+1) matrix as small: full EVDs at warm
# starts, loop-form Newton matrices (see kernels/newton_hessian.py), dense EVDs instead of
# Lanczos.
SMALL_N = 24
# eigh_into's switch to LAPACK. bench/km/eig_small.py (2026-11-21, one BLAS thread): sym_eig
# took 0.45x LAPACK's time at n = 9, 0.80x at n = 48, 0.99-1.03x at n = 64, 1.6x at n = 101.
DENSE_N = 56

_EPS = 2.0 ** -52


@njit(**JIT)
def _tql2(d, e, Wt, n):
    """Implicit QL (EISPACK tql2) on the tridiagonal (d, e[1:]); rotations applied to the rows
    of Wt (the transposed eigenvector matrix, so the rotations run over contiguous memory).

    Ascending eigenvalues end in d[:n], eigenvectors in the rows Wt[:n, :]; returns 0 or 1 (no
    convergence in 30 n sweeps for one eigenvalue, e.g. NaN input). The radii are plain
    sqrt(p^2 + e^2), not hypot (1.4x faster at n = 9): ``sym_eig`` scales its input so no
    square overflows.
    """
    # --- tql2: implicit QL with Wilkinson-type shifts on the tridiagonal (d, e)
    for i in range(1, n):
        e[i - 1] = e[i]
    e[n - 1] = 0.0
    f = 0.0
    tst1 = 0.0
    status = 0
    for l in range(n):
        tst1 = max(tst1, abs(d[l]) + abs(e[l]))
        m = l
        while m < n - 1:
            if abs(e[m]) <= _EPS * tst1:
                break
            m += 1
        if m > l:
            it = 0
            while True:
                it += 1
                if it > 30 * n:
                    status = 1
                    break
                g = d[l]
                p = (d[l + 1] - g) / (2.0 * e[l])
                r = math.sqrt(p * p + 1.0)
                if p < 0.0:
                    r = -r
                d[l] = e[l] / (p + r)
                d[l + 1] = e[l] * (p + r)
                dl1 = d[l + 1]
                h = g - d[l]
                for i in range(l + 2, n):
                    d[i] -= h
                f += h
                p = d[m]
                c = 1.0
                c2 = c
                c3 = c
                el1 = e[l + 1]
                s = 0.0
                s2 = 0.0
                for i in range(m - 1, l - 1, -1):
                    c3 = c2
                    c2 = c
                    s2 = s
                    g = c * e[i]
                    h = c * p
                    r = math.sqrt(p * p + e[i] * e[i])
                    e[i + 1] = s * r
                    s = e[i] / r
                    c = p / r
                    p = c * d[i] - s * g
                    d[i + 1] = h + s * (c * g + s * d[i])
                    for k in range(n):
                        h = Wt[i + 1, k]
                        Wt[i + 1, k] = s * Wt[i, k] + c * h
                        Wt[i, k] = c * Wt[i, k] - s * h
                p = -s * s2 * c3 * el1 * e[l] / dl1
                e[l] = s * p
                d[l] = c * p
                if not abs(e[l]) > _EPS * tst1:
                    break
        d[l] = d[l] + f
        e[l] = 0.0
    # --- ascending order (selection sort; n is small)
    for i in range(n - 1):
        k = i
        p = d[i]
        for j in range(i + 1, n):
            if d[j] < p:
                k = j
                p = d[j]
        if k != i:
            d[k] = d[i]
            d[i] = p
            for j in range(n):
                t = Wt[i, j]
                Wt[i, j] = Wt[k, j]
                Wt[k, j] = t
    return status


@njit(**JIT)
def sym_eig(A, out_w, out_V, work_e):
    """Eigen-decomposition of the symmetric n x n matrix A (only read).

    Writes ascending eigenvalues to out_w[:n] and orthonormal eigenvectors to the columns of
    out_V[:n, :n] (the layout of ``np.linalg.eigh``); work_e is a length-n buffer. Returns 0,
    or 1 when QL did not converge in 30 n sweeps per eigenvalue (non-finite input).
    """
    n = A.shape[0]
    V = out_V
    d = out_w
    e = work_e
    amax = 0.0
    for i in range(n):
        for j in range(n):
            V[i, j] = A[i, j]
            amax = max(amax, abs(A[i, j]))
    # keep every square in _tql2 finite (and away from underflow): scale to max |a_ij| = 1
    amp = _square_safe_scale(amax)
    if amp != 1.0:
        for i in range(n):
            for j in range(n):
                V[i, j] /= amp
    # --- tred2: Householder reduction to tridiagonal form, transformations accumulated in V
    for j in range(n):
        d[j] = V[n - 1, j]
    for i in range(n - 1, 0, -1):
        scale = 0.0
        h = 0.0
        for k in range(i):
            scale += abs(d[k])
        if scale == 0.0:
            e[i] = d[i - 1]
            for j in range(i):
                d[j] = V[i - 1, j]
                V[i, j] = 0.0
                V[j, i] = 0.0
        else:
            for k in range(i):
                d[k] /= scale
                h += d[k] * d[k]
            f = d[i - 1]
            g = math.sqrt(h)
            if f > 0.0:
                g = -g
            e[i] = scale * g
            h = h - f * g
            d[i - 1] = f - g
            for j in range(i):
                e[j] = 0.0
            for j in range(i):
                f = d[j]
                V[j, i] = f
                g = e[j] + V[j, j] * f
                for k in range(j + 1, i):
                    g += V[k, j] * d[k]
                    e[k] += V[k, j] * f
                e[j] = g
            f = 0.0
            for j in range(i):
                e[j] /= h
                f += e[j] * d[j]
            hh = f / (h + h)
            for j in range(i):
                e[j] -= hh * d[j]
            for j in range(i):
                f = d[j]
                g = e[j]
                for k in range(j, i):
                    V[k, j] -= f * e[k] + g * d[k]
                d[j] = V[i - 1, j]
                V[i, j] = 0.0
        d[i] = h
    for i in range(n - 1):
        V[n - 1, i] = V[i, i]
        V[i, i] = 1.0
        h = d[i + 1]
        if h != 0.0:
            for k in range(i + 1):
                d[k] = V[k, i + 1] / h
            for j in range(i + 1):
                g = 0.0
                for k in range(i + 1):
                    g += V[k, i + 1] * V[k, j]
                for k in range(i + 1):
                    V[k, j] -= g * d[k]
        for k in range(i + 1):
            V[k, i + 1] = 0.0
    for j in range(n):
        d[j] = V[n - 1, j]
        V[n - 1, j] = 0.0
    V[n - 1, n - 1] = 1.0
    e[0] = 0.0
    _transpose_square(V, n)  # _tql2 rotates rows
    return _ql_finish(d, e, V, n, amp)


@njit(**JIT)
def _square_safe_scale(amax):
    """The divisor that brings max |a_ij| = amax to 1 when squares of it would overflow or
    underflow in ``_tql2`` (1.0 otherwise: no scaling, no rounding change)."""
    if amax > 1e100 or (0.0 < amax < 1e-100):
        return amax
    return 1.0


@njit(**JIT)
def _ql_finish(d, e, Wt, n, amp):
    """``_tql2`` on the rows of Wt, then the eigenvectors back to columns and the
    eigenvalues multiplied back by the input's scale ``amp``; returns _tql2's status."""
    status = _tql2(d, e, Wt, n)
    _transpose_square(Wt, n)
    if amp != 1.0:
        for j in range(n):
            d[j] *= amp
    return status


@njit(**JIT)
def _transpose_square(V, n):
    for i in range(n):
        for j in range(i):
            x = V[i, j]
            V[i, j] = V[j, i]
            V[j, i] = x


@njit(**JIT)
def eigh_into(A, out_w, out_V, work_e):
    """Full EVD of symmetric A into out_w / out_V: ``sym_eig`` for n <= DENSE_N, else LAPACK."""
    n = A.shape[0]
    if n <= DENSE_N:
        return sym_eig(A, out_w, out_V, work_e)
    w, V = np.linalg.eigh(A)
    for j in range(n):
        out_w[j] = w[j]
        for i in range(n):
            out_V[i, j] = V[i, j]
    return 0


@njit(**JIT)
def cholesky_solve(M, b, out_x, work_L):
    """Solve M x = b for symmetric positive definite M by Cholesky (M only read).

    Returns 0, or 1 when a pivot is not positive (M not numerically PD).
    """
    n = M.shape[0]
    L = work_L
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return 1
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * out_x[k]
        out_x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = out_x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * out_x[k]
        out_x[i] = s / L[i, i]
    return 0


@njit(**JIT)
def count_above(C, sign, work):
    """Number of eigenvalues of sign * C that are > 0, by Sylvester's law of inertia.

    Unpivoted LDL^T of -sign * C (n^3/3 flops): the count of negative pivots of -B equals the
    count of positive eigenvalues of B = sign * C. Returns -1 when a pivot is within
    1e-13 ||C||_max of zero (inertia not decided in floating point; callers fall back).
    """
    n = C.shape[0]
    W = work
    cmax = 0.0
    for i in range(n):
        for j in range(n):
            W[i, j] = -sign * C[i, j]
            if abs(C[i, j]) > cmax:
                cmax = abs(C[i, j])
    tiny = 1e-13 * max(cmax, 1e-300)
    neg = 0
    # right-looking on the upper triangle, row by row: both rows of the update are contiguous
    # (the former column walk was ~4x slower at n = 101: 0.16 vs ~0.04 ms, measured)
    for k in range(n):
        d = W[k, k]
        if abs(d) <= tiny:
            return -1
        if d < 0.0:
            neg += 1
        inv = 1.0 / d
        for i in range(k + 1, n):
            f = W[k, i] * inv
            if f != 0.0:
                for j in range(i, n):
                    W[i, j] -= f * W[k, j]
    return neg


@njit(**JIT)
def tridiag_eig(alpha, beta, m, out_w, out_Q, work_e):
    """Eigenpairs of the m x m tridiagonal T = tridiag(beta[:m-1], alpha[:m], beta[:m-1]).

    Ascending values in out_w[:m], eigenvectors in out_Q[:m, :m]; O(m^2) per QL sweep, no
    Householder stage (the Lanczos matrices H_m of Alg. 5 are already tridiagonal).
    """
    amax = 0.0
    for i in range(m):
        out_w[i] = alpha[i]
        work_e[i] = beta[i - 1] if i > 0 else 0.0
        amax = max(amax, abs(out_w[i]), abs(work_e[i]))
        for j in range(m):
            out_Q[i, j] = 1.0 if i == j else 0.0
    amp = _square_safe_scale(amax)
    if amp != 1.0:
        for i in range(m):
            out_w[i] /= amp
            work_e[i] /= amp
    return _ql_finish(out_w, work_e, out_Q, m, amp)


@njit(**JIT)
def psd_cholesky(X, out_L):
    """Lower factor L with L L^T = X for symmetric PSD X (rank-deficient allowed).

    Pivots <= 1e-14 max(diag X) are treated as zero and their column set to 0 (X is PSD up to
    rounding), so L L^T reproduces X to rounding on its range.
    """
    n = X.shape[0]
    dmax = 0.0
    for i in range(n):
        dmax = max(dmax, X[i, i])
    tiny = 1e-14 * max(dmax, 1e-300)
    for j in range(n):
        for i in range(j):
            out_L[i, j] = 0.0
        s = X[j, j]
        for k in range(j):
            s -= out_L[j, k] * out_L[j, k]
        if s <= tiny:
            for i in range(j, n):
                out_L[i, j] = 0.0
            continue
        d = math.sqrt(s)
        out_L[j, j] = d
        for i in range(j + 1, n):
            s = X[i, j]
            for k in range(j):
                s -= out_L[i, k] * out_L[j, k]
            out_L[i, j] = s / d


@njit(**JIT)
def ritz_vector(P, Q, r, m, out_V, c):
    """out_V[:, c] = P_m Q[:m, r]: the Ritz vector of the r-th eigenpair of H_m (rows of P
    hold the Lanczos vectors p_1..p_m)."""
    n = out_V.shape[0]
    for i in range(n):
        out_V[i, c] = 0.0
    for l in range(m):
        q = Q[l, r]
        for i in range(n):
            out_V[i, c] += P[l, i] * q


@njit(**JIT)
def lanczos_step(C, sign, P, j, beta_prev, w):
    """Step j of Lanczos on ``sign * C`` with full reorthogonalization; returns (alpha, beta).

    Rows 0..j of P hold p_1..p_{j+1}. On return ``w`` is the new residual: sign*C p_{j+1}
    - beta_prev p_j - alpha p_{j+1}, reorthogonalized twice against p_1..p_{j+1} ("twice is
    enough"), and beta = ||w||, so p_{j+2} = w / beta.
    """
    n = C.shape[0]
    for i in range(n):
        s = 0.0
        for l in range(n):
            s += C[i, l] * P[j, l]
        w[i] = sign * s
    if j > 0:
        for i in range(n):
            w[i] -= beta_prev * P[j - 1, i]
    alpha = 0.0
    for i in range(n):
        alpha += w[i] * P[j, i]
    for i in range(n):
        w[i] -= alpha * P[j, i]
    for _ in range(2):
        for l in range(j + 1):
            c = 0.0
            for i in range(n):
                c += w[i] * P[l, i]
            for i in range(n):
                w[i] -= c * P[l, i]
    beta = 0.0
    for i in range(n):
        beta += w[i] * w[i]
    return alpha, math.sqrt(beta)


@njit(**JIT)
def lanczos_side(C, sign, p1, tol, out_w, out_V, work_P, work_al, work_be, work_T,
                 work_Q, work_e, work_n, work_W):
    """Certified one-sided Lanczos without a step cap (see ``lanczos_side_capped``)."""
    return lanczos_side_capped(C, sign, p1, tol, out_w, out_V, work_P, work_al, work_be,
                               work_T, work_Q, work_e, work_n, work_W, C.shape[0])


@njit(**JIT)
def lanczos_side_capped(C, sign, p1, tol, out_w, out_V, work_P, work_al, work_be, work_T,
                        work_Q, work_e, work_n, work_W, m_max):
    """Eigenpairs of C on one side of 0, certified (Lanczos on B = sign * C, wanted B > 0).

    Lanczos with full reorthogonalization from p1; after each step the Ritz pairs of H_j
    are computed. Stop when (i) every Ritz value theta > 0 of B has residual
    beta_{j+1} |q_i(j)| <= tol (Lemma 2 (16)), (ii) the largest Ritz value <= 0 is certified
    non-positive, theta + beta_{j+1} |q(j)| < 0, and (iii) Sylvester's inertia of B (one
    unpivoted LDL^T, ``count_above``) equals the number of wanted Ritz values, so no positive
    eigenvalue of B was missed by the Krylov space. j = n is exact. Writes the wanted pairs as
    eigenvalues of C (sign * theta) to out_w[:k], vectors to out_V[:, :k]; returns
    (k, m, beta_{m+1}), k = -1 when an invariant subspace ended the run before the inertia
    matched, k = -2 when m_max steps did not certify (callers fall back to a full EVD: a run
    of m steps costs O(n^2 m + n m^2 + m^4) in these loops, above ~n/4 steps more than
    LAPACK's full EVD at n ~ 100).
    """
    n = C.shape[0]
    P = work_P
    w = work_n
    scale = 0.0
    for i in range(n):
        P[0, i] = p1[i]
        for l in range(n):
            scale = max(scale, abs(C[i, l]))
    m = n
    k = 0
    last_checked = -1
    beta = 0.0
    for j in range(n):
        alpha, beta = lanczos_step(C, sign, P, j, work_be[j - 1] if j > 0 else 0.0, w)
        work_al[j] = alpha
        work_be[j] = beta
        mj = j + 1
        tridiag_eig(work_al, work_be, mj, work_T, work_Q, work_e)
        kk = 0
        conv = True
        for r in range(mj):
            if work_T[r] > 0.0:
                kk += 1
                if beta * abs(work_Q[mj - 1, r]) > tol:
                    conv = False
        invariant = beta <= 1e-13 * max(scale, 1e-300)
        if mj == n:
            m = mj
            k = kk
            break
        if not invariant:
            if kk == mj:
                conv = False  # no Ritz value on the other side yet
            else:
                r0 = mj - kk - 1  # the largest non-positive Ritz value
                if not work_T[r0] + beta * abs(work_Q[mj - 1, r0]) < 0.0:
                    conv = False
        if conv or invariant:
            if kk != last_checked:
                last_checked = kk
                cnt = count_above(C, sign, work_W)
                if cnt == kk or cnt < 0:
                    m = mj
                    k = kk
                    break
            if invariant:
                return -1, mj, beta
        if mj >= m_max:
            return -2, mj, beta
        for i in range(n):
            P[j + 1, i] = w[i] / beta
    # Ritz vectors of the wanted values
    for r in range(m - k, m):
        c = r - (m - k)
        out_w[c] = sign * work_T[r]
        ritz_vector(P, work_Q, r, m, out_V, c)
    return k, m, beta
