"""Nuclear-norm proximal gradient (2.15) with the FPC / SPG / VPG mu schedules of Table 2.1,
zero or graph initialization (2.42), and the Laplacian-regularized variant (2.51)
(``lap_weight > 0``). The fitted model is the completed matrix itself: it predicts the rows
the Laplacian term links to observed rows, and no column without entries."""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from ..._base import Step
from ...exceptions import InvalidParameterError
from .. import factorization as fz
from .. import rkhs as kn


def start(st, rng) -> None:
    prm = st.prm
    graph = st.graphs["row"]
    st.iterative = True
    N, L = st.N, st.L
    M = np.zeros((N, L))
    M[st.rows, st.cols] = st.m
    mask = np.zeros((N, L), dtype=bool)
    mask[st.rows, st.cols] = True
    need_graph = prm["lap_weight"] > 0 or prm["pg_init"] == "graph"
    if need_graph and graph is None:
        raise InvalidParameterError(
            "PG with lap_weight > 0 or pg_init='graph' needs a row (user) graph: the "
            "ratings have no user_graph and no row_graph was passed to fit.")
    t0 = time.perf_counter()
    F0 = None
    mu0_factor = prm["mu0_factor"]
    if prm["pg_init"] == "graph":
        # (2.42) only needs A's eigenvectors: any symmetric matrix will do (the Ch. 2
        # synthetic "graph" is the projector U_T U_T^T, with negative entries)
        A0 = kn._symmetrized(kn._as_dense_square(graph, "row_graph", N), "row_graph")
        F0 = fz.graph_init(M, mask, A0, min(prm["rank"], N))
        mu0_factor = 5.0 if mu0_factor is None else mu0_factor
    st.pending["init"] = time.perf_counter() - t0
    lap = None
    if prm["lap_weight"] > 0:
        A = kn.check_adjacency(graph, "row_graph", n=N)
        lap = np.diag(A.sum(axis=1)) - A
        from scipy.sparse.csgraph import connected_components

        _, comp = connected_components(sp.csr_matrix(A), directed=False)
        reach = np.zeros(comp.max() + 1, dtype=bool)
        reach[comp[st.known_rows]] = True
        st.predictable_rows = reach[comp]
    st.engine = fz.NuclearPG(
        M, mask, prm["mu"], schedule=prm["schedule"],
        mu0=None if mu0_factor is None else mu0_factor * prm["mu"], decay=prm["decay"],
        switch_tol=prm["switch_tol"], step=prm["step"], lap=lap,
        lap_weight=prm["lap_weight"], F0=F0, tol=prm["tol"])


def name(st) -> str:
    return f"kmc.pg.{st.prm['schedule']}"


def step(st, trace, it) -> Step:
    with trace.phase("prox"):
        values = dict(st.engine.step())
    values["train_rmse"] = math.sqrt(values["observed_sse"] / st.m.shape[0])
    if st.engine.converged:
        return Step(values, converged=True,
                    reason=f"PG converged at mu = {st.engine.mu_bar:g}: relative change "
                           f"{values['rel_change']:.3g} < tol {st.tol:g}")
    return Step(values)


def estimate(st) -> np.ndarray:
    """The whole current estimate (N x L, offset not included)."""
    return st.engine.F


def publish(st) -> dict:
    return {"kind": np.array("dense"), "matrix": np.array(st.engine.F)}


def predict(arrays, users, items) -> np.ndarray:
    return arrays["matrix"][users, items]


def completed(arrays) -> np.ndarray:
    return np.array(arrays["matrix"])
