"""Star ratings shaped like an analyst's file, with logical relations planted and known.

:func:`make_planted_relations` draws 1-5 star ratings the way real files look (a few items
rated by most users and a long tail rated by few, users who rate high or low across the
board, a low-rank taste, most entries unobserved) and then plants relations that hold
*exactly* in the data:

* **pairwise rules** "every fan of A rates B 4 or 5";
* **chains** A => B => C (so A => C holds too: the truth is the transitive closure);
* **conjunctive rules** "every fan of both A and B rates C 4 or 5", where neither A => C nor
  B => C holds (a share of the fans of only one of them dislike C);
* a few **popular** items nearly everyone likes (distractors: "X => popular" has a high
  confidence and a lift near 1, and is no planted relation).

The rules act on each user's latent opinion of every item (liked or not), before the entries
are observed, so a chain holds through an unobserved middle item as well. "A fan of A" is a
user who rated A 4 or more (the default "liked" of :func:`kmviz.rules.liked_threshold` on a
1-5 scale).

Memory: the latent opinions are drawn for :data:`BLOCK_CELLS` user x item cells at a time
(a block of users), never as one dense users x items array; the output holds only the
observed entries. A set whose expected entries pass :data:`MAX_ENTRIES` is refused before
anything is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import check_number, check_random_state
from ..exceptions import InvalidParameterError
from .ratings import Ratings

__all__ = ["PlantedRelationsTruth", "make_planted_relations", "planted_relations",
           "BLOCK_CELLS", "MAX_ENTRIES"]

#: Latent user x item cells drawn at a time (about 8 bytes each, a few arrays: ~40 MB).
BLOCK_CELLS = 1 << 20
#: Largest expected number of observed entries a call may produce (their arrays ~ 20 B each).
MAX_ENTRIES = 50_000_000
_OWNER = "make_planted_relations"


@dataclass(frozen=True)
class PlantedRelationsTruth:
    """The relations planted by :func:`make_planted_relations`.

    Attributes
    ----------
    pairs : ndarray of int64, shape (n, 2)
        Every true pairwise implication ``(j, i)``: "every fan of j who rated i likes i",
        the planted rules, chains and their transitive closure.
    planted : ndarray of int64, shape (m, 2)
        The pairwise rules as planted (chains' steps included), before the closure.
    conjunctive : list of ((int, int), int)
        ``((a, b), c)``: every fan of both a and b likes c; neither a => c nor b => c holds.
    popular : ndarray of int64
        Items nearly every rater likes (distractors, no relation planted).
    chains : list of tuple of int
        The planted chains, as item sequences.
    """

    pairs: np.ndarray
    planted: np.ndarray
    conjunctive: list = field(default_factory=list)
    popular: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    chains: list = field(default_factory=list)

    @property
    def n_true(self) -> int:
        """Number of true implications: pairs plus conjunctive rules."""
        return int(len(self.pairs) + len(self.conjunctive))

    def keys(self) -> set:
        """The true implications as ``(antecedent tuple, consequent)`` keys, the shape of a
        relation table's rows (:func:`kmviz.km.relations.mine_relations`)."""
        out = {((int(j),), int(i)) for j, i in self.pairs}
        out |= {(tuple(sorted(int(x) for x in ab)), int(c)) for ab, c in self.conjunctive}
        return out


def _closure(edges: np.ndarray, n: int) -> np.ndarray:
    """The transitive closure of the directed edges (rows (j, i)) among ``n`` items."""
    if edges.size == 0:
        return np.zeros((0, 2), np.int64)
    items = np.unique(edges)
    pos = {int(v): k for k, v in enumerate(items)}
    R = np.zeros((items.size, items.size), bool)
    for j, i in edges:
        R[pos[int(j)], pos[int(i)]] = True
    while True:
        R2 = R | ((R.astype(np.int32) @ R.astype(np.int32)) > 0)
        if (R2 == R).all():
            break
        R = R2
    np.fill_diagonal(R, False)
    a, b = np.nonzero(R)
    return np.column_stack([items[a], items[b]]).astype(np.int64)


def make_planted_relations(n_users=300, n_items=60, *, n_rules=4, n_chains=1,
                           n_conjunctive=1, n_popular=2, observed=0.25, skew=1.0,
                           user_bias=0.6, taste_rank=3, random_state=None):
    """Ratings (1-5 stars) with planted relations, and their ground truth.

    Parameters
    ----------
    n_users, n_items : int, default=300, 60
    n_rules : int, default=4
        Pairwise rules "every fan of A rates B 4 or 5" (distinct items).
    n_chains : int, default=1
        Chains A => B => C (two rules each).
    n_conjunctive : int, default=1
        Rules "every fan of A and B rates C 4 or 5" with neither half holding alone.
    n_popular : int, default=2
        Items nearly every rater likes.
    observed : float, default=0.25
        Mean share of the entries observed (popular items more, the tail less).
    skew : float, default=1.0
        Popularity skew: item k's chance of being rated falls as ``(1 + rank)^-skew``.
    user_bias : float, default=0.6
        Spread of the users' own offsets (some rate everything high, some low).
    taste_rank : int, default=3
        Rank of the latent taste shared by similar users and items.
    random_state : None, int or Generator

    Returns
    -------
    (Ratings, PlantedRelationsTruth)
        Items are named "item 000", "item 001", ...; the relations' items are drawn among
        the more often rated ones, so each rule has fans to be seen with.
    """
    n_users = check_number(_OWNER, "n_users", n_users, kind=int, low=20, high=10_000_000)
    n_items = check_number(_OWNER, "n_items", n_items, kind=int, low=10, high=1_000_000)
    n_rules = check_number(_OWNER, "n_rules", n_rules, kind=int, low=0, high=10_000)
    n_chains = check_number(_OWNER, "n_chains", n_chains, kind=int, low=0, high=10_000)
    n_conj = check_number(_OWNER, "n_conjunctive", n_conjunctive, kind=int, low=0, high=10_000)
    n_popular = check_number(_OWNER, "n_popular", n_popular, kind=int, low=0, high=10_000)
    observed = check_number(_OWNER, "observed", observed, low=0.01, high=1.0)
    skew = check_number(_OWNER, "skew", skew, low=0.0, high=5.0)
    user_bias = check_number(_OWNER, "user_bias", user_bias, low=0.0, high=5.0)
    taste_rank = check_number(_OWNER, "taste_rank", taste_rank, kind=int, low=0, high=50)
    needed = 2 * n_rules + 3 * n_chains + 3 * n_conj + n_popular
    if needed > n_items // 2:
        raise InvalidParameterError(
            f"{_OWNER}: the relations need {needed} distinct items, more than half of the "
            f"{n_items} items. Fix: plant fewer rules or ask for more items.")
    expected = float(observed) * n_users * n_items
    if expected > MAX_ENTRIES:
        raise InvalidParameterError(
            f"{_OWNER}: about {expected:,.0f} observed entries expected, more than the "
            f"limit of {MAX_ENTRIES:,}. Fix: fewer users or items, or a lower 'observed'.")
    rng = check_random_state(random_state)

    # popularity: a random order of the items, chance of a rating falling with the rank
    order = rng.permutation(n_items)
    weight = np.empty(n_items)
    weight[order] = (1.0 + np.arange(n_items)) ** (-skew)
    weight *= observed * n_items / weight.sum()
    activity = rng.lognormal(0.0, 0.5, n_users)
    activity /= activity.mean()
    # relation items among the more rated third (each capped at 0.85 of the users below)
    head = order[:max(needed, n_items // 3)]
    chosen = rng.choice(head, size=needed, replace=False)
    weight[chosen] = np.maximum(weight[chosen], min(0.6, 2.5 * observed))
    cur = 0

    def take(k):
        nonlocal cur
        out = chosen[cur:cur + k]
        cur += k
        return out

    rules = [tuple(int(x) for x in take(2)) for _ in range(n_rules)]
    chains = [tuple(int(x) for x in take(3)) for _ in range(n_chains)]
    conj = [((int(a), int(b)), int(c)) for a, b, c in (take(3) for _ in range(n_conj))]
    popular = take(n_popular).astype(np.int64)
    planted = rules + [(c[k], c[k + 1]) for c in chains for k in range(len(c) - 1)]
    planted_arr = np.asarray(planted, np.int64).reshape(-1, 2)
    # the order the rules are applied in: chains step by step (an earlier step feeds the next)
    steps = [("pair", j, i) for j, i in rules]
    for c in chains:
        steps += [("pair", c[k], c[k + 1]) for k in range(len(c) - 1)]
    steps += [("conj", ab, c) for ab, c in conj]

    quality = rng.normal(0.0, 0.6, n_items)
    quality[popular] = 3.0           # nearly everyone likes them
    # the relations' items: liked by enough raters to be seen, a niche antecedent and a
    # broader consequent ("espresso => coffee"); a conjunction's consequent liked by few
    ante = [j for j, _ in rules] + [c[0] for c in chains]
    quality[ante] = rng.uniform(-0.3, 0.2, len(ante))
    mid = [x for c in chains for x in c[1:]] + [i for _, i in rules]
    quality[mid] = rng.uniform(0.0, 0.4, len(mid))
    for ab, c in conj:
        quality[list(ab)] = rng.uniform(0.0, 0.4, 2)
        quality[c] = rng.uniform(-0.8, -0.4)
    bias = rng.normal(0.0, user_bias, n_users)
    U = rng.normal(0.0, 0.5, (n_users, taste_rank))
    V = rng.normal(0.0, 0.5, (n_items, taste_rank))
    users, items, values = [], [], []
    step = max(1, BLOCK_CELLS // n_items)
    for lo in range(0, n_users, step):
        hi = min(n_users, lo + step)
        m = hi - lo
        z = 2.9 + bias[lo:hi, None] + quality[None, :] + U[lo:hi] @ V.T \
            + rng.normal(0.0, 0.8, (m, n_items))
        stars = np.clip(np.rint(z), 1, 5)
        for kind, a, c in steps:
            if kind == "pair":
                fans = stars[:, a] >= 4
            else:
                fa, fb = stars[:, a[0]] >= 4, stars[:, a[1]] >= 4
                fans = fa & fb
                single = (fa ^ fb) & (rng.random(m) < 0.5)
                stars[single, c] = np.minimum(stars[single, c], rng.integers(1, 4, m)[single])
            lift = rng.integers(4, 6, m)
            stars[fans, c] = np.maximum(stars[fans, c], lift[fans])
        p = np.clip(activity[lo:hi, None] * weight[None, :], 0.0, 0.85)
        seen = rng.random((m, n_items)) < p
        u, i = np.nonzero(seen)
        users.append(u + lo)
        items.append(i)
        values.append(stars[u, i])
    users = np.concatenate(users)
    items = np.concatenate(items)
    values = np.concatenate(values).astype(np.float64)
    names = [f"item {k:0{len(str(n_items - 1))}d}" for k in range(n_items)]
    ratings = Ratings(users, items, values, n_users=n_users, n_items=n_items, r_min=1.0,
                      r_max=5.0, item_names=names, name="planted relations",
                      source="planted-relations")
    pairs = _closure(planted_arr, n_items)
    truth = PlantedRelationsTruth(pairs=pairs, planted=planted_arr, conjunctive=conj,
                                  popular=popular, chains=chains)
    return ratings, truth


def planted_relations(n_users=300, n_items=60, *, n_rules=4, n_chains=1, n_conjunctive=1,
                      n_popular=2, observed=0.25, skew=1.0, user_bias=0.6, taste_rank=3,
                      random_state=None) -> Ratings:
    """The Ratings of :func:`make_planted_relations` (same parameters), without the truth."""
    return make_planted_relations(
        n_users, n_items, n_rules=n_rules, n_chains=n_chains, n_conjunctive=n_conjunctive,
        n_popular=n_popular, observed=observed, skew=skew, user_bias=user_bias,
        taste_rank=taste_rank, random_state=random_state)[0]
