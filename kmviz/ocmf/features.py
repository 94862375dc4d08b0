"""Side information of one-class MF: feature matrices, their encoding, and user graphs.

The OCMF model embeds user i as ``b_i = W^T x_i`` (OCMF paper, Sec. 2): row x_i of the
user matrix X (m x d) maps through W (d x k). :class:`SideMatrix` is that X, built as

    X = [ I_m[:, identity_rows] | F ]

an identity block with one column per user that has training positives (the paper's plain
one-class MF is X = I) and the encoded side features F. Items get the same treatment with
``H = Z W_2`` (the paper's "easy generalization" to item side information).

:func:`encode_features` turns a DataFrame (the loaders' ``user_features`` / ``item_features``)
into F and :func:`check_feature_matrix` validates arrays a caller passes in; both live in
:mod:`kmviz.data.features` (shared with the other families) and are re-exported here.

User graphs for the regularizer ``lambda_g tr(B^T L B)`` (eq. (2)): :func:`cointeraction_graph`
(users who like the same items), :func:`knn_graph` (users with similar features) and
:func:`laplacian` (L = D - S).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..data.features import (  # noqa: F401 (OCMF's public names, kept working)
    MISSING_POLICIES,
    NORMALIZE,
    check_feature_matrix,
    encode_features,
    normalize_rows,
)
from ..exceptions import DataValueError


# ----------------------------------------------------------------------------- X = [I | F]
class SideMatrix:
    """``X = [I[:, identity_rows] | F]``, the linear map from one side's variables W (d x k)
    to its embeddings ``E = X W`` (n_rows x k), kept in factored form.

    Parameters
    ----------
    n_rows : int
    identity_rows : array of int or None
        Rows that get their own identity column (in this order), None for none.
    features : scipy.sparse matrix (n_rows x f) or None
    names : list of str
        Feature column names (``f`` of them).
    """

    def __init__(self, n_rows, identity_rows=None, features=None, names=()):
        self.n_rows = int(n_rows)
        self.identity_rows = (np.zeros(0, dtype=np.int64) if identity_rows is None
                              else np.asarray(identity_rows, dtype=np.int64))
        self.n_identity = int(self.identity_rows.size)
        if features is None or features.shape[1] == 0:
            self.F = None
            self.FT = None
            self.n_features = 0
        else:
            self.F = sp.csr_matrix(features, dtype=np.float64)
            self.FT = self.F.T.tocsr()
            self.n_features = self.F.shape[1]
        self.names = list(names) if self.F is not None else []
        self.d = self.n_identity + self.n_features
        self.pure_identity = self.F is None and self.n_identity == self.n_rows and np.array_equal(
            self.identity_rows, np.arange(self.n_rows))

    @property
    def nnz(self) -> int:
        return self.n_identity + (0 if self.F is None else int(self.F.nnz))

    def empty_rows(self) -> np.ndarray:
        """Rows of X that are all zero (no identity column and no features)."""
        has = np.zeros(self.n_rows, dtype=bool)
        has[self.identity_rows] = True
        if self.F is not None:
            has |= np.diff(self.F.indptr) > 0
        return ~has

    def apply(self, W) -> np.ndarray:
        """``X W`` (n_rows x k) in O(nnz(X) k)."""
        if self.pure_identity:
            return np.array(W, dtype=np.float64, order="C")
        k = W.shape[1]
        if self.F is not None:
            E = np.ascontiguousarray(self.F @ W[self.n_identity:])
        else:
            E = np.zeros((self.n_rows, k))
        if self.n_identity:
            E[self.identity_rows] += W[:self.n_identity]
        return E

    def adjoint(self, G) -> np.ndarray:
        """``X^T G`` (d x k) in O(nnz(X) k)."""
        if self.pure_identity:
            return np.array(G, dtype=np.float64, order="C")
        out = np.empty((self.d, G.shape[1]))
        if self.n_identity:
            out[:self.n_identity] = G[self.identity_rows]
        if self.F is not None:
            out[self.n_identity:] = self.FT @ G
        return out

    def adjoint_squares(self, R) -> np.ndarray:
        """``(X o X)^T R`` (d x k), X o X the entrywise square: maps per-row Hessian
        diagonals to the diagonal in W (the cross terms of a row vanish on the diagonal)."""
        if self.pure_identity:
            return np.array(R, dtype=np.float64, order="C")
        out = np.empty((self.d, R.shape[1]))
        if self.n_identity:
            out[:self.n_identity] = R[self.identity_rows]
        if self.F is not None:
            if not hasattr(self, "_F2T"):
                self._F2T = self.F.multiply(self.F).T.tocsr()
            out[self.n_identity:] = self._F2T @ R
        return out

    def laplacian_diag(self, L) -> np.ndarray:
        """The diagonal of ``X^T L X`` (d)."""
        out = np.empty(self.d)
        if self.n_identity:
            out[:self.n_identity] = L.diagonal()[self.identity_rows]
        if self.F is not None:
            out[self.n_identity:] = np.asarray(self.F.multiply(L @ self.F).sum(axis=0)).ravel()
        return out

    def weighted_gram(self, a) -> np.ndarray:
        """``X^T diag(a) X`` (d x d, dense): the small-d variant's M-bar (Supp-1.2)."""
        a = np.asarray(a, dtype=np.float64)
        M = np.zeros((self.d, self.d))
        ni = self.n_identity
        if ni:
            M[np.arange(ni), np.arange(ni)] = a[self.identity_rows]
        if self.F is not None:
            Fa = sp.diags(a) @ self.F
            M[ni:, ni:] = (self.FT @ Fa).toarray()
            if ni:
                cross = Fa[self.identity_rows].toarray()   # (ni x f): x_identity^T diag(a) F
                M[:ni, ni:] = cross
                M[ni:, :ni] = cross.T
        return M

    def weighted_colsum(self, a) -> np.ndarray:
        """``X^T a`` (d): the paper's d = X^T p."""
        return self.adjoint(np.asarray(a, dtype=np.float64)[:, None])[:, 0]

    def row_terms(self, i):
        """Columns and values of row i: ``(column indices, values)``."""
        cols, vals = [], []
        pos = np.flatnonzero(self.identity_rows == i)
        if pos.size:
            cols.append(pos.astype(np.int64))
            vals.append(np.ones(pos.size))
        if self.F is not None:
            lo, hi = self.F.indptr[i], self.F.indptr[i + 1]
            cols.append(self.F.indices[lo:hi].astype(np.int64) + self.n_identity)
            vals.append(self.F.data[lo:hi])
        if not cols:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(cols), np.concatenate(vals)

    def column_name(self, c) -> str:
        if c < self.n_identity:
            return "identity"
        return self.names[c - self.n_identity]

    # -- persistence ---------------------------------------------------------------------
    def to_arrays(self, prefix) -> dict:
        F = self.F if self.F is not None else sp.csr_matrix((self.n_rows, 0))
        return {f"{prefix}_identity_rows": self.identity_rows.astype(np.int64),
                f"{prefix}_feat_indptr": F.indptr.astype(np.int64),
                f"{prefix}_feat_indices": F.indices.astype(np.int64),
                f"{prefix}_feat_data": F.data.astype(np.float64),
                f"{prefix}_feat_shape": np.array(F.shape, dtype=np.int64),
                f"{prefix}_feat_names": np.array(self.names if self.names else [], dtype=str)}

    @classmethod
    def from_arrays(cls, arrays, prefix) -> "SideMatrix":
        shape = tuple(int(v) for v in arrays[f"{prefix}_feat_shape"])
        F = sp.csr_matrix((arrays[f"{prefix}_feat_data"], arrays[f"{prefix}_feat_indices"],
                           arrays[f"{prefix}_feat_indptr"]), shape=shape)
        names = [str(v) for v in arrays[f"{prefix}_feat_names"]]
        return cls(shape[0], arrays[f"{prefix}_identity_rows"], F if shape[1] else None, names)


# ----------------------------------------------------------------------------- graphs
def _symmetric_top_k(S, n_neighbors):
    """Keep each row's ``n_neighbors`` largest off-diagonal entries, then symmetrize by max."""
    S = sp.csr_matrix(S, dtype=np.float64)
    S.setdiag(0.0)
    S.eliminate_zeros()
    rows, cols, vals = [], [], []
    for i in range(S.shape[0]):
        lo, hi = S.indptr[i], S.indptr[i + 1]
        if hi == lo:
            continue
        v = S.data[lo:hi]
        c = S.indices[lo:hi]
        keep = np.argsort(-v, kind="stable")[:n_neighbors]
        keep = keep[v[keep] > 0]
        rows.append(np.full(keep.size, i))
        cols.append(c[keep])
        vals.append(v[keep])
    n = S.shape[0]
    if not rows:
        return sp.csr_matrix((n, n))
    G = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n, n))
    return G.maximum(G.T).tocsr()


def cointeraction_graph(interactions, n_neighbors=10):
    """A kNN user graph from shared positives: cosine similarity of the users' item sets.

    ``S_uv = |I_u ∩ I_v| / sqrt(|I_u| |I_v|)`` for users u != v, each user's ``n_neighbors``
    most similar kept, symmetrized by the maximum. Built from the TRAINING positives only
    (a graph from held-out data would leak it).

    Parameters
    ----------
    interactions : Ratings or scipy.sparse matrix (n_users x n_items)
    n_neighbors : int, default=10

    Returns
    -------
    scipy.sparse.csr_matrix (n_users x n_users), symmetric, nonnegative, zero diagonal.
    """
    if hasattr(interactions, "users"):
        Y = sp.csr_matrix((np.ones(len(interactions.users)),
                           (np.asarray(interactions.users), np.asarray(interactions.items))),
                          shape=(interactions.n_users, interactions.n_items))
    else:
        Y = sp.csr_matrix(interactions, dtype=np.float64)
    Y.data[:] = 1.0
    counts = np.asarray(Y.sum(axis=1)).ravel()
    inv = np.where(counts > 0, 1.0 / np.sqrt(np.maximum(counts, 1.0)), 0.0)
    Yn = sp.diags(inv) @ Y
    return _symmetric_top_k(Yn @ Yn.T, int(n_neighbors))


def knn_graph(features, n_neighbors=10, *, chunk=1024):
    """A kNN graph on feature rows by cosine similarity (positive similarities only).

    Parameters
    ----------
    features : array or sparse matrix (n x d); rows of zeros get no edges
    n_neighbors : int, default=10

    Returns
    -------
    scipy.sparse.csr_matrix (n x n), symmetric, nonnegative, zero diagonal.
    """
    F = sp.csr_matrix(features, dtype=np.float64)
    norms = np.sqrt(np.asarray(F.multiply(F).sum(axis=1)).ravel())
    Fn = sp.diags(np.where(norms > 0, 1.0 / np.maximum(norms, 1e-300), 0.0)) @ F
    n = F.shape[0]
    kk = int(n_neighbors)
    rows, cols, vals = [], [], []
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        sim = (Fn[lo:hi] @ Fn.T).toarray()
        sim[np.arange(hi - lo), np.arange(lo, hi)] = -np.inf
        take = min(kk, n - 1)
        if take <= 0:
            break
        idx = np.argpartition(-sim, take - 1, axis=1)[:, :take]
        v = np.take_along_axis(sim, idx, axis=1)
        keep = v > 0
        r = np.repeat(np.arange(lo, hi)[:, None], take, axis=1)
        rows.append(r[keep])
        cols.append(idx[keep])
        vals.append(v[keep])
    if not rows:
        return sp.csr_matrix((n, n))
    G = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n, n))
    return G.maximum(G.T).tocsr()


def laplacian(S, n_rows=None, what="user_graph"):
    """``L = D - S`` (CSR) of a symmetric nonnegative similarity graph S.

    Raises :class:`~kmviz.exceptions.DataValueError` if S is not square with ``n_rows``
    rows, not symmetric, has negative or non-finite weights.
    """
    try:
        S = sp.csr_matrix(S, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataValueError(f"{what} is not a numeric matrix",
                             expected="a square scipy.sparse or NumPy matrix") from None
    if S.shape[0] != S.shape[1] or (n_rows is not None and S.shape[0] != n_rows):
        raise DataValueError(f"{what} has shape {S.shape}",
                             expected=f"a square ({n_rows}, {n_rows}) matrix, one row and "
                                      "column per user")
    if not np.isfinite(S.data).all():
        raise DataValueError(f"{what} holds NaN or infinite weights", expected="finite weights")
    if (S.data < 0).any():
        raise DataValueError(f"{what} holds negative weights",
                             expected="nonnegative similarities (L = D - S must be PSD)")
    S = S.copy()
    S.setdiag(0.0)
    S.eliminate_zeros()
    asym = abs(S - S.T)
    if asym.nnz and asym.max() > 1e-12 * max(1.0, abs(S).max()):
        raise DataValueError(f"{what} is not symmetric", expected="S == S.T",
                             fix="symmetrize it, e.g. (S + S.T) / 2")
    deg = np.asarray(S.sum(axis=1)).ravel()
    return (sp.diags(deg) - S).tocsr()
