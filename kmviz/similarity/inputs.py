"""What the estimator feeds its towers: the tower setting, side features and inputs.

A tower's input is ``X = [one-hot ids | features]`` (CSR); which rows get an id column is
the ``user_ids`` / ``item_ids`` setting, and the features are those given to ``fit`` or
the interactions' own (``side_features``), encoded by :func:`kmviz.data.encode_features`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._params import Param
from ..data.features import check_feature_matrix, encode_features
from ..exceptions import DataError, InvalidParameterError
from .towers import make_tower, parse_tower, tower_input

IDS = ("all", "known", "none")
SIDE_FEATURES = ("none", "user", "item", "both")
TOWER_PRESETS = ("identity", "linear", "mlp:64", "mlp:256,256")
#: Bounds of an MLP tower spec: hidden layers and the width of each.
MAX_HIDDEN_LAYERS, MAX_HIDDEN_WIDTH = 8, 8192


@dataclass(frozen=True)
class TowerParam(Param):
    """A tower setting: a spec string (``"identity"``, ``"linear"``, ``"mlp:h1,h2"``) or an
    object with the tower protocol. ``options`` are presets for forms only."""

    def check(self, owner, name, value):
        if isinstance(value, str):
            try:
                hidden = parse_tower(value)[1]
            except ValueError as exc:
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be 'identity', 'linear', "
                    f"'mlp:h1,h2,...' or a tower object; {exc}") from None
            if len(hidden) > MAX_HIDDEN_LAYERS or max(hidden, default=0) > MAX_HIDDEN_WIDTH:
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must have at most "
                    f"{MAX_HIDDEN_LAYERS} hidden layers of at most {MAX_HIDDEN_WIDTH} units "
                    f"each. Got {value!r} instead.")
            return value
        missing = [m for m in ("forward", "vjp", "jvp", "init", "n_params")
                   if not hasattr(value, m)]
        if missing:
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be 'identity', 'linear', "
                f"'mlp:h1,h2,...' or a tower object (forward, vjp, jvp, init, n_params); "
                f"got {value!r}.")
        return value

    def describe(self):
        return "identity, linear, mlp:h1,h2,... or a tower object"


def side_features(data, given, who, n_rows, prm, events):
    """The side features of one side as CSR (or None): given ones, else the interactions' own
    when ``side_features`` asks for them (DataFrames encoded by
    :func:`kmviz.data.encode_features`)."""
    what = f"{who}_features"
    if given is not None:
        F, _ = check_feature_matrix(given, n_rows, what, n_users_word=f"{who}s")
        return F
    if prm["side_features"] not in (who, "both"):
        return None
    df = getattr(data, what, None)
    if df is None:
        raise DataError(f"side_features={prm['side_features']!r} asks for the {who} "
                        "features of the interactions, but they have none",
                        fix=f"pass {what}= to fit, or choose side_features without "
                            f"'{who}'")
    if not isinstance(df, pd.DataFrame):
        F, _ = check_feature_matrix(df, n_rows, what, n_users_word=f"{who}s")
        return F
    F, _, info = encode_features(df, missing="zero", what=what)
    if info["n_missing_filled"]:
        events.append(("info", f"{what}: {info['n_missing_filled']} missing number(s) "
                               "set to the column mean"))
    return F

def build_tower(spec, n_rows, F, known, ids, who, prm, events):
    """(tower, input) of one side: an identity tower takes no input; the others take
    ``[one-hot ids | features]`` with the id columns ``ids`` asks for."""
    k = prm["k"]
    identity = parse_tower(spec)[0] == "identity" if isinstance(spec, str) else \
        getattr(spec, "kind", None) == "identity"   # an IdentityTower object takes no input
    if identity:
        if F is not None:
            events.append(("warning", f"the {who} tower is an identity (embedding "
                                      f"table): the {who} features are not used"))
        return make_tower(spec, n_rows, 0, k, prm["activation"], prm["init_scale"]), None
    has_features = F is not None and F.shape[1] > 0
    if ids == "none" and not has_features:
        raise DataError(f"{who}_ids='none' leaves the {who} tower without input: there "
                        f"are no {who} features",
                        fix=f"give {who} features or set {who}_ids to 'all' or 'known'")
    rows = {"all": True, "known": np.flatnonzero(known), "none": False}[ids]
    X = tower_input(n_rows, F if has_features else None, ids=rows)
    tower = make_tower(spec, n_rows, X.shape[1], k, prm["activation"], prm["init_scale"])
    return tower, X


def check_towers(problem, theta, k):
    """The towers of ``problem`` agree with the data: ``init`` gives theta of the towers'
    ``n_params`` entries, and ``forward`` one row of width ``k`` per user (item). A tower
    object given as ``user_tower`` / ``item_tower`` that does not is refused by name
    (:class:`InvalidParameterError`), before any solver runs."""
    theta = np.asarray(theta)
    if theta.ndim != 1 or theta.size != problem.n_params:
        raise InvalidParameterError(
            f"the towers' init gave theta of shape {theta.shape}, but their n_params add up "
            f"to {problem.n_params}; a tower's init(rng) must return n_params numbers.")
    tu, tv = problem.split(theta)
    for tower, part, X, rows, who in ((problem.fu, tu, problem.U, problem.pairs.n_rows,
                                       "user"),
                                      (problem.fv, tv, problem.V, problem.pairs.n_cols,
                                       "item")):
        name = f"{who}_tower ({type(tower).__name__})"
        if part.size != int(tower.n_params):
            raise InvalidParameterError(f"{name}: init gave {part.size} numbers for "
                                        f"n_params={tower.n_params}.")
        try:
            shape = np.shape(tower.forward(part, X))
        except (ValueError, IndexError, TypeError) as exc:
            raise InvalidParameterError(f"{name} cannot embed the {rows} {who}s: {exc}") \
                from None
        if shape != (rows, k):
            raise InvalidParameterError(
                f"{name} gives embeddings of shape {shape} for {rows} {who}s; expected "
                f"({rows}, {k}): one row of width k per {who} (an identity tower needs "
                f"n_rows={rows}).")
