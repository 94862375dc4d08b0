"""The symmetric ``M = (U V^T + V U^T)/2`` of a gFM from its d x k factors, never formed
unless asked: products, the nonzero spectrum, the dense matrix for small d, and the largest
entries found by scanning M in row blocks. :class:`~kmviz.gfm.GeneralizedFM`'s views of its
learned M (``M_apply``, ``spectrum``, ``interaction_matrix``, ``top_interactions``) call
these on ``U_`` and ``V_``.
"""

from __future__ import annotations

import numpy as np

#: Entries of M held at once by :func:`largest_entries` (a row block of about 32 MB).
BLOCK_ENTRIES = 4_000_000


def apply(U, V, Z) -> np.ndarray:
    """``M Z`` for a d x m block (or a d-vector), O(dkm)."""
    Z = np.asarray(Z, dtype=np.float64)
    return 0.5 * (U @ (V.T @ Z) + V @ (U.T @ Z))


def spectrum(U, V):
    """Nonzero eigenvalues and eigenvectors of M (at most 2k), by |eigenvalue| descending.

    From a QR of ``[U, V]``: ``M = Q (R C R^T) Q^T``, O(dk^2).
    """
    k = U.shape[1]
    Q, R = np.linalg.qr(np.hstack([U, V]))
    C = np.zeros((2 * k, 2 * k))
    C[:k, k:] = 0.5 * np.eye(k)
    C[k:, :k] = 0.5 * np.eye(k)
    vals, E = np.linalg.eigh(R @ C @ R.T)
    order = np.argsort(-np.abs(vals), kind="stable")
    return vals[order], Q @ E[:, order]


def dense(U, V) -> np.ndarray:
    """The dense d x d M (O(d^2) memory)."""
    M = U @ V.T
    return 0.5 * (M + M.T)


def largest_entries(U, V, n: int, *, include_diagonal=True):
    """``(values, a, b)``: the n entries ``M_ab`` (a <= b; a < b without the diagonal) of
    largest magnitude, largest first. Memory O(block x d), never the whole M."""
    d = U.shape[0]
    block = max(1, min(d, BLOCK_ENTRIES // max(d, 1)))
    best_v = np.empty(0)
    best_a = np.empty(0, dtype=np.int64)
    best_b = np.empty(0, dtype=np.int64)
    for start in range(0, d, block):
        stop = min(d, start + block)
        Mb = 0.5 * (U[start:stop] @ V.T + V[start:stop] @ U.T)
        a, b = np.meshgrid(np.arange(start, stop), np.arange(d), indexing="ij")
        keep = (b >= a) if include_diagonal else (b > a)
        vals, aa, bb = Mb[keep], a[keep], b[keep]
        if vals.size > n:
            idx = np.argpartition(-np.abs(vals), n - 1)[:n]
            vals, aa, bb = vals[idx], aa[idx], bb[idx]
        best_v = np.concatenate([best_v, vals])
        best_a = np.concatenate([best_a, aa])
        best_b = np.concatenate([best_b, bb])
        if best_v.size > n:
            idx = np.argpartition(-np.abs(best_v), n - 1)[:n]
            best_v, best_a, best_b = best_v[idx], best_a[idx], best_b[idx]
    order = np.argsort(-np.abs(best_v), kind="stable")
    return best_v[order], best_a[order], best_b[order]
