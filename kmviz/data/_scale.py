"""The rating scale: the largest value accepted, the rounding tolerance at a bound, the
scale of given data (:func:`rating_scale`) and the check of data handed to a fit beside its
training set (:func:`check_ratings_finite`). Import them from :mod:`kmviz.data.ratings`."""

from __future__ import annotations

import numpy as np

from ..exceptions import DataValueError

#: Largest magnitude accepted for a rating value or a scale bound. Beyond it, squares, sums
#: and the span of the scale lose all precision or overflow (1e308 - (-1e308) is inf), so
#: such a value is almost surely a unit or parsing mistake.
MAX_ABS_VALUE = 1e12
#: Relative tolerance (of the scale's magnitude) within which a value beyond the declared
#: scale is a rounding error, clipped to the bound instead of refused: 1 + 2.2e-16 on [0, 1].
SCALE_TOLERANCE = 1e-9


def check_ratings_finite(ratings, what, *, scale=None) -> None:
    """Refuse ratings whose values are not finite or lie outside the rating scale.

    For data handed to a fit beside the training set (validation or test parts), which may
    have been built with :class:`Ratings`' internal constructor or on another scale than
    the training data: without this check a NaN gives ``val_nrmse = nan`` and an
    out-of-scale value a meaningless error.

    Parameters
    ----------
    ratings : Ratings
    what : str
        What the data is, for the message ("validation data", "the 'val' argument" ...).
    scale : (float, float), optional
        The scale to check against, e.g. the training data's ``(r_min, r_max)``. Default:
        the ratings' own scale. Values within :data:`SCALE_TOLERANCE` of a bound (a
        rounding error) are accepted.

    Raises
    ------
    DataValueError
        Naming ``what``, the data's name, the first bad value and the fix.
    """
    values = np.asarray(getattr(ratings, "values", None), dtype=np.float64)
    if values.ndim != 1:
        raise DataValueError(f"{what} has no 1-D array of rating values",
                             expected="a Ratings", fix="pass a kmviz.data.Ratings")
    name = getattr(ratings, "name", None)
    label = f"{what} ({name})" if name else what
    lo, hi = scale if scale is not None else (getattr(ratings, "r_min", None),
                                              getattr(ratings, "r_max", None))
    lo, hi = float(lo), float(hi)
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise DataValueError(f"{label} has the rating scale [{lo:g}, {hi:g}]",
                             expected="finite r_min < r_max",
                             fix="load the data again with a valid r_min and r_max")
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DataValueError(
            f"{label} holds {int(bad.sum())} value(s) that are not finite numbers (the first "
            f"at position {k}: {values[k]!r})", expected="finite rating values",
            fix="remove or fill the missing ratings before fitting")
    tol = _scale_tolerance(lo, hi)
    out = (values < lo - tol) | (values > hi + tol)
    if out.any():
        k = int(np.flatnonzero(out)[0])
        raise DataValueError(
            f"{label} holds {int(out.sum())} value(s) outside the rating scale [{lo:g}, "
            f"{hi:g}] (the first at position {k}: {values[k]:g})",
            expected=f"values in [{lo:g}, {hi:g}], the training data's scale",
            fix="use validation data on the same scale as the training data (load both "
                "with the same r_min and r_max)")


def _scale_tolerance(lo: float, hi: float) -> float:
    return SCALE_TOLERANCE * max(abs(lo), abs(hi), hi - lo)


def rating_scale(r_min, r_max, v_min, v_max, implicit, shown):
    """``(lo, hi)``: the scale given (``r_min``, ``r_max``; 0/1 for implicit data) or else
    the values' range (``v_min``, ``v_max``); a clear error for an unusable or empty one.
    ``shown`` names the data in the error."""
    if implicit:
        r_min = 0.0 if r_min is None else r_min
        r_max = 1.0 if r_max is None else r_max
    for bound, label in ((r_min, "r_min"), (r_max, "r_max")):
        if bound is not None and not (np.isfinite(float(bound))
                                      and abs(float(bound)) <= MAX_ABS_VALUE):
            raise DataValueError(
                f"{label}={float(bound):g} is not a usable scale bound", path=shown,
                expected=f"a finite number between {-MAX_ABS_VALUE:g} and "
                         f"{MAX_ABS_VALUE:g}", fix=f"pass a sensible {label}=")
    lo = float(v_min) if r_min is None else float(r_min)
    hi = float(v_max) if r_max is None else float(r_max)
    if not hi > lo:
        if r_min is None and r_max is None:
            raise DataValueError(
                f"every rating equals {lo:g}, so the scale [r_min, r_max] is empty",
                path=shown, expected="at least two distinct rating values",
                fix="give r_min and r_max explicitly, or load the file as 0/1 "
                    "interactions (no value column)")
        raise DataValueError(f"the rating scale [{lo:g}, {hi:g}] is empty", path=shown,
                             expected="r_min < r_max")
    return lo, hi
