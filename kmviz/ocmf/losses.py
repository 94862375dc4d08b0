"""The convex losses on observed pairs, as scalar Numba functions and as NumPy oracles.

A loss ``l(y, s)`` takes a label y (+1 for the observed positives of one-class data, -1 for
sampled negatives) and a score s. The all-pairs split (OCMF eqs. (6)-(7)) needs its value,
first derivative ``l'(y, s) = dl/ds`` and second derivative ``l''(y, s)``:

============== ========================== ====================== =========================
name           l(y, s)                    l'(y, s)               l''(y, s)
============== ========================== ====================== =========================
squared        (y - s)^2                  2 (s - y)              2
logistic       log(1 + exp(-y s))         -y sigma(-y s)         y^2 sigma(y s) sigma(-y s)
squared_hinge  max(0, 1 - y s)^2          -2 y max(0, 1 - y s)   2 y^2 [y s < 1]
============== ========================== ====================== =========================

(OCMF paper, Table 1 and Sec. 2; the squared hinge is the framework's "any convex loss",
with its generalized second derivative.) The paper's losses carry no factor 1/2; neither do
these. ``LOSS_CODES`` maps the names to the integer codes the kernels take.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._jit import JIT

SQUARED, LOGISTIC, SQUARED_HINGE = 0, 1, 2
LOSS_CODES = {"logistic": LOGISTIC, "squared": SQUARED, "squared_hinge": SQUARED_HINGE}
LOSSES = tuple(LOSS_CODES)


@njit(**JIT)
def _log1pexp_neg(z):
    """log(1 + exp(-z)) without overflow."""
    if z > 0.0:
        return math.log1p(math.exp(-z))
    return -z + math.log1p(math.exp(z))


@njit(**JIT)
def _sigmoid(z):
    """1 / (1 + exp(-z)) without overflow."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@njit(**JIT)
def loss_value(code, y, s):
    """l(y, s) for the loss with integer ``code``."""
    if code == SQUARED:
        r = y - s
        return r * r
    if code == LOGISTIC:
        return _log1pexp_neg(y * s)
    v = 1.0 - y * s
    return v * v if v > 0.0 else 0.0


@njit(**JIT)
def loss_derivatives(code, y, s):
    """(l, l', l'') at (y, s)."""
    if code == SQUARED:
        r = s - y
        return r * r, 2.0 * r, 2.0
    if code == LOGISTIC:
        # one exp and one log1p: e = exp(-|z|) gives log(1 + exp(-z)) and both sigmoids
        # (sigma(-z) computed directly: 1 - sigma(z) would lose digits)
        z = y * s
        e = math.exp(-abs(z))
        inv = 1.0 / (1.0 + e)
        if z >= 0.0:
            value = math.log1p(e)
            pos, neg = inv, e * inv           # sigma(z), sigma(-z)
        else:
            value = -z + math.log1p(e)
            pos, neg = e * inv, inv
        return value, -y * neg, y * y * pos * neg
    v = 1.0 - y * s
    if v > 0.0:
        return v * v, -2.0 * y * v, 2.0 * y * y
    return 0.0, 0.0, 0.0


# ----------------------------------------------------------------------------- NumPy oracles
def numpy_loss(name, y, s, parts=(0, 1, 2)):
    """``(l, l', l'')`` as arrays: the reference the kernels are tested against. Only the
    ``parts`` asked for (0: value, 1: l', 2: l'') are computed; the others are None."""
    y = np.asarray(y, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    out = [None, None, None]
    if name == "squared":
        if 0 in parts:
            out[0] = (y - s) ** 2
        if 1 in parts:
            out[1] = 2.0 * (s - y)
        if 2 in parts:
            out[2] = np.full(np.broadcast(y, s).shape, 2.0)
    elif name == "logistic":
        z = y * s
        if 0 in parts:
            out[0] = np.logaddexp(0.0, -z)
        if 1 in parts or 2 in parts:
            neg = np.exp(-np.logaddexp(0.0, z))   # sigma(-z), no overflow
            if 1 in parts:
                out[1] = -y * neg
            if 2 in parts:
                out[2] = y * y * np.exp(-np.logaddexp(0.0, -z)) * neg
    elif name == "squared_hinge":
        v = np.maximum(0.0, 1.0 - y * s)
        if 0 in parts:
            out[0] = v ** 2
        if 1 in parts:
            out[1] = -2.0 * y * v
        if 2 in parts:
            out[2] = 2.0 * y * y * (v > 0)
    else:
        raise ValueError(f"unknown loss {name!r}; choose one of {', '.join(LOSSES)}")
    return tuple(out)
