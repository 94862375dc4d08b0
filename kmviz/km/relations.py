"""The relation miner's default path: one call from ratings to a ranked relation table.

:func:`mine_relations` is what the CLI (``kmviz implications``), the app and Python share.
On the user's own data it

1. **chooses the Kolmogorov model** from the data (:func:`choose_settings`): a few settings
   (D, lambda_theta, trained on the ratings or on the likes) fitted on a per-user 80/20
   split of (a bounded sample of) the ratings, the one with the lowest validation NRMSE
   relative to predicting the mean kept; a choice no better than the mean says so;
2. **lists the candidate relations** on the data: pairs j => i with at least
   :data:`MIN_CO` users who like j and rated i and a confidence of at least
   :data:`MIN_CONFIDENCE`, and conjunctions {a, b} => c (:mod:`kmviz.km.conjunctive`)
   whose confidence is at least :data:`HOLDS` while neither half's is;
3. **refits KM** ``n_refits`` times on half the users (the stability refits of
   :mod:`kmviz.km.stability`, through :func:`kmviz.km.stability.map_refits`) and gives each
   row its *stability*, the share of the refits whose supports state it
   (supp psi_j ⊆ supp psi_i; supp psi_a ∩ supp psi_b ⊆ supp psi_c), and its out-of-bag
   evidence (the users a holding refit did not see);
4. **ranks** by ``score``, in one of two orders chosen on a validation split of the data
   (:func:`kmviz.km.relation_ranking.choose_ranking`: do the pairs that hold on every fan
   in 80 % of each user's ratings keep holding on the other 20 %?). Where they do, the
   relations hold, and ``score`` is :func:`relation_score`: the log of the lower bound of
   the rule's *conviction*, ``(1 - base rate of c) / (1 - confidence_lower)``, plus
   :data:`STABILITY_WEIGHT` x stability. Conviction is directional (A => B and B => A
   differ) and is near 1 for a consequent nearly everyone likes, however high the
   confidence: the planted "every fan of A rates B 4-5" comes before its reverse and before
   "X => a crowd favourite". Where they do not (ratings such as MovieLens hold tendencies,
   and a rule that held on every fan was mostly luck), ``score`` is the log of the
   ``lift_lower`` column, the *cautious lift*
   (:func:`kmviz.km.relation_ranking.cautious_lift`: the confidence shrunk towards the base
   rate, its lower bound, over the base rate; rows on fewer than
   :data:`kmviz.km.relation_ranking.FEW_FANS` fans who rated the consequent after the
   others, within each part the conjunctions after the pairs, and within those the rows
   that no refit states after those KM states), which keeps more of its lift on held-out
   ratings. In the conviction order the conjunctions stand among the pairs by their score.

The table (the contract with the Implications page): best first, ``rank``,
``antecedent`` (tuple of item indices), ``consequent`` (int), ``antecedent_name`` and
``consequent_name`` (several names joined with " & "), ``size`` (items on the left),
``support`` (users who like every antecedent item), ``antecedent_support`` (the same),
``n_known`` (those who rated the consequent), ``co_support`` (those who like it),
``confidence`` = co_support / n_known (**among the antecedent's fans who rated the
consequent**), ``confidence_lower`` (its Wilson lower bound), ``classic_confidence`` =
co_support / support (among all the antecedent's fans, as association rules count it),
``base_rate``, ``lift``, ``lift_lower`` (the cautious lift), ``conviction_lower``,
``stability``, ``oob_n``, ``oob_confidence``, ``oob_lift``, ``heldout_*`` when
``validation`` is given, ``score``. ``attrs["chosen"]`` says how the defaults were chosen
(``summary`` in words; ``ranking``: the order's choice).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import pandas as pd

from ..rules import LikeCounts, _names, wilson_interval
from . import _checks as ck
from .conjunctive import (conjunction_candidates, conjunction_held, pack_supports,
                          rule_counts, subset_held)
from .relation_ranking import FEW_FANS, cautious_lift, choose_ranking, tendency_tiers
from .relation_settings import (CANDIDATES, CHOOSE_MAX_RATINGS, FIT_ITER, no_better_fix,
                                INTERACTION_CANDIDATES, WIDE_ITEMS, _candidates,
                                choose_settings, km_training_data, run_refits)

__all__ = ["mine_relations", "choose_settings", "relation_score", "RELATION_COLUMNS",
           "DEFAULT_REFITS", "MIN_CO", "MIN_CONFIDENCE", "HOLDS", "STABILITY_WEIGHT",
           "RANKINGS", "estimate_memory", "HALF_ALPHA", "run_refits", "km_training_data",
           # kept here from relation_settings, where the choice of settings lives now
           "CANDIDATES", "INTERACTION_CANDIDATES", "CHOOSE_MAX_RATINGS", "FIT_ITER",
           "WIDE_ITEMS"]

#: Refits by default (each on half the users).
DEFAULT_REFITS = 8
#: Fewest users who like the antecedent and rated the consequent for a row to be listed.
MIN_CO = 3
#: Smallest confidence of a listed pair.
MIN_CONFIDENCE = 0.5
#: A rule "holds" from this confidence: conjunctions are listed only when they do and neither
#: half does.
HOLDS = 0.9
#: A conjunction is kept when its confidence beats its better half's at this level (one-sided
#: binomial test of its likes among the fans of both against the half's confidence).
HALF_ALPHA = 0.01
#: Weight of stability (0-1) in the score, beside the log conviction lower bound.
STABILITY_WEIGHT = 0.5
#: Orders of the table: the default score, or one statistic.
RANKINGS = ("score", "stability", "confidence_lower", "lift_lower", "lift", "confidence",
            "support")
RELATION_COLUMNS = ("rank", "antecedent", "consequent", "antecedent_name", "consequent_name",
                    "size", "support", "antecedent_support", "n_known", "co_support",
                    "confidence", "confidence_lower", "classic_confidence", "base_rate",
                    "lift", "lift_lower", "conviction_lower", "stability", "n_held",
                    "n_refits", "oob_n", "oob_confidence", "oob_lift", "score")
_OWNER = "mine_relations"


# ----------------------------------------------------------------------------- scoring
def relation_score(confidence_lower, base_rate, stability,
                   weight: float = STABILITY_WEIGHT) -> np.ndarray:
    """``log((1 - base_rate) / (1 - confidence_lower)) + weight * stability``: the log of the
    conviction's lower bound (0 when the rule says no more than the consequent's base rate,
    large when even the cautious confidence leaves few counterexamples where many were
    expected), plus the stability across refits."""
    lo = np.clip(np.asarray(confidence_lower, float), 0.0, 1.0 - 1e-6)
    base = np.clip(np.asarray(base_rate, float), 0.0, 1.0 - 1e-6)
    conv = np.log((1.0 - base) / (1.0 - lo))
    return np.nan_to_num(conv, nan=-np.inf) + weight * np.nan_to_num(np.asarray(stability))


def estimate_memory(ratings, n_refits: int, D: int, n_items_kept: int) -> dict:
    """Bytes the default path needs, by part, before anything is allocated: the KM fits
    (:meth:`KolmogorovModel._memory_estimate` of the larger fit, times the refits running
    at once), the refits' kept supports, the like/rating matrices and the candidate search."""
    from .._memory import F8
    from ._refits import refit_threads
    from .estimator import KolmogorovModel

    km = KolmogorovModel(D=D)
    fitted = ratings
    zeros = {}
    if ratings.implicit:   # the fits see every absent pair as a 0 (km_training_data)
        from types import SimpleNamespace

        from ..data.absent import expected_entries

        n = expected_entries(ratings)
        fitted = SimpleNamespace(n_users=ratings.n_users, n_items=ratings.n_items, n_ratings=n)
        zeros = {"the 0/1 matrix the fits train on (absent pairs as 0)": 3 * F8 * n}
    parts = km._memory_estimate({"D": D, "n_rand": km.n_rand}, fitted)
    fit = sum(parts.values())
    at_once = refit_threads(n_refits)
    m = n_items_kept
    from .conjunctive import BLOCK_CELLS, DENSE_CELLS

    return {f"KM fits ({at_once} at once, D up to {D})": fit * at_once,
            f"supports of {n_refits} refits": n_refits * ratings.n_items * max(D, 64) // 8,
            "likes and ratings, sparse, twice": 4 * 12 * ratings.n_ratings,
            f"pair search over {m:,} items (blocks of 512)": 3 * F8 * 512 * max(m, 1),
            "conjunction search (blocks)": 3 * F8 * BLOCK_CELLS,
            "dense likes and ratings of the search": 8 * ratings.n_users * ratings.n_items
            if ratings.n_users * ratings.n_items <= DENSE_CELLS else 0, **zeros}


def _check_memory(ratings, n_refits, D, m):
    from .._memory import check_allocation

    parts = estimate_memory(ratings, n_refits, D, m)
    need = check_allocation(_OWNER, parts, per_fit=True,
                            fix="fewer refits (n_refits) or fewer items")
    return need


# ----------------------------------------------------------------------------- the table
class PairCounts:
    """Every pair's likes ``co[j, i]`` (users who like j and i) and judged users
    ``known[j, i]`` (who like j and rated i), as sparse CSR matrices built once, antecedents
    by blocks of 512; :meth:`confidence` looks pairs up by sorted keys, no dense items x
    items array."""

    def __init__(self, c: LikeCounts, chunk: int = 512):
        n = c.ratings.n_items
        co_blocks, kn_blocks = [], []
        for lo in range(0, n, chunk):
            blk = c.L[:, lo:lo + chunk]
            co_blocks.append((blk.T @ c.L).tocsr())
            if not c.interactions:
                kn_blocks.append((blk.T @ c.R).tocsr())
        import scipy.sparse as sp

        self.n = n
        self.co = sp.vstack(co_blocks).tocsr() if co_blocks else sp.csr_matrix((n, n))
        self.co.sort_indices()
        self.support = c.n_likes.astype(np.int64)
        if c.interactions:
            self.known = None
        else:
            self.known = sp.vstack(kn_blocks).tocsr()
            self.known.sort_indices()
            self._kn_keys = self._keys(self.known)
        self._co_keys = self._keys(self.co)

    @staticmethod
    def _keys(m):
        rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
        return rows * m.shape[1] + m.indices.astype(np.int64)

    @staticmethod
    def _lookup(keys, data, want):
        pos = np.clip(np.searchsorted(keys, want), 0, max(keys.size - 1, 0))
        hit = keys[pos] == want if keys.size else np.zeros(want.size, bool)
        return np.where(hit, data[pos] if keys.size else 0, 0).astype(np.float64)

    def counts(self, a, b):
        """(likes, judged) of the pairs a[k] => b[k]."""
        want = np.asarray(a, np.int64) * self.n + np.asarray(b, np.int64)
        co = self._lookup(self._co_keys, self.co.data, want)
        kn = self.support[np.asarray(a, np.int64)].astype(np.float64) if self.known is None \
            else self._lookup(self._kn_keys, self.known.data, want)
        return co, kn

    def confidence(self, a, b):
        co, kn = self.counts(a, b)
        return np.divide(co, kn, out=np.zeros(co.size), where=kn > 0)

    def candidates(self, keep, min_co, min_conf):
        """Pairs (j, i), j != i, both kept, >= ``min_co`` users like both, confidence >=
        ``min_conf``."""
        m = self.co.tocoo()
        ok = (m.row != m.col) & (m.data >= min_co) & keep[m.row] & keep[m.col]
        j, i = m.row[ok].astype(np.int64), m.col[ok].astype(np.int64)
        co, kn = self.counts(j, i)
        good = co >= min_conf * kn - 1e-9
        return j[good], i[good]


def pair_count_bytes(c: LikeCounts) -> int:
    """An upper bound, from per-user counts, of :class:`PairCounts`' memory (12 bytes a
    stored pair, both matrices, plus their keys): users' likes x (likes + ratings)."""
    users = np.asarray(c.ratings.users)
    likes = np.bincount(users[c.like_mask], minlength=c.ratings.n_users).astype(np.float64)
    rated = np.bincount(users, minlength=c.ratings.n_users).astype(np.float64)
    n2 = float(c.ratings.n_items) ** 2
    return int(20 * (min(n2, (likes * likes).sum()) + min(n2, (likes * rated).sum())))


def _statistics(c: LikeCounts, a, b, cons, level, validation=None):
    R = None if c.interactions else c.R
    sup, kn, co = rule_counts(c.L, R, c.L, a, b, cons)
    conf = np.divide(co, kn, out=np.full(co.size, np.nan), where=kn > 0)
    lo, _ = wilson_interval(co, kn, level)
    base = np.divide(c.n_likes[cons], c.n_known[cons], out=np.full(cons.size, np.nan),
                     where=c.n_known[cons] > 0)
    out = {"support": sup, "antecedent_support": sup, "n_known": kn, "co_support": co,
           "confidence": conf, "confidence_lower": lo,
           "classic_confidence": np.divide(co, sup, out=np.full(co.size, np.nan),
                                           where=sup > 0),
           "base_rate": base, "lift": conf / np.where(base > 0, base, np.nan)}
    one = np.clip(1 - np.nan_to_num(lo), 1e-9, None)
    out["lift_lower"] = cautious_lift(co, kn, base)
    out["conviction_lower"] = (1 - base) / one
    if validation is not None:
        h = LikeCounts(validation, c.liked)
        if c.interactions:
            _, _, co_h = rule_counts(c.L, None, h.L, a, b, cons)
            kn_h = sup - co
            base_h = np.divide(h.n_likes[cons], validation.n_users - c.n_likes[cons])
        else:
            _, kn_h, co_h = rule_counts(c.L, h.R, h.L, a, b, cons)
            base_h = np.divide(h.n_likes[cons], h.n_known[cons],
                               out=np.full(cons.size, np.nan), where=h.n_known[cons] > 0)
        conf_h = np.divide(co_h, kn_h, out=np.full(co.size, np.nan), where=kn_h > 0)
        lo_h, _ = wilson_interval(co_h, kn_h, level)
        out.update({"heldout_n": kn_h, "heldout_co_support": co_h,
                    "heldout_confidence": conf_h, "heldout_confidence_lower": lo_h,
                    "heldout_base_rate": base_h,
                    "heldout_lift": conf_h / np.where(base_h > 0, base_h, np.nan)})
    return out


def _stability(refits, c, a, b, cons):
    """Per row: refits whose supports state it, and pooled out-of-bag counts over them."""
    n = cons.size
    held = np.zeros(n, np.int64)
    oob_n = np.zeros(n)
    oob_co = np.zeros(n)
    oob_exp = np.zeros(n)
    R = None if c.interactions else c.R
    pair = b < 0
    H = np.zeros((len(refits), n), bool)
    for t, r in enumerate(refits):
        bits = pack_supports(r["psi"])
        h = np.zeros(n, bool)
        h[pair] = subset_held(bits, a[pair], cons[pair])
        h[~pair] = conjunction_held(bits, a[~pair], b[~pair], cons[~pair])
        rated = np.asarray(r["rated"], bool)
        h &= rated[cons] & rated[a] & np.where(pair, True, rated[np.maximum(b, 0)])
        H[t] = h
        held += h
        oob = np.asarray(r["multiplicity"]) == 0
        rows = np.flatnonzero(h)
        if oob.any() and rows.size:
            _, kn, co = rule_counts(c.L, R, c.L, a[rows], b[rows], cons[rows], users=oob)
            Lo = c.L[oob]
            likes = np.asarray(Lo.sum(axis=0)).ravel()
            known = np.full(likes.size, oob.sum()) if R is None else \
                np.asarray(R[oob].sum(axis=0)).ravel()
            base = np.divide(likes, known, out=np.zeros(likes.size), where=known > 0)
            oob_n[rows] += kn
            oob_co[rows] += co
            oob_exp[rows] += kn * base[cons[rows]]
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = {"n_held": held, "oob_n": np.where(held > 0, oob_n / np.maximum(held, 1),
                                                   np.nan),
                 "oob_confidence": np.where(oob_n > 0, oob_co / oob_n, np.nan),
                 "oob_lift": np.where(oob_exp > 0, oob_co / oob_exp, np.nan)}
    return stats, H


def _beyond_halves(half, co, n) -> np.ndarray:
    """Conjunctions whose likes among the fans of both (``co`` of ``n``) beat the better
    half's confidence ``half``: one-sided binomial test at :data:`HALF_ALPHA`."""
    from scipy.stats import binom

    return binom.sf(np.asarray(co) - 1, np.asarray(n), np.asarray(half)) <= HALF_ALPHA


def mine_relations(ratings, *, liked=None, max_antecedent: int = 2, n_refits: int | None = None,
                   validation=None, random_state=0, progress: Callable | None = None,
                   stop: Callable[[], bool] | None = None, rank: str = "score",
                   items=None, level: float = 0.95, names=None,
                   settings: dict | None = None, refits: list | None = None) -> pd.DataFrame:
    """The relations that hold in ``ratings``, best first (module docstring).

    Parameters
    ----------
    ratings : Ratings
        The user's data (all of it: the settings are chosen on a split of it).
    liked : float, "interacted" or None
        What counts as a like (:func:`kmviz.rules.resolve_liked`; default the top quarter of
        the scale, 4 on 1-5 stars).
    max_antecedent : {1, 2}, default=2
        Items on the left: 1 lists pairs only, 2 adds conjunctions {a, b} => c.
    n_refits : int, optional
        KM refits for the stability (default :data:`DEFAULT_REFITS`; at most
        :data:`kmviz.km._checks.MAX_REFITS`).
    validation : Ratings, optional
        Held-out ratings in the same index space: adds the ``heldout_*`` columns.
    random_state : int or None, default=0
    progress : callable, optional
        ``progress(done, total, what)`` as the work advances.
    stop : callable, optional
        ``stop()`` true ends the work early (checked between fits, inside each refit's BCD
        loop and between blocks of the candidate search); the table then counts the refits
        done.
    rank : {"score", "stability", "confidence_lower", "lift", "confidence", "support"}
        The order of the rows (default the score).
    items : bool mask or indices, optional
        Only relations among these items (default every item).
    settings : dict, optional
        KM parameters for the refits (skips :func:`choose_settings`).
    refits : list, optional
        :func:`kmviz.km.stability.refit_supports` results to reuse (nothing refitted).

    Returns
    -------
    DataFrame with :data:`RELATION_COLUMNS` (and ``heldout_*``); ``attrs["chosen"]``: how the
    defaults were chosen (``summary``, ``settings``, the choice ``table``, ``warnings``),
    ``attrs["liked"]``, ``attrs["held"]`` (refits x rows), ``attrs["seconds"]``.
    """
    from ..rules import resolve_liked

    t_start = time.perf_counter()
    ck.check_ratings(_OWNER, ratings)
    max_antecedent = ck.check_int(_OWNER, "max_antecedent", max_antecedent, 1, 2)
    B = ck.check_n_refits(_OWNER, n_refits, DEFAULT_REFITS)
    validation = ck.check_validation(_OWNER, validation, ratings)
    level = ck.check_level(_OWNER, level)
    keep = ck.check_items(_OWNER, items, ratings.n_items)
    names = ck.check_names(_OWNER, names, ratings.n_items)
    if rank not in RANKINGS:
        raise ck.InvalidParameterError(f"{_OWNER}: rank must be one of {RANKINGS}; got "
                                       f"{rank!r}.")
    liked = resolve_liked(ratings, liked)
    keep = (np.ones(ratings.n_items, bool) if keep is None else keep) \
        & (ratings.item_counts() > 0)
    D_max = max(int(s["D"]) for s in _candidates(ratings)) if settings is None \
        else int(settings["D"])
    need = _check_memory(ratings, B, D_max, int(keep.sum()))

    def say(done, total, what):
        if progress is not None:
            progress(done, total, what)

    warnings_ = []
    c = LikeCounts.of(ratings, liked)
    # KM's fits: one-class data (only ones) with every absent pair as a 0, so that a fit
    # has something to learn and validation something to judge
    km_data = km_training_data(ratings) if (settings is None or refits is None) else None
    if settings is None and refits is None:
        say(0, B + 2, "choosing the model's settings on validation")
        chosen = choose_settings(km_data, liked, random_state=random_state, stop=stop,
                                 candidates=_candidates(ratings))
        settings = chosen["settings"]
        if not chosen["better_than_mean"]:
            warnings_.append("KM is no better than the mean on validation at any setting "
                             "tried: stability is weak evidence here. "
                             + no_better_fix(chosen["table"]))
    else:
        chosen = {"settings": settings, "summary": "settings given by the caller",
                  "better_than_mean": None}
    say(1, B + 2, "listing the candidate relations")
    ordering = {"order": "conviction", "summary": ""}
    if rank == "score" and not (stop is not None and stop()):
        ordering = choose_ranking(ratings, liked, pairs_of=PairCounts,
                                  min_confidence=MIN_CONFIDENCE, random_state=random_state)
    from .._memory import FitTooLargeError, fit_memory_limit, format_bytes

    extra = pair_count_bytes(c)
    limit, source = fit_memory_limit()
    if need + extra > limit:
        raise FitTooLargeError(
            f"{_OWNER}: counting every pair of items would need about "
            f"{format_bytes(need + extra)}, more than the limit of {format_bytes(limit)} "
            f"({source}). Fix: fewer items (items=...) or a higher limit.",
            needed=need + extra, limit=limit, parts={"pair counts": extra})
    pairs = PairCounts(c)
    j, i = pairs.candidates(keep, MIN_CO, MIN_CONFIDENCE)
    a, b, cons = j, np.full(j.size, -1, np.int64), i
    conj_info = {}
    if max_antecedent >= 2:
        pair_conf = pairs.confidence
        found = conjunction_candidates(c.L, None if c.interactions else c.R, min_co=MIN_CO,
                                       holds=HOLDS, pair_conf=pair_conf, items=keep,
                                       stop=stop, gate=_beyond_halves)
        conj_info = {k: found[k] for k in ("examined", "antecedent_pairs", "capped")}
        a = np.concatenate([a, found["a"]])
        b = np.concatenate([b, found["b"]])
        cons = np.concatenate([cons, found["c"]])
    stats = _statistics(c, a, b, cons, level, validation)
    stats["half_confidence"] = np.full(cons.size, np.nan)
    stats["half_p_value"] = np.full(cons.size, np.nan)
    two = np.flatnonzero(b >= 0)
    if two.size:
        # a conjunction must say more than its better half: its likes among the fans of
        # both, tested against the better half's confidence (one-sided binomial)
        from scipy.stats import binom

        half = np.maximum(pairs.confidence(a[two], cons[two]),
                          pairs.confidence(b[two], cons[two]))
        pv = binom.sf(stats["co_support"][two] - 1, stats["n_known"][two], half)
        stats["half_confidence"][two] = half
        stats["half_p_value"][two] = pv
        drop = np.zeros(cons.size, bool)
        drop[two[pv > HALF_ALPHA]] = True
        conj_info["not_beyond_halves"] = int(drop.sum())
        # the halves a => c and b => c of a kept conjunction are not rules of their own
        kept = two[pv <= HALF_ALPHA]
        n = ratings.n_items
        halves = np.union1d(a[kept] * n + cons[kept], b[kept] * n + cons[kept])
        one = b < 0
        drop[one] |= np.isin(a[one] * n + cons[one], halves)
        conj_info["halves_dropped"] = int(drop[one].sum())
        if drop.any():
            a, b, cons = a[~drop], b[~drop], cons[~drop]
            stats = {k: v[~drop] for k, v in stats.items()}
    if refits is None:
        refits = run_refits(km_data, settings, B, random_state, stop=stop,
                            progress=lambda d, t: say(1 + d, B + 2, f"refit {d} of {t}"))
    done = len(refits)
    if done:
        st, H = _stability(refits, c, a, b, cons)
        stability = st["n_held"] / done
    else:
        st = {"n_held": np.zeros(cons.size, np.int64), "oob_n": np.full(cons.size, np.nan),
              "oob_confidence": np.full(cons.size, np.nan),
              "oob_lift": np.full(cons.size, np.nan)}
        H = np.zeros((0, cons.size), bool)
        stability = np.zeros(cons.size)
        warnings_.append("Stopped before the first refit ended: no stability.")
    weight = STABILITY_WEIGHT if chosen.get("better_than_mean") is not False else 0.0
    if ordering["order"] == "conviction":
        score = relation_score(stats["confidence_lower"], stats["base_rate"], stability, weight)
        how = f"log conviction lower bound + {weight:g} x stability"
    else:
        score = np.nan_to_num(np.log(np.clip(stats["lift_lower"], 1e-12, None)), nan=-np.inf)
        how = (f"log cautious lift; rows on fewer than {FEW_FANS} fans who rated the "
               "consequent last; within each part the conjunctions after the pairs, and "
               "within those the rows no refit states")
    nm = _names(names if names is not None else ratings, ratings.n_items)
    ante = [(int(x),) if y < 0 else (int(x), int(y)) for x, y in zip(a, b)]
    df = pd.DataFrame({"antecedent": ante, "consequent": cons.astype(np.int64),
                       "antecedent_name": [" & ".join(nm[k] for k in t) for t in ante],
                       "consequent_name": [nm[k] for k in cons],
                       "size": np.where(b >= 0, 2, 1).astype(np.int64), **stats,
                       "stability": stability, "n_held": st["n_held"],
                       "n_refits": np.full(cons.size, done, np.int64),
                       "oob_n": st["oob_n"], "oob_confidence": st["oob_confidence"],
                       "oob_lift": st["oob_lift"], "score": score})
    key = df[rank].to_numpy(dtype=float)
    keys = [cons, b, a, -df["co_support"].to_numpy(),
            -np.nan_to_num(df["score"].to_numpy(), neginf=-1e300),
            -np.nan_to_num(key, nan=-np.inf)]
    if rank == "score" and ordering["order"] != "conviction":
        # the rows on few fans, then the conjunctions, then the rows no refit states,
        # follow the others
        keys += tendency_tiers(stats["n_known"], np.where(b >= 0, 2, 1), st["n_held"])
    order = np.lexsort(tuple(keys))
    df = df.iloc[order].reset_index(drop=True)
    df.insert(0, "rank", np.arange(1, len(df) + 1))
    chosen = {k: v for k, v in chosen.items()}
    chosen["warnings"] = warnings_
    chosen["ranking"] = ordering
    chosen["summary"] = (chosen.get("summary", "") + f" {done} refits on half the users; "
                         f"ranked by {rank}" + (f" ({how}). {ordering['summary']}"
                                                if rank == "score" else "."))
    df.attrs.update(chosen=chosen, liked=liked, held=H[:, order], n_refits=done,
                    conjunction_search=conj_info, memory_estimate=need,
                    seconds=time.perf_counter() - t_start,
                    refit_seconds=[float(r.get("seconds", np.nan)) for r in refits])
    say(B + 2, B + 2, "done")
    return df
