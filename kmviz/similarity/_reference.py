"""Naive O(mn) spellings of the all-pairs objective, its gradient and Gauss-Newton matrix.

These form the m x n score matrix, the per-pair weights, labels and loss derivatives of
(4)-(7) directly (no split, no Gramians): the oracle the fast path of
:mod:`kmviz.similarity.allpairs` is tested against. Dense NumPy; tests and ``bench/`` only.
"""

from __future__ import annotations

import numpy as np


def pair_loss(loss, y, s):
    """(l, l', l'') arrays of the loss on O."""
    if loss == "squared":
        r = s - y
        return 0.5 * r * r, r, np.ones_like(s)
    z = y * s
    value = np.logaddexp(0.0, -z)
    sig_neg = 1.0 / (1.0 + np.exp(z))
    return value, -y * sig_neg, y * y * sig_neg * (1.0 - sig_neg)


def entry_terms(S, obs, Y, loss, omega, a, b, Ytilde):
    """Per-pair value, first and second derivative of l_ij (m x n each), eq. (7)."""
    Wt = omega * np.outer(a, b)
    lv, d1, d2 = pair_loss(loss, Y, S)
    value = np.where(obs, lv, 0.5 * Wt * (Ytilde - S) ** 2)
    first = np.where(obs, d1, Wt * (S - Ytilde))
    second = np.where(obs, d2, Wt)
    return value, first, second


def dense_problem(problem):
    """(obs mask, Y, Ytilde) as m x n arrays from an :class:`AllPairsProblem`."""
    p = problem.pairs
    obs = np.zeros((p.n_rows, p.n_cols), dtype=bool)
    obs[p.rows, p.cols] = True
    Y = np.zeros((p.n_rows, p.n_cols))
    Y[p.rows, p.cols] = p.labels
    return obs, Y, problem.Pt @ problem.Qt.T


def scores(problem, theta):
    tu, tv = problem.split(theta)
    P = problem.fu.forward(tu, problem.U)
    Q = problem.fv.forward(tv, problem.V)
    return P @ Q.T


def objective(problem, theta):
    """L(theta) by summing all m n pair losses."""
    obs, Y, Yt = dense_problem(problem)
    value, _, _ = entry_terms(scores(problem, theta), obs, Y, problem.loss, problem.omega,
                              problem.a, problem.b, Yt)
    return float(value.sum()) + 0.5 * problem.lam * float(theta @ theta)


def embedding_gradient(problem, theta):
    """(dL/dP, dL/dQ) with the dense m x n derivative matrix."""
    obs, Y, Yt = dense_problem(problem)
    tu, tv = problem.split(theta)
    P = problem.fu.forward(tu, problem.U)
    Q = problem.fv.forward(tv, problem.V)
    _, D1, _ = entry_terms(P @ Q.T, obs, Y, problem.loss, problem.omega, problem.a,
                           problem.b, Yt)
    return D1 @ Q, D1.T @ P


def score_jacobian(problem, theta, h=1e-6):
    """d vec(Yhat) / d theta (mn x D) by central finite differences."""
    cols = []
    for t in range(theta.size):
        e = np.zeros_like(theta)
        e[t] = h
        cols.append(((scores(problem, theta + e) - scores(problem, theta - e)) / (2 * h))
                    .ravel())
    return np.stack(cols, axis=1)


def gauss_newton_matrix(problem, theta, J=None):
    """G = J^T diag(l''_ij) J + lambda I (31) from a dense Jacobian."""
    obs, Y, Yt = dense_problem(problem)
    _, _, D2 = entry_terms(scores(problem, theta), obs, Y, problem.loss, problem.omega,
                           problem.a, problem.b, Yt)
    J = score_jacobian(problem, theta) if J is None else J
    return J.T @ (D2.ravel()[:, None] * J) + problem.lam * np.eye(theta.size)
