"""Pieces several Kernel MC solvers share: predictions from factors, the relative-decrease
test, the kernel inverses of (3.28)."""

from __future__ import annotations

import math
import time

import numpy as np

from .. import factorization as fz

#: ALS / SGD log a trace warning above this (lower estimate of the) kernel condition number.
ILL_CONDITIONED = 1e10


def train_rmse(m, pred) -> float:
    e = m - pred
    return math.sqrt(float(e @ e) / e.shape[0])


def predict_factors(arrays, users, items) -> np.ndarray:
    """``row_factors[u] . col_factors[i]`` for each pair (offset not included)."""
    from .._kernels import pair_rowdot

    out = np.empty(users.shape[0])
    pair_rowdot(np.ascontiguousarray(arrays["row_factors"], dtype=np.float64),
                np.ascontiguousarray(arrays["col_factors"], dtype=np.float64), users, items,
                out)
    return out


def factors_matrix(arrays) -> np.ndarray:
    """The whole estimate ``row_factors col_factors^T`` (offset not included)."""
    return arrays["row_factors"] @ arrays["col_factors"].T


def kernel_arrays(st) -> dict:
    """The dense kernels a factor method keeps in its fitted arrays."""
    return {"row_kernel": st.row_kernel, "col_kernel": st.col_kernel}


def decrease_step(st, values, obj):
    """A :class:`~kmviz._base.Step` of ``values`` that is converged when the objective's
    relative decrease since the last step fell below ``tol`` (``st.prev_obj`` keeps it)."""
    from ..._base import Step

    prev = st.prev_obj
    st.prev_obj = obj
    if not math.isfinite(prev) or st.tol <= 0:
        return Step(values)
    dec = (prev - obj) / max(abs(prev), 1e-300)
    if abs(dec) < st.tol:
        return Step(values, converged=True,
                    reason=f"relative objective change {dec:.3g} below tol {st.tol:g}")
    return Step(values)


def invert_kernels(st):
    """The inverses of both kernels (3.28), with a trace message for an ill-conditioned one;
    sets ``st.Aw`` / ``st.Ah`` and makes the fit iterative."""
    t0 = time.perf_counter()
    st.Aw, cond_r = fz.kernel_inverse(st.row_kernel, "row_kernel", return_condition=True)
    st.Ah, cond_c = fz.kernel_inverse(st.col_kernel, "col_kernel", return_condition=True)
    st.pending["invert"] = time.perf_counter() - t0
    for side, cond in (("row", cond_r), ("column", cond_c)):
        if cond > ILL_CONDITIONED:
            st.note(
                f"the {side} kernel is ill-conditioned (cond >= {cond:.1e}): its inverse in "
                f"(3.28) is dominated by rounding; consider jitter (e.g. 1e-4 times the "
                f"largest kernel entry)")
    st.iterative = True
    st.prev_obj = math.inf


def factor_step(st, trace, phase):
    """One ALS sweep or SGD epoch of ``st.engine`` and its objective."""
    with trace.phase(phase):
        st.engine.step()
    with trace.phase("objective"):
        obj, sse = st.engine.objective()
    return decrease_step(st, dict(objective=obj, train_rmse=math.sqrt(sse / st.m.shape[0])),
                         obj)
