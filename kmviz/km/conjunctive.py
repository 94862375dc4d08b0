"""Rules with one or two items on the left, {a, b} => c, on the data and under KM.

Under a Kolmogorov model a user likes item i in the events ``supp(psi_i)``; liking both a and
b is the event ``supp(psi_a) ∩ supp(psi_b)``, so "whoever likes a and b likes c" holds when

    supp(psi_a) ∩ supp(psi_b) ⊆ supp(psi_c)   (the intersection non-empty),

the paper's intersection semantics. A conjunction is worth stating only when neither
``a => c`` nor ``b => c`` holds alone (else it says nothing new). Supports are packed as bits
(:func:`pack_supports`: D <= 64 events in one uint64 per item, more in several words), so
the test of a pair or a conjunction is a few word operations, whatever the number of items.

On the data the same rules are counted on users x items sparse matrices of likes and ratings
(:func:`rule_counts`), antecedents by blocks, never a dense users x items array.
:func:`conjunction_candidates` searches the data for conjunctions whose confidence is high
while neither half's is, with the antecedent pairs capped (:data:`MAX_ANTECEDENT_PAIRS`,
those with the most users liking both first) so the work stays bounded on 10,000 items.

:func:`closure` answers "a user likes these items: what follows?" from a fitted model (or
psi) by the intersection semantics, or from a relation table by forward chaining.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..exceptions import InvalidParameterError

__all__ = ["pack_supports", "subset_held", "conjunction_held", "km_conjunctions",
           "rule_counts", "conjunction_candidates", "closure", "MAX_ANTECEDENT_PAIRS"]

#: Antecedent pairs {a, b} examined for conjunctions at most (the most co-liked first).
MAX_ANTECEDENT_PAIRS = 200_000
#: Cells (antecedent pairs x items) counted at a time in the conjunction search.
BLOCK_CELLS = 4_000_000
#: Users x items cells up to which the search keeps likes and ratings dense (float32, two
#: arrays: 80 MB each at the limit) for sparse x dense products.
DENSE_CELLS = 20_000_000


# ----------------------------------------------------------------------------- KM semantics
def pack_supports(psi) -> np.ndarray:
    """Bool/0-1 psi (items x D) as bits: uint64 array (items x ceil(D / 64))."""
    b = np.asarray(psi) > 0
    n, D = b.shape
    words = max(1, -(-D // 64))
    out = np.zeros((n, words), np.uint64)
    for d in range(D):
        out[:, d // 64] |= b[:, d].astype(np.uint64) << np.uint64(d % 64)
    return out


def subset_held(bits, ante, cons) -> np.ndarray:
    """Per pair k: supp(psi_ante[k]) non-empty and inside supp(psi_cons[k])."""
    a, c = bits[np.asarray(ante, np.int64)], bits[np.asarray(cons, np.int64)]
    return ((a & ~c) == 0).all(axis=1) & (a != 0).any(axis=1)


def conjunction_held(bits, a, b, c) -> np.ndarray:
    """Per k: supp(psi_a) ∩ supp(psi_b) non-empty and inside supp(psi_c) (a, b, c arrays)."""
    both = bits[np.asarray(a, np.int64)] & bits[np.asarray(b, np.int64)]
    return ((both & ~bits[np.asarray(c, np.int64)]) == 0).all(axis=1) & (both != 0).any(axis=1)


def km_conjunctions(psi, items=None) -> np.ndarray:
    """Every conjunction {a, b} => c (rows (a, b, c), a < b, c not in {a, b}) that KM's
    supports state and neither half states alone: supp a ∩ supp b non-empty, inside supp c,
    supp a and supp b each not inside supp c. ``items`` (indices) restricts all three."""
    bits = pack_supports(psi)
    idx = np.arange(bits.shape[0]) if items is None else np.asarray(items, np.int64)
    sub = bits[idx]
    m = idx.size
    out = []
    for x in range(m):
        both = sub[x] & sub[x + 1:]                      # (m - x - 1, words)
        ok = (both != 0).any(axis=1)
        if not ok.any():
            continue
        ys = np.flatnonzero(ok) + x + 1
        both = both[ok]
        inside = ((both[:, None, :] & ~sub[None, :, :]) == 0).all(axis=2)  # ys x m
        half_x = ((sub[x] & ~sub) == 0).all(axis=1) & (sub[x] != 0).any()
        half_y = ((sub[ys][:, None, :] & ~sub[None, :, :]) == 0).all(axis=2)
        keep = inside & ~half_x[None, :] & ~half_y
        keep[:, x] = False
        keep[np.arange(ys.size), ys] = False
        r, c = np.nonzero(keep)
        out.append(np.column_stack([np.full(r.size, x), ys[r], c]))
    if not out:
        return np.zeros((0, 3), np.int64)
    rows = np.concatenate(out)
    return idx[rows].astype(np.int64)


# ----------------------------------------------------------------------------- the data
def _antecedent_matrix(L: sp.csc_matrix, a, b) -> sp.csc_matrix:
    """Users x rules 0/1: the users who like a (and b where b >= 0)."""
    A = L[:, a]
    if b is not None and np.any(b >= 0):
        B = L[:, np.where(b >= 0, b, a)]
        A = A.multiply(B).tocsc()
    return A


def rule_counts(L, R_cons, L_cons, a, b, c, *, users=None, block: int = 2048):
    """For rules k (antecedent a[k], and b[k] when b[k] >= 0; consequent c[k]):

    ``support`` users who like the antecedent (all of its items), ``n_known`` those of them
    with a rating of c in ``R_cons``, ``co_support`` those who like c in ``L_cons``
    (users x items CSC 0/1). ``users`` (bool mask) counts only those users. ``R_cons=None``
    means every user counts (0/1 interactions): ``n_known = support``.

    Each distinct antecedent is counted once against every consequent (sparse products
    ``A^T L_cons``, ``A^T R_cons`` by blocks of ``block`` antecedents), then the rules'
    cells are read off."""
    a = np.asarray(a, np.int64)
    c = np.asarray(c, np.int64)
    b = np.full(a.size, -1, np.int64) if b is None else np.asarray(b, np.int64)
    n = a.size
    sup = np.zeros(n, np.int64)
    known = np.zeros(n, np.int64)
    co = np.zeros(n, np.int64)
    if n == 0:
        return sup, known, co
    key = a * (L.shape[1] + 1) + (b + 1)
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    ua, ub = a[first], b[first]
    w = None if users is None else sp.diags(np.asarray(users, np.float64))
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(0, uniq.size + block, block))
    for k, lo in enumerate(range(0, uniq.size, block)):
        sel = order[bounds[k]:bounds[k + 1]]
        if sel.size == 0:
            continue
        A = _antecedent_matrix(L, ua[lo:lo + block], ub[lo:lo + block])
        if w is not None:
            A = (w @ A).tocsc()
        At = A.T.tocsr()
        s_blk = np.asarray(A.sum(axis=0)).ravel()
        r = inv[sel] - lo
        sup[sel] = s_blk[r]
        co[sel] = np.asarray((At @ L_cons).tocsr()[r, c[sel]]).ravel()
        known[sel] = sup[sel] if R_cons is None else \
            np.asarray((At @ R_cons).tocsr()[r, c[sel]]).ravel()
    return sup, known, co


def conjunction_candidates(L, R, *, min_co: int, holds: float, pair_conf,
                           items=None, max_pairs: int = MAX_ANTECEDENT_PAIRS,
                           block_cells: int = BLOCK_CELLS, stop=None, gate=None) -> dict:
    """Conjunctions {a, b} => c on the data: at least ``min_co`` users like a and b and rated
    c, their confidence is at least ``holds``, and ``pair_conf(ante, cons)`` (the pairs'
    confidences) is below ``holds`` for both halves; ``gate(half, co, n)`` (the better
    half's confidence, the conjunction's likes and judged users) may keep fewer.

    The antecedent pairs are those with at least ``min_co`` users liking both, at most
    ``max_pairs`` of them (the most co-liked first); each block of them is counted against
    every consequent at once (``block_cells`` cells). Returns arrays ``a``, ``b``, ``c`` and
    ``examined`` / ``antecedent_pairs`` / ``capped`` (counts, for the record)."""
    n_items = L.shape[1]
    keep = np.ones(n_items, bool) if items is None else np.asarray(items, bool)
    idx = np.flatnonzero(keep & (np.diff(L.indptr) >= min_co))
    empty = {"a": np.zeros(0, np.int64), "b": np.zeros(0, np.int64),
             "c": np.zeros(0, np.int64), "examined": 0, "antecedent_pairs": 0,
             "capped": False}
    if idx.size < 2:
        return empty
    Li = L[:, idx]
    C = (Li.T @ Li).tocoo()
    up = (C.row < C.col) & (C.data >= min_co)
    pa, pb, pw = idx[C.row[up]], idx[C.col[up]], C.data[up]
    total = int(pa.size)
    capped = total > max_pairs
    if capped:
        top = np.argsort(-pw, kind="stable")[:max_pairs]
        pa, pb = pa[top], pb[top]
    cons_idx = np.flatnonzero(keep)
    Lc, Rc = L[:, cons_idx], (None if R is None else R[:, cons_idx])
    if L.shape[0] * cons_idx.size <= DENSE_CELLS:
        # sparse x dense products (one pass over the antecedents' users) beat sparse x
        # sparse here: the outputs are dense blocks anyway
        Lc = Lc.toarray().astype(np.float32)
        Rc = None if Rc is None else Rc.toarray().astype(np.float32)
    step = max(1, block_cells // max(1, cons_idx.size))
    out_a, out_b, out_c = [], [], []
    for lo in range(0, pa.size, step):
        if stop is not None and stop():
            break
        A = _antecedent_matrix(L, pa[lo:lo + step], pb[lo:lo + step])
        At = A.T.tocsr().astype(np.float32)
        co = _dense(At @ Lc)
        kn = co if Rc is None else _dense(At @ Rc)
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = (kn >= min_co) & (co >= holds * kn - 1e-9)
        r, k = np.nonzero(ok)
        if not r.size:
            continue
        a, b, c = pa[lo + r], pb[lo + r], cons_idx[k]
        fine = (c != a) & (c != b)
        a, b, c = a[fine], b[fine], c[fine]
        if a.size:
            ca, cb = pair_conf(a, c), pair_conf(b, c)
            alone = (ca < holds - 1e-12) & (cb < holds - 1e-12)
            if gate is not None:
                alone &= gate(np.maximum(ca, cb), co[r, k][fine], kn[r, k][fine])
            out_a.append(a[alone])
            out_b.append(b[alone])
            out_c.append(c[alone])
    if not out_a:
        return {**empty, "examined": int(pa.size), "antecedent_pairs": total,
                "capped": capped}
    return {"a": np.concatenate(out_a), "b": np.concatenate(out_b),
            "c": np.concatenate(out_c), "examined": int(pa.size), "antecedent_pairs": total,
            "capped": capped}


def _dense(m) -> np.ndarray:
    return np.asarray(m.toarray() if sp.issparse(m) else m)


# ----------------------------------------------------------------------------- closure
def closure(model_or_table, liked_items, *, names=None) -> pd.DataFrame:
    """What follows from liking ``liked_items`` (item indices).

    With a fitted KM (or its psi, items x D): every item c outside the set whose support
    holds the intersection of the liked items' supports (``∩ supp psi_l ⊆ supp psi_c``, the
    intersection non-empty): under the model whoever likes all of them likes c. Columns
    ``item``, ``name``, ``step`` (1) and ``because`` (the liked items).

    With a relation table (rows ``antecedent`` tuples => ``consequent``, e.g.
    :func:`kmviz.km.relations.mine_relations`): forward chaining: a row fires when all of
    its antecedent items are liked or already follow; ``step`` is the round it fired in and
    ``because`` its antecedent; the row's ``rank`` is kept when the table has one.
    """
    liked = sorted({int(x) for x in np.atleast_1d(np.asarray(liked_items, dtype=np.int64))})
    if isinstance(model_or_table, pd.DataFrame):
        return _closure_table(model_or_table, liked)
    psi = getattr(model_or_table, "psi_", model_or_table)
    bits = pack_supports(np.asarray(psi))
    n = bits.shape[0]
    if any(k < 0 or k >= n for k in liked):
        raise InvalidParameterError(
            f"closure: liked items must be indices in 0..{n - 1}; got {liked}.")
    cols = ["item", "name", "step", "because"]
    if not liked:
        return pd.DataFrame(columns=cols)
    inter = np.bitwise_and.reduce(bits[liked], axis=0)
    if not inter.any():
        return pd.DataFrame(columns=cols)
    inside = ((inter[None, :] & ~bits) == 0).all(axis=1)
    inside[liked] = False
    found = np.flatnonzero(inside)
    nm = _label(names, n)
    return pd.DataFrame({"item": found.astype(np.int64), "name": [nm(k) for k in found],
                         "step": 1, "because": [tuple(liked)] * found.size})


def _label(names, n):
    if names is None:
        return lambda k: f"item {k}"
    if hasattr(names, "item_label"):
        return names.item_label
    return lambda k: str(names[k])


def _closure_table(table: pd.DataFrame, liked: list) -> pd.DataFrame:
    have = set(liked)
    ante = [tuple(int(x) for x in (a if isinstance(a, (tuple, list, np.ndarray)) else (a,)))
            for a in table["antecedent"]]
    cons = table["consequent"].to_numpy(np.int64)
    names = table["consequent_name"].tolist() if "consequent_name" in table else None
    ranks = table["rank"].to_numpy() if "rank" in table else np.arange(1, len(table) + 1)
    rows, step = [], 0
    while True:
        step += 1
        new = {}
        for k, (a, c) in enumerate(zip(ante, cons)):
            if int(c) in have or int(c) in new:
                continue
            if all(x in have for x in a):
                new[int(c)] = k
        if not new:
            break
        for c, k in new.items():
            rows.append({"item": c, "name": names[k] if names else f"item {c}",
                         "step": step, "because": ante[k], "rank": int(ranks[k])})
        have |= set(new)
    return pd.DataFrame(rows, columns=["item", "name", "step", "because", "rank"])
