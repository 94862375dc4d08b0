"""Numba kernels of the one-pass gFM: one fused sweep over the rows of a dense batch.

Both kernels read each row x_i of a C-contiguous float64 batch X (n x d) once, compute a few
dot products ``p = W^T x_i - c`` (the standardization folded into ``W`` and ``c`` by the
caller), form per-row weights ``g`` and add ``g_q x_i`` to accumulators. NumPy/BLAS needs two
GEMMs for the same work (``X @ W`` and ``X.T @ G``) and reads X twice; measured on this
2-core box (bench/gfm_kernels.py) the fused parallel sweep is about 1.5-2.5x faster for
d >= 200 and equal or slower below d ~ 100, where :mod:`kmviz.gfm.operators` keeps NumPy.

Threads split the rows into contiguous blocks; each block accumulates into its own slice of
``out_acc`` (shape ``(n_threads, m, d)``, zeroed by the caller) and ``out_gsum``; the caller
sums the slices. Kernels write only to ``out_*`` arguments and never raise on data.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._jit import JIT, PJIT


def _residual_rows(X, y, WT, c, k, b, out_r, acc, gsum, lo, hi, p):
    """Rows lo..hi-1: r_i = y_i - b - p_w - sum_q p_Uq p_Vq; acc += [r, r p_U]^T x_i."""
    d = X.shape[1]
    m = WT.shape[0]
    for i in range(lo, hi):
        x = X[i]
        for q in range(m):
            w = WT[q]
            s = 0.0
            for j in range(d):
                s += x[j] * w[j]
            p[q] = s - c[q]
        r = y[i] - b - p[2 * k]
        for q in range(k):
            r -= p[q] * p[k + q]
        out_r[i] = r
        a0 = acc[0]
        for j in range(d):
            a0[j] += x[j] * r
        gsum[0] += r
        for q in range(k):
            g = r * p[q]
            aq = acc[1 + q]
            for j in range(d):
                aq[j] += x[j] * g
            gsum[1 + q] += g


def _weighted_rows(X, wts, WT, c, acc, gsum, lo, hi, p):
    """Rows lo..hi-1: acc[q] += wts_i (W^T x_i - c)_q x_i."""
    d = X.shape[1]
    m = WT.shape[0]
    for i in range(lo, hi):
        x = X[i]
        wi = wts[i]
        for q in range(m):
            w = WT[q]
            s = 0.0
            for j in range(d):
                s += x[j] * w[j]
            g = wi * (s - c[q])
            aq = acc[q]
            for j in range(d):
                aq[j] += x[j] * g
            gsum[q] += g


_residual_rows_jit = njit(**JIT)(_residual_rows)
_weighted_rows_jit = njit(**JIT)(_weighted_rows)


@njit(**PJIT)
def residual_sweep(X, y, WT, c, k, b, out_r, out_acc, out_gsum):
    """The statistics pass of Alg. 1 on one batch, fused.

    ``WT`` is ``[U | V | w]^T`` (2k+1 x d) in raw feature units and ``c`` its offsets, so
    ``p = WT x_i - c`` holds (z^T U, z^T V, z^T w) of the standardized row z. Writes the
    residual ``r_i = y_i - b - z^T w - (z^T U)(z^T V)^T`` (the prediction of
    ``x^T (UV^T + VU^T)/2 x``) to ``out_r`` and accumulates ``X^T [r, r * (z^T U)]`` into
    ``out_acc[t]`` (k+1 x d) and the column sums of ``[r, r * (z^T U)]`` into ``out_gsum[t]``.
    """
    n = X.shape[0]
    nt = out_acc.shape[0]
    step = (n + nt - 1) // nt
    for t in prange(nt):
        p = np.empty(WT.shape[0])
        _residual_rows_jit(X, y, WT, c, k, b, out_r, out_acc[t], out_gsum[t], t * step,
                           min(n, (t + 1) * step), p)


@njit(**PJIT)
def weighted_sweep(X, wts, WT, c, out_acc, out_gsum):
    """``out_acc[t] += X^T (wts * (X W - c))`` over a block of rows per thread (m x d).

    The second pass of Alg. 1 (``H_1 U_new`` with wts = r) and the Lanczos operator of the
    initialization (wts = y) both are this product.
    """
    n = X.shape[0]
    nt = out_acc.shape[0]
    step = (n + nt - 1) // nt
    for t in prange(nt):
        p = np.empty(WT.shape[0])
        _weighted_rows_jit(X, wts, WT, c, out_acc[t], out_gsum[t], t * step,
                           min(n, (t + 1) * step), p)

