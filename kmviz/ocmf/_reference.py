"""Naive O(mn) spellings of the OCMF objective, gradients and Hessian-vector products.

These form the m x n score matrix and every per-entry loss, weight and derivative, straight
from eq. (2)-(3) of the OCMF paper (no loss split, no Gramians): the oracle that the fast
path of :mod:`kmviz.ocmf.problem` / :mod:`kmviz.ocmf.allpairs` is tested and benchmarked
against. Dense NumPy; for tests and ``bench/`` only.
"""

from __future__ import annotations

import numpy as np

from .losses import numpy_loss


def _dense(A):
    return A.toarray() if hasattr(A, "toarray") else np.asarray(A, dtype=np.float64)


def entry_terms(S, Y, loss, p, q, a_bar, parts=(0, 1, 2)):
    """Per-entry value, first and second derivative of l_ij(Y_ij, S_ij) (m x n each); only
    the ``parts`` asked for are computed (the others are None)."""
    obs = _dense(Y) != 0
    C = np.outer(p, q)
    lv, d1, d2 = numpy_loss(loss, np.ones_like(S), S, parts)
    value = np.where(obs, lv, C * (a_bar - S) ** 2) if 0 in parts else None
    first = np.where(obs, d1, 2.0 * C * (S - a_bar)) if 1 in parts else None
    second = np.where(obs, d2, 2.0 * C) if 2 in parts else None
    return value, first, second


def objective(Wu, Wv, X, Z, Y, loss, p, q, a_bar, lam_w, lam_h, lam_g=0.0, L=None):
    """f(W, H) of eq. (2) with H = Z Wv, by summing all m n entries."""
    X, Z = _dense(X), _dense(Z)
    P, Q = X @ Wu, Z @ Wv
    value, _, _ = entry_terms(P @ Q.T, Y, loss, p, q, a_bar)
    f = float(value.sum()) + lam_w * float(np.sum(Wu * Wu)) + lam_h * float(np.sum(Wv * Wv))
    if L is not None and lam_g:
        f += lam_w * lam_g * float(np.sum(P * (_dense(L) @ P)))
    return f


def grad_user(Wu, Wv, X, Z, Y, loss, p, q, a_bar, lam_w, lam_g=0.0, L=None):
    """df/dWu = X^T (D Q + 2 lam_w lam_g L P) + 2 lam_w Wu, with the dense m x n D."""
    X, Z = _dense(X), _dense(Z)
    P, Q = X @ Wu, Z @ Wv
    _, D, _ = entry_terms(P @ Q.T, Y, loss, p, q, a_bar)
    G = D @ Q
    if L is not None and lam_g:
        G = G + 2.0 * lam_w * lam_g * (_dense(L) @ P)
    return X.T @ G + 2.0 * lam_w * Wu


def grad_item(Wu, Wv, X, Z, Y, loss, p, q, a_bar, lam_h):
    """df/dWv = Z^T D^T P + 2 lam_h Wv."""
    X, Z = _dense(X), _dense(Z)
    P, Q = X @ Wu, Z @ Wv
    _, D, _ = entry_terms(P @ Q.T, Y, loss, p, q, a_bar)
    return Z.T @ (D.T @ P) + 2.0 * lam_h * Wv


def hess_vec_user(Wu, Wv, S, X, Z, Y, loss, p, q, a_bar, lam_w, lam_g=0.0, L=None):
    """The Hessian of f in Wu (Wv fixed) times S, with the dense second derivatives."""
    X, Z = _dense(X), _dense(Z)
    P, Q = X @ Wu, Z @ Wv
    _, _, D2 = entry_terms(P @ Q.T, Y, loss, p, q, a_bar)
    N = X @ S
    U = (D2 * (N @ Q.T)) @ Q
    if L is not None and lam_g:
        U = U + 2.0 * lam_w * lam_g * (_dense(L) @ N)
    return X.T @ U + 2.0 * lam_w * S


def hess_vec_item(Wu, Wv, S, X, Z, Y, loss, p, q, a_bar, lam_h):
    """The Hessian of f in Wv (Wu fixed) times S."""
    X, Z = _dense(X), _dense(Z)
    P, Q = X @ Wu, Z @ Wv
    _, _, D2 = entry_terms(P @ Q.T, Y, loss, p, q, a_bar)
    N = Z @ S
    return Z.T @ ((D2 * (P @ N.T)).T @ P) + 2.0 * lam_h * S


def joint_gauss_newton(P, Q, dP, dQ, Y, loss, p, q, a_bar):
    """The Gauss-Newton product of the all-pairs loss in (P, Q) (no regularizer), dense."""
    _, _, D2 = entry_terms(P @ Q.T, Y, loss, p, q, a_bar)
    Zm = D2 * (dP @ Q.T + P @ dQ.T)
    return Zm @ Q, Zm.T @ P
