"""Randomization (Alg. 3): a binary psi from the positive part of C(u*)."""

import math

import numpy as np
from numba import njit, prange

from kmviz._jit import JIT, PJIT

from .common import ST_ALL_CYC, _read_cycles, bqp_objective
from .dual import _positive_spectrum, _spectrum_workspace


@njit(**JIT)
def randomize_from_pairs(S, v, w, V, k, gamma, xi, psi_prev, has_prev, out_psi):
    """Alg. 3 from the positive pairs (w[:k], V[:, :k]) of Pi_+(C(u*)); returns (obj, improved).

    Samples x~ = sign(L xi_l) with L = V_+ sqrt(gamma Lambda_+) (column j of L uses xi_l[j]),
    plus the deterministic rounding of X*'s first column, are mapped to psi via
    x^ = x~(1) x~(2:) and ranked by the true objective (4); the incumbent psi_prev is kept
    unless a candidate is strictly better. sign(0) = +1.
    """
    D = S.shape[0]
    n = D + 1
    L = np.empty(k)
    for j in range(k):
        L[j] = math.sqrt(gamma * w[j])
    xt = np.empty(n)
    cand = np.empty(D)
    best = np.inf
    n_rand = xi.shape[0]
    for l in range(n_rand + 1):
        if l < n_rand:
            for i in range(n):
                s = 0.0
                for j in range(k):
                    s += V[i, j] * L[j] * xi[l, j]
                xt[i] = s
        else:
            # X*(:, 1) = gamma sum_j w_j V(1, j) V(:, j)
            for i in range(n):
                s = 0.0
                for j in range(k):
                    s += w[j] * V[0, j] * V[i, j]
                xt[i] = s
        s0 = 1.0 if xt[0] >= 0.0 else -1.0
        for i in range(D):
            x = s0 if xt[i + 1] >= 0.0 else -s0
            cand[i] = 0.5 * (x + 1.0)
        f = bqp_objective(S, v, cand)
        if f < best:
            best = f
            for i in range(D):
                out_psi[i] = cand[i]
    improved = True
    if has_prev:
        f_prev = bqp_objective(S, v, psi_prev)
        if not best < f_prev:
            improved = False
            best = f_prev
            for i in range(D):
                out_psi[i] = psi_prev[i]
    return best, improved


@njit(**JIT)
def randomize_item(S, v, u, opts, xi, psi_prev, has_prev, out_psi, stats):
    """Decompose C(u*) (one EVD / Lanczos run, counted) then Alg. 3; returns (obj, improved).

    opts: ``DualOptions`` (gamma, evd and a are read).
    """
    c_start = _read_cycles()
    work = _spectrum_workspace(S, v)
    k = _positive_spectrum(u, opts.evd, opts.a, work, stats)
    w, V = work[2], work[3]
    f, improved = randomize_from_pairs(S, v, w, V, k, opts.gamma, xi, psi_prev, has_prev,
                                       out_psi)
    stats[ST_ALL_CYC] += float(_read_cycles() - c_start)
    return f, improved


@njit(**PJIT)
def randomize_batch(S, v, u, opts, xi, psi_prev, has_prev, out_psi, out_obj, out_improved,
                    out_stats):
    """randomize_item for every item in parallel.

    out_*: ``BatchOutputs.psi``, ``.obj``, ``.improved`` and ``.st_rand``.
    Outputs are separate arguments, not a tuple: Numba drops writes made in a ``prange``
    loop to arrays taken from a tuple argument (numba issues #7135, #10338).
    """
    for i in prange(S.shape[0]):
        f, imp = randomize_item(S[i], v[i], u[i], opts, xi[i], psi_prev[i], has_prev,
                                out_psi[i], out_stats[i])
        out_obj[i] = f
        out_improved[i] = imp
