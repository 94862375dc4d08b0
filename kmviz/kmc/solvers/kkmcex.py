"""KKMCEX, Kronecker kernel MC and extrapolation (3.46), solved exactly.

Two step kinds, chosen at start (``solver=``; ``"auto"``: direct up to
:data:`kmviz.kmc.params.DIRECT_MAX_S` observations): ``"direct"``, one closed-form step by a
dense Cholesky of ``K_OO + mu I``; ``"cg"``, matrix-free preconditioned conjugate gradients,
one CG iteration per trace row with its residual, never forming K_OO. The resolved choice is
part of the state (``st.solver``) and of the fitted arrays (``solver``).

Sides whose kernels are kept as factors ``K = F F^T`` (or the identity) make each product of
K_OO cost O(s r + N r_r r_c) (:class:`krr.FactoredKronGram`), and the fitted model keeps the
factors of its estimate; otherwise it keeps the coefficients and the dense kernels.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..._base import Step
from .. import krr
from .. import params as kp
from ._common import predict_factors, train_rmse


def start(st, rng) -> None:
    prm = st.prm
    s = st.rows.shape[0]
    solver = prm["solver"]
    if solver == "auto":
        solver = "direct" if s <= kp.DIRECT_MAX_S else "cg"
    st.solver = solver
    t0 = time.perf_counter()
    rs, cs = st.row_side, st.col_side
    st.factored = rs.kind != "dense" or cs.kind != "dense"
    if st.factored and not (rs.low_rank or cs.low_rank
                            or rs.kind == cs.kind == "identity"):
        # no pure low-rank side: the dense vec trick (the kernels formed)
        st.factored = False
        rs = st.row_side = krr.SideKernel(rs.n, dense=rs.dense())
        cs = st.col_side = krr.SideKernel(cs.n, dense=cs.dense())
        st.row_kernel, st.col_kernel = rs.K, cs.K
    if st.factored:
        st.gram = krr.FactoredKronGram(rs, cs, st.rows, st.cols)
        st.note(
            f"factored kernels: ranks {rs.rank} x {cs.rank} ({rs.kind} x {cs.kind}); each "
            f"product of K_OO through the {st.gram.route} route")
    else:
        st.gram = krr.KronGram(rs.K, cs.K, st.rows, st.cols)
    st.coef = np.zeros(s)
    if solver == "cg":
        st.iterative = True
        feats_pc = None
        if prm["preconditioner"] == "eigen":
            t1 = time.perf_counter()
            sr, Qr = rs.eigen(prm["n_components"])
            sc, Qc = cs.eigen(prm["n_components"])
            st.pending["eig"] = time.perf_counter() - t1
            ef = krr.EigenFeatures(sr, Qr, sc, Qc, prm["n_components"])
            feats_pc = ef.rows(st.rows, st.cols)
        st.cg = krr.KKMCEXConjugateGradient(st.gram, st.m, prm["mu"],
                                            preconditioner=prm["preconditioner"],
                                            features=feats_pc)
        st.pending["setup"] = time.perf_counter() - t0 - st.pending.get("eig", 0.0)
        st.coef = st.cg.x
    else:
        st.pending["setup"] = time.perf_counter() - t0


def name(st) -> str:
    return f"kmc.kkmcex.{st.solver}"


def step(st, trace, it) -> Step:
    mu = st.prm["mu"]
    if st.solver == "direct":
        # one Cholesky: float32 factor + float64 refinement from krr.MIXED_MIN_S
        # observations up, float64 below or when refinement cannot reach its accuracy
        if st.factored:
            st.coef, info = krr.kkmcex_factored_cholesky(st.gram, st.m, mu)
        else:
            st.coef, info = krr.kkmcex_cholesky(st.row_kernel, st.col_kernel, st.rows,
                                                st.cols, st.m, mu)
        for phase in ("gram", "factor", "refine", "solve"):
            if info[phase] > 0:
                trace.add_time(phase, info[phase])
        if info["fallback"]:
            trace.event("info", f"float64 Cholesky: {info['fallback']}")
        extra = dict(refine_iter=info["refine_iter"], blas_threads=info["threads"],
                     mixed_precision=info["precision"] == "mixed")
        with trace.phase("objective"):
            Kc_part = st.m - mu * st.coef  # K_OO c = m - mu c at the exact solution
            obj = krr.kkmcex_objective(Kc_part, st.coef, st.m, mu)
        return Step(dict(objective=obj, train_rmse=train_rmse(st.m, Kc_part),
                         n_observed=int(st.m.shape[0]), **extra))
    cg = st.cg
    with trace.phase("cg"):
        cg.step()
    st.coef = cg.x
    rel = cg.relative_residual
    values = dict(objective=cg.objective(), cg_residual=rel,
                  train_rmse=train_rmse(st.m, cg.Kx), n_matvec=int(cg.A.n_matvec),
                  n_observed=int(st.m.shape[0]))
    if rel <= st.tol:
        return Step(values, converged=True,
                    reason=f"CG converged: relative residual {rel:.3g} <= tol {st.tol:g} "
                           f"after {cg.n_iter} iterations")
    return Step(values)


def estimate(st) -> np.ndarray:
    """The whole current estimate (N x L, offset not included)."""
    return st.gram.full(st.coef)


def publish(st) -> dict:
    coef = np.array(st.coef)
    arrays = {"solver": np.array(st.solver), "coef": coef, "train_rows": st.rows,
              "train_cols": st.cols}
    if not st.factored:
        arrays.update(kind=np.array("kron"), row_kernel=st.row_kernel,
                      col_kernel=st.col_kernel)
        return arrays
    P, Q = st.gram.estimate_factors(coef)
    arrays.update(kind=np.array("factors"), row_factors=np.array(P), col_factors=np.array(Q))
    for side, sk in (("row", st.row_side), ("col", st.col_side)):
        if sk.kind == "dense":
            arrays[f"{side}_kernel"] = sk.K
        elif sk.kind == "factor":
            arrays[f"{side}_kernel_factor"] = sk.F
            if sk.shift:
                arrays[f"{side}_kernel_shift"] = np.array(sk.shift)
        else:
            arrays[f"{side}_kernel_identity"] = np.array(True)
    return arrays


def predict(arrays, users, items) -> np.ndarray:
    """Predictions for index pairs (offset not included). Dense kernels: the cheapest way
    to ``K_row[u] Gamma K_col[:, i]`` (:func:`krr.kkmcex_predict`: the users' kernel rows
    times the coefficient matrix once, then one dot product per pair, or the mirror image;
    the MovieLens error table in seconds); factors: one dot product per pair."""
    if str(arrays["kind"]) == "factors":
        return predict_factors(arrays, users, items)
    return krr.kkmcex_predict(arrays["row_kernel"], arrays["col_kernel"], arrays["train_rows"],
                              arrays["train_cols"], arrays["coef"], users, items)


def completed(arrays) -> np.ndarray:
    if str(arrays["kind"]) == "factors":
        return arrays["row_factors"] @ arrays["col_factors"].T
    return krr.KronGram(arrays["row_kernel"], arrays["col_kernel"], arrays["train_rows"],
                        arrays["train_cols"]).full(arrays["coef"])


def predict_new(arrays, row_side, col_side, n_rows, n_cols, row_kernel_rows=None,
                col_kernel_rows=None) -> np.ndarray:
    """The extrapolation ``k_r Gamma k_c^T`` to new entities (§3.3), offset not included;
    see :meth:`KernelMatrixCompletion.predict_new`."""
    Kr = None if row_kernel_rows is None else np.atleast_2d(
        np.asarray(row_kernel_rows, dtype=np.float64))
    Kc = None if col_kernel_rows is None else np.atleast_2d(
        np.asarray(col_kernel_rows, dtype=np.float64))
    if (Kr is not None and Kr.shape[1] != n_rows) or (
            Kc is not None and Kc.shape[1] != n_cols):
        raise ValueError(f"row_kernel_rows must have {n_rows} columns and "
                         f"col_kernel_rows {n_cols}; got "
                         f"{None if Kr is None else Kr.shape} and "
                         f"{None if Kc is None else Kc.shape}.")
    G = sp.csr_matrix((np.asarray(arrays["coef"], dtype=np.float64),
                       (np.asarray(arrays["train_rows"]), np.asarray(arrays["train_cols"]))),
                      shape=(n_rows, n_cols))  # repeats summed
    # left = K_r Gamma (P x L), then left K_c^T
    if Kr is not None:
        left = np.asarray((G.T @ Kr.T).T)
    else:
        left = np.asarray(row_side.apply(G.toarray()))
    if Kc is not None:
        return left @ Kc.T
    return np.asarray(col_side.apply(np.ascontiguousarray(left.T))).T
