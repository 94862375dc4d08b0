"""Support groups of a Kolmogorov model: the items whose supports are equal form one group,
and group A implies group B when supp psi_A is inside supp psi_B. The mining, the checks
and the figures of :mod:`kmviz.km.mining` build on them."""

from __future__ import annotations

import numpy as np

from ..rules import HUB_SHARE, LikeCounts
from .interpret import _pack, _psi_of

#: Largest number of item pairs mine_implications scores at once (guards memory and time).
MAX_PAIRS = 5_000_000


def _considered(b: np.ndarray, ratings, items) -> np.ndarray:
    """Items taken into account: non-empty support, at least one training rating, and in
    ``items`` when given."""
    n = b.shape[0]
    keep = b.any(axis=1) & (ratings.item_counts() > 0)
    if items is not None:
        items = np.asarray(items)
        if items.dtype == bool:
            if items.shape != (n,):
                raise ValueError(f"items mask has shape {items.shape}; expected ({n},).")
            keep &= items
        else:
            m = np.zeros(n, bool)
            m[items.astype(np.int64)] = True
            keep &= m
    return keep


def support_groups(model, ratings, *, items=None, liked=None, counts=None) -> dict:
    """The items with identical supports grouped (only the items considered, see
    :func:`mine_implications`).

    Returns a dict with ``items`` (considered item indices), ``group`` (group id per item,
    -1 if not considered), ``members`` (list per group, most liked first), ``size``,
    ``support_size``, ``subset`` (bool G x G, ``subset[a, b]``: supp(a) ⊆ supp(b)), and
    ``implied_by`` per item (considered items j != i with supp(j) ⊆ supp(i)).
    """
    b = _psi_of(model)
    n = b.shape[0]
    if ratings.n_items != n:
        raise ValueError(f"ratings have {ratings.n_items} items but the model has {n}.")
    c = counts if counts is not None else LikeCounts.of(ratings, liked)
    keep = np.flatnonzero(_considered(b, ratings, items))
    group = np.full(n, -1, dtype=np.int64)
    if keep.size == 0:
        return {"items": keep, "group": group, "members": [], "size": np.zeros(0, np.int64),
                "support_size": np.zeros(0, np.int64), "subset": np.zeros((0, 0), bool),
                "implied_by": np.zeros(n, np.int64)}
    codes = _pack(b[keep])
    uniq, inv = np.unique(codes, axis=0, return_inverse=True)
    inv = np.asarray(inv).ravel()
    ssize = b[keep][np.unique(inv, return_index=True)[1]].sum(axis=1)
    # order groups by support size, then code
    order = np.lexsort(tuple(uniq[:, ::-1].T) + (ssize,))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    g = rank[inv]
    group[keep] = g
    uniq = uniq[order]
    ssize = ssize[order]
    members = [[] for _ in range(len(uniq))]
    likes = c.n_likes
    for k in keep[np.lexsort((keep, -likes[keep]))]:  # most liked first, then by index
        members[group[k]].append(int(k))
    size = np.array([len(m) for m in members], dtype=np.int64)
    subset = ~(uniq[:, None, :] & ~uniq[None, :, :]).any(axis=2)  # [a, b]: a ⊆ b
    implied_by = np.zeros(n, np.int64)
    strict = subset & ~np.eye(len(uniq), dtype=bool)
    implied_by[keep] = (strict.T.astype(np.int64) @ size)[g]
    return {"items": keep, "group": group, "members": members, "size": size,
            "support_size": np.asarray(ssize, np.int64), "subset": subset,
            "implied_by": implied_by}


def implication_counts(groups: dict, hub_share: float = HUB_SHARE) -> dict:
    """Counts for the page: ``implications`` (item pairs j => i, j != i, equivalent pairs
    once), ``claims`` (pairs of groups plus groups of two or more: one per distinct
    statement), ``groups`` (of two or more equivalent items), ``hubs``, ``items``."""
    size, subset = groups["size"], groups["subset"]
    G = size.size
    if G == 0:
        return {"items": 0, "implications": 0, "claims": 0, "groups": 0, "hubs": 0}
    strict = subset & ~np.eye(G, dtype=bool)
    n_pairs = int(size @ strict.astype(np.int64) @ size) + int((size * (size - 1) // 2).sum())
    n_items = int(groups["items"].size)
    implied = groups["implied_by"][groups["items"]]
    return {"items": n_items, "implications": n_pairs,
            "claims": int(strict.sum()) + int((size >= 2).sum()),
            "groups": int((size >= 2).sum()),
            "hubs": int((implied > hub_share * n_items).sum())}


def _group_pairs(groups: dict, merge: bool, around: int | None = None):
    """(antecedent, consequent, equivalent) arrays of the rows to score."""
    members, subset, size = groups["members"], groups["subset"], groups["size"]
    G = size.size
    strict = subset & ~np.eye(G, dtype=bool)
    if around is not None:
        item = int(around)
        g = groups["group"][item] if 0 <= item < groups["group"].size else -1
        if g < 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool)
        below = [k for a in np.flatnonzero(strict[:, g]) for k in members[a]]
        above = [k for c in np.flatnonzero(strict[g]) for k in members[c]]
        same = [k for k in members[g] if k != item]
        ante = np.array(below + [item] * (len(above) + len(same)), dtype=np.int64)
        cons = np.array([item] * len(below) + above + same, dtype=np.int64)
        equiv = np.array([False] * (len(below) + len(above)) + [True] * len(same), bool)
        return ante, cons, equiv
    ga, gc = np.nonzero(strict)  # supp(ga) ⊊ supp(gc)
    if merge:  # one pair per pair of groups: the most liked members
        rep = np.array([m[0] for m in members], dtype=np.int64)
        eq = np.flatnonzero(size >= 2)
        second = np.array([members[g][1] for g in eq], dtype=np.int64)
        ante = np.concatenate([rep[ga], rep[eq]])
        cons = np.concatenate([rep[gc], second])
        equiv = np.concatenate([np.zeros(ga.size, bool), np.ones(eq.size, bool)])
        return ante, cons, equiv
    n_pairs = int((size[ga] * size[gc]).sum() + (size * (size - 1) // 2).sum())
    if n_pairs > MAX_PAIRS:
        raise ValueError(
            f"{n_pairs:,} item-level implications are more than {MAX_PAIRS:,}; use "
            "merge_groups=\"pairs\" (one row per pair of groups) or fewer items (items=...).")
    A, C, E = [], [], []
    for a, c in zip(ga, gc):
        ma, mc = np.asarray(members[a]), np.asarray(members[c])
        A.append(np.repeat(ma, mc.size))
        C.append(np.tile(mc, ma.size))
        E.append(np.zeros(ma.size * mc.size, bool))
    for g in np.flatnonzero(size >= 2):
        m = np.asarray(members[g])
        x, y = np.triu_indices(m.size, 1)
        A.append(m[x])
        C.append(m[y])
        E.append(np.ones(x.size, bool))
    if not A:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool)
    return np.concatenate(A), np.concatenate(C), np.concatenate(E)
