"""SGD on kernel-regularized factorization (3.28), KPMF-style: one epoch over the observed
entries in a random order per trace row."""

from __future__ import annotations

import numpy as np

from .. import factorization as fz
from ._common import factor_step, factors_matrix, invert_kernels, kernel_arrays, \
    predict_factors

completed = factors_matrix
predict = predict_factors


def start(st, rng) -> None:
    invert_kernels(st)
    st.engine = fz.KernelSGD(st.rows, st.cols, st.m, st.N, st.L, st.Aw, st.Ah, st.prm["mu"],
                             st.prm["rank"], rng, learning_rate=st.prm["learning_rate"])


def name(st) -> str:
    return "kmc.sgd"


def step(st, trace, it):
    return factor_step(st, trace, "sgd")


def estimate(st) -> np.ndarray:
    """The whole current estimate (N x L, offset not included)."""
    W, H = st.engine.factors()
    return W @ H.T


def publish(st) -> dict:
    W, H = st.engine.factors()
    return {"kind": np.array("factors"), "row_factors": np.array(W),
            "col_factors": np.array(H), **kernel_arrays(st)}
