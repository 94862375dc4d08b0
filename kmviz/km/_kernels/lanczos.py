"""The modified Lanczos method (Alg. 5) with the threshold of eq. (20)."""

import math

import numpy as np
from numba import njit

from kmviz._jit import JIT

from .eigen import lanczos_step, ritz_vector, tridiag_eig


@njit(**JIT)
def lanczos_threshold(C, a):
    """delta of eq. (20) from the trace bounds of Lemma 3; 0 when D < 2 (ln D <= 0).

    With delta = 0 Lanczos runs to the full dimension D + 1 (exact, and cheap for D = 1).
    """
    n = C.shape[0]
    D = n - 1
    tr = 0.0
    tr2 = 0.0
    l1 = 0.0
    for i in range(n):
        tr += C[i, i]
        for j in range(n):
            tr2 += C[i, j] * C[i, j]
            l1 += abs(C[i, j])
    if D < 2:
        return 0.0
    mu = tr / n
    var = max(tr2 / n - mu * mu, 0.0)
    s_ub = mu + math.sqrt(var * D)
    s_lb = mu + math.sqrt(var / D)
    s_mink = l1 / n
    return ((s_ub - s_lb) + s_mink) / (a * D * math.log(D))


@njit(**JIT)
def lanczos_tridiag(C, p1, delta, out_alpha, out_beta, out_P):
    """Alg. 5 with full reorthogonalization; returns m.

    out_alpha[:m] is the diagonal of H_m, out_beta[:m-1] its off-diagonal and
    out_beta[m-1] = beta_{m+1}, the stopping quantity (<= delta, or m = D + 1).
    Row j of out_P holds p_{j+1} (P_m^T, rows for contiguous access).
    """
    n = C.shape[0]
    w = np.empty(n)
    for i in range(n):
        out_P[0, i] = p1[i]
    m = n
    for j in range(n):
        alpha, beta = lanczos_step(C, 1.0, out_P, j, out_beta[j - 1] if j > 0 else 0.0, w)
        out_alpha[j] = alpha
        out_beta[j] = beta
        if beta <= delta or j == n - 1 or beta == 0.0:
            m = j + 1
            break
        for i in range(n):
            out_P[j + 1, i] = w[i] / beta
    return m


@njit(**JIT)
def lanczos_positive_pairs(C, p1, delta, out_w, out_V, work_P, work_alpha, work_beta):
    """Ritz pairs (15) of C with positive Ritz value, written to out_w[:k], out_V[:, :k].

    Returns (k, m, beta_{m+1}).
    """
    n = C.shape[0]
    m = lanczos_tridiag(C, p1, delta, work_alpha, work_beta, work_P)
    theta = np.empty(m)
    Q = np.empty((m, m))
    tridiag_eig(work_alpha, work_beta, m, theta, Q, np.empty(m))
    k = 0
    for r in range(m):
        if theta[r] > 0.0:
            out_w[k] = theta[r]
            ritz_vector(work_P, Q, r, m, out_V, k)
            k += 1
    return k, m, work_beta[m - 1]
