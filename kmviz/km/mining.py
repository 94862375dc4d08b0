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
    pooled_heldout_lift,
    rank_pairs,
)
from ..tabular_export import table_bytes
from ._groups import MAX_PAIRS, _group_pairs, implication_counts, support_groups
from .interpret import _psi_of
from .mining_checks import (km_claims, missed_caption, missed_rules, order_dimension,
                            planted_truth, recovery_table)

__all__ = [
    "mine_implications", "support_groups", "implication_counts", "filter_implications",
    "ego_rows", "group_of", "lattice_graph", "planted_truth", "km_claims", "recovery_table",
    "sentences",
    "equivalence_sentence", "export_csv", "heldout_summary", "missed_rules", "missed_caption",
    "order_dimension",
    "MAX_PAIRS", "HASSE_MAX_GROUPS",
]

#: Other members of a group named beside a row (the rest are counted).
OTHERS_SHOWN = 10
#: Up to this many groups, the whole lattice (Hasse diagram) is the graph's default view.
HASSE_MAX_GROUPS = 40


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
        bench/miner/implications_ranking.py compares them on held-out MovieLens data (it was the
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
    return table_bytes(out, "csv").decode("utf-8")


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
    """" (training: 12 of 15 like it, base rate 55%, lift 1.45; held-out: 3 of 4)"; with no
    rating of i among j's fans, " (training: none of its fans rated it: the data cannot
    check this)"."""
    if not int(row.get("n_known", 0) or 0):
        txt = " (training: none of its fans rated it, so the data cannot check this"
    else:
        txt = (f" (training: {int(row['co_support']):,} of {int(row['n_known']):,} like it, "
               f"base rate {row['base_rate']:.0%}, lift {row['lift']:.2f}")
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
