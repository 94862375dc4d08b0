"""Parameter checks at the public boundary, with one message template.

"The 'gamma' parameter of KolmogorovModel must be a float in (0, inf). Got -1.0 instead."
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from .exceptions import InvalidParameterError


def _bound(x) -> str:
    """A bound as people read it: ``1``, ``0.5``, ``1e+12`` (not 1000000000000.0)."""
    return repr(x) if isinstance(x, int) or abs(x) < 1e6 else f"{x:g}"


def _interval(low, high, closed):
    lo = "-inf" if low is None else _bound(low)
    hi = "inf" if high is None else _bound(high)
    left = "[" if closed in ("left", "both") and low is not None else "("
    right = "]" if closed in ("right", "both") and high is not None else ")"
    return f"{left}{lo}, {hi}{right}"


def check_number(owner, name, value, *, kind=float, low=None, high=None, closed="both"):
    """Return ``value`` converted to ``kind`` or raise InvalidParameterError.

    ``closed`` says which ends of [low, high] are allowed: "both", "left", "right", "neither".
    """
    kind_name = "an int" if kind is int else "a float"
    msg = (
        f"The {name!r} parameter of {owner} must be {kind_name} in "
        f"{_interval(low, high, closed)}. Got {value!r} instead."
    )
    if isinstance(value, bool) or not isinstance(value, (Integral, Real, np.number)):
        raise InvalidParameterError(msg)
    if kind is int:
        if not isinstance(value, (Integral, np.integer)):
            raise InvalidParameterError(msg)
        value = int(value)
    else:
        value = float(value)
        if not math.isfinite(value):
            raise InvalidParameterError(msg)
    if low is not None:
        if value < low or (value == low and closed in ("right", "neither")):
            raise InvalidParameterError(msg)
    if high is not None:
        if value > high or (value == high and closed in ("left", "neither")):
            raise InvalidParameterError(msg)
    return value


def check_option(owner, name, value, options):
    """Return ``value`` if it is one of ``options``, else raise InvalidParameterError."""
    if value not in options:
        opts = ", ".join(repr(o) for o in options)
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be one of {{{opts}}}. Got {value!r} instead."
        )
    return value


def check_random_state(random_state) -> np.random.Generator:
    """Normalize None, an int, or a Generator to a ``numpy.random.Generator``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (Integral, np.integer)):
        return np.random.default_rng(random_state)
    raise InvalidParameterError(
        f"random_state must be None, an int or a numpy Generator. Got {random_state!r} instead."
    )


def check_index_pairs(users, items, n_users: int, n_items: int):
    """``(users, items)`` as broadcast integer arrays, or ValueError naming the first index
    out of range (the shared check of every estimator's ``predict(users, items)``)."""
    users = np.asarray(users)
    items = np.asarray(items)
    for name, arr, n in (("users", users, n_users), ("items", items, n_items)):
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{name} must be integer indices; got dtype {arr.dtype}.")
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            bad = arr[(arr < 0) | (arr >= n)].ravel()[0]
            raise ValueError(f"{name} index {int(bad)} is out of range; the model was "
                             f"fitted on {n} {name} (indices 0..{n - 1}).")
    return np.broadcast_arrays(users, items)
