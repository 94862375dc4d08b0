"""Numba kernels of kernel matrix completion: the sparse vec-trick product and the SGD sweeps.

Kernels take typed arrays only, write only to their ``out`` arguments and never raise on data.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._jit import JIT, PJIT


def _kron_gram_fill(R, C, rows, cols, lower_only, out):
    """``out[k, k'] = R[rows[k], k'] C[cols[k], k']``: K_OO of KKMCEX from the gathered
    kernels ``R = K_row[:, rows]`` (N x s) and ``C = K_col[:, cols]`` (L x s).

    Row k of K_OO is the product of two contiguous rows, so the inner loop is a vectorized
    multiply with no index gathers. ``lower_only`` fills ``out[k, :k + 1]`` (what a Cholesky
    of the lower triangle reads); rows are then handed out in pairs ``(q, s - 1 - q)`` so
    every parallel iteration writes ``s + 1`` values (a plain prange over a triangle gives
    one thread three times the other's work). ``out`` may be float32 or float64.
    """
    s = rows.shape[0]
    if not lower_only:
        for k in prange(s):
            r = rows[k]
            c = cols[k]
            for j in range(s):
                out[k, j] = R[r, j] * C[c, j]
        return
    half = (s + 1) // 2
    for q in prange(half):
        k = q
        r = rows[k]
        c = cols[k]
        for j in range(k + 1):
            out[k, j] = R[r, j] * C[c, j]
        k = s - 1 - q
        if k != q:
            r = rows[k]
            c = cols[k]
            for j in range(k + 1):
                out[k, j] = R[r, j] * C[c, j]


kron_gram_fill = njit(**PJIT)(_kron_gram_fill)
kron_gram_fill_serial = njit(**JIT)(_kron_gram_fill)


@njit(**JIT)
def kron_gram_matvec(K_row, K_col, rows, cols, colptr, order, v, TT, T, out):
    """``out[k] = (K_row unvec(S^T v) K_col)[rows[k], cols[k]]`` in O(s (N + L)).

    ``order`` lists the entries sorted by column (``colptr`` its CSC pointer), so the first
    pass ``TT = (K_row Gamma)^T`` (L x N) is ``TT[l] = sum_{k in column l} v[k]
    K_row[rows[k]]`` (K_row symmetric), contiguous rows only. The second pass is one dot
    product per entry, ``T[rows[k]] . K_col[cols[k]]``. Serial: one product takes about a
    millisecond at 250 x 250 and 10 % density, and a parallel version measured no faster at
    its best and far slower at its median on the shared 2-core box (each parallel region
    waits for both cores).
    """
    L = TT.shape[0]
    N = TT.shape[1]
    for l in range(L):
        for j in range(N):
            TT[l, j] = 0.0
        for q in range(colptr[l], colptr[l + 1]):
            k = order[q]
            r = rows[k]
            vk = v[k]
            for j in range(N):
                TT[l, j] += vk * K_row[r, j]
    for i in range(N):
        for l in range(L):
            T[i, l] = TT[l, i]
    s = rows.shape[0]
    for k in range(s):
        r = rows[k]
        c = cols[k]
        acc = 0.0
        for l in range(L):
            acc += T[r, l] * K_col[c, l]
        out[k] = acc


@njit(**JIT)
def online_rr_block(U, V, w, rows, cols, vals, order, start, count, n_done, xi, mu, t0):
    """``count`` SGD steps (3.63) of online RRMCEX over the circular stream ``order``.

    Step n (0-based over the whole stream) uses entry ``order[(start + q) % s]`` and the step
    size ``t_n = min(t0 / (1 + t0 mu n), 1 / ||phi||^2)``; ``phi = w * U[i] * V[j]``;
    ``xi <- xi - t_n (phi (phi . xi - m) + mu xi)``. ``mu`` is the per-sample ridge weight
    (the caller passes mu / s). Updates ``xi`` in place.
    """
    s = order.shape[0]
    d = xi.shape[0]
    phi = np.empty(d)
    for q in range(count):
        k = order[(start + q) % s]
        i = rows[k]
        j = cols[k]
        pred = 0.0
        nn = 0.0
        for f in range(d):
            phi[f] = w[f] * U[i, f] * V[j, f]
            pred += phi[f] * xi[f]
            nn += phi[f] * phi[f]
        n = n_done + q
        t = t0 / (1.0 + t0 * mu * n)
        if t * nn > 1.0:  # normalized-LMS cap: never step past this sample's fit
            t = 1.0 / nn
        e = pred - vals[k]
        for f in range(d):
            xi[f] -= t * (phi[f] * e + mu * xi[f])


@njit(**JIT)
def online_rr_sse(U, V, w, rows, cols, vals, xi):
    """``sum_k (vals[k] - phi_k . xi)^2`` over the observed entries, ``phi_k = w * U[i] *
    V[j]``: the data term of (3.62) in O(s d), without the d x d Gram of the features
    (O(s d^2) to form, which at d = 2,500 cost more than the whole stream)."""
    d = xi.shape[0]
    c = np.empty(d)
    for f in range(d):
        c[f] = w[f] * xi[f]
    sse = 0.0
    for k in range(rows.shape[0]):
        i = rows[k]
        j = cols[k]
        pred = 0.0
        for f in range(d):
            pred += U[i, f] * V[j, f] * c[f]
        e = vals[k] - pred
        sse += e * e
    return sse


@njit(**JIT)
def online_rr_feature_norms(U, V, w, rows, cols):
    """``sum_k ||phi_k||^2`` over the observed entries (for the default step t_0)."""
    d = w.shape[0]
    w2 = np.empty(d)
    for f in range(d):
        w2[f] = w[f] * w[f]
    tot = 0.0
    for k in range(rows.shape[0]):
        i = rows[k]
        j = cols[k]
        for f in range(d):
            a = U[i, f] * V[j, f]
            tot += w2[f] * a * a
    return tot


@njit(**JIT)
def sgd_factor_epoch(rows, cols, vals, order, W, H, Aw, Ah, AW, AH, row_count, col_count,
                     mu, lr):
    """One SGD epoch on the kernel MC objective (3.28), KPMF-style (the thesis's SGD [24]).

    For each entry (i, j) in ``order``: ``e = m_ij - w_i . h_j``;
    ``w_i += lr (e h_j - (mu / |Omega_i|) (A_w W)_i)``, ``h_j`` likewise, with
    ``A = K^-1``, the diagonal term ``(A_w)_ii w_i`` taken implicitly (a kernel inverse can
    have entries of ``exp(eta lambda_max)``, which an explicit step cannot follow); the
    products ``AW = A_w W`` and ``AH = A_h H`` are kept current (a rank-one
    update per step, O((N + L) p)). Returns the sum of squared errors seen during the epoch.
    """
    p = W.shape[1]
    N = W.shape[0]
    L = H.shape[0]
    dw = np.empty(p)
    dh = np.empty(p)
    sse = 0.0
    for q in range(order.shape[0]):
        k = order[q]
        i = rows[k]
        j = cols[k]
        e = vals[k]
        for f in range(p):
            e -= W[i, f] * H[j, f]
        sse += e * e
        ci = lr * mu / row_count[i]
        cj = lr * mu / col_count[j]
        aii = Aw[i, i]
        ajj = Ah[j, j]
        for f in range(p):
            # semi-implicit in the diagonal of A: stable whatever mu A_ii (a kernel inverse
            # can have entries of exp(eta lambda_max))
            wn = (W[i, f] + lr * e * H[j, f] - ci * (AW[i, f] - aii * W[i, f])) \
                / (1.0 + ci * aii)
            hn = (H[j, f] + lr * e * W[i, f] - cj * (AH[j, f] - ajj * H[j, f])) \
                / (1.0 + cj * ajj)
            dw[f] = wn - W[i, f]
            dh[f] = hn - H[j, f]
        for f in range(p):
            W[i, f] += dw[f]
            H[j, f] += dh[f]
        for n in range(N):
            a = Aw[n, i]
            if a != 0.0:
                for f in range(p):
                    AW[n, f] += a * dw[f]
        for n in range(L):
            a = Ah[n, j]
            if a != 0.0:
                for f in range(p):
                    AH[n, f] += a * dh[f]
    return sse


def compile_kernels() -> None:
    """Compile (or load from Numba's cache) every kernel here on tiny inputs."""
    K = np.eye(2)
    rows = np.array([0, 1], dtype=np.int64)
    cols = np.array([1, 0], dtype=np.int64)
    colptr = np.array([0, 1, 2], dtype=np.int64)
    order = np.array([1, 0], dtype=np.int64)
    v = np.ones(2)
    kron_gram_matvec(K, K, rows, cols, colptr, order, v, np.empty((2, 2)), np.empty((2, 2)),
                     np.empty(2))
    for dtype in (np.float64, np.float32):
        for fill in (kron_gram_fill, kron_gram_fill_serial):
            fill(K, K, rows, cols, True, np.empty((2, 2), dtype=dtype))
            fill(K, K, rows, cols, False, np.empty((2, 2), dtype=dtype))
    online_rr_block(K, K, np.ones(2), rows, cols, v, order, 0, 2, 0, np.zeros(2), 0.1, 0.5)
    online_rr_sse(K, K, np.ones(2), rows, cols, v, np.zeros(2))
    online_rr_feature_norms(K, K, np.ones(2), rows, cols)
    W = np.zeros((2, 1))
    sgd_factor_epoch(rows, cols, v, order, W, W.copy(), K, K, W.copy(), W.copy(),
                     np.ones(2), np.ones(2), 0.1, 0.01)
    pair_rowdot(K, K, rows, cols, np.empty(2))
    csr_times_dense(np.array([0, 1, 2], dtype=np.int64), cols, v, K, np.empty((2, 2)))


@njit(**PJIT)
def pair_rowdot(Y, B, ia, ib, out):
    """``out[k] = Y[ia[k]] . B[ib[k]]``: one entry of ``Y B^T`` per observed pair.

    The last step of the factored vec-trick product (:class:`kmviz.kmc.krr.FactoredKronGram`)
    and of predictions from factors; each parallel iteration writes only its own ``out[k]``.
    """
    s = ia.shape[0]
    r = Y.shape[1]
    for k in prange(s):
        a = ia[k]
        b = ib[k]
        acc = 0.0
        for j in range(r):
            acc += Y[a, j] * B[b, j]
        out[k] = acc


@njit(**PJIT)
def csr_times_dense(indptr, indices, data, B, out):
    """``out = G B`` for a CSR matrix G (``indptr``, ``indices``, ``data``) and a dense B.

    Parallel over the rows of G: each iteration writes only its own row of ``out``.
    """
    n = indptr.shape[0] - 1
    r = B.shape[1]
    for u in prange(n):
        for j in range(r):
            out[u, j] = 0.0
        for p in range(indptr[u], indptr[u + 1]):
            w = data[p]
            c = indices[p]
            for j in range(r):
                out[u, j] += w * B[c, j]
