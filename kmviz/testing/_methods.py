"""The contract checks of the methods on the estimator base that every family has
(``save`` / ``load``) and of those only some families offer, checked where they are
(``recommend``; :mod:`kmviz.testing`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ._checker import FamilyChecker
from ._expect import ARRAYS_FIX, expect, same_arrays

_BASE_FIX = ("keep IterativeEstimator's save / load (kmviz/_base.py): they write and read "
             "the run format through kmviz.runs; an override must do the same.")


def check_save_and_load_methods_round_trip(c: FamilyChecker):
    fitted = c.fitted
    whole, split = c.data
    cls = type(fitted)
    what = f"{c.owner}.save(path, split=split) then {c.owner}.load(path)"
    with tempfile.TemporaryDirectory(prefix="kmviz-check-") as tmp:
        path = Path(tmp) / "model.kmviz"
        out = fitted.save(path, split=split, dataset=whole)
        expect(Path(out) == path and path.exists(), f"{what}: save wrote no file at {path}.",
               _BASE_FIX)
        model = cls.load(path)
    expect(type(model) is cls, f"{what}: load returned a {type(model).__name__}.", _BASE_FIX)
    same_arrays(fitted._fitted_arrays(), model._fitted_arrays(), what)
    expect(model.evaluate(split.test) == fitted.evaluate(split.test),
           f"{what}: evaluate(test) differs.", ARRAYS_FIX)


def check_recommend_where_offered(c: FamilyChecker):
    """A family whose estimator has ``recommend(users, k, exclude_seen)`` ranks items for
    users: k item indices per user, best first, never a training positive with
    ``exclude_seen``. A family without it offers no recommendations (nothing to check)."""
    fitted = c.fitted
    if not callable(getattr(fitted, "recommend", None)):
        return
    train = c.split.train
    n_items = int(train.n_items)
    k = min(3, n_items)
    fix = ("recommend(users, k=10, exclude_seen=True) returns an int array (len(users), "
           "min(k, n_items)) of item indices, best first, -1 padding; kmviz.serving."
           "FactorServing implements it from user_factors_ and item_factors_.")
    users = np.array([0, 1])
    top = np.asarray(fitted.recommend(users, k=k))
    expect(top.shape == (2, k) and np.issubdtype(top.dtype, np.integer),
           f"{c.owner}.recommend([0, 1], k={k}) returned shape {top.shape}, dtype "
           f"{top.dtype}.", fix)
    expect(bool(np.all((top >= -1) & (top < n_items))),
           f"{c.owner}.recommend returned item indices outside [-1, {n_items}).", fix)
    one = np.asarray(fitted.recommend(0, k=k))
    expect(one.shape == (k,) and np.array_equal(one, top[0]),
           f"{c.owner}.recommend(0) is not the first row of recommend([0, 1]).", fix)
    threshold = getattr(fitted, "threshold", None)
    rows = train.users == 0
    liked = train.items[rows] if threshold is None else \
        train.items[rows & (np.asarray(train.values) >= threshold)]
    expect(not set(top[0].tolist()) & set(liked.tolist()),
           f"{c.owner}.recommend(0) lists a training positive of user 0 with exclude_seen.",
           fix)
