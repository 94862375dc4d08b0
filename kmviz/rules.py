"""Pairwise association rules on "liked" items, and the statistics every implication shares.

This module is model-free: it reads likes out of a :class:`~kmviz.data.Ratings` and counts,
from the sparse co-occurrence of likes, how well "liking j goes with liking i" holds. The
Kolmogorov model's implications (:func:`kmviz.km.mine_implications`) are scored with the
very same functions, so a KM implication and an association rule on the same pair carry
the same numbers.

"Liked", in the data's own units
--------------------------------
One setting decides what counts as a like, for every statistic, sentence and export:

* rated data: a rating threshold, liked when ``r >= threshold``. The default
  (:func:`liked_threshold`) is the top quarter of the scale rounded to the scale's step:
  ``r_min + 0.75 * (r_max - r_min)``, rounded half up to the nearest multiple of the step
  between rating values (continuous scales are not rounded). That is 4 on a 1-5 scale,
  4 on 0.5-5 half stars and 0.75 on a [0, 1] scale.
* 0/1 interaction data (``Ratings.implicit``), or ``liked="interacted"`` on any data: every
  observed entry is a like.

Who "counts" for a consequent
-----------------------------
With ratings, a user who did not rate item i says nothing about liking it, so the statistics
of j => i are taken among the users whose opinion of i is known: the users who *rated* i.
With interactions there is no such thing as an unknown entry: every user counts, and no
interaction means no like.

Statistics of one pair j => i (training ratings)
------------------------------------------------
``support``      users who like j
``co_support``   users who like both j and i
``n_known``      users who like j and rated i (for interactions: ``support``)
``confidence``   ``co_support / n_known``: the share of j's fans (who rated i) who like i
``confidence_lo``, ``confidence_hi``   Wilson score interval of the confidence (95 % default)
``base_rate``    share of the users who rated i (for interactions: all users) who like i
``lift``         ``confidence / base_rate``: how many times likelier j's fans are to like i
                 than a typical rater of i; 1 means j tells nothing beyond i's popularity
``p_value``      one-sided exact (Fisher / hypergeometric) test of lift > 1 among i's raters

Held-out statistics (when ``validation`` ratings are given) judge the pair on ratings the
training never saw: among the users who like j *in the training ratings* and whose rating of
i is in the held-out part, the share who like i (``heldout_confidence``, with its Wilson
interval), the held-out base rate of i and ``heldout_lift``. For interactions, the users who
like j and have no training interaction with i, and the share of them with a held-out one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = [
    "INTERACTED", "LIKED_SHARE", "liked_threshold", "resolve_liked", "liked_phrase",
    "rating_step", "LikeCounts", "pair_statistics", "pairwise_rules", "rank_pairs",
    "wilson_interval", "compare_with_rules", "recovery_scores", "pooled_heldout_lift",
]

#: ``liked="interacted"``: every observed entry is a like (absent entries are not).
INTERACTED = "interacted"
#: The default threshold sits this far up the rating scale (then rounded to the step).
LIKED_SHARE = 0.75
#: Default ranking: implications implied by more than this share of the items are hubs.
HUB_SHARE = 0.2
#: Default significance level of the exact test in the default ranking.
ALPHA = 0.05


# ----------------------------------------------------------------------------- liked
def rating_step(ratings, max_levels: int = 50) -> float | None:
    """The grid step of the rating values (1 for whole stars, 0.5 for half stars), or None
    when the values are continuous (more than ``max_levels`` distinct values, or off a grid)."""
    levels = np.unique(np.asarray(ratings.values, dtype=float))
    levels = np.union1d(levels, [ratings.r_min, ratings.r_max])
    if levels.size < 2 or levels.size > max_levels:
        return None
    step = float(np.min(np.diff(levels)))
    if step <= 0:
        return None
    k = (levels - ratings.r_min) / step
    return step if np.allclose(k, np.round(k), atol=1e-6) else None


def liked_threshold(ratings) -> float | str:
    """The default meaning of "liked" for these ratings (see the module docstring):
    ``"interacted"`` for 0/1 data, else the rating threshold
    ``r_min + 0.75 (r_max - r_min)`` rounded half up to the rating step."""
    if getattr(ratings, "implicit", False):
        return INTERACTED
    lo, hi = float(ratings.r_min), float(ratings.r_max)
    raw = lo + LIKED_SHARE * (hi - lo)
    step = rating_step(ratings)
    if step is None:
        return float(raw)
    return float(min(hi, lo + np.floor((raw - lo) / step + 0.5 + 1e-9) * step))


def resolve_liked(ratings, liked=None) -> float | str:
    """``liked`` checked against the data: None gives :func:`liked_threshold`; a number is a
    rating threshold inside the scale; ``"interacted"`` counts every entry as a like."""
    if liked is None:
        return liked_threshold(ratings)
    if isinstance(liked, str):
        if liked != INTERACTED:
            raise ValueError(f"liked must be a rating threshold or {INTERACTED!r}; got "
                             f"{liked!r}.")
        return INTERACTED
    t = float(liked)
    if not np.isfinite(t) or t < ratings.r_min or t > ratings.r_max:
        raise ValueError(f"liked = {t:g} lies outside the rating scale [{ratings.r_min:g}, "
                         f"{ratings.r_max:g}]; pick a threshold on that scale.")
    return t


def liked_phrase(ratings, liked=None) -> str:
    """"liked" in words for captions and exports, e.g. "rated 4 or more (scale 1-5)"."""
    liked = resolve_liked(ratings, liked)
    if liked == INTERACTED:
        return "interacted with (every observed entry counts as a like)"
    return f"rated {liked:g} or more (scale {ratings.r_min:g}-{ratings.r_max:g})"


# ----------------------------------------------------------------------------- counting
def _csc(users, items, shape) -> sp.csc_matrix:
    m = sp.csc_matrix((np.ones(users.size, dtype=np.int32), (users, items)), shape=shape)
    m.sum_duplicates()
    m.sort_indices()
    return m


@dataclass
class LikeCounts:
    """Users x items 0/1 matrices (sparse) of one Ratings' likes and rated entries."""

    ratings: object
    liked: float | str

    @classmethod
    def of(cls, ratings, liked=None) -> "LikeCounts":
        return cls(ratings, resolve_liked(ratings, liked))

    @property
    def interactions(self) -> bool:
        """True when every user counts for every item (no "unknown" entries)."""
        return self.liked == INTERACTED

    @cached_property
    def like_mask(self) -> np.ndarray:
        v = np.asarray(self.ratings.values)
        return np.ones(v.size, bool) if self.interactions else v >= self.liked - 1e-9

    @cached_property
    def L(self) -> sp.csc_matrix:
        r, m = self.ratings, self.like_mask
        return _csc(np.asarray(r.users)[m], np.asarray(r.items)[m], r.shape)

    @cached_property
    def R(self) -> sp.csc_matrix:
        r = self.ratings
        return _csc(np.asarray(r.users), np.asarray(r.items), r.shape)

    @cached_property
    def n_likes(self) -> np.ndarray:
        return np.diff(self.L.indptr).astype(np.int64)

    @cached_property
    def n_known(self) -> np.ndarray:
        """Per item: the users whose like is known (raters; every user for interactions)."""
        if self.interactions:
            return np.full(self.ratings.n_items, self.ratings.n_users, dtype=np.int64)
        return np.diff(self.R.indptr).astype(np.int64)


def pair_counts(A: sp.csc_matrix, B: sp.csc_matrix, ante, cons, *, chunk: int = 512,
                dense_cells: int = 4_000_000):
    """``(A^T B)[ante[k], cons[k]]`` for every k, computed antecedent block by block against
    the needed consequents only: the rows and columns of the co-occurrence matrix that the
    pairs name, never a dense users x items array (a block is made dense only when it holds
    at most ``dense_cells`` cells, for fast lookups)."""
    ante = np.asarray(ante, dtype=np.int64)
    cons = np.asarray(cons, dtype=np.int64)
    out = np.zeros(ante.size, dtype=np.int64)
    if ante.size == 0:
        return out
    uniq, pos = np.unique(ante, return_inverse=True)
    cols, cpos = np.unique(cons, return_inverse=True)
    Bc = B.tocsc()[:, cols]
    order = np.argsort(pos, kind="stable")
    bounds = np.searchsorted(pos[order], np.arange(0, uniq.size + chunk, chunk))
    for b, lo in enumerate(range(0, uniq.size, chunk)):
        block = uniq[lo:lo + chunk]
        sel = order[bounds[b]:bounds[b + 1]]
        if sel.size == 0:
            continue
        M = A[:, block].T @ Bc  # len(block) x len(cols)
        if M.shape[0] * M.shape[1] <= dense_cells:
            out[sel] = np.asarray(M.toarray())[pos[sel] - lo, cpos[sel]]
        else:
            out[sel] = np.asarray(M.tocsr()[pos[sel] - lo, cpos[sel]]).ravel()
    return out


def wilson_interval(k, n, level: float = 0.95):
    """Wilson score interval of a proportion k / n (NaN where n = 0)."""
    from scipy.special import ndtri

    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    z = float(ndtri(0.5 + level / 2.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        den = 1.0 + z * z / n
        center = (p + z * z / (2 * n)) / den
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # the bounds hold p itself (rounding can put them a hair on the wrong side at 0 and 1)
    lo = np.where(n > 0, np.clip(np.fmin(center - half, p), 0.0, 1.0), np.nan)
    hi = np.where(n > 0, np.clip(np.fmax(center + half, p), 0.0, 1.0), np.nan)
    return lo, hi


def _ratio(a, b):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return np.divide(a, b, out=np.full(np.broadcast(a, b).shape, np.nan), where=b > 0)


def pair_statistics(ratings, antecedent, consequent, *, liked=None, validation=None,
                    level: float = 0.95, counts: LikeCounts | None = None,
                    held_counts: LikeCounts | None = None) -> pd.DataFrame:
    """The statistics of the pairs ``antecedent[k] => consequent[k]`` (module docstring).

    Parameters
    ----------
    ratings : Ratings
        The training ratings.
    antecedent, consequent : array-like of int
        Item indices.
    liked : float, "interacted" or None
        What counts as a like (None: :func:`liked_threshold` of ``ratings``).
    validation : Ratings, optional
        Held-out ratings in the same index space: adds the ``heldout_*`` columns.
    level : float
        Coverage of the Wilson intervals.
    counts, held_counts : LikeCounts, optional
        Precomputed matrices (for repeated calls on the same data).

    Returns
    -------
    DataFrame, one row per pair, in the given order.
    """
    c = counts if counts is not None else LikeCounts.of(ratings, liked)
    j = np.asarray(antecedent, dtype=np.int64)
    i = np.asarray(consequent, dtype=np.int64)
    co = pair_counts(c.L, c.L, j, i)
    support = c.n_likes[j]
    known = support if c.interactions else pair_counts(c.L, c.R, j, i)
    conf = _ratio(co, known)
    lo, hi = wilson_interval(co, known, level)
    base = _ratio(c.n_likes[i], c.n_known[i])
    out = {"antecedent": j, "consequent": i, "support": support, "co_support": co,
           "n_known": known, "confidence": conf, "confidence_lo": lo, "confidence_hi": hi,
           "base_rate": base, "lift": _ratio(conf, base),
           "p_value": _exact_p(co, known, c.n_likes[i], c.n_known[i])}
    if validation is not None:
        h = held_counts if held_counts is not None else LikeCounts(validation, c.liked)
        co_h = pair_counts(c.L, h.L, j, i)
        if c.interactions:
            known_h = support - co  # j's fans without a training interaction with i
            base_h = _ratio(h.n_likes[i], ratings.n_users - c.n_likes[i])
        else:
            known_h = pair_counts(c.L, h.R, j, i)
            base_h = _ratio(h.n_likes[i], h.n_known[i])
        conf_h = _ratio(co_h, known_h)
        lo_h, hi_h = wilson_interval(co_h, known_h, level)
        out.update({"heldout_n": known_h, "heldout_co_support": co_h,
                    "heldout_confidence": conf_h, "heldout_confidence_lo": lo_h,
                    "heldout_confidence_hi": hi_h, "heldout_base_rate": base_h,
                    "heldout_lift": _ratio(conf_h, base_h)})
    return pd.DataFrame(out)


def _exact_p(k, n, K, M):
    """P(X >= k), X ~ Hypergeometric(population M, K successes, n draws): the one-sided
    Fisher test that j's fans like i more often than i's raters at large."""
    from scipy.stats import hypergeom

    k, n, K, M = (np.asarray(a, dtype=np.int64) for a in (k, n, K, M))
    p = np.ones(k.shape, dtype=float)
    ok = (n > 0) & (M > 0)
    if ok.any():
        p[ok] = hypergeom.sf(k[ok] - 1, M[ok], K[ok], n[ok])
    return np.clip(p, 0.0, 1.0)


# ----------------------------------------------------------------------------- ranking
RANKINGS = ("score", "lift_lo", "lift", "confidence", "co_support")


def rank_pairs(df: pd.DataFrame, *, by: str = "score", alpha: float = ALPHA,
               hubs_last: bool = True) -> pd.DataFrame:
    """Sort pairs: supported and non-hub first, then by ``by``, ties by co-support.

    ``by="score"`` (the default ranking) sorts by ``score = confidence_lo - base_rate``:
    the lower end of the 95 % Wilson interval of the confidence minus the consequent's base
    rate, so a pair ranks high only when even the cautious estimate of how often j's fans
    like i clearly beats i's popularity. ``by="lift_lo"`` sorts by ``lift_lo =
    confidence_lo / base_rate``, the cautious lift (the same lower bound over the base rate):
    it favours rarer consequents, where a like says more. "Supported" means the exact test
    rejects lift <= 1 at level ``alpha``; pairs that are not, and (``hubs_last``) pairs whose
    consequent is a hub, follow all the others in the same order. ``lift``, ``confidence``
    and ``co_support`` sort by that column instead (the classic association-rule orders).
    """
    if by not in RANKINGS:
        raise ValueError(f"rank by one of {RANKINGS}; got {by!r}.")
    df = df.copy()
    df["score"] = df["confidence_lo"] - df["base_rate"]
    df["lift_lo"] = _ratio(df["confidence_lo"], df["base_rate"])
    df["supported"] = df["p_value"].to_numpy() <= alpha
    tier = (~df["supported"]).astype(int)
    if hubs_last and "hub" in df:
        tier = tier + df["hub"].astype(int)
    key = df[by].fillna(-np.inf)
    order = np.lexsort((df["consequent"].to_numpy(), df["antecedent"].to_numpy(),
                        -df["co_support"].to_numpy(), -key.to_numpy(), tier.to_numpy()))
    df = df.iloc[order].reset_index(drop=True)
    df.insert(0, "rank", np.arange(1, len(df) + 1))
    return df


def _hub_columns(df: pd.DataFrame, implied_by, n_items: int, hub_share: float):
    df["implied_by"] = np.asarray(implied_by, dtype=np.int64)
    df["hub"] = df["implied_by"].to_numpy() > hub_share * max(n_items, 1)
    return df


# ----------------------------------------------------------------------------- rules
def pairwise_rules(ratings, *, liked=None, min_support: int = 20, min_confidence: float = 0.5,
                   validation=None, items=None, rank_by: str = "lift",
                   hub_share: float = HUB_SHARE, alpha: float = ALPHA, level: float = 0.95,
                   names=None, chunk: int = 512) -> pd.DataFrame:
    """Association rules j => i between two items, from the sparse co-occurrence of likes.

    A rule is kept when at least ``min_support`` users like both items (``co_support``) and
    its ``confidence`` (share of j's fans, among i's raters, who like i) is at least
    ``min_confidence``. The co-occurrence counts come from ``L^T L`` of the users x items
    CSR of likes, computed block by block over antecedents with enough likes; no dense users
    x items (or items x items) array is formed.

    Parameters
    ----------
    ratings : Ratings
        Training ratings.
    liked : float, "interacted" or None
        What counts as a like (:func:`resolve_liked`).
    min_support : int, default=20
        Minimum co-support (users who like both items).
    min_confidence : float, default=0.5
    validation : Ratings, optional
        Held-out ratings: adds the ``heldout_*`` columns.
    items : array-like of int or bool mask, optional
        Only rules between these items.
    rank_by : {"lift", "score", "lift_lo", "confidence", "co_support"}, default="lift"
        The rules' default ranking is the classic one, by lift, after the supported
        (exact test at ``alpha``), non-hub rules (:func:`rank_pairs`).
    hub_share : float
        A consequent is a hub when more than this share of the items imply it (here: are the
        antecedent of a kept rule with it).

    Returns
    -------
    DataFrame
        The columns of :func:`pair_statistics` (``antecedent``, ``consequent``, ``support``,
        ``co_support``, ...), then ``antecedent_name``, ``consequent_name``, ``implied_by``,
        ``hub``, ``score``, ``supported``, with ``rank`` first; in ranking order.
    """
    c = LikeCounts.of(ratings, liked)
    min_support = max(1, int(min_support))
    n_items = ratings.n_items
    allowed = np.ones(n_items, bool) if items is None else _mask(items, n_items)
    candidates = np.flatnonzero(allowed & (c.n_likes >= min_support))
    ante, cons = [], []
    if candidates.size:
        Lc = c.L[:, candidates]
        for lo in range(0, candidates.size, chunk):
            M = (Lc[:, lo:lo + chunk].T @ Lc).tocoo()
            keep = (M.data >= min_support) & (M.row + lo != M.col)
            ante.append(candidates[M.row[keep] + lo])
            cons.append(candidates[M.col[keep]])
    ante = np.concatenate(ante) if ante else np.zeros(0, np.int64)
    cons = np.concatenate(cons) if cons else np.zeros(0, np.int64)
    df = pair_statistics(ratings, ante, cons, counts=c, validation=validation, level=level)
    df = df[df["confidence"].to_numpy() >= min_confidence].reset_index(drop=True)
    implied = np.bincount(df["consequent"].to_numpy(), minlength=n_items)
    df = _hub_columns(df, implied[df["consequent"].to_numpy()], int(allowed.sum()), hub_share)
    nm = _names(names if names is not None else ratings, n_items)
    df.insert(2, "antecedent_name", [nm[k] for k in df["antecedent"]])
    df.insert(3, "consequent_name", [nm[k] for k in df["consequent"]])
    df = rank_pairs(df, by=rank_by, alpha=alpha)
    df.attrs.update(liked=c.liked, min_support=min_support, min_confidence=min_confidence,
                    rank_by=rank_by)
    return df


def _mask(items, n_items) -> np.ndarray:
    items = np.asarray(items)
    if items.dtype == bool:
        if items.shape != (n_items,):
            raise ValueError(f"items mask has shape {items.shape}; expected ({n_items},).")
        return items.copy()
    m = np.zeros(n_items, bool)
    m[items.astype(np.int64)] = True
    return m


def _names(names, n):
    if hasattr(names, "item_label"):
        return [names.item_label(k) for k in range(n)]
    if names is None:
        return [f"item {k}" for k in range(n)]
    return [str(x) for x in names]


# ----------------------------------------------------------------------------- comparisons
def _pair_keys(df, n_items, *, both_ways=None):
    j = df["antecedent"].to_numpy(np.int64)
    i = df["consequent"].to_numpy(np.int64)
    keys = j * n_items + i
    if both_ways is not None:
        both = np.asarray(both_ways, bool)
        keys = np.concatenate([keys, (i * n_items + j)[both]])
    return keys


def compare_with_rules(implications: pd.DataFrame, rules: pd.DataFrame, *, n_items: int,
                       min_support: int, strong: int = 100) -> dict:
    """KM implications and association rules on the same likes, side by side.

    Returns a dict of DataFrames (rows of ``implications`` or ``rules``) and counts:

    ``confirmed``  implications that are also rules (same pair and direction; an equivalence
                   counts either way)
    ``too_rare``   implications with ``co_support < min_support``: too few users like both
                   items for a rule to be judged at all; only held-out data can check them
    ``unconfirmed`` implications with enough co-support that are not rules (confidence below
                   the rules' minimum)
    ``missed``     the ``strong`` best-ranked rules whose pair is not an implication
    """
    equiv = implications["equivalent"].to_numpy(bool) if "equivalent" in implications else None
    rk = set(_pair_keys(rules, n_items).tolist())
    km_keys = _pair_keys(implications, n_items)
    rev = (implications["consequent"].to_numpy(np.int64) * n_items
           + implications["antecedent"].to_numpy(np.int64))
    hit = np.array([k in rk for k in km_keys], bool)
    if equiv is not None:
        hit |= np.array([k in rk for k in rev], bool) & equiv
    rare = implications["co_support"].to_numpy() < min_support
    kk = set(_pair_keys(implications, n_items, both_ways=equiv).tolist())
    top = rules.head(strong)
    missed = np.array([k not in kk for k in _pair_keys(top, n_items)], bool)
    out = {"confirmed": implications[hit], "too_rare": implications[rare & ~hit],
           "unconfirmed": implications[~rare & ~hit], "missed": top[missed]}
    out["counts"] = {k: len(v) for k, v in out.items()}
    out["counts"]["strong"] = len(top)
    return out


def recovery_scores(found, truth) -> dict:
    """Precision, recall and F1 of found directed pairs (rows (j, i)) against true ones."""
    f = {(int(a), int(b)) for a, b in np.asarray(found, dtype=np.int64).reshape(-1, 2)}
    t = {(int(a), int(b)) for a, b in np.asarray(truth, dtype=np.int64).reshape(-1, 2)}
    hit = len(f & t)
    p = hit / len(f) if f else float("nan")
    r = hit / len(t) if t else float("nan")
    f1 = 2 * p * r / (p + r) if f and t and (p + r) > 0 else (0.0 if f and t else float("nan"))
    return {"found": len(f), "true": len(t), "correct": hit, "precision": p, "recall": r,
            "f1": f1}


def pooled_heldout_lift(ratings, validation, antecedent, consequent, *, liked=None,
                        n_boot: int = 1000, level: float = 0.95, random_state=0) -> dict:
    """Held-out confidence and lift of a set of pairs taken together, with a bootstrap
    interval over users.

    Pooled over the pairs: ``confidence = sum co_h / sum n_h`` and ``lift = sum co_h /
    sum (n_h * base_h(i))`` (observed over expected held-out likes), where for each pair
    ``n_h`` users like j in training and have a held-out rating of i, ``co_h`` of them like
    i, and ``base_h(i)`` is i's held-out base rate. The interval resamples users (the pairs
    share users, so resampling pairs would be too narrow). Explicit ratings only.
    """
    c = LikeCounts.of(ratings, liked)
    if c.interactions:
        raise ValueError("pooled_heldout_lift needs rated data (not interactions).")
    h = LikeCounts(validation, c.liked)
    j = np.asarray(antecedent, dtype=np.int64)
    i = np.asarray(consequent, dtype=np.int64)
    if j.size == 0:
        return {"pairs": 0, "heldout_n": 0, "confidence": np.nan, "lift": np.nan,
                "lift_lo": np.nan, "lift_hi": np.nan}
    base_h = _ratio(h.n_likes, h.n_known)
    # per user: observed and expected held-out likes summed over the pairs
    Lj = c.L[:, j].tocsc()
    known = Lj.multiply(h.R[:, i]).tocsr()       # users x pairs: likes j, held-out rating of i
    liked_ = Lj.multiply(h.L[:, i]).tocsr()
    w = np.nan_to_num(base_h[i])
    obs = np.asarray(liked_.sum(axis=1)).ravel()
    exp = np.asarray(known @ w).ravel()
    n_u = np.asarray(known.sum(axis=1)).ravel()
    users = np.flatnonzero(n_u > 0)
    obs, exp, n_u = obs[users], exp[users], n_u[users]
    lift = obs.sum() / exp.sum() if exp.sum() > 0 else np.nan
    rng = np.random.default_rng(random_state)
    if users.size:
        W = rng.multinomial(users.size, np.full(users.size, 1.0 / users.size), size=n_boot)
        boots = (W @ obs) / np.maximum(W @ exp, 1e-300)
        lo, hi = np.quantile(boots, [(1 - level) / 2, 1 - (1 - level) / 2])
    else:
        lo = hi = np.nan
    return {"pairs": int(j.size), "heldout_n": int(n_u.sum()),
            "confidence": float(obs.sum() / n_u.sum()) if n_u.sum() else np.nan,
            "lift": float(lift), "lift_lo": float(lo), "lift_hi": float(hi)}
