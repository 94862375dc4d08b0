"""The run's matrix as the Kernel MC views read it: where each entry is, estimates on
blocks, kernel blocks.

The part of the split each entry belongs to (:data:`PARTS`), entry counts per row and column,
the model's estimate on a block of rows x columns (one chunked product for KKMCEX), the
block ``K[idx, idx]`` of a side kernel without forming the whole kernel, and the NMSE the
views score by. Shared by the other modules of :mod:`kmviz.kmc.analysis`.
"""

from __future__ import annotations

import math

import numpy as np

#: Codes of the mask map: where each entry of the matrix is.
PARTS = {"unobserved": 0, "train": 1, "validation": 2, "test": 3}


def _parts(split) -> dict:
    return {name: r for name, r in split.parts().items() if r is not None and r.n_ratings}


def known_matrix(split):
    """``(values, part)``: the N x L matrix of every value the split holds (NaN elsewhere)
    and the part each entry belongs to (codes of :data:`PARTS`, 0 = unobserved)."""
    train = split.train
    N, L = int(train.n_users), int(train.n_items)
    values = np.full((N, L), np.nan)
    part = np.zeros((N, L), dtype=np.int8)
    for name, r in _parts(split).items():
        u, i = np.asarray(r.users), np.asarray(r.items)
        values[u, i] = np.asarray(r.values)
        part[u, i] = PARTS[name]
    return values, part


def _counts(split):
    """Entries per row and per column: in training, and in all parts."""
    train = split.train
    N, L = int(train.n_users), int(train.n_items)
    tr_r = np.bincount(np.asarray(train.users), minlength=N)
    tr_c = np.bincount(np.asarray(train.items), minlength=L)
    all_r, all_c = np.zeros(N, np.int64), np.zeros(L, np.int64)
    for r in _parts(split).values():
        all_r += np.bincount(np.asarray(r.users), minlength=N)
        all_c += np.bincount(np.asarray(r.items), minlength=L)
    return tr_r, tr_c, all_r, all_c


#: Values held at once by the chunked products below (about 64 MB of float64).
_CHUNK = 8_000_000


def _kron_parts(model):
    """``(K_row, K_col, rows, cols, coef)`` of a KKMCEX model, or None for other methods."""
    if getattr(model, "method_", None) != "kkmcex" or getattr(model, "coef_", None) is None:
        return None
    if any(sk is not None and sk.kind != "dense" for sk in (model.side_kernel("row"),
                                                            model.side_kernel("col"))):
        return None  # kept as factors: the model's own predictions never form the kernels
    return (np.asarray(model.row_kernel_), np.asarray(model.col_kernel_),
            np.asarray(model.train_rows_, np.int64), np.asarray(model.train_cols_, np.int64),
            np.asarray(model.coef_, np.float64))


def block_estimate(model, rows, cols) -> np.ndarray:
    """The model's estimate on the block ``rows x cols`` (NaN where it cannot predict); for
    KKMCEX one product ``(K_row[R, a] c) K_col[b, C]``, chunked over the observations."""
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    out = np.full((rows.shape[0], cols.shape[0]), np.nan)
    pr = np.asarray(model.predictable_rows_)[rows]
    pc = np.asarray(model.predictable_cols_)[cols]
    if not (pr.any() and pc.any()):
        return out
    R, C = rows[pr], cols[pc]
    parts = _kron_parts(model)
    if parts is None:
        uu, ii = np.meshgrid(R, C, indexing="ij")
        out[np.ix_(pr, pc)] = model.predict(uu, ii)
        return out
    Kr, Kc, a, b, c = parts
    F = np.zeros((R.shape[0], C.shape[0]))
    step = max(1, _CHUNK // max(R.shape[0] + C.shape[0], 1))
    for lo in range(0, a.shape[0], step):
        sl = slice(lo, lo + step)
        F += (Kr[np.ix_(R, a[sl])] * c[sl]) @ Kc[np.ix_(b[sl], C)]
    out[np.ix_(pr, pc)] = F + model.offset_
    return out


def _labels(ratings, idx, side):
    f = ratings.user_label if side == "row" else ratings.item_label
    return [f(int(k)) for k in idx]


def _nmse(pred, y):
    den = float(y @ y)
    e = pred - y
    return float(e @ e) / den if den > 0 else math.nan


def kernel_block(kernel, idx) -> np.ndarray:
    """The block ``K[idx, idx]`` of a :class:`~kmviz.kmc.krr.SideKernel`, without forming
    the whole kernel when it is kept as a factor or the identity."""
    idx = np.asarray(idx, np.int64)
    if kernel.kind == "dense":
        return np.ascontiguousarray(kernel.K[np.ix_(idx, idx)], dtype=np.float64)
    if kernel.kind == "identity":
        return np.eye(idx.shape[0])
    F = kernel.F[idx]
    K = F @ F.T
    K = 0.5 * (K + K.T)
    if kernel.shift:
        K[np.diag_indices_from(K)] += kernel.shift
    return K


__all__ = ["PARTS", "block_estimate", "kernel_block", "known_matrix"]
