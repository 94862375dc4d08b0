"""How the relation miner chooses what KM is fitted with, on the user's data: the candidate
settings (rated data, or one-class and 0/1 data), each fitted on 80 % of each user's ratings
and judged on the rest against the training mean (:func:`choose_settings`); what the fits
train on (:func:`km_training_data`: absent pairs as 0 for one-class data); and the refits
whose supports give each relation its stability (:func:`run_refits`).
:func:`kmviz.km.relations.mine_relations` runs them."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..rules import INTERACTED

#: The candidate settings of :func:`choose_settings` (KM parameters; "train_on").
CANDIDATES = ({"D": 8, "train_on": "likes", "lambda_theta": 0.0},
              {"D": 8, "train_on": "ratings", "lambda_theta": 0.0},
              {"D": 16, "train_on": "likes", "lambda_theta": 0.0},
              {"D": 8, "train_on": "likes", "lambda_theta": 1.0})
#: The settings tried on one-class data (fitted as the 0/1 matrix of km_training_data, where
#: the likes are the ratings): on a 599-basket file of 52 items with five planted pairs and
#: a conjunction, D = 8 / 16 at lambda_theta = 0 validated worse than the mean (skill 1.056 /
#: 1.041) and lambda_theta = 100 better (0.981 / 0.977).
INTERACTION_CANDIDATES = tuple({"D": D, "train_on": "ratings", "lambda_theta": lam}
                               for D in (8, 16) for lam in (0.0, 10.0, 100.0))
#: Ratings the setting choice fits on at most (a sample of whole users beyond).
CHOOSE_MAX_RATINGS = 60_000
#: BCD iterations of each choice fit and refit.
FIT_ITER = 10
def _split_users(ratings, rng, max_ratings):
    """A sample of whole users holding about ``max_ratings`` ratings (all when fewer)."""
    if ratings.n_ratings <= max_ratings:
        return ratings
    from .stability import resample_users

    return resample_users(ratings, rng, "subsample", max_ratings / ratings.n_ratings)[0]


#: Items beyond which only the D = 8 candidates are tried (each BQP step costs items x D^2).
WIDE_ITEMS = 2000
def _candidates(ratings) -> tuple:
    """The settings :func:`choose_settings` tries on these ratings: all of
    :data:`CANDIDATES` (:data:`INTERACTION_CANDIDATES` for one-class or 0/1 data), or the D = 8
    ones beyond :data:`WIDE_ITEMS` items (cost bound)."""
    tried = INTERACTION_CANDIDATES if _zero_one(ratings) else CANDIDATES
    if ratings.n_items <= WIDE_ITEMS:
        return tried
    return tuple(cand for cand in tried if cand["D"] <= 8)


def _zero_one(ratings) -> bool:
    """One-class data, or 0/1 entries (a basket file read with absent pairs as 0, a 0/1
    table): the likes are the ratings, and only a pull toward uniform theta helps."""
    if ratings.implicit:
        return True
    v = np.asarray(ratings.values)
    return bool(v.size) and bool(np.all((v == 0.0) | (v == 1.0)))


def _km_params(cand: dict, liked) -> dict:
    p = {k: v for k, v in cand.items() if k != "train_on"}
    if cand["train_on"] == "likes" and liked != INTERACTED:
        p["threshold"] = float(liked)
    return {**p, "max_iter": FIT_ITER}


def choose_settings(ratings, liked, *, random_state=0, candidates=CANDIDATES,
                    max_ratings: int = CHOOSE_MAX_RATINGS, stop=None) -> dict:
    """The KM settings for the refits, chosen on validation: each of ``candidates`` fitted on
    80 % of each user's ratings (of a sample of whole users holding at most ``max_ratings``
    ratings), scored by its validation NRMSE over the NRMSE of predicting the training mean
    (``skill`` < 1 is better than the mean); the lowest kept. Returns ``settings`` (KM
    parameters), ``train_on``, ``table`` (one row per candidate), ``better_than_mean`` and
    ``summary`` in words."""
    from ._refits import _no_convergence_warnings
    from .estimator import KolmogorovModel

    rng = np.random.default_rng(random_state)
    sample = _split_users(ratings, rng, max_ratings)
    train, val = sample.split_per_user(0.2, random_state=int(rng.integers(2**31 - 1)))
    rows = []
    for cand in candidates:
        if stop is not None and stop():
            break
        if cand["train_on"] == "likes" and liked == INTERACTED:
            continue
        params = _km_params(cand, liked)
        model = KolmogorovModel(**params, random_state=int(rng.integers(2**31 - 1)))
        t0 = time.perf_counter()
        with _no_convergence_warnings():
            model.fit(train, callback=None if stop is None else (lambda row: not stop()))
        if stop is not None and model.trace_.stop_reason == "callback":
            break
        ours = model.nrmse(val)
        mean = model.mean_predictor_metrics(train, val)["nrmse"]
        rows.append({**cand, "validation_nrmse": ours, "mean_nrmse": mean,
                     "skill": ours / mean if mean > 0 else np.nan,
                     "seconds": time.perf_counter() - t0})
    if not rows:
        raise RuntimeError("Stopped before a setting was chosen.")
    table = pd.DataFrame(rows)
    best = table.iloc[int(np.nanargmin(table["skill"].to_numpy()))]
    cand = {k: best[k] for k in ("D", "train_on", "lambda_theta")}
    cand["D"] = int(cand["D"])
    cand["lambda_theta"] = float(cand["lambda_theta"])
    better = bool(best["skill"] < 1.0)
    summary = (f"KM D = {cand['D']}, lambda_theta = {cand['lambda_theta']:g}, trained on the "
               f"{cand['train_on']}: the lowest validation NRMSE ({best['validation_nrmse']:.3f}"
               f" against {best['mean_nrmse']:.3f} for the mean) of {len(table)} settings "
               f"fitted on {train.n_ratings:,} ratings (80 % of each user's, "
               f"{sample.n_users:,} users), validated on the other 20 %.")
    if not better:
        summary += (" No setting beats the mean on validation: the model's stability says "
                    "little here and the ranking rests on the data's evidence. "
                    + no_better_fix(table))
    return {"settings": _km_params(cand, liked), "train_on": cand["train_on"],
            "table": table, "better_than_mean": better, "summary": summary}


def no_better_fix(table) -> str:
    """What to do when no setting of ``table`` beat the mean. Never "train on the likes":
    the settings tried already do where the data have likes (one-class data have none)."""
    if "likes" in set(table["train_on"]):
        return ("Fix: more ratings per user; every setting tried, on the ratings and on the "
                "likes, lost to the mean.")
    return "Fix: more ratings per user."


def km_training_data(ratings):
    """What the miner's KM fits train on: the ratings themselves, or for one-class data
    (baskets, (user, item) pairs: only ones, which the mean predicts exactly) the 0/1
    matrix with every absent pair as a 0 (:func:`kmviz.data.absent.fitted_entries`)."""
    from ..data.absent import fitted_entries

    return fitted_entries(ratings)


def run_refits(ratings, settings: dict, n_refits: int, random_state=0, *, stop=None,
               progress=None) -> list:
    """``n_refits`` KM fits with ``settings`` on half the users each
    (:func:`kmviz.km.stability.refit_supports` through :func:`map_refits`), seeded by
    ``random_state`` and their position."""
    from .stability import map_refits, refit_supports

    seeds = np.random.SeedSequence(None if random_state is None else int(random_state)
                                   ).generate_state(n_refits)
    tasks = [{"seed": int(s), "resampling": "subsample", "fraction": 0.5,
              "settings": settings} for s in seeds]
    return map_refits(refit_supports, tasks, shared=ratings, stop=stop, progress=progress)
