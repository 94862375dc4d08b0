"""Implications that survive resampling: stability selection over refits of the model.

One fit of a Kolmogorov model is one draw from a non-convex problem: an implication j => i
(``supp(psi_j) ⊆ supp(psi_i)``) found in one local optimum may be absent from the next.
:func:`stable_implications` fits the model ``B`` times, each on a resample of the users
(half of them without replacement by default, or a bootstrap) with its own seed, and gives
every implication its *stability*: the share of the refits in which it holds. Each refit
also checks its implications on the users it did not see (out of bag): among those users
who like j and rated i, how many like i. Pooled over the refits in which the pair holds,
that gives an out-of-bag confidence and lift. Its lower confidence bound (``oob_lift_lo``)
is the Wilson bound of the mean per-refit counts scaled by the number of *distinct* users
the holding refits left out (:func:`_distinct_cover`: the refits reuse the same users, so n
refits carry at most ``1 / (1 - in-bag share)`` times one refit's evidence, not n times): a
pair held in more refits has more evidence and a tighter bound, and a pair with almost no
co-ratings cannot head the list.

The default ranking (:func:`ranking_order`): the rows with at least ``min_oob_n``
out-of-bag ratings of i among j's fans per refit first (enough evidence to be judged), then
by ``oob_lift_lo``, then stability and co-support. :func:`stability_order` ranks by
stability alone: the order of stability selection's claims, which on planted KM data keeps
precision 1.00 where one fit does not (bench section 3, tests/km/test_stability.py).

The refits go through :func:`map_refits`, a map over independent tasks with a progress
callback and a stop flag, on the active :mod:`kmviz.parallel` backend: in process one refit
per Numba thread at once (each on one thread), or inside
``kmviz.parallel_backend("dask", ...)`` one Dask task per refit, the ratings put on the
workers once. Each refit's seed comes from ``random_state`` and its position alone, so the
table is the same wherever the refits ran.

The one default (:data:`DEFAULTS`) was chosen on validation splits of MovieLens 100K and
latest-small together (the inner 80/20 of the training parts of outer splits 0 and 1, never
their held-out parts) and is the same for every dataset: KM on the ratings, D = 8, B = 20
refits on half the users, rows with >= 5 out-of-bag ratings ranked first by the distinct-user
bound (top 100 validation lift 1.27 on latest-small / 1.34 on ML-100K with 53 / 56 judged,
against 1.18 / 1.28 for the previous default, stable >= 0.25 first, then the per-refit
bound). The held-out figures are in bench/miner/implications_stability.py's section 2: below the
lift of 1.5 aimed at.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..rules import (
    HUB_SHARE,
    INTERACTED,
    LikeCounts,
    _names,
    _ratio,
    pair_statistics,
    wilson_interval,
)
from ._refits import _no_convergence_warnings, map_refits  # noqa: F401

__all__ = ["stable_implications", "map_refits", "resample_users", "refit_supports",
           "rank_stable", "stability_order", "add_stability", "sort_by_stability",
           "stability_caption",
           "refits_held", "row_held", "evidence_caption", "evidence_sentence", "DEFAULTS", "MIN_JUDGED",
           "RESAMPLING", "STABILITY_COLUMNS", "refit_memory_estimate", "check_refit_memory"]

#: The one default, for every dataset (chosen on validation splits: module docstring).
DEFAULTS = {
    "D": 8,             # events of each refit
    "n_refits": 20,     # B
    "resampling": "subsample",  # half the users, without replacement
    "train_on": "ratings",  # "ratings" or "likes" (KolmogorovModel(threshold=liked))
    "stable_share": 0.25,   # stability from which a pair counts as stable (the flag)
    "min_oob_n": 5,     # out-of-bag ratings of i among j's fans (per refit) to rank high
}
RESAMPLING = ("bootstrap", "subsample")
#: Held-out (or out-of-bag) ratings of i among j's fans from which a pair can be judged.
MIN_JUDGED = 3
#: Largest number of items the stability counts are kept for (dense items x items arrays).
MAX_ITEMS = 4000
#: The columns stability adds to an implication table.
STABILITY_COLUMNS = ("stability", "n_held", "n_refits", "oob_n", "oob_co_support",
                     "oob_confidence", "oob_lift", "oob_lift_lo")


# ----------------------------------------------------------------------------- refits
def resample_users(ratings, rng, how: str = "bootstrap", fraction: float = 0.5):
    """A resample of the users of ``ratings`` (same items) and each user's multiplicity.

    ``how="bootstrap"``: as many draws with replacement as there are users with ratings (a
    user drawn twice becomes two users); ``"subsample"``: ``fraction`` of them without
    replacement. Returns ``(resampled Ratings, multiplicity per original user)``; users with
    multiplicity 0 are out of bag.
    """
    if how not in RESAMPLING:
        raise ValueError(f"resampling must be one of {RESAMPLING}; got {how!r}.")
    rng = np.random.default_rng(rng)
    users = np.asarray(ratings.users)
    order = np.argsort(users, kind="stable")
    counts = np.bincount(users, minlength=ratings.n_users)
    start = np.concatenate([[0], np.cumsum(counts)])
    active = np.flatnonzero(counts)
    if how == "bootstrap":
        drawn = rng.choice(active, size=active.size, replace=True)
    else:
        k = max(1, int(round(fraction * active.size)))
        drawn = np.sort(rng.choice(active, size=k, replace=False))
    lens = counts[drawn]
    new_user = np.repeat(np.arange(drawn.size), lens)
    offs = np.repeat(start[drawn] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    pos = order[np.arange(lens.sum()) + offs]
    sample = ratings._replace_entries(
        new_user, np.asarray(ratings.items)[pos], np.asarray(ratings.values)[pos],
        n_users=int(drawn.size), user_ids=None, user_names=None, user_features=None,
        user_graph=None)
    return sample, np.bincount(drawn, minlength=ratings.n_users)


def refit_supports(task: dict, ratings=None, stop=None) -> dict:
    """One refit: resample the users, fit KM, return the supports (bool items x D), the
    items rated in the resample, the users' multiplicities and the task's ``seed``.
    ``task`` holds ``seed``, ``resampling``, ``fraction``, ``settings`` (KolmogorovModel
    parameters) and ``ratings`` unless they are passed apart (shared by every refit)."""
    from .estimator import KolmogorovModel

    ratings = task["ratings"] if ratings is None else ratings
    rng = np.random.default_rng(task["seed"])
    sample, mult = resample_users(ratings, rng, task.get("resampling", "bootstrap"),
                                  task.get("fraction", 0.5))
    model = KolmogorovModel(**{**task["settings"],
                               "random_state": int(rng.integers(2**31 - 1))})
    t0 = time.perf_counter()
    with _no_convergence_warnings():
        model.fit(sample, callback=None if stop is None else (lambda row: not stop()))
    if stop is not None and model.trace_.stop_reason == "callback":
        return {"stopped": True, "seed": int(task["seed"])}
    return {"psi": np.asarray(model.psi_) > 0, "rated": sample.item_counts() > 0,
            "multiplicity": mult, "seconds": time.perf_counter() - t0,
            "seed": int(task["seed"])}


refit_supports.takes_stop = True   # map_refits passes its stop flag into the BCD loop


def refit_memory_estimate(ratings, n_refits: int, n_items_kept: int, D: int) -> dict:
    """Bytes :func:`stable_implications` needs, by part, before anything is allocated: the
    KM fits running at once (their own estimate), the kept items' counts (items x items:
    held, three pooled sums, one refit's dense co-occurrences) and each refit's kept
    implications (items x items bool per refit)."""
    from ._refits import refit_threads
    from .estimator import KolmogorovModel

    km = KolmogorovModel(D=D)
    fit = sum(km._memory_estimate({"D": D, "n_rand": km.n_rand}, ratings).values())
    m2 = int(n_items_kept) ** 2
    return {f"KM fits ({refit_threads(n_refits)} at once, D = {D})":
            fit * refit_threads(n_refits),
            f"counts over {n_items_kept:,} items (items x items, 6 arrays)": 44 * m2,
            f"the implications of {n_refits} refits (items x items bool each)":
            n_refits * m2 * 2}


def check_refit_memory(ratings, n_refits: int, n_items_kept: int, D: int) -> int:
    """Refuse (:class:`kmviz._memory.FitTooLargeError`) refits whose estimate passes the
    per-fit memory limit, before any is started; returns the estimate in bytes."""
    from .._memory import check_allocation

    parts = refit_memory_estimate(ratings, n_refits, n_items_kept, D)
    need = check_allocation("stable_implications", parts, per_fit=True,
                            fix="fewer refits (n_refits) or fewer items (items=...)")
    return need


def _subset_matrix(psi: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``[j, i]``: supp(psi_j) ⊆ supp(psi_i), j != i, both items ``ok`` (non-empty supports)."""
    p = psi.astype(np.float32)
    out = (p @ (1.0 - p).T) < 0.5
    out &= ok[:, None] & ok[None, :]
    np.fill_diagonal(out, False)
    return out


# ----------------------------------------------------------------------------- the table
def _settings(ratings, liked, train_on, km_settings) -> dict:
    s = {"D": DEFAULTS["D"], **km_settings}
    if train_on not in ("ratings", "likes"):
        raise ValueError(f"train_on must be 'ratings' or 'likes'; got {train_on!r}.")
    if train_on == "likes" and "threshold" not in km_settings and liked != INTERACTED:
        s["threshold"] = float(liked)
    return s


def stable_implications(ratings, *, liked=None, n_refits: int | None = None,
                        random_state=None, validation=None, items=None,
                        resampling: str | None = None, fraction: float = 0.5,
                        train_on: str | None = None, stable_share: float | None = None,
                        min_stability: float = 0.0, min_oob_n: float | None = None,
                        hub_share: float = HUB_SHARE,
                        level: float = 0.95, names=None, progress: Callable | None = None,
                        stop: Callable[[], bool] | None = None, refits: list | None = None,
                        **km_settings) -> pd.DataFrame:
    """Implications j => i of ``n_refits`` KM fits on resampled users, with their stability.

    Parameters
    ----------
    ratings : Ratings
        The (training) ratings.
    liked : float, "interacted" or None
        What counts as a like (:func:`kmviz.rules.resolve_liked`), for every statistic.
    n_refits : int, optional
        B, the number of refits (default :data:`DEFAULTS`).
    random_state : int or None
        Seeds the resamples and each refit's initialization.
    validation : Ratings, optional
        Held-out ratings: adds the ``heldout_*`` columns and ``judged``.
    items : array-like of int or bool mask, optional
        The items taken into account (default: those with at least 20 ratings on data with
        more than 10,000 ratings, else every rated item); at most :data:`MAX_ITEMS`.
    resampling : {"bootstrap", "subsample"}, optional
        How the users are resampled (``fraction`` of them for "subsample", the default).
    train_on : {"ratings", "likes"}, optional
        Fit the ratings, or the likes (``threshold=liked``).
    stable_share : float, optional
        Stability from which a pair is stable (ranked first).
    min_stability : float, default=0.0
        Keep the pairs held in at least this share of the refits (and in one at least).
    min_oob_n : float, optional
        Out-of-bag evidence (mean per refit of j's fans who rated i) from which a row can
        rank high (default :data:`DEFAULTS`).
    progress, stop : callables, optional
        ``progress(done, total)`` after each refit; ``stop()`` true ends the refits early
        (the table then counts the refits done).
    refits : list, optional
        Results of :func:`refit_supports` to reuse (then nothing is fitted).
    **km_settings
        KolmogorovModel parameters (default D from :data:`DEFAULTS`).

    Returns
    -------
    DataFrame
        In the default ranking (:func:`rank_stable`): ``rank``, ``antecedent``,
        ``consequent`` (item indices), ``antecedent_name``, ``consequent_name``,
        ``stability``, ``n_held``, ``n_refits``, the statistics of
        :func:`kmviz.rules.pair_statistics` on ``ratings`` (and ``heldout_*``), the
        out-of-bag ``oob_n``, ``oob_co_support``, ``oob_confidence``, ``oob_lift``,
        ``oob_lift_lo``, ``implied_by``, ``hub``, ``score``, ``lift_lo``, ``supported``,
        ``stable``, ``judged`` and ``equivalent``. ``attrs``: ``liked``, ``settings``,
        ``n_refits``, ``held`` (refits x pairs bool, which refits held each row) and
        ``seconds`` and ``seeds`` per refit, ``refits_ran`` (where the refits ran, when a
        parallel backend was active).
    """
    from . import _checks as ck
    from .analysis import default_min_ratings

    owner = "stable_implications"
    ck.check_ratings(owner, ratings)
    B = ck.check_n_refits(owner, n_refits, DEFAULTS["n_refits"])
    fraction = ck.check_fraction(owner, fraction)
    level = ck.check_level(owner, level)
    min_stability = ck.check_share(owner, "min_stability", min_stability)
    hub_share = ck.check_share(owner, "hub_share", hub_share)
    validation = ck.check_validation(owner, validation, ratings)
    names = ck.check_names(owner, names, ratings.n_items)
    resampling = resampling or DEFAULTS["resampling"]
    if resampling not in RESAMPLING:
        raise ck.InvalidParameterError(f"{owner}: resampling must be one of {RESAMPLING}; "
                                       f"got {resampling!r}.")
    train_on = train_on or DEFAULTS["train_on"]
    stable_share = DEFAULTS["stable_share"] if stable_share is None else \
        ck.check_share(owner, "stable_share", stable_share)
    min_oob_n = DEFAULTS["min_oob_n"] if min_oob_n is None else float(min_oob_n)
    c = LikeCounts.of(ratings, liked)
    n = ratings.n_items
    mask = ck.check_items(owner, items, n)
    keep = ratings.item_counts() >= default_min_ratings(ratings) if mask is None else mask
    keep &= ratings.item_counts() > 0
    idx = np.flatnonzero(keep)
    if idx.size > MAX_ITEMS:
        raise ValueError(f"{idx.size:,} items are more than {MAX_ITEMS:,}: pass items=... "
                         "(e.g. the items with at least 20 ratings).")
    settings = _settings(ratings, c.liked, train_on, km_settings)
    if refits is None or len(refits):
        check_refit_memory(ratings, B, idx.size, int(settings.get("D", DEFAULTS["D"])))
    ran = None
    if refits is None:
        # one-class data: the refits fit every absent pair as a 0 (only ones teach nothing)
        from ..data.absent import fitted_entries

        fitted = fitted_entries(ratings)
        ran = refits_where()
        seeds = np.random.SeedSequence(random_state).generate_state(B)
        tasks = [{"seed": int(s), "resampling": resampling, "fraction": fraction,
                  "settings": settings} for s in seeds]
        refits = map_refits(refit_supports, tasks, shared=fitted, progress=progress,
                            stop=stop)
    if not refits:
        raise RuntimeError("Stopped before the first refit ended: no stability to show.")
    m = idx.size
    held = np.zeros((m, m), np.int32)
    co_sum = np.zeros((m, m))
    n_sum = np.zeros((m, m))
    exp_sum = np.zeros((m, m))
    L = c.L.tocsr()[:, idx]
    R = (c.R.tocsr() if not c.interactions else
         sp.csr_matrix(np.ones((ratings.n_users, n), np.int32)))[:, idx]
    per_refit = []
    for r in refits:
        psi = r["psi"][idx]
        hold = _subset_matrix(psi, psi.any(axis=1) & r["rated"][idx])
        held += hold
        per_refit.append(hold)
        oob = np.flatnonzero(r["multiplicity"] == 0)
        if oob.size:
            Lo, Ro = L[oob], R[oob]
            co = (Lo.T @ Lo).toarray()
            nk = (Lo.T @ Ro).toarray()
            base = _ratio(np.asarray(Lo.sum(axis=0)).ravel(), np.asarray(Ro.sum(axis=0)).ravel())
            co_sum += np.where(hold, co, 0)
            n_sum += np.where(hold, nk, 0)
            exp_sum += np.where(hold, nk * np.nan_to_num(base)[None, :], 0)
    done = len(refits)
    least = max(1, int(np.ceil(min_stability * done - 1e-9)))
    a, b = np.nonzero(held >= least)
    n_held = held[a, b]
    mean_co, mean_n = co_sum[a, b] / n_held, n_sum[a, b] / n_held
    active = np.bincount(np.asarray(ratings.users), minlength=ratings.n_users) > 0
    cover = _distinct_cover(n_held, _in_bag_share(refits, active))
    conf_lo, _ = wilson_interval(mean_co * cover, mean_n * cover, level)
    oob_base = _ratio(exp_sum[a, b], n_sum[a, b])
    j, i = idx[a], idx[b]
    df = pair_statistics(ratings, j, i, counts=c, validation=validation, level=level)
    df.insert(2, "stability", n_held / done)
    df.insert(3, "n_held", n_held.astype(np.int64))
    df.insert(4, "n_refits", np.full(a.size, done, np.int64))
    df["oob_n"] = mean_n
    df["oob_co_support"] = mean_co
    df["oob_confidence"] = _ratio(co_sum[a, b], n_sum[a, b])
    df["oob_lift"] = _ratio(co_sum[a, b], exp_sum[a, b])
    df["oob_lift_lo"] = _ratio(conf_lo, oob_base)
    stable = held >= stable_share * done
    implied_by = stable.sum(axis=0)
    df["implied_by"] = implied_by[b].astype(np.int64)
    df["hub"] = df["implied_by"].to_numpy() > hub_share * max(m, 1)
    df["equivalent"] = stable[b, a] & stable[a, b]
    nm = _names(names if names is not None else ratings, n)
    df.insert(2, "antecedent_name", [nm[k] for k in j])
    df.insert(3, "consequent_name", [nm[k] for k in i])
    H = np.stack([h[a, b] for h in per_refit]) if per_refit else np.zeros((0, a.size), bool)
    df = rank_stable(df, stable_share=stable_share, validation=validation is not None,
                     min_oob_n=min_oob_n)
    df.attrs.update(liked=c.liked, settings={**settings, "resampling": resampling,
                                             "train_on": train_on, "n_refits": B},
                    n_refits=done, held=H[:, df.pop("_row").to_numpy()],
                    seconds=[float(r.get("seconds", np.nan)) for r in refits],
                    seeds=[r.get("seed") for r in refits], refits_ran=ran,
                    stable_share=stable_share, min_oob_n=min_oob_n)
    return df


def ranking_order(df: pd.DataFrame, min_oob_n: float = DEFAULTS["min_oob_n"]) -> np.ndarray:
    """Row positions of a table carrying the stability columns in the default ranking: rows
    with at least ``min_oob_n`` out-of-bag ratings of i among j's fans per refit first (they
    can be judged), then by ``oob_lift_lo`` (the out-of-bag lift's lower bound, counted over
    the distinct users the holding refits left out, so it grows with stability), then
    stability and co-support."""
    key = df["oob_lift_lo"].fillna(-np.inf).to_numpy()
    enough = df["oob_n"].fillna(0).to_numpy() >= float(min_oob_n) - 1e-12
    return np.lexsort((df["consequent"].to_numpy(), df["antecedent"].to_numpy(),
                       -df["co_support"].to_numpy(), -df["stability"].to_numpy(), -key,
                       ~enough))


def rank_stable(df: pd.DataFrame, *, stable_share: float = DEFAULTS["stable_share"],
                validation: bool = False,
                min_oob_n: float = DEFAULTS["min_oob_n"]) -> pd.DataFrame:
    """The default ranking of a stability table (:func:`ranking_order`). Adds ``score``,
    ``lift_lo``, ``supported`` (exact test, p <= 0.05), ``stable`` (stability >=
    ``stable_share``), ``judged`` (>= :data:`MIN_JUDGED` held-out ratings of i among j's fans
    when there is a held-out part, else out-of-bag) and ``rank``; keeps the input row in
    ``_row``."""
    from ..rules import ALPHA

    df = df.copy()
    df["_row"] = np.arange(len(df))
    df["score"] = df["confidence_lo"] - df["base_rate"]
    df["lift_lo"] = _ratio(df["confidence_lo"], df["base_rate"])
    df["supported"] = df["p_value"].to_numpy() <= ALPHA
    df["stable"] = df["stability"].to_numpy() >= stable_share - 1e-12
    n_ev = df["heldout_n"] if validation and "heldout_n" in df else df["oob_n"]
    df["judged"] = n_ev.fillna(0).to_numpy() >= MIN_JUDGED
    df = df.iloc[ranking_order(df, min_oob_n)].reset_index(drop=True)
    if "rank" in df:
        df = df.drop(columns="rank")
    df.insert(0, "rank", np.arange(1, len(df) + 1))
    return df


def stability_order(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of a table carrying ``stability`` by stability alone (then the lower bound
    of the out-of-bag lift, then co-support): the order of stability selection's claims,
    in which the implications held in most refits come first."""
    key = df["oob_lift_lo"].fillna(-np.inf).to_numpy() if "oob_lift_lo" in df else \
        np.zeros(len(df))
    order = np.lexsort((df["consequent"].to_numpy(), df["antecedent"].to_numpy(),
                        -df["co_support"].to_numpy(), -key, -df["stability"].to_numpy()))
    return df.iloc[order]


def add_stability(df: pd.DataFrame, stable: pd.DataFrame | None) -> pd.DataFrame:
    """``df`` (rows with ``antecedent``, ``consequent``) with the :data:`STABILITY_COLUMNS`
    of a :func:`stable_implications` table beside each row: stability 0 and no out-of-bag
    figures for a pair that held in no refit."""
    if stable is None:
        return df
    out = df.copy()
    n = 1 + int(max((np.max(x.to_numpy(np.int64), initial=0) for x in (
        out["antecedent"], out["consequent"], stable["antecedent"], stable["consequent"]))))
    key = stable["antecedent"].to_numpy(np.int64) * n + stable["consequent"].to_numpy(np.int64)
    order = np.argsort(key)
    want = out["antecedent"].to_numpy(np.int64) * n + out["consequent"].to_numpy(np.int64)
    pos = np.clip(np.searchsorted(key[order], want), 0, max(key.size - 1, 0))
    hit = key[order][pos] == want if key.size else np.zeros(want.size, bool)
    rows = order[pos] if key.size else pos
    done = int(stable.attrs.get("n_refits", stable["n_refits"].max() if len(stable) else 0))
    for col in STABILITY_COLUMNS:
        vals = stable[col].to_numpy()[rows] if key.size else np.zeros(want.size)
        if col in ("stability", "n_held"):
            vals = np.where(hit, vals, 0)
        elif col == "n_refits":
            vals = np.full(want.size, done, np.int64)
        else:
            vals = np.where(hit, vals.astype(float), np.nan)
        out[col] = vals
    return out


def sort_by_stability(frame: pd.DataFrame,
                      min_oob_n: float = DEFAULTS["min_oob_n"]) -> pd.DataFrame:
    """Rows carrying the stability columns (:func:`add_stability`) in the default ranking
    of :func:`rank_stable` (:func:`ranking_order`), for any implication table."""
    return frame.iloc[ranking_order(frame, min_oob_n)]


def _in_bag_share(refits, active: np.ndarray) -> float:
    """Mean share of the ``active`` users (those with ratings) that a refit saw (0.5 for
    half subsamples, about 0.63 for bootstraps)."""
    shares = []
    for r in refits:
        m = np.asarray(r["multiplicity"])[active]
        shares.append(float(np.mean(m > 0)) if m.size else 0.5)
    return float(np.mean(shares)) if shares else 0.5


def _distinct_cover(n_held, in_bag: float) -> np.ndarray:
    """Expected number of distinct out-of-bag users over ``n_held`` refits, in units of one
    refit's out-of-bag set: ``(1 - f^n) / (1 - f)`` with ``f`` the in-bag share (1 for one
    refit, at most ``1 / (1 - f)``): the pooled counts of several refits reuse the same users,
    so this, not ``n_held``, is how much more evidence they carry than one refit."""
    f = min(max(float(in_bag), 0.0), 1.0 - 1e-9)
    return (1.0 - f ** np.asarray(n_held, dtype=float)) / (1.0 - f)


def stability_caption(df: pd.DataFrame, shown: int | None = None) -> str:
    """How many refits, how many stable pairs, and how many of the first ``shown`` rows have
    enough evidence to be judged."""
    top = df if shown is None else df.head(int(shown))
    done = int(df.attrs.get("n_refits", 0))
    share = float(df.attrs.get("stable_share", DEFAULTS["stable_share"]))
    n_stable = int(df["stable"].sum()) if "stable" in df else 0
    where = "held-out" if "heldout_n" in df else "out-of-bag"
    ran = df.attrs.get("refits_ran")
    return (f"{done} refits on resampled users; {n_stable:,} implications hold in at least "
            f"{share:.0%} of them (stable). Of the {len(top):,} rows shown, "
            f"{int(top['judged'].sum()):,} have at least {MIN_JUDGED} {where} ratings of i "
            "among j's fans: enough evidence to be judged." + (f" {ran}" if ran else ""))


def refits_where() -> str | None:
    """Where the refits run when a parallel backend is active (its ``describe``), else
    None (in process, the default, goes unsaid)."""
    from ..parallel import active_backend

    backend = active_backend()
    return None if backend is None else backend.describe("The refits")


def refits_held(stable: pd.DataFrame, antecedent: int, consequent: int) -> np.ndarray:
    """Per refit of a :func:`stable_implications` table: whether j => i held (all False
    for a pair that held in none)."""
    H = stable.attrs.get("held")
    if H is None:
        return np.zeros(0, bool)
    hit = np.flatnonzero((stable["antecedent"].to_numpy() == int(antecedent))
                         & (stable["consequent"].to_numpy() == int(consequent)))
    return H[:, hit[0]].copy() if hit.size else np.zeros(H.shape[0], bool)


def row_held(table: pd.DataFrame, row) -> np.ndarray:
    """Per refit: whether ``row`` of ``table`` held. A relation table
    (:func:`kmviz.km.relations.mine_relations`) keeps one column of ``attrs["held"]`` per row
    in rank order, for any antecedent size; a :func:`stable_implications` table is looked up
    by its (antecedent, consequent) pair."""
    H = table.attrs.get("held")
    if H is None:
        return np.zeros(0, bool)
    if "rank" in table and "rank" in row and H.shape[1] == len(table):
        k = int(row["rank"]) - 1
        return H[:, k].copy() if 0 <= k < H.shape[1] else np.zeros(H.shape[0], bool)
    ante = row["antecedent"]
    ante = ante[0] if isinstance(ante, tuple) and len(ante) == 1 else ante
    if isinstance(ante, tuple):
        return np.zeros(0, bool)
    return refits_held(table, int(ante), int(row["consequent"]))


def evidence_caption(rows: pd.DataFrame) -> str:
    """How many of ``rows`` have enough evidence to be judged: at least :data:`MIN_JUDGED`
    held-out ratings of i among j's fans (out-of-bag per refit without a held-out part)."""
    col, where = (("heldout_n", "held-out") if "heldout_n" in rows else
                  ("oob_n", "out-of-bag (per refit)") if "oob_n" in rows else (None, ""))
    if col is None or not len(rows):
        return ""
    k = int((rows[col].fillna(0).to_numpy() >= MIN_JUDGED).sum())
    return (f"{k:,} of the {len(rows):,} rows shown have at least {MIN_JUDGED} {where} "
            "ratings of i among j's fans: enough evidence to judge them; the others rest on "
            "too few co-ratings to say.")


def evidence_sentence(row) -> str:
    """The held-out and out-of-bag evidence of one row, in words (plain text)."""
    parts = []
    if "stability" in row:
        parts.append(f"held in {int(row['n_held'])} of {int(row['n_refits'])} refits "
                     f"(stability {row['stability']:.2f})")
    parts.append(f"training: {int(row['co_support']):,} of {int(row['n_known']):,} of j's fans "
                 f"like i (base rate {row['base_rate']:.0%}, lift {row['lift']:.2f})")
    n = row.get("heldout_n", 0)
    if n == n and n:
        lo, hi = wilson_interval(row["heldout_co_support"], n)
        parts.append(f"held-out: {int(row['heldout_co_support']):,} of {int(n):,} like i "
                     f"(confidence {row['heldout_confidence']:.2f}, 95% interval "
                     f"{float(lo):.2f}-{float(hi):.2f}; lift {row['heldout_lift']:.2f})")
    else:
        parts.append("held-out: no held-out rating of i among j's fans")
    oob = row.get("oob_n", np.nan)
    if oob == oob and "oob_lift" in row and "oob_co_support" in row:
        parts.append(f"out of bag: {row['oob_co_support']:.1f} of {oob:.1f} per refit "
                     f"like i (lift {row['oob_lift']:.2f}; lower bound over the distinct "
                     f"users the holding refits left out {row['oob_lift_lo']:.2f})")
    elif oob == oob and "oob_confidence" in row:  # a relation table's out-of-bag columns
        parts.append(f"out of bag: {oob:.1f} of i's raters per holding refit among the users "
                     f"it left out, confidence {row['oob_confidence']:.2f}, lift "
                     f"{row.get('oob_lift', np.nan):.2f}")
    return "; ".join(parts) + "."
