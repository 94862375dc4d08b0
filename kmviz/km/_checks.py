"""Argument checks shared by the implication miners (:func:`kmviz.km.stable_implications`,
:func:`kmviz.km.relations.mine_relations`): every public argument is checked with the
project's errors before any work starts, each message naming the argument, what was found,
what is expected and the fix."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from ..exceptions import InvalidParameterError

#: Largest number of refits a call may ask for (each is one KM fit).
MAX_REFITS = 200


def check_fraction(owner, value, name="fraction") -> float:
    """A share in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.number)) \
            or not math.isfinite(float(value)) or not 0.0 < float(value) <= 1.0:
        raise InvalidParameterError(
            f"{owner}: {name} must be a number in (0, 1], the share of the users each refit "
            f"sees; got {value!r}. Fix: pass e.g. {name}=0.5.")
    return float(value)


def check_level(owner, value) -> float:
    """A confidence level in (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.number)) \
            or not math.isfinite(float(value)) or not 0.0 < float(value) < 1.0:
        raise InvalidParameterError(
            f"{owner}: level must be a number strictly between 0 and 1 (the coverage of the "
            f"confidence intervals); got {value!r}. Fix: pass e.g. level=0.95.")
    return float(value)


def check_share(owner, name, value) -> float:
    """A share in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.number)) \
            or not math.isfinite(float(value)) or not 0.0 <= float(value) <= 1.0:
        raise InvalidParameterError(
            f"{owner}: {name} must be a number in [0, 1]; got {value!r}.")
    return float(value)


def check_n_refits(owner, value, default: int) -> int:
    """B: an int in [1, :data:`MAX_REFITS`] (None: ``default``)."""
    if value is None:
        return int(default)
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        raise InvalidParameterError(
            f"{owner}: n_refits must be a whole number of refits; got {value!r} "
            f"({type(value).__name__}). Fix: pass an int such as n_refits={default}.")
    if not 1 <= int(value) <= MAX_REFITS:
        raise InvalidParameterError(
            f"{owner}: n_refits must be between 1 and {MAX_REFITS}; got {int(value)}. "
            f"Fix: more refits than {MAX_REFITS} add little stability and cost one fit each.")
    return int(value)


def check_int(owner, name, value, low, high) -> int:
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)) \
            or not low <= int(value) <= high:
        raise InvalidParameterError(
            f"{owner}: {name} must be an int in [{low}, {high}]; got {value!r}.")
    return int(value)


def check_items(owner, items, n_items: int) -> np.ndarray | None:
    """``items`` as a bool mask of length ``n_items`` (None stays None): a bool mask of that
    length, or item indices in ``[0, n_items)``."""
    if items is None:
        return None
    arr = np.asarray(items)
    if arr.dtype == bool:
        if arr.shape != (n_items,):
            raise InvalidParameterError(
                f"{owner}: the items mask has shape {arr.shape}; the data has {n_items} "
                f"items. Fix: pass a boolean mask of length {n_items}, or item indices.")
        return arr.copy()
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise InvalidParameterError(
            f"{owner}: items must be a boolean mask or a 1-D list of item indices; got an "
            f"array of dtype {arr.dtype} and shape {arr.shape}.")
    if arr.size and (arr.min() < 0 or arr.max() >= n_items):
        bad = int(arr[(arr < 0) | (arr >= n_items)][0])
        raise InvalidParameterError(
            f"{owner}: item index {bad} is outside the data's items 0..{n_items - 1}. "
            "Fix: pass indices of the ratings' items (negative indices are not accepted).")
    mask = np.zeros(n_items, bool)
    mask[arr.astype(np.int64)] = True
    return mask


def check_names(owner, names, n_items: int):
    """Item names: None, a Ratings (its labels), or a sequence of ``n_items`` names."""
    if names is None or hasattr(names, "item_label"):
        return names
    try:
        k = len(names)
    except TypeError:
        raise InvalidParameterError(
            f"{owner}: names must be a sequence of item names; got {type(names).__name__}."
        ) from None
    if k != n_items:
        raise InvalidParameterError(
            f"{owner}: {k} names given for {n_items} items. Fix: pass one name per item "
            "(or none, to use the ratings' own names).")
    return names


def check_validation(owner, validation, ratings):
    """Held-out ratings in the training ratings' index space."""
    if validation is None:
        return None
    for attr in ("users", "items", "values", "n_users", "n_items"):
        if not hasattr(validation, attr):
            raise InvalidParameterError(
                f"{owner}: validation must be a Ratings (held-out ratings); got "
                f"{type(validation).__name__}.")
    if (validation.n_users, validation.n_items) != (ratings.n_users, ratings.n_items):
        raise InvalidParameterError(
            f"{owner}: validation has {validation.n_users:,} users x {validation.n_items:,} "
            f"items; the training ratings have {ratings.n_users:,} x {ratings.n_items:,}. "
            "Fix: split one Ratings (e.g. ratings.split(...)) so both share the index space.")
    return validation


def check_ratings(owner, ratings):
    for attr in ("users", "items", "values", "n_users", "n_items", "r_min", "r_max"):
        if not hasattr(ratings, attr):
            raise InvalidParameterError(
                f"{owner}: ratings must be a kmviz Ratings (kmviz.data.load(...)); got "
                f"{type(ratings).__name__}.")
    if ratings.n_ratings == 0:
        raise InvalidParameterError(f"{owner}: the ratings are empty.")
    return ratings
