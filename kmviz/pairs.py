"""The observed pairs of the one-class families (OCMF, similarity learning): the set Omega
of (row, column) pairs with their labels, in row-major order (CSR) and with a column-major
view, and the weighted k x k Gramian ``E^T diag(w) E`` through which every sum over all
m x n pairs goes (:mod:`kmviz.ocmf.allpairs`, :mod:`kmviz.similarity.allpairs`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def weighted_gram(E, w) -> np.ndarray:
    """``E^T diag(w) E`` (k x k) in O(rows k^2)."""
    E = np.asarray(E, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if w.size and w.min() == w.max():
        # constant weights (the default rho 1, or a = b = 1): NumPy sends E^T E to BLAS's
        # syrk, half the flops and no rows x k temporary
        return w[0] * (E.T @ E)
    return E.T @ (E * w[:, None])


class ObservedPairs:
    """The observed set Omega as index arrays, in row-major and column-major order.

    Attributes
    ----------
    n_rows, n_cols, nnz : int
    rows, cols : ndarray of int64, shape (nnz,)
        The pairs, sorted by row then column (row-major order; all per-pair arrays of the
        kernels are in this order).
    labels : ndarray of float64, shape (nnz,)
        y_ij (+1 for the positives of one-class data).
    row_ptr : ndarray of int64, shape (n_rows + 1,)
        Row i's pairs are ``row_ptr[i]:row_ptr[i + 1]`` (CSR, column indices ``cols``).
    col_ptr, col_rows, col_perm : ndarray of int64
        Column-major view: column j's pairs are ``col_ptr[j]:col_ptr[j + 1]`` with row
        indices ``col_rows`` and row-major positions ``col_perm``.
    """

    def __init__(self, rows, cols, n_rows, n_cols, labels=None):
        rows = np.asarray(rows, dtype=np.int64).ravel()
        cols = np.asarray(cols, dtype=np.int64).ravel()
        if rows.shape != cols.shape:
            raise ValueError(f"rows and cols must have the same length; got {rows.size} and "
                             f"{cols.size}.")
        n_rows, n_cols = int(n_rows), int(n_cols)
        if rows.size and (rows.min() < 0 or rows.max() >= n_rows or cols.min() < 0
                          or cols.max() >= n_cols):
            raise ValueError(f"pair indices must lie in [0, {n_rows}) x [0, {n_cols}).")
        labels = np.ones(rows.size) if labels is None else _f64(labels).ravel()
        if labels.shape != rows.shape:
            raise ValueError(f"labels has {labels.size} entries for {rows.size} pairs.")
        order = np.lexsort((cols, rows))
        rows, cols, labels = rows[order], cols[order], labels[order]
        if rows.size > 1:
            dup = (rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1])
            if dup.any():
                k = int(np.flatnonzero(dup)[0])
                raise ValueError(f"pair ({rows[k]}, {cols[k]}) occurs more than once.")
        self.n_rows, self.n_cols, self.nnz = n_rows, n_cols, int(rows.size)
        self.rows = np.ascontiguousarray(rows)
        self.cols = np.ascontiguousarray(cols)
        self.labels = np.ascontiguousarray(labels)
        self.row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=self.row_ptr[1:])
        perm = np.lexsort((rows, cols))
        self.col_ptr = np.zeros(n_cols + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=n_cols), out=self.col_ptr[1:])
        self.col_rows = np.ascontiguousarray(rows[perm])
        self.col_perm = np.ascontiguousarray(perm.astype(np.int64))

    @classmethod
    def from_matrix(cls, Y) -> "ObservedPairs":
        """The nonzeros of a 0/1 (sparse or dense) matrix as positives (label 1)."""
        Y = sp.coo_matrix(Y)
        keep = Y.data != 0
        return cls(Y.row[keep], Y.col[keep], Y.shape[0], Y.shape[1])

    def transpose(self) -> "ObservedPairs":
        """Omega^T (columns become rows), labels carried along."""
        return ObservedPairs(self.cols, self.rows, self.n_cols, self.n_rows, self.labels)

    def subset(self, index) -> "ObservedPairs":
        """The pairs at row-major positions ``index``."""
        return ObservedPairs(self.rows[index], self.cols[index], self.n_rows, self.n_cols,
                             self.labels[index])

    def to_csr(self) -> sp.csr_matrix:
        """The pairs as an n_rows x n_cols CSR matrix of labels."""
        return sp.csr_matrix((self.labels, self.cols, self.row_ptr),
                             shape=(self.n_rows, self.n_cols))

    def row_counts(self) -> np.ndarray:
        return np.diff(self.row_ptr)

    def col_counts(self) -> np.ndarray:
        return np.diff(self.col_ptr)
