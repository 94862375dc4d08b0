"""Numba kernels of the observed-pair sums (the O(|O| k) terms of the all-pairs methods).

The observed set O is stored row-major (CSR: row i owns pairs ``row_ptr[i]:row_ptr[i + 1]``,
``cols[e]`` the column of pair e) and, for the column side, column-major through a
permutation (``col_ptr``, ``col_rows``, ``col_perm``: the row-major position of each pair).
Every kernel is a per-row body and two loops over the rows, a ``prange`` one and a plain
one; each row writes only its own output row or its own pairs, so there are no races. The
wrappers run the parallel loop only when the work (pairs x k) is large enough to pay for
the threads (:data:`PARALLEL_MIN_WORK`, the same trade-off as :mod:`kmviz.ocmf._kernels`).

Losses (``code``): 0 = logistic ``log(1 + exp(-y s))``, 1 = squared ``0.5 (y - s)^2``.
With ``w_e = omega a_i b_j`` and ``yt_e = ptilde_i . qtilde_j`` the split loss (11) of the
paper is ``l+_e = l(y_e, s_e) - 0.5 w_e (yt_e - s_e)^2`` with
``X_e = l'(y_e, s_e) - w_e (s_e - yt_e)`` and ``c_e = l''(y_e, s_e) - w_e`` (may be < 0).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._jit import JIT, PJIT

LOGISTIC, SQUARED = 0, 1
LOSS_CODES = {"logistic": LOGISTIC, "squared": SQUARED}
#: Pairs x k below which the kernels run on one thread.
PARALLEL_MIN_WORK = 20_000_000


def _parallel(nnz, k) -> bool:
    return nnz * max(k, 1) >= PARALLEL_MIN_WORK


@njit(**JIT)
def loss_derivatives(code, y, s):
    """(l, l', l'') of the loss ``code`` at label y and score s."""
    if code == SQUARED:
        r = s - y
        return 0.5 * r * r, r, 1.0
    z = y * s
    e = math.exp(-abs(z))
    inv = 1.0 / (1.0 + e)
    if z >= 0.0:
        value = math.log1p(e)
        pos, neg = inv, e * inv
    else:
        value = -z + math.log1p(e)
        pos, neg = e * inv, inv
    return value, -y * neg, y * y * pos * neg


# ----------------------------------------------------------------------------- row bodies
@njit(**JIT)
def _pair_terms_row(i, row_ptr, cols, labels, P, Q, a, b, Pt, Qt, omega, code, yhat, dplus,
                    cplus, lplus_rows):
    k, kt = P.shape[1], Pt.shape[1]
    total = 0.0
    for e in range(row_ptr[i], row_ptr[i + 1]):
        j = cols[e]
        s = 0.0
        for f in range(k):
            s += P[i, f] * Q[j, f]
        yt = 0.0
        for f in range(kt):
            yt += Pt[i, f] * Qt[j, f]
        w = omega * a[i] * b[j]
        lv, d1, d2 = loss_derivatives(code, labels[e], s)
        r = s - yt
        yhat[e] = s
        dplus[e] = d1 - w * r
        cplus[e] = d2 - w
        total += lv - 0.5 * w * r * r
    lplus_rows[i] = total


@njit(**JIT)
def _csr_times_row(i, ptr, idx, perm, vals, E, out):
    k = E.shape[1]
    for f in range(k):
        out[i, f] = 0.0
    for t in range(ptr[i], ptr[i + 1]):
        v = vals[perm[t]] if perm.shape[0] > 0 else vals[t]
        j = idx[t]
        for f in range(k):
            out[i, f] += v * E[j, f]


@njit(**JIT)
def _gn_pairs_row(i, row_ptr, cols, cplus, P, Q, W, H, z, out):
    k = P.shape[1]
    for f in range(k):
        out[i, f] = 0.0
    for e in range(row_ptr[i], row_ptr[i + 1]):
        j = cols[e]
        s = 0.0
        for f in range(k):
            s += W[i, f] * Q[j, f] + P[i, f] * H[j, f]
        ze = cplus[e] * s
        z[e] = ze
        for f in range(k):
            out[i, f] += ze * Q[j, f]


# ----------------------------------------------------------------------------- loops
@njit(**PJIT)
def _pair_terms_par(row_ptr, cols, labels, P, Q, a, b, Pt, Qt, omega, code, yhat, dplus,
                    cplus, lplus_rows):
    for i in prange(row_ptr.shape[0] - 1):
        _pair_terms_row(i, row_ptr, cols, labels, P, Q, a, b, Pt, Qt, omega, code, yhat,
                        dplus, cplus, lplus_rows)


@njit(**JIT)
def _pair_terms_seq(row_ptr, cols, labels, P, Q, a, b, Pt, Qt, omega, code, yhat, dplus,
                    cplus, lplus_rows):
    for i in range(row_ptr.shape[0] - 1):
        _pair_terms_row(i, row_ptr, cols, labels, P, Q, a, b, Pt, Qt, omega, code, yhat,
                        dplus, cplus, lplus_rows)


@njit(**PJIT)
def _csr_times_par(ptr, idx, perm, vals, E, out):
    for i in prange(ptr.shape[0] - 1):
        _csr_times_row(i, ptr, idx, perm, vals, E, out)


@njit(**JIT)
def _csr_times_seq(ptr, idx, perm, vals, E, out):
    for i in range(ptr.shape[0] - 1):
        _csr_times_row(i, ptr, idx, perm, vals, E, out)


@njit(**PJIT)
def _gn_pairs_par(row_ptr, cols, cplus, P, Q, W, H, z, out):
    for i in prange(row_ptr.shape[0] - 1):
        _gn_pairs_row(i, row_ptr, cols, cplus, P, Q, W, H, z, out)


@njit(**JIT)
def _gn_pairs_seq(row_ptr, cols, cplus, P, Q, W, H, z, out):
    for i in range(row_ptr.shape[0] - 1):
        _gn_pairs_row(i, row_ptr, cols, cplus, P, Q, W, H, z, out)


# ----------------------------------------------------------------------------- wrappers
def pair_terms(pairs, P, Q, a, b, Pt, Qt, omega, code):
    """Per pair: score, X (= dl+/dYhat) and c (= d2l+/dYhat2); and L+ (a float)."""
    nnz = pairs.nnz
    yhat, dplus, cplus = np.empty(nnz), np.empty(nnz), np.empty(nnz)
    rows_out = np.empty(pairs.n_rows)
    fn = _pair_terms_par if _parallel(nnz, P.shape[1]) else _pair_terms_seq
    fn(pairs.row_ptr, pairs.cols, pairs.labels, P, Q, a, b, Pt, Qt, float(omega), int(code),
       yhat, dplus, cplus, rows_out)
    return yhat, dplus, cplus, float(rows_out.sum())


_EMPTY = np.zeros(0, dtype=np.int64)


def times_other(pairs, vals, Q):
    """``S Q`` (m x k) for the sparse m x n matrix S with values ``vals`` on O."""
    out = np.empty((pairs.n_rows, Q.shape[1]))
    fn = _csr_times_par if _parallel(pairs.nnz, Q.shape[1]) else _csr_times_seq
    fn(pairs.row_ptr, pairs.cols, _EMPTY, vals, Q, out)
    return out


def transpose_times(pairs, vals, P):
    """``S^T P`` (n x k) for the sparse m x n matrix S with values ``vals`` on O."""
    out = np.empty((pairs.n_cols, P.shape[1]))
    fn = _csr_times_par if _parallel(pairs.nnz, P.shape[1]) else _csr_times_seq
    fn(pairs.col_ptr, pairs.col_rows, pairs.col_perm, vals, P, out)
    return out


def gn_pairs(pairs, cplus, P, Q, W, H):
    """``z_e = c_e (w_i . q_j + p_i . h_j)`` on O and ``Z Q`` (m x k)."""
    z = np.empty(pairs.nnz)
    out = np.empty_like(P)
    fn = _gn_pairs_par if _parallel(pairs.nnz, P.shape[1]) else _gn_pairs_seq
    fn(pairs.row_ptr, pairs.cols, cplus, P, Q, W, H, z, out)
    return z, out


