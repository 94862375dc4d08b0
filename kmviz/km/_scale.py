"""The Kolmogorov model's scales and small array helpers: ratings to the model's
probability scale and back (the paper's NRMSE scale, Sec. V-B), likes thresholds, and the
CSR-style grouping the BCD kernels read. Re-exported by :mod:`kmviz.km.estimator`."""

from __future__ import annotations

import math

import numpy as np


# ----------------------------------------------------------------------------- scales
def to_probability(values, r_min, r_max, mode="minmax"):
    """Map ratings to empirical probabilities p in [0, 1].

    ``"minmax"``: ``(r - r_min) / (r_max - r_min)``; ``"max"``: the paper's eq. (6),
    ``r / r_max`` (needs ``r_min >= 0``); ``"identity"``: the values themselves (they must
    lie in [0, 1]). On a [0, 1] scale all three are the identity.
    """
    values = np.asarray(values, dtype=np.float64)
    if mode == "minmax":
        return (values - r_min) / (r_max - r_min)
    if mode == "max":
        if r_min < 0 or r_max <= 0:
            raise ValueError(
                f"probability='max' maps r to r / r_max and needs a scale within [0, inf); "
                f"got [{r_min:g}, {r_max:g}]. Use probability='minmax'.")
        return values / r_max
    if mode == "identity":
        if values.size and (values.min() < 0.0 or values.max() > 1.0):
            raise ValueError(
                f"probability='identity' uses the values as probabilities, so they must lie "
                f"in [0, 1]; got values in [{values.min():g}, {values.max():g}]. "
                f"Use probability='minmax'.")
        return values.copy()
    raise ValueError(f"unknown probability mode {mode!r}")


def to_targets(values, r_min, r_max, mode="minmax", threshold=None):
    """The values KM fits: the liked indicator ``1[r >= threshold]`` (0.0/1.0) when a
    threshold is given, else :func:`to_probability` of the ratings."""
    if threshold is None:
        return to_probability(values, r_min, r_max, mode)
    return (np.asarray(values, dtype=np.float64) >= float(threshold)).astype(np.float64)


def from_probability(p, r_min, r_max, mode="minmax"):
    """Inverse of :func:`to_probability`: probabilities back to the rating scale."""
    p = np.asarray(p, dtype=np.float64)
    if mode == "minmax":
        return r_min + p * (r_max - r_min)
    if mode == "max":
        return p * r_max
    return p.copy()


def _compressed(major, minor, data, n_major):
    """CSR-style (indptr, indices, data) grouped by ``major``, sorted by ``minor``."""
    order = np.lexsort((minor, major))
    indptr = np.zeros(n_major + 1, dtype=np.int64)
    np.cumsum(np.bincount(major, minlength=n_major), out=indptr[1:])
    return (indptr, np.ascontiguousarray(minor[order], dtype=np.int64),
            np.ascontiguousarray(data[order], dtype=np.float64))


def _sum(x):
    return float(np.sum(np.asarray(x, dtype=np.float64)))


def _nanmean(x):
    a = np.asarray(x, dtype=np.float64).ravel()
    a = a[np.isfinite(a)]
    return float(a.mean()) if a.size else math.nan
