"""Which item a KM Explore page opens on: one where the paper's point shows, by a rule.

The Dual GD page (Figs. 1 and 2) teaches that the initial step of Sec. IV-A shortens the
dual gradient descent (Phase I-A), and that Alg. 2 computes fewer EVDs than Alg. 1 on the
same iterates (Remark 2). On a typical item the curves can coincide; :func:`dual_item`
tries the items of typical size and picks the one where the initial step saves the
largest share of dual iterations, among those whose three descents converge in a
visible number of iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .analysis import dual_summary, dual_trajectories, items_by_count

#: Iterations below which a curve is too short to show a difference.
MIN_VISIBLE_ITERATIONS = 40
ENHANCED, INITIAL, ORIGINAL = ("enhanced GD (Alg. 2)", "enhanced GD + initial step (Sec. IV-A)",
                               "original GD (Alg. 1)")


@dataclass(frozen=True)
class Choice:
    item: int | None
    saving: float          # share of Alg. 2's dual iterations the initial step saves
    evd_saving: int        # EVDs Alg. 2 saves against Alg. 1 on the chosen item
    tried: int
    reason: str


def dual_candidates(train, *, min_ratings: int = 5, limit: int = 40) -> list[int]:
    """Items of typical size: at least ``min_ratings`` ratings, the middle of the count
    ranking (the most rated items need thousands of dual iterations), spread evenly."""
    order = items_by_count(train)
    counts = train.item_counts()
    pool = [i for i in order if counts[i] >= min_ratings] or order
    middle = pool[len(pool) // 10: max(len(pool) // 10 + 1, (9 * len(pool)) // 10)]
    step = max(1, len(middle) // limit)
    return [int(i) for i in middle[::step][:limit]]


def score_dual(traj: dict) -> tuple[float, int, int] | None:
    """(share of iterations the initial step saves, Alg. 2's iterations, EVDs Alg. 2 saves
    against Alg. 1) of one item's trajectories; None when a descent did not converge."""
    if not all(traj["converged"].values()):
        return None
    s = dual_summary(traj)
    enh, init = int(s.loc[ENHANCED, "dual iterations"]), int(s.loc[INITIAL, "dual iterations"])
    evd = int(s.loc[ORIGINAL, "EVDs"]) - int(s.loc[ENHANCED, "EVDs"])
    return ((enh - init) / enh if enh else 0.0), enh, evd


def dual_item(model, train, gamma: float, *, limit: int = 40) -> Choice:
    """The item the Dual GD page opens on (see the module docstring)."""
    best, tried = None, 0
    for item in dual_candidates(train, limit=limit):
        S, v = model.item_problem(train, item)
        scored = score_dual(dual_trajectories(S, v, gamma))
        tried += 1
        if scored is None or scored[1] < MIN_VISIBLE_ITERATIONS:
            continue
        key = (round(scored[0], 6), scored[1], -item)
        if best is None or key > best[0]:
            best = (key, item, scored)
    if best is None:
        return Choice(None, 0.0, 0, tried, "no item of typical size converged in a visible "
                                          "number of dual iterations")
    _, item, (saving, enh, evd) = best
    return Choice(item, float(saving), int(evd), tried,
                  f"of {tried} items of typical size, the one where the initial step saves the "
                  f"largest share of Alg. 2's dual iterations ({saving:.0%} of {enh})")


# ------------------------------------------------------------------ the implication graph
@dataclass(frozen=True)
class GraphChoice:
    item: int | None
    n_supported: int       # other groups the item's group has supported implications with
    reason: str


def graph_item(frame, counts, *, shown=None, alpha: float | None = None) -> GraphChoice:
    """The item the implication graph opens on: a well-supported item that is not a hub.

    ``frame`` holds the implications the graph draws (:func:`kmviz.km.mining.
    mine_implications`, with its ``group_of`` attrs), ``counts`` the training ratings per
    item, ``shown`` (bool mask) the items the page shows. Of the rows between two groups
    (not an equivalence) whose two sides are not hubs (a hub: a consequent implied by more
    than a fifth of the items, which says it is popular, not related) and whose exact test
    supports them (``supported``), each group counts the other groups it is linked to; the
    group with the most (ties: the larger total co-support) gives its most rated shown
    member. When no
    such row is supported, the same count over all rows between non-hubs (the reason says
    so); None when every row involves a hub.
    """
    import numpy as np

    counts = np.asarray(counts)
    none = GraphChoice(None, 0, "every implication shown involves a hub")
    if frame is None or len(frame) == 0:
        return none
    grouped = "antecedent_group" in frame
    ga = frame["antecedent_group" if grouped else "antecedent"].to_numpy()
    gc = frame["consequent_group" if grouped else "consequent"].to_numpy()
    hub = frame["hub"].to_numpy(bool) if "hub" in frame else np.zeros(len(frame), bool)
    hubs = list(set(gc[hub].tolist()))
    equivalent = (frame["equivalent"].to_numpy(bool) if "equivalent" in frame
                  else np.zeros(len(frame), bool))
    between = ~equivalent & ~np.isin(ga, hubs) & ~np.isin(gc, hubs)
    supported = (frame["supported"].to_numpy(bool) if "supported" in frame
                 else np.zeros(len(frame), bool))
    co = (frame["co_support"].to_numpy(np.float64) if "co_support" in frame
          else np.ones(len(frame)))
    group_of = frame.attrs.get("group_of") if grouped else None
    mask = np.ones(counts.shape[0], bool) if shown is None else np.asarray(shown, bool)

    def members(g):
        if group_of is None:
            return [g] if 0 <= g < counts.shape[0] and mask[g] else []
        return [i for i, x in enumerate(group_of) if x == g and mask[i]]

    level = f" at p ≤ {alpha:g}" if alpha is not None else ""
    tiers = ((between & supported,
              "of the items that are not hubs, the one whose implications the ratings "
              "support link it to the most other groups of items ({n}; lift > 1" + level +
              ", neither side a hub), most rated in its group"),
             (between,
              "no implication between non-hubs passes the exact test here, so: of the items "
              "that are not hubs, the one in the most implications ({n}, neither side a "
              "hub), most rated in its group"))
    for ok, why in tiers:
        if not ok.any():
            continue
        # distinct partner groups, not rows: a big group of equivalent items has one row
        # per member pair and would win by its size alone
        partners: dict = {}
        weight: dict = {}
        for g, other, w in zip(np.concatenate([ga[ok], gc[ok]]),
                               np.concatenate([gc[ok], ga[ok]]),
                               np.concatenate([co[ok], co[ok]])):
            partners.setdefault(int(g), set()).add(int(other))
            weight[int(g)] = weight.get(int(g), 0.0) + float(w)
        tally = {g: (len(p), weight[g]) for g, p in partners.items()}
        for g, (n, _) in sorted(tally.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0])):
            candidates = members(g)
            if candidates:
                item = max(candidates, key=lambda i: (counts[i], -i))
                return GraphChoice(int(item), int(n), why.format(n=n))
    return none
