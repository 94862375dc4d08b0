"""Dense oracles of the gFM operators and of Algorithm 1, for tests only (O(d^2) memory).

These spell the paper's formulas out literally, with d x d matrices, so the tests can pin the
matrix-free code of :mod:`kmviz.gfm.operators` and :mod:`kmviz.gfm.onepass` to them.
Production code never imports this module.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh, qr


def sense(X, M):
    """``A(M)_i = x_i^T M x_i`` (eq. (2)), rows of X are the x_i."""
    return np.einsum("ij,jk,ik->i", X, M, X)


def adjoint(X, z):
    """``A'(z) = sum_i z_i x_i x_i^T`` (d x d)."""
    return X.T @ (z[:, None] * X)


def statistics(X, y, w, M, b=0.0):
    """``(H_1, h_2, h_3)`` of Alg. 1 line 1 as dense objects, for the model (w, M, b)."""
    n = X.shape[0]
    r = y - b - sense(X, M) - X @ w
    return adjoint(X, r) / (2 * n), float(r.mean()), X.T @ r / n


def initialize(X, y, k):
    """Line 2: U^(0) = top-k eigenvectors by magnitude of ``H_1 - h_2/2 I`` (dense eigh)."""
    d = X.shape[1]
    H1, h2, _ = statistics(X, y, np.zeros(d), np.zeros((d, d)))
    vals, vecs = eigh(H1 - 0.5 * h2 * np.eye(d))
    order = np.argsort(-np.abs(vals), kind="stable")[:k]
    return vals[order], vecs[:, order]


def step(X, y, w, U, V):
    """Lines 4-8 of Alg. 1 with dense H_1 (the paper's formulas, literally)."""
    d = X.shape[1]
    M = 0.5 * (U @ V.T + V @ U.T)
    H1, h2, h3 = statistics(X, y, w, M)
    Mt = H1 - 0.5 * h2 * np.eye(d) + M
    U_new = qr(Mt @ U, mode="economic")[0]
    return w + h3, U_new, Mt @ U_new
