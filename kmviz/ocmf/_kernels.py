"""Numba kernels of the observed-pair sums of one-class MF (the O(|Omega| k) part).

Pairs come in a compressed layout that is "major" in the side being worked on: row i of the
major side owns the pairs ``indptr[i]:indptr[i + 1]``, ``idx[e]`` is the other side's index
of pair e and ``y[e]`` its label. The W-step of OCMF reads the pairs user-major (CSR), the
H-step item-major (CSC); :class:`kmviz.pairs.ObservedPairs` keeps both.

Each kernel is a per-row body (``_*_row``) and one loop over the rows (``_*_rows``, with
``prange``) compiled twice by :func:`kmviz._jit.parallel_and_serial`: with ``parallel=True``
(``_*_par``) and without (``_*_ser``). Every row writes only its own row of the outputs
(``out[i]``) or its own pairs (``out[indptr[i]:indptr[i + 1]]``): no two iterations touch the
same element, so there are no races and no reductions inside the parallel loop; per-row
partial sums (``row_out``) are summed by the caller. The public functions pick the parallel
loop when the work (pairs x k) is at least :data:`PARALLEL_MIN_WORK`. Below it the threads
cost more than they save: on this shared 2-core box a parallel call costs about 0.5 ms to
start (a 40 x 30 problem needs a few microseconds), and between calls Numba's OpenMP threads
spin and take the core the serial parts (BLAS, Python) need. Measured on MovieLens 100K
(|Omega+| = 50k, k = 64, load average 5-9): 0.05-0.12 s per outer iteration serial against
0.24-0.32 s parallel. ``bench/ocmf/ocmf_ml100k.py --threads`` repeats the comparison, and
``bench/ocmf/ocmf_timing.py --threads 2 --parallel-min-work 0`` against the default (load 5-6, LR-wSQ,
wall median per outer iteration): ML-100K 0.087 s parallel against 0.041 s serial,
latest-small 0.155 s against 0.072 s.

TRON's value pass is fused (:func:`observed_value_gradient`): one read of each pair's O[j]
gives its score, its loss, the gradient term and the Hessian diagonal's share, where three
passes did before; the Hessian-vector pass adds the all-pairs term ``2 a_i (N O_c)_i`` in
the same loop. Both have float32 twins (``*_row32``) for ``OneClassMF(dtype="float32")``.

With ``c_e = a_i o_j`` the weight of pair e in the all-pairs term and ``s_e`` its score, the
split loss of the OCMF paper, eq. (6), is ``l+_e = l(y_e, s_e) - c_e (a_bar - s_e)^2`` with
derivatives ``l+'_e = l'(y_e, s_e) - 2 c_e (s_e - a_bar)`` and ``l+''_e = l''(y_e, s_e) - 2 c_e``
(which may be negative: the total Hessian is still PSD).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._jit import JIT, parallel_and_serial
from .losses import loss_derivatives, loss_value

#: Pairs x k below which the kernels run on one thread.
PARALLEL_MIN_WORK = 20_000_000


def _parallel(nnz, k) -> bool:
    return nnz * max(k, 1) >= PARALLEL_MIN_WORK


# ----------------------------------------------------------------------------- row bodies
@njit(**JIT)
def _scores_row(i, indptr, idx, E, O, out):
    k = E.shape[1]
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        s = 0.0
        for f in range(k):
            s += E[i, f] * O[j, f]
        out[e] = s


@njit(**JIT)
def _value_row(i, indptr, idx, y, E, O, a, o, a_bar, code, scores_out):
    k = E.shape[1]
    total = 0.0
    ai = a[i]
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        s = 0.0
        for f in range(k):
            s += E[i, f] * O[j, f]
        scores_out[e] = s
        r = a_bar - s
        total += loss_value(code, y[e], s) - ai * o[j] * r * r
    return total


@njit(**JIT)
def _value_deriv_row(i, indptr, idx, y, E, O, a, o, a_bar, code, scores_out, d1_out, d2_out):
    k = E.shape[1]
    total = 0.0
    ai = a[i]
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        s = 0.0
        for f in range(k):
            s += E[i, f] * O[j, f]
        scores_out[e] = s
        c = ai * o[j]
        r = a_bar - s
        lv, d1, d2 = loss_derivatives(code, y[e], s)
        total += lv - c * r * r
        d1_out[e] = d1 - 2.0 * c * (s - a_bar)
        d2_out[e] = d2 - 2.0 * c
    return total


@njit(**JIT)
def _value_grad_row(i, indptr, idx, y, E, O, a, o, a_bar, code, want_diag, scores_out, d2_out,
                    G_out, D_out):
    # one pass per row: the pair's row O[j] is read once for its score, its gradient term
    # l+' O[j] and its share l+'' O[j]^2 of the Hessian diagonal (three passes before)
    k = E.shape[1]
    for f in range(k):
        G_out[i, f] = 0.0
    if want_diag:
        for f in range(k):
            D_out[i, f] = 0.0
    total = 0.0
    ai = a[i]
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        s = 0.0
        for f in range(k):
            s += E[i, f] * O[j, f]
        scores_out[e] = s
        c = ai * o[j]
        r = a_bar - s
        lv, d1, d2 = loss_derivatives(code, y[e], s)
        total += lv - c * r * r
        g = d1 - 2.0 * c * (s - a_bar)
        h = d2 - 2.0 * c
        d2_out[e] = h
        if want_diag:
            for f in range(k):
                v = O[j, f]
                G_out[i, f] += g * v
                D_out[i, f] += h * v * v
        else:
            for f in range(k):
                G_out[i, f] += g * O[j, f]
    return total


@njit(**JIT)
def _value_shifted_row(i, indptr, idx, y, s0, ds, alpha, a, o, a_bar, code):
    total = 0.0
    ai = a[i]
    for e in range(indptr[i], indptr[i + 1]):
        s = s0[e] + alpha * ds[e]
        r = a_bar - s
        total += loss_value(code, y[e], s) - ai * o[idx[e]] * r * r
    return total


@njit(**JIT)
def _gradient_row(i, indptr, idx, y, scores, O, a, o, a_bar, code, G_out, d2_out):
    k = O.shape[1]
    for f in range(k):
        G_out[i, f] = 0.0
    ai = a[i]
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        s = scores[e]
        c = ai * o[j]
        _, d1, d2 = loss_derivatives(code, y[e], s)
        g = d1 - 2.0 * c * (s - a_bar)
        d2_out[e] = d2 - 2.0 * c
        for f in range(k):
            G_out[i, f] += g * O[j, f]


@njit(**JIT)
def _hvp_add_pairs(i, indptr, idx, N, O, d2, U_out):
    """Row i's pair terms of the Hessian-vector product, added to ``U_out[i]``."""
    k = O.shape[1]
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        t = 0.0
        for f in range(k):
            t += N[i, f] * O[j, f]
        t *= d2[e]
        for f in range(k):
            U_out[i, f] += t * O[j, f]


# The two rows below share their pair loop through _hvp_add_pairs, at the speed of a copied
# loop (interleaved micro-timing on ML100K-sized pairs, k = 64; the results are bit-identical).
@njit(**JIT)
def _hvp_row(i, indptr, idx, N, O, d2, U_out):
    for f in range(O.shape[1]):
        U_out[i, f] = 0.0
    _hvp_add_pairs(i, indptr, idx, N, O, d2, U_out)


@njit(**JIT)
def _hvp_base_row(i, indptr, idx, N, O, d2, base, base_w, U_out):
    bw = base_w[i]
    for f in range(O.shape[1]):
        U_out[i, f] = bw * base[i, f]
    _hvp_add_pairs(i, indptr, idx, N, O, d2, U_out)


# float32 twins of the two passes TRON repeats (value + gradient, Hessian-vector): the
# embeddings, the products and the row accumulators in single precision, each pair's loss
# and derivatives in double. Twice the SIMD width and half the memory traffic of the
# float64 bodies (0.45 against 0.9 ms for a MovieLens 100K Hessian-vector pass, k = 64).
@njit(**JIT)
def _value_grad_row32(i, indptr, idx, y, E, O, a, o, a_bar, code, want_diag, scores_out,
                      d2_out, G_out, D_out):
    k = E.shape[1]
    for f in range(k):
        G_out[i, f] = 0.0
    if want_diag:
        for f in range(k):
            D_out[i, f] = 0.0
    total = 0.0
    ai = a[i]
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        s32 = np.float32(0.0)
        for f in range(k):
            s32 += E[i, f] * O[j, f]
        s = np.float64(s32)
        scores_out[e] = s
        c = ai * o[j]
        r = a_bar - s
        lv, d1, d2 = loss_derivatives(code, y[e], s)
        total += lv - c * r * r
        h = d2 - 2.0 * c
        d2_out[e] = h
        g32 = np.float32(d1 - 2.0 * c * (s - a_bar))
        h32 = np.float32(h)
        if want_diag:
            for f in range(k):
                v = O[j, f]
                G_out[i, f] += g32 * v
                D_out[i, f] += h32 * v * v
        else:
            for f in range(k):
                G_out[i, f] += g32 * O[j, f]
    return total


@njit(**JIT)
def _hvp_base_row32(i, indptr, idx, N, O, d2, base, base_w, U_out):
    k = O.shape[1]
    bw = np.float32(base_w[i])
    for f in range(k):
        U_out[i, f] = bw * base[i, f]
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        t = np.float32(0.0)
        for f in range(k):
            t += N[i, f] * O[j, f]
        t *= np.float32(d2[e])
        for f in range(k):
            U_out[i, f] += t * O[j, f]


@njit(**JIT)
def _diag_row(i, indptr, idx, O, d2, out):
    k = O.shape[1]
    for f in range(k):
        out[i, f] = 0.0
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        c = d2[e]
        for f in range(k):
            out[i, f] += c * O[j, f] * O[j, f]


@njit(**JIT)
def _combine_row(i, indptr, idx, coef, O, out):
    k = O.shape[1]
    for f in range(k):
        out[i, f] = 0.0
    for e in range(indptr[i], indptr[i + 1]):
        c = coef[e]
        j = idx[e]
        for f in range(k):
            out[i, f] += c * O[j, f]


@njit(**JIT)
def _combine_perm_row(i, indptr, idx, perm, coef, O, out):
    # a separate body: a branch on perm inside the pair loop halves the speed (measured)
    k = O.shape[1]
    for f in range(k):
        out[i, f] = 0.0
    for e in range(indptr[i], indptr[i + 1]):
        c = coef[perm[e]]
        j = idx[e]
        for f in range(k):
            out[i, f] += c * O[j, f]


@njit(**JIT)
def _joint_gn_row(i, indptr, idx, P, Q, dP, dQ, d2, z_out, row_out):
    k = P.shape[1]
    for f in range(k):
        row_out[i, f] = 0.0
    for e in range(indptr[i], indptr[i + 1]):
        j = idx[e]
        t = 0.0
        for f in range(k):
            t += dP[i, f] * Q[j, f] + P[i, f] * dQ[j, f]
        t *= d2[e]
        z_out[e] = t
        for f in range(k):
            row_out[i, f] += t * Q[j, f]


# ----------------------------------------------------------------------------- loops
# One loop per kernel, over the rows with prange, compiled twice by
# kmviz._jit.parallel_and_serial: _<name>_par (parallel=True) and _<name>_ser (where prange
# runs as range); the public functions below pick one by the size of the work.
def _scores_rows(indptr, idx, E, O, out):
    for i in prange(indptr.shape[0] - 1):
        _scores_row(i, indptr, idx, E, O, out)


_scores_par, _scores_ser = parallel_and_serial(_scores_rows)


def _value_rows(indptr, idx, y, E, O, a, o, a_bar, code, scores_out, row_out):
    for i in prange(indptr.shape[0] - 1):
        row_out[i] = _value_row(i, indptr, idx, y, E, O, a, o, a_bar, code, scores_out)


_value_par, _value_ser = parallel_and_serial(_value_rows)


def _value_deriv_rows(indptr, idx, y, E, O, a, o, a_bar, code, scores_out, d1_out, d2_out,
                      row_out):
    for i in prange(indptr.shape[0] - 1):
        row_out[i] = _value_deriv_row(i, indptr, idx, y, E, O, a, o, a_bar, code, scores_out,
                                      d1_out, d2_out)


_value_deriv_par, _value_deriv_ser = parallel_and_serial(_value_deriv_rows)


def _value_grad_rows(indptr, idx, y, E, O, a, o, a_bar, code, want_diag, scores_out, d2_out,
                     G_out, D_out, row_out):
    for i in prange(indptr.shape[0] - 1):
        row_out[i] = _value_grad_row(i, indptr, idx, y, E, O, a, o, a_bar, code, want_diag,
                                     scores_out, d2_out, G_out, D_out)


_value_grad_par, _value_grad_ser = parallel_and_serial(_value_grad_rows)


def _value_grad32_rows(indptr, idx, y, E, O, a, o, a_bar, code, want_diag, scores_out,
                       d2_out, G_out, D_out, row_out):
    for i in prange(indptr.shape[0] - 1):
        row_out[i] = _value_grad_row32(i, indptr, idx, y, E, O, a, o, a_bar, code, want_diag,
                                       scores_out, d2_out, G_out, D_out)


_value_grad32_par, _value_grad32_ser = parallel_and_serial(_value_grad32_rows)


def _hvp_base32_rows(indptr, idx, N, O, d2, base, base_w, U_out):
    for i in prange(indptr.shape[0] - 1):
        _hvp_base_row32(i, indptr, idx, N, O, d2, base, base_w, U_out)


_hvp_base32_par, _hvp_base32_ser = parallel_and_serial(_hvp_base32_rows)


def _shifted_rows(indptr, idx, y, s0, ds, alpha, a, o, a_bar, code, row_out):
    for i in prange(indptr.shape[0] - 1):
        row_out[i] = _value_shifted_row(i, indptr, idx, y, s0, ds, alpha, a, o, a_bar, code)


_shifted_par, _shifted_ser = parallel_and_serial(_shifted_rows)


def _gradient_rows(indptr, idx, y, scores, O, a, o, a_bar, code, G_out, d2_out):
    for i in prange(indptr.shape[0] - 1):
        _gradient_row(i, indptr, idx, y, scores, O, a, o, a_bar, code, G_out, d2_out)


_gradient_par, _gradient_ser = parallel_and_serial(_gradient_rows)


def _hvp_rows(indptr, idx, N, O, d2, U_out):
    for i in prange(indptr.shape[0] - 1):
        _hvp_row(i, indptr, idx, N, O, d2, U_out)


_hvp_par, _hvp_ser = parallel_and_serial(_hvp_rows)


def _hvp_base_rows(indptr, idx, N, O, d2, base, base_w, U_out):
    for i in prange(indptr.shape[0] - 1):
        _hvp_base_row(i, indptr, idx, N, O, d2, base, base_w, U_out)


_hvp_base_par, _hvp_base_ser = parallel_and_serial(_hvp_base_rows)


def _diag_rows(indptr, idx, O, d2, out):
    for i in prange(indptr.shape[0] - 1):
        _diag_row(i, indptr, idx, O, d2, out)


_diag_par, _diag_ser = parallel_and_serial(_diag_rows)


def _combine_rows(indptr, idx, coef, O, out):
    for i in prange(indptr.shape[0] - 1):
        _combine_row(i, indptr, idx, coef, O, out)


_combine_par, _combine_ser = parallel_and_serial(_combine_rows)


def _combine_perm_rows(indptr, idx, perm, coef, O, out):
    for i in prange(indptr.shape[0] - 1):
        _combine_perm_row(i, indptr, idx, perm, coef, O, out)


_combine_perm_par, _combine_perm_ser = parallel_and_serial(_combine_perm_rows)


def _joint_gn_rows(indptr, idx, P, Q, dP, dQ, d2, z_out, row_out):
    for i in prange(indptr.shape[0] - 1):
        _joint_gn_row(i, indptr, idx, P, Q, dP, dQ, d2, z_out, row_out)


_joint_gn_par, _joint_gn_ser = parallel_and_serial(_joint_gn_rows)


# ----------------------------------------------------------------------------- dense parts
# The all-pairs terms of a block whose Gramian O_c is diagonal (the eigenbasis of
# BlockProblem(basis="eig")), one pass over E each instead of a NumPy temporary per term.
@njit(**JIT)
def diag_quadratic_parts(E, w, ocd):
    """``(sum_i w_i sum_f ocd_f E_if^2, w^T E, ||E||_F^2)``: L-'s quadratic term with
    O_c = diag(ocd), its linear term's ``a^T E`` and the L2 term of X = I."""
    k = E.shape[1]
    quad = 0.0
    sq = 0.0
    wE = np.zeros(k)
    for i in range(E.shape[0]):
        wi = w[i]
        qi = 0.0
        for f in range(k):
            e = E[i, f]
            qi += ocd[f] * e * e
            sq += e * e
            wE[f] += wi * e
        quad += wi * qi
    return quad, wE, sq


@njit(**JIT)
def add_dense_gradient_diag(G, E, w, ocd, ov, a_bar, lam):
    """``G += 2 A (E diag(ocd) - a_bar 1 ov^T) + 2 lam E`` in place (lam = 0: no L2 term)."""
    k = E.shape[1]
    for i in range(E.shape[0]):
        wi2 = 2.0 * w[i]
        for f in range(k):
            e = E[i, f]
            G[i, f] += wi2 * (e * ocd[f] - a_bar * ov[f]) + 2.0 * lam * e


# ----------------------------------------------------------------------------- CG vectors
# TRON's conjugate-gradient bookkeeping on vectors of length d k (580,000 for the item block
# of MovieLens latest-small at k = 64): one pass each instead of a NumPy temporary per term.
@njit(**JIT)
def cg_start(g, M, s, inv_m, r, z, d):
    """CG's start in one pass: ``s = 0``, ``inv_m = 1 / M``, ``r = -g``, ``z = r / M``,
    ``d = z``; returns ``z . r``."""
    zr = 0.0
    for t in range(g.shape[0]):
        s[t] = 0.0
        im = 1.0 / M[t]
        inv_m[t] = im
        rt = -g[t]
        r[t] = rt
        zt = rt * im
        z[t] = zt
        d[t] = zt
        zr += zt * rt
    return zr


@njit(**JIT)
def cg_curvature(s, d, Hd, M):
    """``(d . Hd, s . M d, d . M d)`` in one pass."""
    dHd = 0.0
    sMd = 0.0
    dMd = 0.0
    for t in range(d.shape[0]):
        md = M[t] * d[t]
        dHd += d[t] * Hd[t]
        sMd += s[t] * md
        dMd += d[t] * md
    return dHd, sMd, dMd


@njit(**JIT)
def cg_advance(s, d, r, Hd, inv_m, alpha, z_out):
    """``s += alpha d``, ``r -= alpha Hd``, ``z = r / M``; returns ``z . r``."""
    zr = 0.0
    for t in range(d.shape[0]):
        s[t] += alpha * d[t]
        rt = r[t] - alpha * Hd[t]
        r[t] = rt
        zt = rt * inv_m[t]
        z_out[t] = zt
        zr += zt * rt
    return zr


@njit(**JIT)
def cg_direction(d, z, beta):
    """``d = z + beta d`` in place."""
    for t in range(d.shape[0]):
        d[t] = z[t] + beta * d[t]


# ----------------------------------------------------------------------------- public
def pair_scores(indptr, idx, E, O, out):
    """``out[e] = E[i] . O[idx[e]]`` for every pair e of row i."""
    fn = _scores_par if _parallel(idx.shape[0], E.shape[1]) else _scores_ser
    fn(indptr, idx, E, O, out)


def observed_value(indptr, idx, y, E, O, a, o, a_bar, code, scores_out, row_out):
    """Scores of all pairs and the per-row sums of ``l+_e`` (eq. (6))."""
    fn = _value_par if _parallel(idx.shape[0], E.shape[1]) else _value_ser
    fn(indptr, idx, y, E, O, a, o, a_bar, code, scores_out, row_out)


def observed_value_derivatives(indptr, idx, y, E, O, a, o, a_bar, code, scores_out, d1_out,
                                d2_out, row_out):
    """As :func:`observed_value`, also storing ``l+'_e`` and ``l+''_e`` of every pair (one
    pass: the gradient is then a sparse product, and the logistic loss needs its exp once)."""
    fn = _value_deriv_par if _parallel(idx.shape[0], E.shape[1]) else _value_deriv_ser
    fn(indptr, idx, y, E, O, a, o, a_bar, code, scores_out, d1_out, d2_out, row_out)


def observed_value_gradient(indptr, idx, y, E, O, a, o, a_bar, code, scores_out, d2_out,
                            G_out, D_out, row_out, want_diag=True):
    """One pass for everything TRON needs at a point: the per-row sums of ``l+_e``, the
    scores, ``G_out[i] = sum_e l+'_e O[j]`` (D+ H of eq. (14)), ``D_out[i, f] = sum_e l+''_e
    O[j, f]^2`` (row i's share of the Hessian diagonal) and ``d2_out[e] = l+''_e`` (for
    eq. (15)). With ``want_diag=False`` D_out is left alone (a point whose Hessian diagonal
    may never be needed: :func:`observed_hess_diag` computes it from d2_out later)."""
    par = _parallel(idx.shape[0], E.shape[1])
    if E.dtype == np.float32:   # E, O, G_out, D_out all float32 (see _value_grad_row32)
        fn = _value_grad32_par if par else _value_grad32_ser
    else:
        fn = _value_grad_par if par else _value_grad_ser
    fn(indptr, idx, y, E, O, a, o, a_bar, code, bool(want_diag), scores_out, d2_out, G_out,
       D_out, row_out)


def observed_value_shifted(indptr, idx, y, s0, ds, alpha, a, o, a_bar, code, row_out):
    """Per-row sums of ``l+_e`` at the scores ``s0 + alpha ds`` (line-search trials)."""
    fn = _shifted_par if _parallel(idx.shape[0], 8) else _shifted_ser
    fn(indptr, idx, y, s0, ds, alpha, a, o, a_bar, code, row_out)


def observed_gradient(indptr, idx, y, scores, O, a, o, a_bar, code, G_out, d2_out):
    """``G_out[i] = sum_e l+'_e O[idx[e]]`` (the D+ H of eq. (14)) and ``d2_out[e] = l+''_e``."""
    fn = _gradient_par if _parallel(idx.shape[0], O.shape[1]) else _gradient_ser
    fn(indptr, idx, y, scores, O, a, o, a_bar, code, G_out, d2_out)


def observed_hvp(indptr, idx, N, O, d2, U_out, base=None, base_w=None):
    """``U_out[i] = sum_e d2[e] (N[i] . O[j]) O[j]``: the U+ H of eq. (15); with ``base``
    (rows x k) and ``base_w`` (rows), ``base_w[i] base[i]`` is added in the same pass."""
    par = _parallel(idx.shape[0], O.shape[1])
    if base is None:
        (_hvp_par if par else _hvp_ser)(indptr, idx, N, O, d2, U_out)
    elif N.dtype == np.float32:   # N, O, base, U_out float32
        (_hvp_base32_par if par else _hvp_base32_ser)(indptr, idx, N, O, d2, base, base_w,
                                                      U_out)
    else:
        (_hvp_base_par if par else _hvp_base_ser)(indptr, idx, N, O, d2, base, base_w, U_out)


def observed_hess_diag(indptr, idx, O, d2, out):
    """``out[i, f] = sum_e d2[e] O[j, f]^2``: row i's share of the Hessian diagonal."""
    fn = _diag_par if _parallel(idx.shape[0], O.shape[1]) else _diag_ser
    fn(indptr, idx, O, d2, out)


def rows_combine(indptr, idx, coef, O, out, perm=None):
    """``out[i] = sum_e coef[e] O[idx[e]]`` (with ``coef[perm[e]]`` when perm is given: the
    transposed product, reading per-pair values stored in the other orientation's order)."""
    par = _parallel(idx.shape[0], O.shape[1])
    if perm is None:
        (_combine_par if par else _combine_ser)(indptr, idx, coef, O, out)
    else:
        (_combine_perm_par if par else _combine_perm_ser)(indptr, idx, perm, coef, O, out)


def observed_joint_gn(indptr, idx, P, Q, dP, dQ, d2, z_out, row_out):
    """``z_e = d2[e] (dP[i] . Q[j] + P[i] . dQ[j])`` and ``row_out[i] = sum_e z_e Q[j]``: the
    observed part of the joint Gauss-Newton product (extreme-similarity paper, (36)-(40))."""
    fn = _joint_gn_par if _parallel(idx.shape[0], P.shape[1]) else _joint_gn_ser
    fn(indptr, idx, P, Q, dP, dQ, d2, z_out, row_out)


