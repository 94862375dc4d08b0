"""RRMCEX, ridge regression on d Kronecker features (3.59), in closed form.

The features are the top-d products of the two kernels' eigenpairs (``rr_features="eigen"``)
or of the SVDs of the two side-feature matrices (``"linear"``, §3.5.3). One step: the d x d
normal equations. The fitted model is the factor form ``Q_row[:, a] w xi`` and ``Q_col[:, b]``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..._base import Step
from .. import krr
from ._common import factors_matrix, predict_factors

completed = factors_matrix
predict = predict_factors


def start(st, rng) -> None:
    prm = st.prm
    t0 = time.perf_counter()
    if prm["rr_features"] == "linear":
        sr, Qr = krr.features_svd(st.X_row)
        sc, Qc = krr.features_svd(st.X_col)
    else:
        sr, Qr = krr.kernel_eigen(st.row_kernel)
        sc, Qc = krr.kernel_eigen(st.col_kernel)
    st.pending["eig"] = time.perf_counter() - t0
    st.features = krr.EigenFeatures(sr, Qr, sc, Qc, prm["n_components"])
    st.xi = np.zeros(st.features.d)
    if prm["n_components"] > st.features.d:
        st.note(f"only {st.features.d} features exist (N L or the kernels' "
                         f"ranks); d = {st.features.d}")


def name(st) -> str:
    return f"kmc.{st.method}"


def step(st, trace, it) -> Step:
    f = st.features
    mu = st.prm["mu"]
    with trace.phase("features"):
        G, h = f.gram_and_rhs(st.rows, st.cols, st.m)
    with trace.phase("solve"):
        st.xi = krr.rrmcex_solve(G, h, mu)
    obj = krr.rrmcex_objective(G, h, float(st.m @ st.m), st.xi, mu)
    fit = max(float(st.m @ st.m) - 2 * st.xi @ h + st.xi @ (G @ st.xi), 0.0)
    return Step(dict(objective=obj, train_rmse=math.sqrt(fit / st.m.shape[0]),
                     n_features=f.d))


def estimate(st) -> np.ndarray:
    """The whole current estimate (N x L, offset not included)."""
    f = st.features
    return (f.U * (f.weights * st.xi)) @ f.V.T


def publish(st) -> dict:
    f = st.features
    return {"kind": np.array("factors"), "coef": np.array(st.xi),
            "row_factors": f.U * (f.weights * st.xi), "col_factors": f.V,
            "feature_pairs": np.stack([f.a, f.b], axis=1),
            "feature_eigenvalues": f.eigenvalues, "row_kernel": st.row_kernel,
            "col_kernel": st.col_kernel}
