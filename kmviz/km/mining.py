"""The implications of a fitted Kolmogorov model, checked against the ratings and ranked.

:func:`mine_implications` turns the learned supports into a table an analyst can read: one
row per implication j => i (``supp(psi_j) ⊆ supp(psi_i)``: under the model, everyone who
likes j also likes i), with the statistics of :mod:`kmviz.rules` on the training ratings
(and held-out ones when given), so every claim of the model comes with how often it holds
in the data, how sure that is, and whether it says more than the consequent's popularity.

Groups and hubs
---------------
* Items with the same support are *equivalent*: the model says they are liked by the same
  people. They form a group, stated once: by default (``merge_groups=True``) a group of two
  or more is one row ("A and B are liked by the same people", its best-ranked pair, the
  other members beside it), and each implication j => i between items of different groups
  is a row of its own, with each side's group (size, other members) beside it.
  ``merge_groups="pairs"`` keeps one row per pair of groups (its best-ranked item pair);
  ``merge_groups=False`` lists every item pair (equivalent pairs once each).
* ``implied_by`` counts the items whose support lies strictly inside the consequent's (the
  items that imply it, its equivalent items left out). An item implied by a large share of
  all items (more than ``hub_share``) is a *hub*: "implied by 745 films" says the item is
  liked by nearly everyone the model sees, not that there is a logical relation. Hubs are
  flagged and ranked last.

The default ranking (:func:`kmviz.rules.rank_pairs`, ``rank_by="score"``): implications whose
exact test supports lift > 1 (p <= 0.05) and whose consequent is not a hub come first,
sorted by ``score = confidence_lo - base_rate`` (the lower 95 % Wilson bound of the training
confidence minus the consequent's base rate); the rest follow in the same order.

Everything is sparse: likes are a users x items CSR, co-occurrences are computed only for
the pairs the model names (:func:`kmviz.rules.pair_counts`).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..rules import (
    ALPHA,
    HUB_SHARE,
    INTERACTED,
    LikeCounts,
    _hub_columns,
    _names,
    pair_statistics,
    pairwise_rules,
    pooled_heldout_lift,
    rank_pairs,
    recovery_scores,
)
from .interpret import _pack, _psi_of

__all__ = [
    "mine_implications", "support_groups", "implication_counts", "filter_implications",
    "ego_rows", "group_of", "lattice_graph", "planted_truth", "km_claims", "recovery_table",
    "sentences",
    "equivalence_sentence", "export_csv", "heldout_summary", "missed_rules", "missed_caption",
    "order_dimension",
    "MAX_PAIRS", "HASSE_MAX_GROUPS",
]

#: Largest number of item pairs mine_implications scores at once (guards memory and time).
MAX_PAIRS = 5_000_000
#: Other members of a group named beside a row (the rest are counted).
OTHERS_SHOWN = 10
#: Up to this many groups, the whole lattice (Hasse diagram) is the graph's default view.
HASSE_MAX_GROUPS = 40


# ----------------------------------------------------------------------------- groups
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


# ----------------------------------------------------------------------------- mining
def mine_implications(model, ratings, *, liked=None, validation=None, items=None,
                      merge_groups: bool | str = True, rank_by: str = "score",
                      hub_share: float = HUB_SHARE, alpha: float = ALPHA, level: float = 0.95,
                      names=None, around: int | None = None,
                      stability: pd.DataFrame | None = None) -> pd.DataFrame:
    """The model's implications j => i with their statistics, in the default ranking.

    Parameters
    ----------
    model : fitted KolmogorovModel, or psi (n_items, D)
    ratings : Ratings
        The training ratings (the model's index space).
    liked : float, "interacted" or None
        What counts as a like, in the data's units (:func:`kmviz.rules.resolve_liked`;
        default: rating >= the top quarter of the scale, 4 on 1-5; interactions for 0/1
        data). The same setting drives every statistic.
    validation : Ratings, optional
        Held-out ratings: adds ``heldout_*`` columns (antecedent likes from training,
        consequent ratings from the held-out part).
    items : array-like of int or bool mask, optional
        Only implications between these items (e.g. items with enough ratings). Items
        without training ratings or with an empty support never take part.
    merge_groups : True, "pairs" or False, default=True
        True: one row per group of two or more equivalent items (its best-ranked pair, "liked
        by the same people") and one row per implication between items of different groups.
        "pairs": one row per pair of groups too (its best-ranked item pair). False: one row
        per item pair (equivalent pairs once each). Every item pair is scored first; beyond
        :data:`MAX_PAIRS` item pairs, True and "pairs" score one pair per pair of groups,
        named after the groups' most liked members.
    rank_by : {"score", "lift_lo", "lift", "confidence", "co_support"}
        The order (:func:`kmviz.rules.rank_pairs`); "score" is the documented default.
        "lift_lo" (the lower confidence bound over the base rate) favours rarer consequents;
        bench/implications_ranking.py compares them on held-out MovieLens data (it was the
        validation choice but did not beat "score" on ML-100K's held-out part).
    hub_share : float, default=0.2
        A consequent implied by more than this share of the items considered is a hub.
    alpha, level : float
        Level of the exact test and coverage of the Wilson intervals.
    around : int, optional
        Only the item-level rows with this item on one side (what it implies, what implies
        it, and its equivalent items, each pair with its own statistics); ``merge_groups``
        is then ignored.
    stability : DataFrame, optional
        A :func:`kmviz.km.stable_implications` table: adds its columns ``stability``,
        ``n_held``, ``n_refits`` and the out-of-bag ``oob_*`` figures to each row (stability
        0 for a pair that held in no refit); the order stays ``rank_by``'s.

    Returns
    -------
    DataFrame
        ``rank``, ``antecedent``, ``consequent`` (item indices), ``antecedent_name``,
        ``consequent_name``, ``equivalent``, ``antecedent_group``, ``consequent_group``,
        ``antecedent_group_size``, ``consequent_group_size``, ``antecedent_others``,
        ``consequent_others`` (the other members' names), ``antecedent_support_size``,
        ``consequent_support_size`` (|supp psi|), the statistics of
        :func:`kmviz.rules.pair_statistics` (``support``, ``co_support``, ``n_known``,
        ``confidence``, ``confidence_lo``, ``confidence_hi``, ``base_rate``, ``lift``,
        ``p_value``, ``heldout_*``), ``implied_by``, ``hub``, ``score``, ``supported`` and
        ``statement`` (and the ``stability`` columns when given). ``attrs`` holds ``liked``
        and the :func:`implication_counts`.
    """
    b = _psi_of(model)
    c = LikeCounts.of(ratings, liked)
    groups = support_groups(b, ratings, items=items, counts=c)
    counts = implication_counts(groups, hub_share)
    if merge_groups not in (True, False, "pairs"):
        raise ValueError(f"merge_groups must be True, False or 'pairs'; got {merge_groups!r}.")
    # score every item pair, then keep each group's / pair of groups' best-ranked row (one
    # pair per pair of groups, named after the most liked members, when there are too many)
    reps = bool(merge_groups) and around is None and counts["implications"] > MAX_PAIRS
    ante, cons, equiv = _group_pairs(groups, reps, around)
    stats = pair_statistics(ratings, ante, cons, counts=c, validation=validation, level=level)
    g = groups["group"]
    size, ssize = groups["size"], groups["support_size"]
    df = pd.concat([stats.iloc[:, :2], pd.DataFrame({
        "equivalent": equiv, "antecedent_group": g[ante], "consequent_group": g[cons],
    }), stats.iloc[:, 2:]], axis=1)
    df = _hub_columns(df, groups["implied_by"][cons], int(groups["items"].size), hub_share)
    df = rank_pairs(df, by=rank_by, alpha=alpha)
    if merge_groups and around is None and not reps:
        again = df.duplicated(["antecedent_group", "consequent_group"], keep="first")
        if merge_groups is True:  # equivalences once per group; implications per item pair
            again &= df["equivalent"].to_numpy(bool)
        df = df[~again].reset_index(drop=True)
        df["rank"] = np.arange(1, len(df) + 1)
    # names last: only for the rows kept
    nm = _names(names if names is not None else ratings, b.shape[0])
    members = groups["members"]
    ante, cons = df["antecedent"].to_numpy(), df["consequent"].to_numpy()
    ga, gc = df["antecedent_group"].to_numpy(), df["consequent_group"].to_numpy()
    equiv = df["equivalent"].to_numpy(bool)
    others_of = {}

    def others(item, grp):  # the group's other members, most liked first, at most ten
        if item not in others_of:
            rest = [nm[k] for k in members[grp] if k != item]
            more = f"; and {len(rest) - OTHERS_SHOWN:,} more" if len(rest) > OTHERS_SHOWN \
                else ""
            others_of[item] = "; ".join(rest[:OTHERS_SHOWN]) + more
        return others_of[item]

    an = [nm[k] for k in ante]
    cn = [nm[k] for k in cons]
    at = df.columns.get_loc("antecedent_group")
    for name, col in reversed([
            ("antecedent_name", an), ("consequent_name", cn),
            ("antecedent_others", [others(k, x) for k, x in zip(ante, ga)]),
            ("consequent_others", [others(k, x) for k, x in zip(cons, gc)])]):
        df.insert(3, name, col)
    extra = {"antecedent_group_size": size[ga], "consequent_group_size": size[gc],
             "antecedent_support_size": ssize[ga], "consequent_support_size": ssize[gc]}
    for k, (name, col) in enumerate(extra.items()):
        df.insert(at + 6 + k, name, np.asarray(col, dtype=np.int64))
    df["statement"] = [
        (f"{a} and {c} are liked by the same people" if e else
         f"everyone who likes {a} also likes {c}")
        for a, c, e in zip(an, cn, equiv)]
    if stability is not None:
        from .stability import add_stability

        df = add_stability(df, stability)
    df.attrs.update(liked=c.liked, counts=counts, merge_groups=merge_groups,
                    rank_by=rank_by, group_of=tuple(int(x) for x in g))
    return df


# ----------------------------------------------------------------------------- filters
def filter_implications(df: pd.DataFrame, *, min_support: int = 0, min_confidence: float = 0.0,
                        min_lift: float = 0.0, min_heldout_confidence: float | None = None,
                        top_k: int | None = None, hubs: bool = True) -> pd.DataFrame:
    """The rows passing every filter, in the table's order, then the first ``top_k``.

    ``min_support`` applies to the co-support (users who like both items); a confidence,
    lift or held-out confidence minimum above 0 also drops the rows where that figure is
    undefined (nobody to count);
    ``hubs=False`` drops rows whose consequent is a hub.
    """
    keep = df["co_support"].to_numpy() >= min_support
    if min_confidence > 0:
        keep &= df["confidence"].fillna(-1).to_numpy() >= min_confidence
    if min_lift > 0:
        keep &= df["lift"].fillna(-1).to_numpy() >= min_lift
    if min_heldout_confidence and "heldout_confidence" in df:
        keep &= df["heldout_confidence"].fillna(-1).to_numpy() >= min_heldout_confidence
    if not hubs and "hub" in df:
        keep &= ~df["hub"].to_numpy(bool)
    out = df[keep]
    if top_k is not None and top_k > 0:
        out = out.head(int(top_k))
    return out


def group_of(df: pd.DataFrame, item: int) -> int | None:
    """The group id of ``item`` in a frame of :func:`mine_implications` (from its
    ``attrs``), or None when the item takes no part."""
    groups = df.attrs.get("group_of")
    if groups is None or not 0 <= int(item) < len(groups):
        return None
    g = int(groups[int(item)])
    return None if g < 0 else g


def ego_rows(df: pd.DataFrame, item: int, hops: int = 1) -> pd.DataFrame:
    """The rows within ``hops`` steps of ``item`` (following implications either way), by
    group when the frame has groups, so every member of a merged group finds its rows."""
    if df.empty:
        return df
    grouped = "antecedent_group" in df and group_of(df, item) is not None
    col_a, col_c = ("antecedent_group", "consequent_group") if grouped else \
        ("antecedent", "consequent")
    start = group_of(df, item) if grouped else int(item)
    a, c = df[col_a].to_numpy(), df[col_c].to_numpy()
    frontier, seen = {start}, {start}
    rows = np.zeros(len(df), bool)
    for _ in range(max(1, int(hops))):
        touch = np.isin(a, list(frontier)) | np.isin(c, list(frontier))
        rows |= touch
        nxt = set(a[touch].tolist()) | set(c[touch].tolist())
        frontier = nxt - seen
        seen |= nxt
        if not frontier:
            break
    return df[rows]


def lattice_graph(df: pd.DataFrame, groups: dict, model, names=None):
    """The groups that appear in ``df`` (merged rows) and its implications as a DiGraph for
    :func:`kmviz.km.figures.implication_graph_figure` (the Hasse view): node = group id with
    ``members``, ``names``, ``support``, ``support_size``, ``influence``, ``label``; an
    edge per strict implication row."""
    import networkx as nx

    from .interpret import influence_scores

    b = _psi_of(model)
    nm = _names(names, b.shape[0]) if names is not None else [f"item {k}" for k in
                                                              range(b.shape[0])]
    infl = influence_scores(b)
    G = nx.DiGraph()
    used = set(df["antecedent_group"]) | set(df["consequent_group"]) if len(df) else set()
    for g in sorted(int(x) for x in used):
        members = groups["members"][g]
        names_g = [nm[k] for k in members]
        G.add_node(g, members=list(members), names=names_g,
                   support=tuple(int(x) for x in np.flatnonzero(b[members[0]])),
                   support_size=int(groups["support_size"][g]),
                   influence=float(infl[members[0]]),
                   label=names_g[0] if len(names_g) == 1 else
                   f"{names_g[0]} (+{len(names_g) - 1})")
    strict = df[~df["equivalent"].to_numpy(bool)] if len(df) else df
    G.add_edges_from(zip(strict["antecedent_group"].astype(int),
                         strict["consequent_group"].astype(int)) if len(strict) else [])
    return G


def export_csv(df: pd.DataFrame, liked_phrase: str = "") -> str:
    """The rows as CSV with every column (statistics, groups, hub count, statement) and the
    meaning of "liked" in a ``liked`` column, so the file explains itself."""
    out = df.copy()
    if liked_phrase:
        out.insert(len(out.columns) - 1, "liked", liked_phrase)
    return out.to_csv(index=False)


def heldout_summary(ratings, validation, rows: pd.DataFrame, liked=None, *,
                    n_boot: int = 200, random_state=0) -> dict | None:
    """:func:`kmviz.rules.pooled_heldout_lift` of the rows (pooled held-out confidence and
    lift with a users-resampled interval), or None without held-out ratings, rows or
    rated data (interactions have no held-out "rated" set to pool over)."""
    if validation is None or rows is None or len(rows) == 0:
        return None
    if ratings.implicit and liked is None or liked == INTERACTED:
        return None
    out = pooled_heldout_lift(ratings, validation, rows["antecedent"], rows["consequent"],
                              liked=liked, n_boot=n_boot, random_state=random_state)
    return out if out["heldout_n"] else None


# ----------------------------------------------------------------------------- missed rules
def order_dimension(antecedent, consequent) -> dict:
    """How many events D a Kolmogorov model needs to state exactly the relations
    ``antecedent[k] => consequent[k]`` (and what follows from them, and nothing more) as
    nested supports: bounds, without a refit.

    The rules generate a preorder on their items (transitive closure; items that imply each
    other form one class, as an equivalence group of KM). Nested supports state it exactly
    when classes get distinct supports, ordered by inclusion as the classes are:

    * a chain of c classes (each implying the next) needs c distinct nested non-empty sets,
      so D >= c;
    * w classes none of which implies another need w sets none inside another; by Sperner's
      theorem at most C(D, floor(D / 2)) such sets exist in D events, so D >= the smallest
      such D;
    * one event per class, each class's support the events of the classes that imply it
      (itself included), states the order exactly: D <= the number of classes.

    Returns a dict with ``items``, ``classes``, ``chain`` (classes in the longest chain),
    ``width`` (largest set of mutually unrelated classes, Dilworth's theorem via a maximum
    bipartite matching), ``d_lower`` (the larger of the two lower bounds) and ``d_upper``.
    """
    from math import comb

    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

    j = np.asarray(antecedent, dtype=np.int64)
    i = np.asarray(consequent, dtype=np.int64)
    if j.size == 0:
        return {"items": 0, "classes": 0, "chain": 0, "width": 0, "d_lower": 0, "d_upper": 0}
    items, idx = np.unique(np.concatenate([j, i]), return_inverse=True)
    n = items.size
    A = sp.csr_matrix((np.ones(j.size), (idx[:j.size], idx[j.size:])), shape=(n, n))
    n_cls, cls = connected_components(A, directed=True, connection="strong")
    # the class graph's transitive closure by repeated squaring of reachability
    R = np.eye(n_cls, dtype=bool)
    R[cls[idx[:j.size]], cls[idx[j.size:]]] = True
    while True:
        R2 = R | ((R.astype(np.float64) @ R.astype(np.float64)) > 0)
        if (R2 == R).all():
            break
        R = R2
    strict = R & ~np.eye(n_cls, dtype=bool)  # strict[a, b]: class a implies class b
    # longest chain: classes sorted by how many imply them is a linear extension
    order = np.argsort(strict.sum(axis=0), kind="stable")
    length = np.ones(n_cls, dtype=np.int64)
    for b in order:
        below = np.flatnonzero(strict[:, b])
        if below.size:
            length[b] = 1 + length[below].max()
    match = maximum_bipartite_matching(sp.csr_matrix(strict.astype(np.int8)), perm_type="column")
    width = int(n_cls - (match >= 0).sum())
    sperner = 1
    while comb(sperner, sperner // 2) < width:
        sperner += 1
    chain = int(length.max())
    return {"items": int(n), "classes": int(n_cls), "chain": chain, "width": width,
            "d_lower": max(chain, sperner), "d_upper": int(n_cls)}


def missed_rules(model, rules: pd.DataFrame, *, strong: int = 100) -> pd.DataFrame:
    """The strong rules the model does not imply, why not, and what D would hold them.

    Parameters
    ----------
    model : fitted KolmogorovModel, or psi (n_items, D)
    rules : DataFrame
        Rules j => i in their ranking (:func:`kmviz.rules.pairwise_rules`).
    strong : int, default=100
        The first ``strong`` rows are the strong rules.

    Returns
    -------
    DataFrame
        The strong rules with ``supp(psi_j)`` not inside ``supp(psi_i)`` (the model does not
        say that everyone who likes j likes i), with the rules' columns and:
        ``outside_events`` (events of supp(psi_j) outside supp(psi_i): users of those events
        like j but not i under the model), ``antecedent_events`` (|supp psi_j|),
        ``model_confidence`` (the model's own P(like i | like j) over the training users,
        ``sum_u theta_u . (psi_j and psi_i) / sum_u theta_u . psi_j``; 1 would be an
        implication; NaN when psi was passed without theta) and ``why`` in words.
        ``attrs``: ``strong``, ``held`` (strong rules the model implies), ``D`` and
        ``dimension``, the :func:`order_dimension` bounds of the strong rules: a model that
        states them (and nothing more among their items) as nested supports needs at least
        ``d_lower`` and at most ``d_upper`` events. These bounds come without refitting;
        whether a fit at such a D finds those supports is another matter (bench/
        implications_ranking.py measures the share held after refits at larger D).
    """
    b = _psi_of(model)
    top = rules.head(int(strong))
    j = top["antecedent"].to_numpy(np.int64)
    i = top["consequent"].to_numpy(np.int64)
    sj, si = b[j], b[i]
    outside = (sj & ~si).sum(axis=1)
    n_j = sj.sum(axis=1)
    held = (outside == 0) & (n_j > 0)
    theta = getattr(model, "theta_", None)
    if theta is not None:
        known = getattr(model, "known_users_", np.ones(theta.shape[0], bool))
        mass = np.asarray(theta, dtype=np.float64)[np.asarray(known, bool)].sum(axis=0)
        num = (sj & si).astype(np.float64) @ mass
        den = sj.astype(np.float64) @ mass
        model_conf = np.divide(num, den, out=np.full(j.size, np.nan), where=den > 0)
    else:
        model_conf = np.full(j.size, np.nan)
    why = [("the model gives j an empty support (it predicts nobody likes j)" if nj == 0 else
            f"{o} of supp(ψ_j)'s {nj} events lie outside supp(ψ_i): users of "
            f"{'that event' if o == 1 else 'those events'} like j but not i under the model")
           for o, nj in zip(outside, n_j)]
    out = top.assign(outside_events=outside.astype(np.int64),
                     antecedent_events=n_j.astype(np.int64), model_confidence=model_conf,
                     why=why)[~held].reset_index(drop=True)
    out.attrs.update(strong=int(len(top)), held=int(held.sum()), D=int(b.shape[1]),
                     dimension=order_dimension(j, i))
    return out


def missed_caption(missed: pd.DataFrame) -> str:
    """What :func:`missed_rules` found, in words: how many strong rules the model holds, why
    it misses the others, and the D that would state them (the refit-free bounds)."""
    a = missed.attrs
    strong, held, D = a.get("strong", 0), a.get("held", 0), a.get("D", 0)
    if not strong:
        return "No rule to compare with."
    dim = a.get("dimension", {})
    text = (f"The model (D = {D}) implies {held:,} of the {strong:,} strongest rules. A rule "
            "j ⇒ i is missed when supp(ψ_j) has events outside supp(ψ_i) ('outside_events'): "
            "users of those events like j but not i under the model; 'model_confidence' is "
            "the model's own P(like i | like j).")
    if dim.get("classes"):
        text += (f" To state these {strong:,} rules exactly as nested supports, a model needs "
                 f"at least {dim['d_lower']} and at most {dim['d_upper']} events (their "
                 f"longest chain has {dim['chain']} steps, {dim['width']} of their items are "
                 "mutually unrelated); that bounds D without a refit, not what a fit finds.")
    return text


# ----------------------------------------------------------------------------- words
def equivalence_sentence(name: str, others: list[str], limit: int = 8) -> list:
    """"Everyone who likes A also likes B and C, and the other way round" as (text, bold)
    pieces: items with the same support, liked by the same people."""
    pieces = [("Everyone who likes ", False), (name, True), (" also likes, under the model, ",
                                                             False)]
    shown = others[:limit]
    for k, o in enumerate(shown):
        if k:
            pieces.append((" and " if k == len(shown) - 1 and len(others) <= limit else ", ",
                           False))
        pieces.append((o, True))
    if len(others) > limit:
        pieces.append((f" and {len(others) - limit} more", False))
    return pieces + [(", and the other way round: they are liked by the same people (the "
                      "same support).", False)]


def _stats_pieces(row, *, hub: bool = True) -> list:
    """" (training: 12 of 15 like it, base rate 55%, lift 1.45; held-out: 3 of 4)"."""
    txt = (f" (training: {int(row['co_support']):,} of {int(row['n_known']):,} like it, base "
           f"rate {row['base_rate']:.0%}, lift {row['lift']:.2f}")
    if row.get("heldout_n", 0) and row["heldout_confidence"] == row["heldout_confidence"]:
        txt += f"; held-out: {int(row['heldout_co_support']):,} of {int(row['heldout_n']):,}"
    if hub and row.get("hub", False):
        txt += f"; a hub, implied by {int(row['implied_by']):,} items"
    return [(txt + ")", False)]


def sentences(df: pd.DataFrame, item: int, names, *, limit: int = 8) -> list[list]:
    """What the rows say about ``item`` (item-level rows, e.g. ``mine_implications(...,
    around=item)`` after the filters), as lists of (text, bold) pieces: its equivalent
    items, what liking it implies, what implies liking it, each partner with the data's
    figures (training: users who like both of those who like j and rated i; held-out the
    same on held-out ratings of i), best ranked first; a hub is said to be one."""
    name = str(names[int(item)])
    a = df["antecedent"].to_numpy() == item
    c = df["consequent"].to_numpy() == item
    eq = df["equivalent"].to_numpy(bool) if "equivalent" in df else np.zeros(len(df), bool)
    out = []
    same = df[(a | c) & eq]
    if len(same):
        others = [str(r["consequent_name"] if r["antecedent"] == item else r["antecedent_name"])
                  for _, r in same.iterrows()]
        out.append(equivalence_sentence(name, others, limit))
    for label, sel, other in (("implies", a & ~eq, "consequent_name"),
                              ("implied", c & ~eq, "antecedent_name")):
        rows = df[sel]
        if rows.empty:
            out.append([("Liking ", False), (name, True),
                        (" implies liking no other item that passes the filters."
                         if label == "implies" else
                         " is implied by liking no item that passes the filters.", False)])
            continue
        head = ([("Everyone who likes ", False), (name, True),
                 (" also likes, under the model:", False)] if label == "implies" else
                [("Everyone who likes any of these also likes ", False), (name, True),
                 (", under the model:", False)])
        pieces = list(head)
        for k, (_, row) in enumerate(rows.head(limit).iterrows()):
            pieces += [(" " if k == 0 else "; ", False), (str(row[other]), True),
                       *_stats_pieces(row, hub=label == "implies")]
        if len(rows) > limit:
            pieces.append((f"; and {len(rows) - limit} more", False))
        pieces.append((".", False))
        if label == "implied" and bool(rows["hub"].iloc[0]):
            pieces += [(" ", False), (name, True),
                       (f" is a hub: implied by {int(rows['implied_by'].iloc[0]):,} items, "
                        "which says it is popular rather than that they are related.", False)]
        out.append(pieces)
    return out


# ----------------------------------------------------------------------------- ground truth
_SUPPORT = re.compile(r"\(support \{([0-9, ]*)\}\)\s*$")


def planted_truth(ratings) -> np.ndarray | None:
    """The true implications (rows (j, i)) of planted-KM data, or None for other data.

    Planted KM data (:func:`kmviz.data.make_planted_km`) names each item after its planted
    support ("item 3 (support {0, 2})"), so the truth travels with the ratings and with a
    saved run's item names; MovieLens-format planted data carries the supports as genre
    columns "support 0", "support 1", ... (``sample_data/planted-ml100k``).
    """
    from ..data.synthetic import implication_pairs

    n = ratings.n_items
    psi = None
    names = ratings.item_names
    if names is not None and len(names) == n:
        found = [_SUPPORT.search(str(x)) if x is not None else None for x in names]
        if all(found):
            sets = [[int(t) for t in m.group(1).replace(" ", "").split(",") if t]
                    for m in found]
            D = max((max(s) for s in sets if s), default=-1) + 1
            psi = np.zeros((n, max(D, 1)), dtype=np.int64)
            for k, s in enumerate(sets):
                psi[k, s] = 1
    feats = getattr(ratings, "item_features", None)
    if psi is None and feats is not None:
        cols = [f"support {d}" for d in range(64) if f"support {d}" in feats.columns]
        if cols:
            psi = np.nan_to_num(feats[cols].to_numpy(dtype=float)).astype(np.int64)
    if psi is None:
        return None
    return implication_pairs(psi)[0]


def km_claims(model, ratings, *, items=None) -> np.ndarray:
    """Every directed item pair (j, i), j != i, with supp(psi_j) ⊆ supp(psi_i) among the
    items considered (equivalent items both ways): the model's claims, for scoring."""
    groups = support_groups(model, ratings, items=items)
    A, C, E = _group_pairs(groups, merge=False)
    pairs = np.concatenate([np.column_stack([A, C]), np.column_stack([C[E], A[E]])])
    return pairs.astype(np.int64).reshape(-1, 2)


def recovery_table(model, ratings, truth, *, liked=None, items=None, min_support: int = 5,
                   min_confidence: float = 0.5) -> pd.DataFrame:
    """Precision and recall of the true implications (among the items considered) for the
    model's claims and for the association rules, the rules cut at the model's count (equal
    counts) and at their own thresholds."""
    claims = km_claims(model, ratings, items=items)
    keep = _considered(_psi_of(model), ratings, items)
    truth = np.asarray(truth, dtype=np.int64).reshape(-1, 2)
    truth = truth[keep[truth[:, 0]] & keep[truth[:, 1]]] if truth.size else truth
    rules = pairwise_rules(ratings, liked=liked, min_support=min_support,
                           min_confidence=min_confidence, items=keep)
    rp = rules[["antecedent", "consequent"]].to_numpy()
    rows = [{"method": "Kolmogorov model (every implication)", **recovery_scores(claims, truth)},
            {"method": f"association rules, top {len(claims):,} (equal count)",
             **recovery_scores(rp[:len(claims)], truth)},
            {"method": f"association rules (co-support >= {min_support}, confidence >= "
                       f"{min_confidence:g})", **recovery_scores(rp, truth)}]
    return pd.DataFrame(rows)
