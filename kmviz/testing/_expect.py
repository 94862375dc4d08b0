"""What the contract checks (:mod:`kmviz.testing`) assert with: every failure is a
:class:`ContractError` whose message says what is wrong and how to fix it.

Plain ``assert`` statements are not used: ``python -O`` strips them (the checks would pass
anything), and a bare one fails with "AssertionError:" and nothing after it.
"""

from __future__ import annotations

import contextlib
import math
import re
import warnings

import numpy as np


class ContractError(AssertionError):
    """A model family breaks the estimator contract; the message names what (the parameter,
    the declaration, the method) and the fix."""


def expect(ok, problem: str, fix: str = "") -> None:
    """Raise :class:`ContractError` ``"<problem> Fix: <fix>"`` unless ``ok``."""
    if not ok:
        raise ContractError(f"{problem} Fix: {fix}" if fix else problem)


def declaration(param) -> str:
    """A short form of a :class:`kmviz._params.Param` for messages:
    ``Param(float, low=0.0, high=1000.0)``, the fields that differ from their defaults."""
    kind = getattr(param.kind, "__name__", repr(param.kind))
    parts = [kind]
    for field in ("low", "high", "options", "none_ok", "when"):
        value = getattr(param, field)
        if value is None or value is False or (isinstance(value, (tuple, dict))
                                               and not value):
            continue  # the field's default (0.0 == False, so no `in` test)
        parts.append(f"{field}={value!r}")
    if param.closed != "both":
        parts.append(f"closed={param.closed!r}")
    return f"Param({', '.join(parts)})"


@contextlib.contextmanager
def raises(exc_type, match: str | None = None, *, what: str, fix: str):
    """Expect the block to raise ``exc_type`` with a message matching ``match``; yields a
    one-item list that holds the exception afterwards. ``what`` says what was done
    (``"BiasedMean(reg=-1.0).fit(train)"``), ``fix`` how the family gets it right."""
    caught = []
    try:
        yield caught
    except exc_type as exc:
        if match is not None and not re.search(match, str(exc)):
            raise ContractError(
                f"{what} raised {type(exc).__name__} {str(exc)!r}, which does not match "
                f"{match!r}. Fix: {fix}") from exc
        caught.append(exc)
    except Exception as exc:  # another error: say which, where the expected one was due
        raise ContractError(f"{what} raised {type(exc).__name__} ({exc}) instead of "
                            f"{exc_type.__name__}. Fix: {fix}") from exc
    else:
        raise ContractError(f"{what} did not raise {exc_type.__name__}"
                            + (f" matching {match!r}" if match else "") + f". Fix: {fix}")


@contextlib.contextmanager
def warns(category, match: str, *, what: str, fix: str):
    """Expect the block to warn ``category`` with a message matching ``match``."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
    expect(any(issubclass(w.category, category) and re.search(match, str(w.message))
               for w in seen),
           f"{what} gave no {category.__name__} matching {match!r} (warnings seen: "
           f"{[f'{w.category.__name__}: {w.message}' for w in seen]}).", fix)


def close(a, b, rel=1e-12, abs_=1e-15) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=abs_)


def public_fitted_attributes(model) -> list[str]:
    return [k for k in vars(model) if k.endswith("_") and not k.startswith("_")]


#: How to keep a model's fitted arrays when it is saved and loaded.
ARRAYS_FIX = ("_fitted_arrays() must return every array the model predicts from, and "
              "_from_fitted_arrays(arrays) must restore exactly those (same names, dtype "
              "and values).")


def same_arrays(a: dict, b: dict, what: str) -> None:
    """The fitted arrays ``b`` (``what``: how they were made) equal ``a``."""
    expect(set(a) == set(b), f"{what}: the fitted arrays are {sorted(b)}, expected "
                             f"{sorted(a)}.", ARRAYS_FIX)
    for name in a:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        expect(x.dtype == y.dtype, f"{what}: the fitted array {name!r} has dtype {y.dtype}, "
                                   f"expected {x.dtype}.", ARRAYS_FIX)
        expect(x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"),
               f"{what}: the fitted array {name!r} differs (shape {y.shape}, expected "
               f"{x.shape}; {_count_different(x, y)} entries differ).", ARRAYS_FIX)


def _count_different(x, y) -> str:
    if x.shape != y.shape:
        return "all"
    nan = x.dtype.kind in "fc"
    return str(int(np.sum(~((x == y) | (np.isnan(x) & np.isnan(y)) if nan else x == y))))


def same_trace(a, b, what: str) -> None:
    """Same rows (NaN equal to NaN, as JSON keeps it), events, stop reason and solver."""
    import pandas as pd

    fix = ("keep the Trace the loop made (self.trace_ = trace in _fit_publish) and let "
           "kmviz.runs save it; its rows must be flat dicts of scalars.")
    try:
        pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    except AssertionError as exc:
        raise ContractError(f"{what}: the trace's rows differ: {exc} Fix: {fix}") from None
    expect(a.events == b.events, f"{what}: the trace's events differ.", fix)
    expect(a.stop_reason == b.stop_reason and a.solver == b.solver,
           f"{what}: the trace's stop reason/solver is {b.stop_reason!r}/{b.solver!r}, "
           f"expected {a.stop_reason!r}/{a.solver!r}.", fix)


def same_ratings(a, b, what: str) -> None:
    fix = "save_run/open_run keep the split's ratings; do not change the data in fit."
    expect((a.n_users, a.n_items) == (b.n_users, b.n_items),
           f"{what}: shape {(b.n_users, b.n_items)}, expected {(a.n_users, a.n_items)}.", fix)
    expect((a.r_min, a.r_max) == (b.r_min, b.r_max),
           f"{what}: rating scale {(b.r_min, b.r_max)}, expected {(a.r_min, a.r_max)}.", fix)
    for name in ("users", "items", "values"):
        expect(np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))),
               f"{what}: the {name} differ.", fix)


def same_split(a, b, what: str) -> None:
    from ..data.splits import SPLIT_PARTS

    for part in SPLIT_PARTS:
        pa, pb = getattr(a, part), getattr(b, part)
        expect((pa is None) == (pb is None), f"{what}: the {part} part is "
               f"{'missing' if pb is None else 'there'}, expected the opposite.",
               "save the split with the run (save_run(model, split, ...)).")
        if pa is not None:
            same_ratings(pa, pb, f"{what}, {part} part")
    expect(a.settings() == b.settings(), f"{what}: the split's settings are "
           f"{b.settings()}, expected {a.settings()}.", "save the split with the run.")


def bad_values(param) -> list:
    """Values the declaration ``param`` (a :class:`kmviz._params.Param`) must refuse."""
    from .._params import RANDOM_STATE

    if param.kind == RANDOM_STATE:
        return ["seed", 1.5, -1]
    if param.kind is bool:
        return ["yes", 1, None] if not param.none_ok else ["yes", 1]
    if param.kind is str or param.options:
        return ["__not_an_option__", 1.5]
    out = ["abc", math.nan]
    if param.low is not None:
        out.append(param.kind(param.low - 1))
        if param.closed in ("right", "neither"):
            out.append(param.kind(param.low))
    if param.high is not None:
        out.append(param.kind(param.high + 1))
        if param.closed in ("left", "neither"):
            out.append(param.kind(param.high))
    if param.kind is int:
        out.append(1.5)
    if not param.none_ok:
        out.append(None)
    return out
