"""Synthetic rating data with known ground truth.

- :func:`km_toy`: the Kolmogorov-model paper's toy set D1 (every pair observed, p ~ U[0, 1]).
- :func:`make_planted_km` / :func:`planted_km`: a planted Kolmogorov model, theta_u on the
  simplex and binary psi_i whose supports are nested along chains, so the true implications
  ("liking j implies liking i" when supp(psi_j) is inside supp(psi_i)) are known.
- :func:`make_planted_lowrank` / :func:`planted_lowrank`: a low-rank matrix whose factors are
  linear in user and item side features, for kernel MC and one-class MF.
- :func:`make_planted_towers` / :func:`planted_towers`: one-class positives drawn from planted
  (nonlinear) two-tower scores, optionally with items in planted groups, for similarity
  learning and one-class MF.

The ``make_*`` functions return ``(ratings, truth)``; the short names return the Ratings only.
The same ``random_state`` gives the same data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._memory import check_allocation
from .._validation import check_number, check_option, check_random_state
from .ratings import Ratings


# --------------------------------------------------------------------------- shared helpers
#: Entries (users x items) drawn at a time by the generators: their temporary arrays stay
#: about 8 MB whatever the size of the set (the draws, in the same order, are those of one
#: draw of the whole matrix, so a seed gives the same data as before).
_BLOCK_ENTRIES = 1 << 20


def _row_blocks(n_users, n_items):
    step = max(1, _BLOCK_ENTRIES // max(1, n_items))
    return [(lo, min(n_users, lo + step)) for lo in range(0, n_users, step)]


def _observed_mask(rng, n_users, n_items, observed, *, min_per_user=2) -> np.ndarray:
    """A Bernoulli(``observed``) mask with at least ``min_per_user`` entries per user and one
    per item, so every user and item has data in tests and demos."""
    mask = np.empty((n_users, n_items), dtype=bool)
    for lo, hi in _row_blocks(n_users, n_items):  # the uniforms of one (n_users, n_items) draw
        np.less(rng.random((hi - lo, n_items)), observed, out=mask[lo:hi])
    for u in np.flatnonzero(mask.sum(axis=1) < min_per_user):
        missing = min_per_user - int(mask[u].sum())
        free = np.flatnonzero(~mask[u])
        mask[u, rng.choice(free, size=missing, replace=False)] = True
    for i in np.flatnonzero(~mask.any(axis=0)):
        mask[rng.integers(n_users), i] = True
    return mask


def _check_size(owner, n_users, n_items):
    check_number(owner, "n_users", n_users, kind=int, low=2)
    check_number(owner, "n_items", n_items, kind=int, low=2)


#: Peak bytes of a generator per (user, item) cell it draws densely, and per entry it keeps
#: (index and value arrays, the Ratings' checks and copies); measured with tracemalloc
#: (tests/data/test_generator_bounds.py keeps the estimate above the measured peak).
_CELL_BYTES = {"km_toy": 64, "make_planted_km": 10, "make_planted_lowrank": 26,
               "make_planted_towers": 56}
_ENTRY_BYTES = 50
#: Bytes per true implication pair (two int64 indices, the strict flag, temporaries).
_PAIR_BYTES = 40


def _check_memory(owner, n_users, n_items, observed=1.0, pairs=0, *,
                  observed_name="observed") -> None:
    """Refuse, before the big arrays are allocated, a set whose dense users x items draws,
    entries and true implication pairs would pass the memory limit (see
    :func:`kmviz._memory.check_allocation`); the message names the options to lower."""
    cells = int(n_users) * int(n_items)
    parts = {f"the dense {n_users:,} x {n_items:,} users x items draws":
             cells * _CELL_BYTES[owner],
             f"about {int(cells * observed):,} generated entries":
             int(cells * observed) * _ENTRY_BYTES}
    if pairs:
        parts[f"the {pairs:,} true implication pairs"] = pairs * _PAIR_BYTES
    if pairs and max(parts.values()) == pairs * _PAIR_BYTES:
        fix = "lower n_items (the true implications grow with its square), or raise " \
              "n_chains or D"
    else:
        fix = "lower n_users or n_items" + (f" (or {observed_name}=)" if observed < 1 else "")
    check_allocation(f"{owner}(n_users={n_users}, n_items={n_items})", parts, fix=fix)


# --------------------------------------------------------------------------- KM toy (D1)
def km_toy(n_users=20, n_items=40, random_state=None) -> Ratings:
    """The toy set D1 of the Kolmogorov-model paper: every pair observed, p ~ U[0, 1].

    Parameters
    ----------
    n_users, n_items : int, default=20, 40
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    Ratings
        ``n_users * n_items`` values in [0, 1] (r_min=0, r_max=1).
    """
    _check_size("km_toy", n_users, n_items)
    _check_memory("km_toy", n_users, n_items)
    rng = check_random_state(random_state)
    p = rng.random((n_users, n_items))
    u, i = np.indices(p.shape)
    return Ratings.from_arrays(u.ravel(), i.ravel(), p.ravel(), r_min=0.0, r_max=1.0,
                               name="KM toy (D1)", source="km-toy")


# --------------------------------------------------------------------------- planted KM
@dataclass(frozen=True)
class PlantedKMTruth:
    """Ground truth of :func:`make_planted_km`.

    Attributes
    ----------
    theta : ndarray, shape (n_users, D)
        User vectors on the probability simplex.
    psi : ndarray of int8, shape (n_items, D)
        Binary item vectors (every support non-empty).
    implications : ndarray of int64, shape (n_pairs, 2)
        Rows ``(j, i)`` with supp(psi_j) a subset of supp(psi_i), i != j: liking item j
        implies liking item i, because theta_u^T psi_j <= theta_u^T psi_i for every user.
    strict : ndarray of bool, shape (n_pairs,)
        True where the inclusion is strict (the supports differ).
    """

    theta: np.ndarray
    psi: np.ndarray
    implications: np.ndarray
    strict: np.ndarray

    @property
    def p(self) -> np.ndarray:
        """The noiseless probabilities theta psi^T, shape (n_users, n_items)."""
        return self.theta @ self.psi.T

    def support(self, i: int) -> tuple[int, ...]:
        """The coordinates where psi_i is 1."""
        return tuple(int(d) for d in np.flatnonzero(self.psi[i]))


def implication_pairs(psi) -> tuple[np.ndarray, np.ndarray]:
    """All (j, i), i != j, with supp(psi_j) inside supp(psi_i), and whether it is strict.

    Computed over the distinct rows of ``psi`` (items with one support are one class), so
    the memory is that of the pairs returned, not of an n_items x n_items matrix; their
    count is known first, and a result over the memory limit is refused before it is
    built (:func:`kmviz._memory.check_allocation`).

    Parameters
    ----------
    psi : array-like of {0, 1}, shape (n_items, D)

    Returns
    -------
    pairs : ndarray of int64, shape (n_pairs, 2)
        In the order of j, then i.
    strict : ndarray of bool, shape (n_pairs,)
    """
    psi = np.asarray(psi, dtype=np.int64)
    n = psi.shape[0]
    if n == 0:
        return np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=bool)
    rows, cls = np.unique(psi, axis=0, return_inverse=True)
    cls = cls.reshape(-1)
    # supp(a) is inside supp(b) iff row a has no 1 where row b has a 0
    inside = (rows @ (1 - rows).T) == 0
    members = [np.flatnonzero(cls == c) for c in range(rows.shape[0])]
    targets = [np.sort(np.concatenate([members[b] for b in np.flatnonzero(inside[a])]
                                      or [np.empty(0, np.int64)]))
               for a in range(rows.shape[0])]
    sizes = np.array([t.shape[0] for t in targets], dtype=np.int64)
    counts = sizes[cls] - inside[cls, cls]  # an item is in its own class's targets
    total = int(counts.sum())
    check_allocation(f"the true implications of {n:,} items",
                     {f"{total:,} pairs": total * _PAIR_BYTES},
                     fix="lower n_items (or raise n_chains or D, which splits the supports)")
    j = np.repeat(np.arange(n, dtype=np.int64), counts)
    i = np.empty(total, dtype=np.int64)
    at = 0
    for k in range(n):
        t = targets[cls[k]]
        if inside[cls[k], cls[k]]:
            t = t[t != k]
        i[at:at + t.shape[0]] = t
        at += t.shape[0]
    size = rows.sum(axis=1)
    strict = size[cls[j]] < size[cls[i]]
    return np.column_stack([j, i]), strict


def _count_pairs(psi) -> int:
    """How many pairs :func:`implication_pairs` returns, from the distinct supports only."""
    rows, counts = np.unique(np.asarray(psi, dtype=np.int64), axis=0, return_counts=True)
    inside = (rows @ (1 - rows).T) == 0
    return int(counts @ inside @ counts - counts @ np.diag(inside))


def _nested_supports(rng, n_items, D, n_chains, max_support) -> np.ndarray:
    """Binary psi whose supports are prefixes of a few random orderings of the D coordinates.

    Item k lies on chain ``k % n_chains`` at depth ``1 + (k // n_chains) % max_support``, so
    items on one chain have nested supports (strictly nested at different depths) as soon as
    there are two items per chain; the items are then shuffled.
    """
    chains = [rng.permutation(D) for _ in range(n_chains)]
    psi = np.zeros((n_items, D), dtype=np.int8)
    for k in range(n_items):
        depth = 1 + (k // n_chains) % max_support
        psi[k, chains[k % n_chains][:depth]] = 1
    return psi[rng.permutation(n_items)]


def _to_scale(p, scale, step):
    if scale == "unit":
        return p, 0.0, 1.0
    stars = 1.0 + 4.0 * p
    if step is not None:
        stars = np.round(stars / step) * step
    return np.clip(stars, 1.0, 5.0), 1.0, 5.0


def make_planted_km(n_users=200, n_items=60, D=8, *, noise=0.0, observed=0.3, scale="unit",
                    star_step=0.5, n_chains=3, max_support=None, alpha=1.0,
                    random_state=None) -> tuple[Ratings, PlantedKMTruth]:
    """A planted Kolmogorov model with nested item supports, and its ground truth.

    Parameters
    ----------
    n_users, n_items : int, default=200, 60
    D : int, default=8
        Dimension of the model (number of latent binary features).
    noise : float, default=0.0
        Standard deviation of the Gaussian noise added to p before clipping to [0, 1].
    observed : float in (0, 1], default=0.3
        Fraction of (user, item) pairs observed. Every user gets at least 2 ratings and every
        item at least 1 regardless.
    scale : {"unit", "stars"}, default="unit"
        "unit" keeps p in [0, 1]; "stars" maps it to 1 + 4p on a 1-5 scale.
    star_step : float or None, default=0.5
        With ``scale="stars"``, round to multiples of this (half stars); None keeps the stars
        continuous.
    n_chains : int, default=3
        Number of chains of nested supports (each a random ordering of the D coordinates).
    max_support : int, optional
        Largest support size; default ``max(1, D // 2)``, so no item is liked by everyone.
    alpha : float, default=1.0
        Dirichlet concentration of theta_u (small values: users focused on few features).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    ratings : Ratings
        Values clip(theta_u^T psi_i + noise * N(0, 1), 0, 1) on the chosen scale. Item names
        read like "item 0 (support {0, 3})". ``info`` holds only the generator's parameters.
    truth : PlantedKMTruth
    """
    owner = "make_planted_km"
    _check_size(owner, n_users, n_items)
    D = check_number(owner, "D", D, kind=int, low=1)
    noise = check_number(owner, "noise", noise, low=0.0)
    observed = check_number(owner, "observed", observed, low=0.0, high=1.0, closed="right")
    check_option(owner, "scale", scale, ("unit", "stars"))
    n_chains = check_number(owner, "n_chains", n_chains, kind=int, low=1)
    max_support = max(1, D // 2) if max_support is None else max_support
    max_support = check_number(owner, "max_support", max_support, kind=int, low=1, high=D)
    alpha = check_number(owner, "alpha", alpha, low=0.0, closed="neither")
    rng = check_random_state(random_state)
    _check_memory(owner, n_users, n_items, observed)

    theta = rng.dirichlet(np.full(D, alpha), size=n_users)
    psi = _nested_supports(rng, n_items, D, n_chains, max_support)
    _check_memory(owner, n_users, n_items, observed, pairs=_count_pairs(psi))
    # p = clip(theta psi^T + noise N(0, 1), 0, 1), in row blocks (the normals of one
    # (n_users, n_items) draw, in order): no full-size temporaries besides p itself
    p = np.empty((n_users, n_items))
    psi_t = psi.T.astype(np.float64)
    for lo, hi in _row_blocks(n_users, n_items):
        block = theta[lo:hi] @ psi_t
        block += noise * rng.standard_normal((hi - lo, n_items))
        np.clip(block, 0.0, 1.0, out=p[lo:hi])
    mask = _observed_mask(rng, n_users, n_items, observed)
    u, i = np.nonzero(mask)
    del mask
    values, r_min, r_max = _to_scale(p[u, i], scale, star_step)
    del p
    u, i = u.astype(np.int32), i.astype(np.int32)  # the Ratings' index type (sizes < 2^31)
    names = [f"item {k} (support {{{', '.join(map(str, np.flatnonzero(psi[k])))}}})"
             for k in range(n_items)]
    ratings = Ratings.from_arrays(
        u, i, values, r_min=r_min, r_max=r_max, user_ids=np.arange(n_users),
        item_ids=np.arange(n_items), item_names=names, name="planted KM", source="planted-km")
    ratings.info.update(generator="planted_km", D=D, noise=noise, observed=observed,
                        scale=scale)
    pairs, strict = implication_pairs(psi)
    return ratings, PlantedKMTruth(theta=theta, psi=psi, implications=pairs, strict=strict)


def planted_km(n_users=200, n_items=60, D=8, *, noise=0.0, observed=0.3, scale="unit",
               star_step=0.5, n_chains=3, max_support=None, alpha=1.0,
               random_state=None) -> Ratings:
    """The Ratings of :func:`make_planted_km` (same parameters), without the ground truth."""
    return make_planted_km(n_users, n_items, D, noise=noise, observed=observed, scale=scale,
                           star_step=star_step, n_chains=n_chains, max_support=max_support,
                           alpha=alpha, random_state=random_state)[0]


def planted_km_truth(n_users=200, n_items=60, D=8, *, noise=0.0, observed=0.3, scale="unit",
                     star_step=0.5, n_chains=3, max_support=None, alpha=1.0,
                     random_state=None) -> PlantedKMTruth:
    """The ground truth of :func:`make_planted_km` for the same parameters and int seed."""
    return make_planted_km(n_users, n_items, D, noise=noise, observed=observed, scale=scale,
                           star_step=star_step, n_chains=n_chains, max_support=max_support,
                           alpha=alpha, random_state=random_state)[1]


# --------------------------------------------------------------------------- planted low rank
@dataclass(frozen=True)
class PlantedLowRankTruth:
    """Ground truth of :func:`make_planted_lowrank`.

    Attributes
    ----------
    user_map, item_map : ndarray, shapes (n_user_features, rank), (n_item_features, rank)
        The linear maps: user factors are ``user_features @ user_map``, item factors
        ``item_features @ item_map``.
    matrix : ndarray, shape (n_users, n_items)
        The noiseless low-rank matrix (user factors times item factors transposed).
    """

    user_map: np.ndarray
    item_map: np.ndarray
    matrix: np.ndarray


def make_planted_lowrank(n_users=100, n_items=80, rank=5, *, n_user_features=6,
                         n_item_features=6, noise=0.1, observed=0.2,
                         random_state=None) -> tuple[Ratings, PlantedLowRankTruth]:
    """A low-rank matrix whose factors are linear functions of side features.

    Features are standard normal; the maps have N(0, 1/n_features) entries and the product is
    divided by sqrt(rank), so entries have unit variance before noise.

    Parameters
    ----------
    n_users, n_items : int, default=100, 80
    rank : int, default=5
    n_user_features, n_item_features : int, default=6
    noise : float, default=0.1
        Standard deviation of the Gaussian noise on the observed values.
    observed : float in (0, 1], default=0.2
        Fraction of pairs observed (at least 2 per user and 1 per item).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    ratings : Ratings
        Real values; the scale is the range of the full noisy matrix, so every split stays
        inside it. ``user_features`` / ``item_features`` are DataFrames with columns
        ``f0, f1, ...``.
    truth : PlantedLowRankTruth
    """
    owner = "make_planted_lowrank"
    _check_size(owner, n_users, n_items)
    rank = check_number(owner, "rank", rank, kind=int, low=1)
    n_uf = check_number(owner, "n_user_features", n_user_features, kind=int, low=1)
    n_if = check_number(owner, "n_item_features", n_item_features, kind=int, low=1)
    noise = check_number(owner, "noise", noise, low=0.0)
    observed = check_number(owner, "observed", observed, low=0.0, high=1.0, closed="right")
    rng = check_random_state(random_state)
    _check_memory(owner, n_users, n_items, observed)

    x = rng.standard_normal((n_users, n_uf))
    y = rng.standard_normal((n_items, n_if))
    a = rng.standard_normal((n_uf, rank)) / np.sqrt(n_uf)
    b = rng.standard_normal((n_if, rank)) / np.sqrt(n_if)
    matrix = (x @ a) @ (y @ b).T / np.sqrt(rank)
    noisy = matrix + noise * rng.standard_normal(matrix.shape)
    mask = _observed_mask(rng, n_users, n_items, observed)
    u, i = np.nonzero(mask)
    uf = pd.DataFrame(x, columns=[f"f{k}" for k in range(n_uf)])
    itf = pd.DataFrame(y, columns=[f"f{k}" for k in range(n_if)])
    ratings = Ratings.from_arrays(
        u, i, noisy[u, i], r_min=float(noisy.min()), r_max=float(noisy.max()),
        user_ids=np.arange(n_users), item_ids=np.arange(n_items), user_features=uf,
        item_features=itf, name="planted low rank", source="planted-lowrank")
    ratings.info.update(generator="planted_lowrank", rank=rank, noise=noise, observed=observed)
    return ratings, PlantedLowRankTruth(user_map=a, item_map=b, matrix=matrix)


def planted_lowrank(n_users=100, n_items=80, rank=5, *, n_user_features=6, n_item_features=6,
                    noise=0.1, observed=0.2, random_state=None) -> Ratings:
    """The Ratings of :func:`make_planted_lowrank` (same parameters), without the truth."""
    return make_planted_lowrank(n_users, n_items, rank, n_user_features=n_user_features,
                                n_item_features=n_item_features, noise=noise,
                                observed=observed, random_state=random_state)[0]


# --------------------------------------------------------------------------- planted towers
@dataclass
class PlantedTowersTruth:
    """The true embeddings and scores of :func:`make_planted_towers`.

    ``item_groups`` is each item's planted group (0, 1, ...), or None without groups.
    """

    user_embeddings: np.ndarray
    item_embeddings: np.ndarray
    scores: np.ndarray
    item_groups: np.ndarray | None = None


def _tower(rng, F, k, hidden, nonlinear):
    d = F.shape[1]
    if not nonlinear:
        return F @ (rng.standard_normal((d, k)) / np.sqrt(d))
    A1 = rng.standard_normal((d, hidden)) * (2.0 / np.sqrt(d))
    A2 = rng.standard_normal((hidden, k)) / np.sqrt(hidden)
    return np.tanh(F @ A1) @ A2


#: Names of the planted item groups (``item_groups`` <= 26).
_GROUP_NAMES = tuple(f"group {c}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def make_planted_towers(n_users=300, n_items=200, k=4, *, n_user_features=6,
                        n_item_features=6, hidden=16, nonlinear=True, density=0.05,
                        temperature=0.25, item_groups=0, group_spread=2.0,
                        random_state=None):
    """(Ratings, PlantedTowersTruth): implicit positives from planted towers.

    Users and items have Gaussian features; the true embeddings are ``P = tanh(X A_1) A_2``
    and ``Q = tanh(Y B_1) B_2`` (one hidden layer: the benefit of a nonlinear tower over a
    linear one is then known), or ``X A`` and ``Y B`` (``nonlinear=False``). Each user's
    positives are drawn without replacement from a softmax of its scores (Gumbel top-k), so
    the observed set is one-class data with a known ranking behind it.

    Parameters
    ----------
    n_users, n_items, k : int
    n_user_features, n_item_features : int
        Gaussian features (the Ratings' ``user_features`` / ``item_features``, columns f0..).
    hidden : int
        Width of the planted towers' tanh layer.
    nonlinear : bool
        tanh towers (True) or linear maps of the features.
    density : float in (0, 1)
        Mean fraction of items each user has as positives (at least 2 per user).
    temperature : float
        Softmax temperature of the draws on standardized scores (lower: closer to top-k).
    item_groups : int, default=0
        With g > 0, the items fall in g planted groups of (nearly) equal size: an item's
        features are its group's centre (N(0, group_spread^2) per feature) plus N(0, 1)
        noise, so the items of a group have alike embeddings and fans, and the item
        features get a first, categorical column ``group`` ("group A", ...).
    group_spread : float, default=2.0
        Standard deviation of the group centres (features of the noise: 1).
    random_state : None, int or numpy.random.Generator
    """
    owner = "make_planted_towers"
    n_users = check_number(owner, "n_users", n_users, kind=int, low=2)
    n_items = check_number(owner, "n_items", n_items, kind=int, low=3)
    density = check_number(owner, "density", density, low=0, high=1, closed="neither")
    temperature = check_number(owner, "temperature", temperature, low=0, closed="neither")
    item_groups = check_number(owner, "item_groups", item_groups, kind=int, low=0,
                               high=min(len(_GROUP_NAMES), n_items))
    group_spread = check_number(owner, "group_spread", group_spread, low=0.0)
    rng = check_random_state(random_state)
    _check_memory(owner, n_users, n_items, density, observed_name="density")
    X = rng.standard_normal((n_users, n_user_features))
    groups = None
    if item_groups:
        centres = rng.standard_normal((item_groups, n_item_features)) * group_spread
        groups = rng.permutation(np.arange(n_items) % item_groups)
        Y = centres[groups] + rng.standard_normal((n_items, n_item_features))
    else:
        Y = rng.standard_normal((n_items, n_item_features))
    P = _tower(rng, X, k, hidden, nonlinear)
    Q = _tower(rng, Y, k, hidden, nonlinear)
    S = P @ Q.T
    S = (S - S.mean()) / (S.std() + 1e-12)
    counts = np.clip(rng.poisson(density * n_items, n_users), 2, n_items - 1)
    gumbel = -np.log(-np.log(rng.random((n_users, n_items))))
    keys = S / temperature + gumbel
    order = np.argsort(-keys, axis=1, kind="stable")
    users = np.repeat(np.arange(n_users), counts)
    items = np.concatenate([order[u, :c] for u, c in enumerate(counts)])
    item_df = pd.DataFrame(Y, columns=[f"f{c}" for c in range(n_item_features)])
    if groups is not None:
        item_df.insert(0, "group", pd.Categorical.from_codes(
            groups, categories=list(_GROUP_NAMES[:item_groups])))
    ratings = Ratings.from_arrays(
        users, items, np.ones(users.size), user_ids=np.arange(n_users),
        item_ids=np.arange(n_items), implicit=True,
        user_features=pd.DataFrame(X, columns=[f"f{c}" for c in range(n_user_features)]),
        item_features=item_df, name="planted towers", source="planted-towers")
    ratings.info.update(generator="planted_towers", nonlinear=bool(nonlinear), k=k,
                        item_groups=item_groups)
    return ratings, PlantedTowersTruth(P, Q, S, groups)


def planted_towers(n_users=300, n_items=200, k=4, *, n_user_features=6, n_item_features=6,
                   hidden=16, nonlinear=True, density=0.05, temperature=0.25, item_groups=0,
                   group_spread=2.0, random_state=None) -> Ratings:
    """The Ratings of :func:`make_planted_towers` (same parameters), without the truth."""
    return make_planted_towers(n_users, n_items, k, n_user_features=n_user_features,
                               n_item_features=n_item_features, hidden=hidden,
                               nonlinear=nonlinear, density=density, temperature=temperature,
                               item_groups=item_groups, group_spread=group_spread,
                               random_state=random_state)[0]
