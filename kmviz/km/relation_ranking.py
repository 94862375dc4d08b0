"""How the relation miner orders its table: chosen on a validation split of the user's data.

Two kinds of data call for two orders (measured in ``bench/miner/miner_movielens.py`` and
``bench/miner/miner_recovery.py``):

* **Relations that hold.** In an analyst's file where "every fan of A rates B 4 or 5" is
  true, a rule that holds on every fan in one part of the users holds on the others too.
  The order is the rule's *conviction* (:func:`kmviz.km.relations.relation_score`): it is
  directional (A => B before its reverse B => A) and near 1 for a consequent nearly everyone
  likes, so the relations that hold come first.
* **Tendencies.** In ratings such as MovieLens, hardly any rule holds exactly: of hundreds
  of thousands of candidate pairs, the ones whose fans all liked the consequent are mostly
  lucky draws on a few users (their confidence falls on held-out ratings) and their
  consequents are the crowd's favourites (high base rate, little lift). The order is then the
  *cautious lift* (:func:`cautious_lift`): the confidence shrunk towards the consequent's base
  rate by :data:`LIFT_PRIOR` pseudo-users, its Wilson lower bound at :data:`LIFT_LEVEL`, over
  the base rate, with the rows on fewer than :data:`FEW_FANS` fans who rated the consequent
  after all the others (too few to judge a tendency), and within each part the rows that no
  KM refit states (supp psi_j ⊆ supp psi_i) after those that one does at least. Shrinking
  keeps a rule on 10 fans from outranking one on 40; dividing by the base rate favours the
  consequents a like says something about. The conjunctions {a, b} => c follow every pair
  on as many fans (:func:`tendency_tiers`): they are the few of hundreds of thousands of
  antecedent pairs whose fans all liked c, picked for that, and on such data that luck does
  not carry over (on the inner validation splits their held-out lift was below the pairs'
  they displaced at the same cautious lift). The prior, level and tiers were chosen on inner
  validation splits of MovieLens 100K and latest-small (``bench/miner/miner_movielens.py``'s
  docstring).

:func:`choose_ranking` tells them apart on the data itself: each user's ratings are split
80/20 (:data:`CHECK_TEST_SIZE`); among the pairs that hold on every fan in the 80 % part
(at least :data:`HOLD_MIN_KNOWN` of them, :data:`HOLD_CHECK_ROWS` with the most fans), the
20 % part counts the counterexamples (fans of j in the 80 % whose held-out rating of i is
not a like) against those expected if liking j said nothing about i (their number times 1 -
the held-out base rate of i). Expected over observed is the pooled held-out *conviction*;
from :data:`HOLD_CONVICTION` (at most a third of the expected counterexamples) the
relations hold: conviction; below, or when no pair holds even in the 80 % part: cautious
lift. On the planted-relations files of ``bench/miner/miner_recovery.py`` that conviction is 6 to
infinite, on MovieLens 100K and latest-small 1.2-1.6. The held-out
ratings of the user's own test split are never looked at. On 0/1 interaction data (no
unknown entries to hold out) the order is conviction.
"""

from __future__ import annotations

import numpy as np

from ..rules import LikeCounts, wilson_interval

__all__ = ["cautious_lift", "choose_ranking", "tendency_tiers", "ORDERS", "LIFT_PRIOR", "LIFT_LEVEL", "FEW_FANS",
           "HOLD_MIN_KNOWN", "HOLD_CHECK_ROWS", "HOLD_CONVICTION", "CHECK_TEST_SIZE"]

#: The two orders of the default score.
ORDERS = ("conviction", "cautious lift")
#: Pseudo-users at the consequent's base rate added to every rule's counts (the shrinkage).
LIFT_PRIOR = 3.0
#: Coverage of the Wilson interval whose lower end the cautious lift takes.
LIFT_LEVEL = 0.90
#: Fans of the antecedent who rated the consequent below which a row follows the others in
#: the cautious-lift order.
FEW_FANS = 10
#: Fans of j who rated i (in the 80 % part) from which a pair that holds on all of them is
#: checked on the 20 % part.
HOLD_MIN_KNOWN = 10
#: Pairs checked at most (those with the most such fans first).
HOLD_CHECK_ROWS = 100
#: Held-out conviction of the checked pairs from which the relations hold.
HOLD_CONVICTION = 3.0
#: Share of each user's ratings held out by the check.
CHECK_TEST_SIZE = 0.2


def cautious_lift(co_support, n_known, base_rate, prior: float = LIFT_PRIOR,
                  level: float = LIFT_LEVEL) -> np.ndarray:
    """``wilson_lower(co + prior * base, n + prior) / base``: the lift of a rule whose
    confidence is first shrunk towards the consequent's base rate by ``prior`` pseudo-users,
    then taken at the lower end of its Wilson interval (coverage ``level``). 1 means no more
    than the base rate; NaN where the base rate is 0 or unknown."""
    co = np.asarray(co_support, float)
    n = np.asarray(n_known, float)
    base = np.asarray(base_rate, float)
    ok = np.isfinite(base) & (base > 0)
    b = np.where(ok, base, 0.5)
    lo, _ = wilson_interval(co + prior * b, n + prior, level)
    return np.where(ok, lo / b, np.nan)


def tendency_tiers(n_known, size, n_held) -> list:
    """The tiers of the cautious-lift order, as :func:`numpy.lexsort` keys (least significant
    first, to append after the score's keys): the rows on at least :data:`FEW_FANS` fans who
    rated the consequent before the others; within each part the pairs before the
    conjunctions (``size`` 2: they follow every pair on as many fans); within those the rows
    a refit states (``n_held`` > 0) before the rest. Each tier is ordered by the score."""
    return [np.asarray(n_held) == 0, np.asarray(size) >= 2,
            np.asarray(n_known, float) < FEW_FANS]


def choose_ranking(ratings, liked, *, pairs_of, min_confidence: float,
                   random_state=0) -> dict:
    """The order of the default score on ``ratings`` (module docstring). Returns ``order``
    (one of :data:`ORDERS`), ``checked`` (pairs checked), ``validation_confidence`` and
    ``validation_conviction`` (pooled over them on the held-out 20 %; NaN when none) and
    ``summary`` in words. ``pairs_of(LikeCounts)`` builds the pair counts (the miner's
    :class:`kmviz.km.relations.PairCounts`); ``min_confidence`` is the miner's smallest
    listed confidence."""
    from .conjunctive import rule_counts

    c = LikeCounts.of(ratings, liked)
    if c.interactions:
        return {"order": "conviction", "checked": 0, "validation_confidence": np.nan,
                "validation_conviction": np.nan,
                "summary": "Ranked by conviction: 0/1 interaction data holds nothing out to "
                           "check the rules against."}
    rng = np.random.default_rng(random_state)
    train, val = ratings.split_per_user(CHECK_TEST_SIZE,
                                        random_state=int(rng.integers(2**31 - 1)))
    ct = LikeCounts(train, c.liked)
    pairs = pairs_of(ct)
    keep = train.item_counts() > 0
    j, i = pairs.candidates(keep, HOLD_MIN_KNOWN, min_confidence)
    co, kn = pairs.counts(j, i)
    hold = (co >= kn - 1e-9) & (kn >= HOLD_MIN_KNOWN)
    j, i, kn = j[hold], i[hold], kn[hold]
    top = np.lexsort((i, j, -kn))[:HOLD_CHECK_ROWS]
    j, i = j[top], i[top]
    conf = conviction = np.nan
    judged = 0
    if j.size:
        h = LikeCounts(val, c.liked)
        _, kn_h, co_h = rule_counts(ct.L, h.R, h.L, j, None, i)
        judged = int(kn_h.sum())
        base_h = np.divide(h.n_likes, h.n_known, out=np.zeros(h.n_likes.size, float),
                           where=h.n_known > 0)
        expected = float((kn_h * (1.0 - base_h[i])).sum())
        observed = float((kn_h - co_h).sum())
        if judged:
            conf = float(co_h.sum()) / judged
            conviction = expected / observed if observed > 0 else np.inf
    held_up = bool(conviction >= HOLD_CONVICTION)     # NaN (nothing to judge): False
    where = (f"{CHECK_TEST_SIZE:.0%} of each user's ratings held out, the {j.size} pairs "
             f"that hold on every fan (>= {HOLD_MIN_KNOWN}) in the rest")
    if not judged:
        summary = (f"Ranked by cautious lift: with {CHECK_TEST_SIZE:.0%} of each user's "
                   f"ratings held out, no pair holds on {HOLD_MIN_KNOWN} or more fans in the "
                   "rest with held-out ratings to check it (the data holds tendencies, not "
                   "exact relations).")
    elif held_up:
        conv = ("no counterexample" if not np.isfinite(conviction)
                else f"a conviction of {conviction:.3g} (>= {HOLD_CONVICTION:g})")
        summary = (f"Ranked by conviction: with {where} keep a confidence of {conf:.2f} "
                   f"on the held-out ratings, {conv}: the relations hold.")
    else:
        summary = (f"Ranked by cautious lift: with {where} fall to a confidence of "
                   f"{conf:.2f} on the held-out ratings, a conviction of {conviction:.3g} "
                   f"(< {HOLD_CONVICTION:g}): the data holds tendencies, and most rules that "
                   "hold on every fan are luck.")
    return {"order": "conviction" if held_up else "cautious lift", "checked": int(j.size),
            "judged": judged,
            "validation_confidence": conf, "validation_conviction": conviction,
            "summary": summary}
