"""RRMCEX (3.58)-(3.59) on Kronecker eigen features (§3.5.3).

Spectra of the side kernels (:func:`kernel_eigen`, :func:`features_svd` for a linear kernel
on features), the d largest products of two spectra (:func:`top_products`), the features
``w[k] Q_row[i, a[k]] Q_col[j, b[k]]`` (:class:`EigenFeatures`) and the ridge solve and
objective on them.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..rkhs import blas_threads, factor_threads
from .dense import CHUNK_VALUES


def kernel_eigen(K):
    """``(sigma, Q)`` of a symmetric PSD kernel, eigenvalues descending and clipped at 0."""
    K = np.asarray(K, dtype=np.float64)
    with blas_threads(factor_threads(K.shape[0])):  # see kernels.factor_threads
        sig, Q = np.linalg.eigh(K)
    sig = np.clip(sig[::-1], 0.0, None)
    return sig, np.ascontiguousarray(Q[:, ::-1])


def features_svd(X):
    """``(sigma, U)`` of the linear kernel ``X X^T`` from the thin SVD of X (O(N t^2)):
    eigenvalues ``d^2`` (descending) and left singular vectors, as :func:`kernel_eigen`."""
    U, d, _ = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)
    return d * d, np.ascontiguousarray(U)


def top_products(sig_row, sig_col, d):
    """The d largest products ``sig_row[a] sig_col[b]`` of two descending spectra.

    Returns ``(a, b, prod)``, ordered by decreasing product (ties by row-major flat index).
    Only the first d values of each spectrum can take part, so at most d^2 products are
    formed.
    """
    sig_row = np.asarray(sig_row, dtype=np.float64)
    sig_col = np.asarray(sig_col, dtype=np.float64)
    kr, kc = min(sig_row.shape[0], d), min(sig_col.shape[0], d)
    d = min(d, kr * kc)
    P = np.outer(sig_row[:kr], sig_col[:kc]).ravel()
    if d < P.shape[0]:
        cut = np.partition(-P, d - 1)[d - 1]  # -(d-th largest)
        cand = np.flatnonzero(-P <= cut)
    else:
        cand = np.arange(P.shape[0])
    order = cand[np.lexsort((cand, -P[cand]))][:d]
    a, b = np.divmod(order, kc)
    return a.astype(np.int64), b.astype(np.int64), P[order]


class EigenFeatures:
    """Kronecker features ``phi(i, j)_k = w[k] U[i, k] V[j, k]`` (d of them).

    ``U = Q_row[:, a]``, ``V = Q_col[:, b]``, ``w = sqrt(sig_row[a] sig_col[b])``: the top d
    eigen features of ``K_col ⊗ K_row`` (§3.5.3), or of the linear kernels of two feature
    matrices when the spectra come from their SVDs.
    """

    def __init__(self, sig_row, Q_row, sig_col, Q_col, d):
        a, b, prod = top_products(sig_row, sig_col, d)
        self.a, self.b = a, b
        self.eigenvalues = prod
        self.weights = np.sqrt(np.clip(prod, 0.0, None))
        self.U = np.ascontiguousarray(Q_row[:, a])
        self.V = np.ascontiguousarray(Q_col[:, b])

    @property
    def d(self) -> int:
        return int(self.weights.shape[0])

    def rows(self, rows, cols) -> np.ndarray:
        """The feature rows ``phi(rows[k], cols[k])`` (s x d)."""
        return np.take(self.U, rows, axis=0) * np.take(self.V, cols, axis=0) * self.weights

    def gram_and_rhs(self, rows, cols, m):
        """``(Phi^T Phi, Phi^T m)`` over the given entries, accumulated in chunks."""
        d = self.d
        G = np.zeros((d, d))
        h = np.zeros(d)
        s = rows.shape[0]
        chunk = max(1, CHUNK_VALUES // max(d, 1))
        for lo in range(0, s, chunk):
            Phi = self.rows(rows[lo:lo + chunk], cols[lo:lo + chunk])
            G += Phi.T @ Phi
            h += Phi.T @ m[lo:lo + chunk]
        return G, h

    def predict(self, xi, users, items) -> np.ndarray:
        coef = self.weights * xi
        users = np.asarray(users, dtype=np.int64).ravel()
        items = np.asarray(items, dtype=np.int64).ravel()
        out = np.empty(users.shape[0])
        chunk = max(1, CHUNK_VALUES // max(self.d, 1))
        for lo in range(0, users.shape[0], chunk):
            out[lo:lo + chunk] = np.einsum(
                "ij,ij->i", np.take(self.U, users[lo:lo + chunk], axis=0) * coef,
                np.take(self.V, items[lo:lo + chunk], axis=0))
        return out


def rrmcex_solve(G, h, mu):
    """``xi = (G + mu I)^-1 h`` (3.59) by Cholesky, G = Phi^T Phi."""
    A = G.copy()
    A[np.diag_indices_from(A)] += mu
    return sla.cho_solve(sla.cho_factor(A, lower=True, check_finite=False), h,
                         check_finite=False)


def rrmcex_objective(G, h, mm, xi, mu) -> float:
    """(3.58) ``||m - Phi xi||^2 + mu ||xi||^2`` from ``G = Phi^T Phi``, ``h = Phi^T m``,
    ``mm = m^T m``."""
    return float(max(mm - 2.0 * (xi @ h) + xi @ (G @ xi), 0.0) + mu * (xi @ xi))


__all__ = ["EigenFeatures", "features_svd", "kernel_eigen", "rrmcex_objective", "rrmcex_solve",
           "top_products"]
