"""Numba kernels of the one-pass gFM: one fused sweep over the rows of a dense batch.

Both kernels read each row x_i of a C-contiguous float64 batch X (n x d) once, compute a few
dot products ``p = W^T x_i - c`` (the standardization folded into ``W`` and ``c`` by the
caller), form per-row weights ``g`` and add ``g_q x_i`` to accumulators. NumPy/BLAS needs two
GEMMs for the same work (``X @ W`` and ``X.T @ G``) and reads X twice; measured on this
2-core box (bench/gfm/gfm_kernels.py) the fused parallel sweep is about 1.5-2.5x faster for
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



@njit(**JIT)
def _pair_step(n, hs, hh, hr, rsum, lam, old, fit_intercept):
    """The exact minimizer of ``1/2 ||r - c 1 - delta h||^2 + lam/2 (old + delta)^2`` over
    ``delta`` (and the intercept shift ``c`` when ``fit_intercept``, else c = 0), from
    ``hs = sum h``, ``hh = h^T h``, ``hr = h^T r``, ``rsum = sum r``; returns
    ``(c, delta, decrease)``."""
    a = hh + lam
    g = hr - lam * old
    if not fit_intercept:
        if a <= 0.0:
            return 0.0, 0.0, 0.0
        delta = g / a
        return 0.0, delta, 0.5 * delta * g
    det = n * a - hs * hs
    if not det > 1e-12 * n * a:  # h (nearly) constant and no ridge: the intercept alone
        c = rsum / n
        return c, 0.0, 0.5 * c * rsum
    c = (a * rsum - hs * g) / det
    delta = (n * g - hs * rsum) / det
    return c, delta, 0.5 * (c * rsum + delta * g)


@njit(**JIT)
def _residual_sum(r, fit_intercept):
    """``sum r`` when the intercept is fitted (0 otherwise): its 2 x 2 steps need it."""
    rsum = 0.0
    if fit_intercept:
        for i in range(r.shape[0]):
            rsum += r[i]
    return rsum


@njit(**JIT)
def _column_dots(lo, hi, indices, data, r):
    """``(sum z_j, z_j^T r)`` over column j's nonzeros lo..hi-1."""
    hs = 0.0
    hr = 0.0
    for p in range(lo, hi):
        hs += data[p]
        hr += data[p] * r[indices[p]]
    return hs, hr


@njit(**JIT)
def _settle_intercept(r, b, beta, rsum, fit_intercept):
    """The end of a sweep: the intercept's own step, then the kept offset ``beta`` (and
    that step) taken out of ``r``; returns the step's decrease."""
    if not fit_intercept:
        return 0.0
    n = r.shape[0]
    c = rsum / n
    b[0] += beta + c
    beta += c
    if beta != 0.0:
        for i in range(n):
            r[i] -= beta
    return 0.5 * c * rsum


@njit(**JIT)
def cd_sweep(indptr, indices, data, colsq, r, GT, F, w, b, lam, fit_intercept):
    """One sweep of exact coordinate minimization of one ALS half-problem; returns the
    decrease of ``N * objective`` it made (never negative in exact arithmetic).

    The half-problem is ``1/2 ||r||^2 + lam/2 (||w||^2 + ||F||^2)`` over ``(b, w, F)`` with
    the other factor fixed, where ``r = y - b - Z w - rowsum((Z F) * G)`` and ``G = Z
    F_other`` (``GT`` is its transpose, k x N, so that one factor's column is contiguous).
    ``Z`` comes as CSC (``indptr``, ``indices``, ``data``; ``colsq`` its squared column
    norms). In order, per feature j: ``w_j``, ``F_j0 .. F_j,k-1``. Each coordinate theta
    enters the prediction linearly with the column ``h`` (``z_j``, or ``z_j * G_q``), so its
    1-D quadratic has the minimizer ``theta* = (h^T r + theta h^T h) / (h^T h + lam)``.
    With ``fit_intercept`` each coordinate is minimized jointly with the (unpenalized)
    intercept ``b[0]``, a 2 x 2 solve: a column close to a constant (a raw year, ~2000)
    is otherwise nearly collinear with the intercept and coordinate steps crawl along it.
    The residual is updated over the column's nonzeros only (the intercept's shift is kept
    as one offset and applied at the end), O(nnz(Z) k) per sweep: Rendle's ALS for
    factorization machines, here for eq. (3)'s full quadratic form.
    """
    n = r.shape[0]
    d = F.shape[0]
    k = F.shape[1]
    dec = 0.0
    beta = 0.0  # the true residual is r - beta
    rsum = _residual_sum(r, fit_intercept)
    for j in range(d):
        lo = indptr[j]
        hi = indptr[j + 1]
        hs, hr = _column_dots(lo, hi, indices, data, r)
        hh = 0.0
        # coordinate t = 0 is w_j (h = z_j), t = 1 + q is F_jq (h = z_j * G_q); each loop
        # over the column applies coordinate t's step to r and sums coordinate t+1's h
        for t in range(k + 1):
            hr -= beta * hs
            if t == 0:
                c, delta, gain = _pair_step(n, hs, colsq[j], hr, rsum, lam, w[j],
                                            fit_intercept)
                w[j] += delta
            else:
                c, delta, gain = _pair_step(n, hs, hh, hr, rsum, lam, F[j, t - 1],
                                            fit_intercept)
                F[j, t - 1] += delta
            beta += c
            rsum -= c * n + delta * hs
            dec += gain
            hs = 0.0
            hh = 0.0
            hr = 0.0
            if t < k:
                g = GT[t]
                if t == 0:
                    for p in range(lo, hi):
                        i = indices[p]
                        z = data[p]
                        ri = r[i] - delta * z
                        r[i] = ri
                        h = z * g[i]
                        hs += h
                        hh += h * h
                        hr += h * ri
                else:
                    gp = GT[t - 1]
                    for p in range(lo, hi):
                        i = indices[p]
                        z = data[p]
                        ri = r[i] - delta * z * gp[i]
                        r[i] = ri
                        h = z * g[i]
                        hs += h
                        hh += h * h
                        hr += h * ri
            elif delta != 0.0:  # the last coordinate: apply its step only
                if t == 0:  # k = 0
                    for p in range(lo, hi):
                        r[indices[p]] -= delta * data[p]
                else:
                    gp = GT[t - 1]
                    for p in range(lo, hi):
                        i = indices[p]
                        r[i] -= delta * data[p] * gp[i]
    return dec + _settle_intercept(r, b, beta, rsum, fit_intercept)


@njit(**JIT)
def _column_sums(lo, hi, indices, data, g, r):
    """``(sum h, h^T h, h^T r)`` of ``h = z_j * g`` over column j's nonzeros lo..hi-1."""
    hs = 0.0
    hh = 0.0
    hr = 0.0
    for p in range(lo, hi):
        i = indices[p]
        h = data[p] * g[i]
        hs += h
        hh += h * h
        hr += h * r[i]
    return hs, hh, hr


@njit(**JIT)
def cd_full_sweep(indptr, indices, data, colsq, r, PT, ST, U, V, w, b, lam, fit_intercept):
    """One sweep of exact coordinate minimization over all of ``(b, w, U, V)``; returns the
    decrease of ``N * objective`` it made.

    Like :func:`cd_sweep`, but per feature j in turn ``w_j``, then ``U_jq`` and ``V_jq`` for
    q = 0..k-1, with both factors' projections kept up to date (``PT = (Z U)^T``, ``ST =
    (Z V)^T``, k x N, updated in place over the column's nonzeros): ``U_jq`` enters the
    prediction ``sum_q p_q s_q`` only through ``p_q``, linearly with the column
    ``z_j * s_q``, and ``V_jq`` with ``z_j * p_q``. Every coordinate sees the others' latest
    values, as in Rendle's ALS for factorization machines (its cache of per-factor sums),
    instead of waiting for the other half. O(nnz(Z) k) per sweep; each coordinate is paired
    with the intercept when ``fit_intercept``.
    """
    n = r.shape[0]
    d = U.shape[0]
    k = U.shape[1]
    dec = 0.0
    beta = 0.0  # the true residual is r - beta
    rsum = _residual_sum(r, fit_intercept)
    for j in range(d):
        lo = indptr[j]
        hi = indptr[j + 1]
        hs, hr = _column_dots(lo, hi, indices, data, r)
        hr -= beta * hs
        c, delta, gain = _pair_step(n, hs, colsq[j], hr, rsum, lam, w[j], fit_intercept)
        if delta != 0.0 or c != 0.0:
            w[j] += delta
            if delta != 0.0:
                for p in range(lo, hi):
                    r[indices[p]] -= delta * data[p]
            beta += c
            rsum -= c * n + delta * hs
            dec += gain
        for q in range(k):
            for side in range(2):
                g = ST[q] if side == 0 else PT[q]   # the column's other factor
                own = PT[q] if side == 0 else ST[q]  # this factor's projection
                F = U if side == 0 else V
                hs, hh, hr = _column_sums(lo, hi, indices, data, g, r)
                hr -= beta * hs
                c, delta, gain = _pair_step(n, hs, hh, hr, rsum, lam, F[j, q],
                                            fit_intercept)
                if delta != 0.0 or c != 0.0:
                    F[j, q] += delta
                    if delta != 0.0:
                        for p in range(lo, hi):
                            i = indices[p]
                            z = delta * data[p]
                            r[i] -= z * g[i]
                            own[i] += z
                    beta += c
                    rsum -= c * n + delta * hs
                    dec += gain
    return dec + _settle_intercept(r, b, beta, rsum, fit_intercept)
