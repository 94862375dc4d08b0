"""Plain NumPy spellings of Kernel MC's Numba kernels (:mod:`kmviz.kmc._kernels`): dense,
one formula each, straight from the thesis's equations (K_OO = (K_col kron K_row) restricted
to the observed entries, eq. 3.46; the online RRMCEX step 3.63; the SGD step on 3.28). The
oracle the kernels are tested against; for tests and ``bench/`` only.
"""

from __future__ import annotations

import numpy as np


def kron_gram(K_row, K_col, rows, cols) -> np.ndarray:
    """K_OO: ``K_OO[k, k'] = K_row[rows[k], rows[k']] K_col[cols[k], cols[k']]``, the
    observed block of ``K_col kron K_row`` (the entries vectorized column by column)."""
    K = np.kron(np.asarray(K_col), np.asarray(K_row))
    N = np.asarray(K_row).shape[0]
    idx = np.asarray(cols) * N + np.asarray(rows)
    return K[np.ix_(idx, idx)]


def kron_gram_matvec(K_row, K_col, rows, cols, v) -> np.ndarray:
    """``K_OO v`` through the dense K_OO."""
    return kron_gram(K_row, K_col, rows, cols) @ np.asarray(v, dtype=np.float64)


def _features(U, V, w, rows, cols) -> np.ndarray:
    """phi_k = w * U[rows[k]] * V[cols[k]], one row per observed entry."""
    return np.asarray(w)[None, :] * np.asarray(U)[rows] * np.asarray(V)[cols]


def online_rr_sse(U, V, w, rows, cols, vals, xi) -> float:
    """sum_k (vals[k] - phi_k . xi)^2."""
    r = np.asarray(vals) - _features(U, V, w, rows, cols) @ np.asarray(xi)
    return float(r @ r)


def online_rr_feature_norms(U, V, w, rows, cols) -> float:
    """sum_k ||phi_k||^2."""
    return float(np.sum(_features(U, V, w, rows, cols) ** 2))


def online_rr_block(U, V, w, rows, cols, vals, order, start, count, n_done, xi, mu, t0):
    """``count`` steps of (3.63) over the circular stream ``order``, one entry at a time
    (returns the new xi; the kernel updates it in place)."""
    phi_all = _features(U, V, w, rows, cols)
    xi = np.array(xi, dtype=np.float64)
    s = len(order)
    for q in range(count):
        k = order[(start + q) % s]
        phi = phi_all[k]
        t = t0 / (1.0 + t0 * mu * (n_done + q))
        t = min(t, 1.0 / float(phi @ phi))
        xi = xi - t * (phi * (phi @ xi - vals[k]) + mu * xi)
    return xi


def sgd_factor_epoch(rows, cols, vals, order, W, H, Aw, Ah, row_count, col_count, mu, lr):
    """One epoch of the semi-implicit SGD step on (3.28), with ``A W`` and ``A H`` formed
    anew at every step (the kernel keeps them by rank-one updates). Returns (W, H, sse)."""
    W, H = np.array(W, dtype=np.float64), np.array(H, dtype=np.float64)
    Aw, Ah = np.asarray(Aw, dtype=np.float64), np.asarray(Ah, dtype=np.float64)
    sse = 0.0
    for k in order:
        i, j = rows[k], cols[k]
        e = vals[k] - W[i] @ H[j]
        sse += e * e
        ci, cj = lr * mu / row_count[i], lr * mu / col_count[j]
        AWi, AHj = Aw[i] @ W, Ah[j] @ H
        wn = (W[i] + lr * e * H[j] - ci * (AWi - Aw[i, i] * W[i])) / (1.0 + ci * Aw[i, i])
        hn = (H[j] + lr * e * W[i] - cj * (AHj - Ah[j, j] * H[j])) / (1.0 + cj * Ah[j, j])
        W[i], H[j] = wn, hn
    return W, H, sse


def pair_rowdot(Y, B, ia, ib) -> np.ndarray:
    """``(Y B^T)[ia[k], ib[k]]`` per pair, through the dense product."""
    return (np.asarray(Y) @ np.asarray(B).T)[np.asarray(ia), np.asarray(ib)]


def csr_times_dense(indptr, indices, data, B, n_cols=None) -> np.ndarray:
    """``G B`` with G rebuilt dense from its CSR arrays."""
    n = len(indptr) - 1
    G = np.zeros((n, n_cols if n_cols is not None else np.asarray(B).shape[0]))
    for u in range(n):
        for p in range(indptr[u], indptr[u + 1]):
            G[u, indices[p]] += data[p]
    return G @ np.asarray(B)
