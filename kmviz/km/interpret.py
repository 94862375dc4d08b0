"""Logical relations mined from a fitted Kolmogorov model (paper Sec. II-B3 and V-C).

The direction of an implication
-------------------------------
In the model, user u likes item i (``X_ui = 1``) exactly when u's elementary event falls in
``supp(psi_i)``. If ``supp(psi_j) ⊆ supp(psi_i)``, then the event {X_uj = 1} lies inside
{X_ui = 1}. So

* **liking j implies liking i** ("everyone who likes j also likes i"),
* disliking i implies disliking j,
* and ``P(X_ui = 1) >= P(X_uj = 1)`` for every user.

The paper's Sec. II-B3 and its illustrative example (7) state the converse
(``X_ui = 1 => X_uj = 1``); this module implements the set-theoretic direction above. The
matrix N of eq. (21) is unchanged (``N[i, j] = 1`` iff ``supp(psi_j) ⊆ supp(psi_i)``):
row i lists the items whose liking implies liking i, so the influence score ς_i counts the
items that imply i (ς_i = 1: liking any item implies liking i).

Empty supports: an item with ``psi_i = 0`` is never liked, so it trivially implies every
item. Such vacuous relations are excluded by default (``include_empty=False``): empty items
neither imply nor are implied, and are left out of the denominator of the influence score.
Items without training ratings get ``psi = 0`` in :class:`KolmogorovModel`, so they drop out
the same way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = [
    "support_matrix", "influence_scores", "implication_graph", "implied_by_liking", "implies",
    "relation_mining_accuracy", "implication_precision", "implications_frame",
]


# ----------------------------------------------------------------------------- supports
def _psi_of(model_or_psi):
    psi = getattr(model_or_psi, "psi_", model_or_psi)
    psi = np.asarray(psi)
    if psi.ndim != 2:
        raise ValueError(f"psi must be a 2-D array (n_items, D); got shape {psi.shape}.")
    return psi != 0


def _pack(psi_bool):
    """Bit-pack each row's support into uint64 words, shape (n_items, ceil(D / 64))."""
    n, D = psi_bool.shape
    n_words = max(1, -(-D // 64))
    bits = np.zeros((n, n_words * 64), dtype=np.uint64)
    bits[:, :D] = psi_bool
    weights = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))
    return (bits.reshape(n, n_words, 64) * weights).sum(axis=2, dtype=np.uint64)


def support_matrix(psi, *, include_empty=False, chunk=1024):
    """N with ``N[i, j] = True`` iff ``supp(psi_j) ⊆ supp(psi_i)`` (paper Sec. V-C).

    Row i: the items j whose liking implies liking i. The diagonal is True for every item
    with a non-empty support (a set contains itself).

    Parameters
    ----------
    psi : array-like (n_items, D) of 0/1, or a fitted KolmogorovModel
    include_empty : bool, default=False
        Keep items with empty support (they trivially imply everything). By default their
        rows and columns are all False.
    chunk : int
        Rows processed at a time (bounds the temporary memory).

    Returns
    -------
    ndarray of bool, shape (n_items, n_items)
    """
    b = _psi_of(psi)
    codes = _pack(b)
    n = codes.shape[0]
    N = np.empty((n, n), dtype=bool)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        # j ⊆ i  <=>  bits of j outside i are none: (code_j & ~code_i) == 0 on every word
        outside = codes[None, :, :] & ~codes[lo:hi, None, :]
        N[lo:hi] = ~outside.any(axis=2)
    if not include_empty:
        empty = ~b.any(axis=1)
        N[empty, :] = False
        N[:, empty] = False
    return N


def influence_scores(psi, *, include_empty=False):
    """Normalized influence score ς_i = (1/I) sum_j N(i, j), eq. (21).

    ς_i is the share of items j whose liking implies liking i (``supp(psi_j) ⊆
    supp(psi_i)``), itself included; ς_i = 1 when liking any item implies liking i. With
    ``include_empty=False`` (default) items with an empty support are left out of the sum and
    of I, and score 0; ``include_empty=True`` is eq. (21) literally, I = all items.
    """
    b = _psi_of(psi)
    nonempty = b.any(axis=1)
    n_counted = b.shape[0] if include_empty else int(nonempty.sum())
    if n_counted == 0:
        return np.zeros(b.shape[0])
    # Items with identical supports have identical rows of N, and there are at most 2^D
    # distinct supports: count containments between the distinct supports (G x G) and
    # weight them by group sizes instead of forming the I x I matrix.
    codes, group, size = np.unique(_pack(b), axis=0, return_inverse=True, return_counts=True)
    group = group.ravel()
    inside = ~(codes[None, :, :] & ~codes[:, None, :]).any(axis=2)  # [g, h]: h ⊆ g
    if not include_empty:
        size = np.where(codes.any(axis=1), size, 0)  # the empty support counts for nothing
    scores = (inside @ size)[group] / float(n_counted)
    if not include_empty:
        scores[~nonempty] = 0.0
    return scores


def implied_by_liking(psi, i, *, include_empty=False):
    """What does liking item i imply? Items j != i with ``supp(psi_i) ⊆ supp(psi_j)``:
    everyone who likes i also likes each of them."""
    return _column_or_row(psi, i, include_empty, row=False)


def implies(psi, i, *, include_empty=False):
    """What implies liking item i? Items j != i with ``supp(psi_j) ⊆ supp(psi_i)``:
    everyone who likes one of them also likes i."""
    return _column_or_row(psi, i, include_empty, row=True)


def _column_or_row(psi, i, include_empty, *, row):
    b = _psi_of(psi)
    n = b.shape[0]
    i = int(i)
    if not 0 <= i < n:
        raise ValueError(f"item index {i} is out of range (0..{n - 1}).")
    if not include_empty and not b[i].any():
        return np.zeros(0, dtype=np.int64)
    if row:  # j ⊆ i
        ok = ~(b & ~b[i]).any(axis=1)
    else:    # i ⊆ j
        ok = ~(b[i] & ~b).any(axis=1)
    if not include_empty:
        ok &= b.any(axis=1)
    ok[i] = False
    return np.flatnonzero(ok)


def _item_subset(items, n_items):
    """Sorted item indices from an index list or a boolean mask over all items."""
    items = np.asarray(items)
    if items.dtype == bool:
        if items.shape != (n_items,):
            raise ValueError(f"items mask has shape {items.shape}; expected ({n_items},).")
        return np.flatnonzero(items)
    idx = np.unique(items.astype(np.int64))
    if idx.size and (idx[0] < 0 or idx[-1] >= n_items):
        raise ValueError(f"items holds indices outside 0..{n_items - 1}.")
    return idx


# ----------------------------------------------------------------------------- graph
def _names_of(names, n):
    if names is None:
        return [f"item {k}" for k in range(n)]
    if hasattr(names, "item_label"):  # a Ratings
        return [names.item_label(k) for k in range(n)]
    names = list(names)
    if len(names) != n:
        raise ValueError(f"{len(names)} names given for {n} items.")
    return [str(x) for x in names]


def implication_graph(psi, names=None, *, transitive_reduction=True, min_support=1):
    """Directed graph of the mined implications, one node per distinct support.

    An edge ``A -> B`` means "liking A implies liking B" (everyone who likes an item of A
    also likes every item of B): ``supp(A) ⊊ supp(B)``. Items with identical supports like
    each other mutually and are merged into one node.

    Parameters
    ----------
    psi : array-like (n_items, D) or fitted KolmogorovModel
    names : sequence of str, a Ratings, or None
        Item names (a Ratings gives ``item_label``).
    transitive_reduction : bool, default=True
        Keep only the edges not implied by a path (for display).
    min_support : int, default=1
        Supports smaller than this are left out (1 drops the empty support).

    Returns
    -------
    networkx.DiGraph
        Node ids are 0..K-1 ordered by (support size, support). Node attributes:
        ``members`` (item indices), ``names``, ``support`` (tuple of event indices),
        ``support_size``, ``influence`` (eq. (21) of its members), ``label``.
    """
    import networkx as nx

    b = _psi_of(psi)
    n, D = b.shape
    nm = _names_of(names, n)
    influence = influence_scores(b)
    size = b.sum(axis=1)
    keep = np.flatnonzero(size >= max(0, int(min_support)))
    G = nx.DiGraph()
    if keep.size == 0:
        return G
    uniq, inverse = np.unique(b[keep], axis=0, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    order = np.lexsort(tuple(uniq[:, ::-1].T) + (uniq.sum(axis=1),))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    for c_old in order:
        c = int(rank[c_old])
        members = keep[inverse == c_old].tolist()
        support = tuple(int(x) for x in np.flatnonzero(uniq[c_old]))
        names_c = [nm[k] for k in members]
        label = names_c[0] if len(names_c) == 1 else f"{names_c[0]} (+{len(names_c) - 1})"
        G.add_node(c, members=members, names=names_c, support=support,
                   support_size=len(support), influence=float(influence[members[0]]),
                   label=label)
    U = uniq[order]
    sub = ~(U[:, None, :] & ~U[None, :, :]).any(axis=2)  # sub[a, b]: supp(a) ⊆ supp(b)
    np.fill_diagonal(sub, False)
    G.add_edges_from(zip(*np.nonzero(sub)))
    if transitive_reduction and G.number_of_edges():
        R = nx.transitive_reduction(G)
        R.add_nodes_from(G.nodes(data=True))
        G = R
    return G


def implications_frame(psi, names=None, *, include_empty=False, equal_supports=True):
    """Every mined implication as rows, for display or CSV export.

    Columns: ``antecedent``, ``consequent`` (item indices; liking the antecedent implies
    liking the consequent), their names, ``equivalent`` (identical supports: the implication
    holds both ways) and ``statement`` in plain words. Self-pairs are left out; with
    ``equal_supports=False`` the pairs with identical supports are left out too.
    """
    b = _psi_of(psi)
    n = b.shape[0]
    nm = _names_of(names, n)
    N = support_matrix(b, include_empty=include_empty)
    np.fill_diagonal(N, False)
    cons, ante = np.nonzero(N)  # N[i, j]: j => i
    equiv = N[ante, cons]
    if not equal_supports:
        ante, cons, equiv = ante[~equiv], cons[~equiv], equiv[~equiv]
    an = [nm[k] for k in ante]
    cn = [nm[k] for k in cons]
    return pd.DataFrame({
        "antecedent": ante.astype(np.int64), "antecedent_name": an,
        "consequent": cons.astype(np.int64), "consequent_name": cn,
        "equivalent": equiv,
        "statement": [f"everyone who likes {a} also likes {c}" for a, c in zip(an, cn)],
    })


# ----------------------------------------------------------------------------- checks on data
def _probabilities(ratings, model_or_psi, probability):
    from .estimator import to_probability

    if probability is None:
        probability = getattr(model_or_psi, "probability_", "max")
    if hasattr(model_or_psi, "r_min_"):
        r_min, r_max = model_or_psi.r_min_, model_or_psi.r_max_
    else:
        r_min, r_max = ratings.r_min, ratings.r_max
    return to_probability(ratings.values, r_min, r_max, probability)


def relation_mining_accuracy(model_or_psi, ratings, item, *, threshold=0.5, probability=None):
    """The paper's Table VI measure for one item (Sec. V-C).

    For each user who rated ``item`` in ``ratings``: the number of items that user rated and
    the share of them with ``p_ui >= threshold`` ("liked"). The paper applies it to items
    with influence score 1 and reads it as "a user who likes one of these items likes the
    others". Under the set-theoretic reading (module docstring), an item with ς = 1 is
    *implied by* every liked item, so the direct check of that claim is
    :func:`implication_precision`; this function reproduces the paper's number.

    Parameters
    ----------
    probability : {"minmax", "max", "identity"} or None
        Mapping from ratings to p. None: the model's mapping, or the paper's ``r / r_max``
        when psi is given directly. On a 1-5 integer scale with threshold 0.5 both "max" and
        "minmax" call ratings >= 3 liked.

    Returns
    -------
    DataFrame with columns ``item``, ``influence``, ``user``, ``n_rated``, ``n_liked``,
    ``accuracy``; one row per user who rated the item.
    """
    b = _psi_of(model_or_psi)
    item = int(item)
    if not 0 <= item < b.shape[0]:
        raise ValueError(f"item index {item} is out of range (0..{b.shape[0] - 1}).")
    p = _probabilities(ratings, model_or_psi, probability)
    users = np.asarray(ratings.users)
    raters = np.unique(users[np.asarray(ratings.items) == item])
    n_rated = np.bincount(users, minlength=ratings.n_users)
    n_liked = np.bincount(users, weights=(p >= threshold).astype(float),
                          minlength=ratings.n_users).astype(np.int64)
    infl = influence_scores(b)[item]
    return pd.DataFrame({
        "item": item, "influence": infl, "user": raters.astype(np.int64),
        "n_rated": n_rated[raters], "n_liked": n_liked[raters],
        "accuracy": n_liked[raters] / np.maximum(n_rated[raters], 1),
    })


def implication_precision(psi, ratings, *, threshold=0.5, min_users=5, probability=None,
                          names=None, include_empty=False, subset=None):
    """How often each mined implication j => i holds in the ratings.

    For every pair with ``supp(psi_j) ⊆ supp(psi_i)`` (liking j implies liking i), counts the
    users who like j (``p_uj >= threshold``) and rated i, and of those the share who like i:
    the implication's precision on these ratings (training or held-out). ``base_rate`` is
    the share of all raters of i who like i, so ``lift = precision / base_rate`` shows
    whether the implication tells more than the item's popularity.

    Parameters
    ----------
    psi : array-like (n_items, D) or fitted KolmogorovModel
    ratings : Ratings
    threshold : float, default=0.5
    min_users : int, default=5
        Pairs with fewer users who like j and rated i are dropped.
    probability : mapping of ratings to p, as in :func:`relation_mining_accuracy`.
    subset : array-like of int or bool mask, optional
        Only implications between these items (for example, items with enough ratings);
        the work then grows with their number, not with all items.

    Returns
    -------
    DataFrame with columns ``antecedent``, ``consequent``, ``antecedent_name``,
    ``consequent_name``, ``n_users``, ``n_like_both``, ``precision``, ``base_rate``,
    ``lift``, ``equivalent``; sorted by ``n_users`` descending.
    """
    b = _psi_of(psi)
    n_items = b.shape[0]
    if ratings.n_items != n_items:
        raise ValueError(f"ratings have {ratings.n_items} items but psi has {n_items} rows.")
    p = _probabilities(ratings, psi, probability)
    users = np.asarray(ratings.users)
    items = np.asarray(ratings.items)
    like = p >= threshold
    shape = (ratings.n_users, n_items)
    R = sp.csr_matrix((np.ones(users.size, dtype=np.int32), (users, items)), shape=shape)
    L = sp.csr_matrix((np.ones(int(like.sum()), dtype=np.int32), (users[like], items[like])),
                      shape=shape)
    keep = np.arange(n_items) if subset is None else _item_subset(subset, n_items)
    N = support_matrix(b[keep], include_empty=include_empty)
    np.fill_diagonal(N, False)
    cons_k, ante_k = np.nonzero(N)
    equivalent = N[ante_k, cons_k]
    cons, ante = keep[cons_k], keep[ante_k]
    # A[j, i]: users who like j and rated i; B[j, i]: users who like both
    A = (L.T @ R).tocsr()
    B = (L.T @ L).tocsr()
    if ante.size:
        n_users = np.asarray(A[ante, cons]).ravel()
        n_both = np.asarray(B[ante, cons]).ravel()
    else:  # no nested supports at all (sparse fancy indexing rejects empty index lists)
        n_users = n_both = np.zeros(0, dtype=np.int64)
    ok = n_users >= max(1, int(min_users))
    ante, cons, n_users, n_both = ante[ok], cons[ok], n_users[ok], n_both[ok]
    equivalent = equivalent[ok]
    raters = np.bincount(items, minlength=n_items)
    likers = np.bincount(items[like], minlength=n_items)
    base = likers[cons] / np.maximum(raters[cons], 1)
    precision = n_both / n_users
    nm = _names_of(names if names is not None else ratings, n_items)
    df = pd.DataFrame({
        "antecedent": ante.astype(np.int64), "consequent": cons.astype(np.int64),
        "antecedent_name": [nm[k] for k in ante], "consequent_name": [nm[k] for k in cons],
        "n_users": n_users.astype(np.int64), "n_like_both": n_both.astype(np.int64),
        "precision": precision, "base_rate": base,
        "lift": np.divide(precision, base, out=np.full(precision.shape, np.nan),
                          where=base > 0),
        "equivalent": equivalent,
    })
    return df.sort_values(["n_users", "antecedent", "consequent"],
                          ascending=[False, True, True], ignore_index=True)
