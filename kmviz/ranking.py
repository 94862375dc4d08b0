"""Top-k ranking of factor models, shared by the one-class families (OCMF, similarity
learning): per user, the k items of largest ``p_u . q_j`` that are not excluded (the user's
training positives), by a Numba kernel that never holds the users x items score matrix.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._jit import JIT, PJIT

#: Below this much work (users x items x k / 8) the serial loop is faster than threads.
PARALLEL_MIN_WORK = 20_000_000


@njit(**JIT)
def _top_k_row(u, P, Q, excl_ptr, excl_idx, K, out_idx, out_score):
    n_items = Q.shape[0]
    k = P.shape[1]
    skip = np.zeros(n_items, dtype=np.bool_)
    for e in range(excl_ptr[u], excl_ptr[u + 1]):
        skip[excl_idx[e]] = True
    for r in range(K):
        out_idx[u, r] = -1
        out_score[u, r] = -np.inf
    filled = 0
    for j in range(n_items):
        if skip[j]:
            continue
        s = 0.0
        for f in range(k):
            s += P[u, f] * Q[j, f]
        if filled == K and not s > out_score[u, K - 1]:
            continue
        # insert after every entry with a score >= s (stable: lower index first)
        pos = filled if filled < K else K - 1
        while pos > 0 and out_score[u, pos - 1] < s:
            out_score[u, pos] = out_score[u, pos - 1]
            out_idx[u, pos] = out_idx[u, pos - 1]
            pos -= 1
        out_score[u, pos] = s
        out_idx[u, pos] = j
        if filled < K:
            filled += 1


@njit(**PJIT)
def _top_k_par(P, Q, excl_ptr, excl_idx, K, out_idx, out_score):
    for u in prange(P.shape[0]):
        _top_k_row(u, P, Q, excl_ptr, excl_idx, K, out_idx, out_score)


@njit(**JIT)
def _top_k_ser(P, Q, excl_ptr, excl_idx, K, out_idx, out_score):
    for u in range(P.shape[0]):
        _top_k_row(u, P, Q, excl_ptr, excl_idx, K, out_idx, out_score)


def top_k(P, Q, excl_ptr, excl_idx, K, out_idx, out_score):
    """Per row u of P: the K items of largest ``P[u] . Q[j]`` not in row u of the exclusion
    CSR, best first, ties to the lower item index; ``-1`` / ``-inf`` pad short rows."""
    work = P.shape[0] * Q.shape[0] * max(P.shape[1], 1) // 8
    fn = _top_k_par if work >= PARALLEL_MIN_WORK else _top_k_ser
    fn(P, Q, excl_ptr, excl_idx, int(K), out_idx, out_score)


def exclusion(seen_ptr, seen_idx, users, n_items, drop=None):
    """The CSR (over ``users``) of their rows of the ``seen`` CSR (training positives),
    minus the pairs whose key ``user * n_items + item`` is in ``drop`` (the held-out pairs
    an evaluation ranks)."""
    users = np.asarray(users, dtype=np.int64)
    counts = seen_ptr[users + 1] - seen_ptr[users]
    take = np.repeat(seen_ptr[users] - (np.cumsum(counts) - counts), counts) + \
        np.arange(int(counts.sum()), dtype=np.int64)
    out_idx = np.asarray(seen_idx)[take]
    row_of = np.repeat(np.arange(users.size), counts)
    if drop is not None and out_idx.size:
        keep = ~np.isin(users[row_of] * int(n_items) + out_idx, drop)
        out_idx, row_of = out_idx[keep], row_of[keep]
    out_ptr = np.zeros(users.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_of, minlength=users.size), out=out_ptr[1:])
    return out_ptr, np.ascontiguousarray(out_idx, dtype=np.int64)


def top_items(P, Q, k, excl_ptr=None, excl_idx=None):
    """``(indices, scores)``: the top-``min(k, n_items)`` items of every row of ``P Q^T``
    without the excluded ones, best first, ties to the lower index; -1 / -inf pad."""
    kk = min(int(k), Q.shape[0])
    if excl_ptr is None:
        excl_ptr = np.zeros(P.shape[0] + 1, dtype=np.int64)
        excl_idx = np.zeros(0, dtype=np.int64)
    out_idx = np.empty((P.shape[0], kk), dtype=np.int64)
    out_score = np.empty((P.shape[0], kk))
    top_k(np.ascontiguousarray(P, dtype=np.float64), np.ascontiguousarray(Q, dtype=np.float64),
          excl_ptr, excl_idx, kk, out_idx, out_score)
    return out_idx, out_score
