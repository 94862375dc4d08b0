"""ALS on kernel-regularized factorization (3.28), the corrected Algorithm 2: one sweep of
both factor updates per trace row. The kernels enter through their inverses."""

from __future__ import annotations

import numpy as np

from .. import factorization as fz
from ._common import factor_step, factors_matrix, invert_kernels, kernel_arrays, \
    predict_factors

completed = factors_matrix
predict = predict_factors


def start(st, rng) -> None:
    invert_kernels(st)
    st.engine = fz.KernelALS(st.rows, st.cols, st.m, st.N, st.L, st.Aw, st.Ah, st.prm["mu"],
                             st.prm["rank"], rng)


def name(st) -> str:
    return "kmc.als"


def step(st, trace, it):
    return factor_step(st, trace, "als")


def estimate(st) -> np.ndarray:
    """The whole current estimate (N x L, offset not included)."""
    return st.engine.W @ st.engine.H.T


def publish(st) -> dict:
    return {"kind": np.array("factors"), "row_factors": np.array(st.engine.W),
            "col_factors": np.array(st.engine.H), **kernel_arrays(st)}
