"""Plain-NumPy twins of the binary-QP kernels in ``kernels/`` (slow, obvious, for tests).

Each function computes what its kernel computes, written for clarity rather than speed.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def homogenize(S, v):
    """A of eq. (10) for the BQP (4): x = 2 psi - 1, A0 = S/4, a = S^T 1 / 2 - v."""
    D = S.shape[0]
    a = 0.5 * S.sum(axis=0) - v
    A = np.zeros((D + 1, D + 1))
    A[0, 1:] = 0.5 * a
    A[1:, 0] = 0.5 * a
    A[1:, 1:] = 0.25 * S
    return A


def bqp_objective(S, v, psi):
    """psi^T S psi - 2 psi^T v."""
    psi = np.asarray(psi, dtype=np.float64)
    return float(psi @ S @ psi - 2.0 * psi @ v)


def dual_matrix(S, v, u):
    """C(u) = -A - diag(u) of Lemma 1."""
    return -homogenize(S, v) - np.diag(u)


def dual_value_grad(S, v, u, gamma):
    """h_gamma(u) of (14) and its gradient (13): 1 - gamma diag(Pi_+(C(u)))."""
    lam, V = np.linalg.eigh(dual_matrix(S, v, u))
    lam_pos = np.maximum(lam, 0.0)
    h = float(np.sum(u) + 0.5 * gamma * np.sum(lam_pos**2))
    diag_pos = (V**2) @ lam_pos
    return h, 1.0 - gamma * diag_pos


def lanczos_start(n):
    """Ones plus a small aperiodic perturbation, normalized (as the kernel)."""
    p = 1.0 + 0.25 * np.sin(1.0 + 1.618033988749895 * np.arange(n))
    return p / np.linalg.norm(p)


def lanczos_threshold(C, a):
    """delta of eq. (20) and the three trace quantities of Lemma 3."""
    n = C.shape[0]
    D = n - 1
    tr = np.trace(C)
    tr2 = np.trace(C @ C)
    mu = tr / n
    var = max(tr2 / n - mu**2, 0.0)
    s_ub = mu + math.sqrt(var * D)
    s_lb = mu + (math.sqrt(var / D) if D > 0 else 0.0)
    s_mink = np.abs(C).sum() / n
    delta = 0.0 if D < 2 else ((s_ub - s_lb) + s_mink) / (a * D * math.log(D))
    return {"sigma_UB": s_ub, "sigma_LB": s_lb, "sigma_Minkowski": s_mink, "delta": delta}


def lanczos_tridiag(C, p1, delta):
    """Alg. 5 with full reorthogonalization: (alpha, beta, P) with beta[m-1] = beta_{m+1}."""
    n = C.shape[0]
    P = np.zeros((n, n))
    P[:, 0] = p1
    alpha = np.zeros(n)
    beta = np.zeros(n)
    for j in range(n):
        w = C @ P[:, j]
        if j > 0:
            w = w - beta[j - 1] * P[:, j - 1]
        alpha[j] = w @ P[:, j]
        w = w - alpha[j] * P[:, j]
        for _ in range(2):
            w = w - P[:, : j + 1] @ (P[:, : j + 1].T @ w)
        beta[j] = np.linalg.norm(w)
        if beta[j] <= delta or j == n - 1 or beta[j] == 0.0:
            m = j + 1
            return alpha[:m], beta[:m], P[:, :m]
        P[:, j + 1] = w / beta[j]
    raise AssertionError("unreachable")


def ritz_pairs(alpha, beta, P):
    """Ritz values/vectors (15) from H_m = tridiag(beta, alpha, beta)."""
    m = alpha.shape[0]
    H = np.diag(alpha) + np.diag(beta[: m - 1], 1) + np.diag(beta[: m - 1], -1)
    theta, Q = np.linalg.eigh(H)
    return theta, P @ Q, Q


def randomize_from_pairs(S, v, w, V, gamma, xi, psi_prev=None):
    """Alg. 3 from the positive pairs of Pi_+(C(u*)) plus the first-column rounding.

    Returns (psi, objective, improved); ``psi_prev`` is kept unless strictly beaten.
    """
    D = S.shape[0]
    k = w.shape[0]
    L = V[:, :k] * np.sqrt(gamma * w[:k])
    samples = [L @ xi[l, :k] for l in range(xi.shape[0])]
    samples.append(V[:, :k] @ (w[:k] * V[0, :k]))
    best, best_f = None, np.inf
    for xt in samples:
        s0 = 1.0 if xt[0] >= 0 else -1.0
        x = np.where(xt[1:] >= 0, s0, -s0)
        psi = 0.5 * (x + 1.0)
        f = bqp_objective(S, v, psi)
        if f < best_f:
            best, best_f = psi, f
    if psi_prev is not None:
        f_prev = bqp_objective(S, v, psi_prev)
        if not best_f < f_prev:
            return np.asarray(psi_prev, dtype=np.float64), f_prev, False
    return best, best_f, True


def positive_pairs(C):
    """Positive eigenpairs of C by a full EVD, ascending (the kernel's layout)."""
    lam, V = np.linalg.eigh(C)
    keep = lam > 0
    return lam[keep], V[:, keep]


def enumerate_bqp(S, v):
    """Brute force over all 2^D psi; returns (psi, objective) of a minimizer."""
    D = S.shape[0]
    best, best_f = None, np.inf
    for bits in itertools.product((0.0, 1.0), repeat=D):
        psi = np.array(bits)
        f = bqp_objective(S, v, psi)
        if f < best_f:
            best, best_f = psi, f
    return best, best_f
