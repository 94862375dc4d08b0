"""Factored side kernels of KKMCEX (K = F F^T or the identity, never formed) against the dense
path: the vec-trick product, the exact and approximate factors, and whole fits (direct and CG
solutions, predictions, cold-start rows and columns, the completed matrix, saved runs)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from kmviz.data import Ratings
from kmviz.exceptions import ConvergenceWarning
from kmviz.kmc import KernelMatrixCompletion, krr, rkhs as kn


def _sides(N, L, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, 3))
    B = rng.standard_normal((L, 4))
    Kd = rng.standard_normal((N, N))
    Kc = rng.standard_normal((L, L))
    rows = {"factor": krr.SideKernel(N, factor=A), "identity": krr.SideKernel(N, identity=True),
            "dense": krr.SideKernel(N, dense=Kd @ Kd.T)}
    cols = {"factor": krr.SideKernel(L, factor=B), "identity": krr.SideKernel(L, identity=True),
            "dense": krr.SideKernel(L, dense=Kc @ Kc.T)}
    return rows, cols


@pytest.mark.parametrize("rk", ["factor", "identity", "dense"])
@pytest.mark.parametrize("ck", ["factor", "identity", "dense"])
def test_factored_product_equals_the_dense_vec_trick(rk, ck):
    N, L, s = 13, 11, 60
    rows_s, cols_s = _sides(N, L)
    rng = np.random.default_rng(1)
    rows = rng.integers(0, N, s)  # with repeated pairs: S^T sums them
    cols = rng.integers(0, L, s)
    v = rng.standard_normal(s)
    r, c = rows_s[rk], cols_s[ck]
    if "factor" not in (rk, ck) and not rk == ck == "identity":
        with pytest.raises(ValueError, match="use KronGram"):
            krr.FactoredKronGram(r, c, rows, cols)
        return
    g = krr.FactoredKronGram(r, c, rows, cols)
    ref = krr.KronGram(r.dense(), c.dense(), rows, cols)
    K_oo = krr.kkmcex_gram(r.dense(), c.dense(), rows, cols)
    np.testing.assert_allclose(g.matvec(v), K_oo @ v, rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(g.full(v), ref.full(v), rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(g.diagonal(), np.diag(K_oo), rtol=1e-12)
    np.testing.assert_allclose(g.gram(), K_oo, rtol=1e-12, atol=1e-11)
    if g.route != "identity":
        P, Q = g.estimate_factors(v)
        np.testing.assert_allclose(P @ Q.T, ref.full(v), rtol=1e-12, atol=1e-11)
    if rk == ck == "factor":  # both routes, whichever is cheaper
        other = "col" if g.route == "row" else "row"
        g2 = krr.FactoredKronGram(r, c, rows, cols, route=other)
        np.testing.assert_allclose(g2.matvec(v), K_oo @ v, rtol=1e-12, atol=1e-11)


def test_side_kernel_linked_matches_the_dense_rule():
    rng = np.random.default_rng(0)
    F = np.zeros((8, 2))
    F[:6] = rng.standard_normal((6, 2))  # rows 6, 7 are orthogonal to everything
    known = np.zeros(8, bool)
    known[[0, 1]] = True
    sk = krr.SideKernel(8, factor=F)
    np.testing.assert_array_equal(sk.linked(known), kn.linked(F @ F.T, known))
    assert not sk.linked(known)[6:].any()
    ident = krr.SideKernel(8, identity=True)
    np.testing.assert_array_equal(ident.linked(known), known)


def test_exact_feature_factors_reproduce_the_kernels():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    F, exact, _ = kn.feature_kernel_factor(X, "linear")
    assert exact and F.shape == (40, 3)
    np.testing.assert_allclose(F @ F.T, kn.linear_kernel(X), atol=1e-12)
    F, exact, _ = kn.feature_kernel_factor(X, "pearson")
    assert exact
    np.testing.assert_allclose(F @ F.T, kn.pearson_kernel(X), atol=1e-12)
    # few distinct rows: any kernel through its distinct rows (K = E K_u E^T)
    Xd = rng.integers(0, 2, size=(60, 3)).astype(float)  # at most 8 distinct rows
    for kind in ("gaussian", "linear", "pearson"):
        Xk = Xd + (np.arange(3) if kind == "pearson" else 0)  # no constant rows for Pearson
        F, exact, note = kn.feature_kernel_factor(Xk, kind, gamma=0.7)
        assert exact and F.shape[1] <= 8
        np.testing.assert_allclose(F @ F.T, kn.feature_kernel(Xk, kind, gamma=0.7),
                                   atol=1e-10)
    # many distinct rows and no rank asked: the dense kernel
    F, exact, note = kn.feature_kernel_factor(X, "gaussian")
    assert F is None and note == "dense"


def test_rank_r_factors_are_the_best_approximations():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 4))
    K = kn.gaussian_kernel(X, gamma=0.3)
    lam = np.sort(np.linalg.eigvalsh(K))[::-1]
    F, exact, note = kn.feature_kernel_factor(X, "gaussian", gamma=0.3, rank=10)
    assert not exact and F.shape == (50, 10) and "truncated" in note
    # Eckart-Young: the spectral error of the best rank-10 part is the 11th eigenvalue
    assert np.linalg.norm(K - F @ F.T, 2) == pytest.approx(lam[10], rel=1e-8)
    # graph kernels: bandlimited exactly, diffusion by its smoothest frequencies
    A = kn.erdos_renyi_graph(30, 0.2, random_state=0)
    F, exact, _ = kn.graph_kernel_factor(A, "bandlimited", bandwidth=5)
    assert exact and F.shape == (30, 5)
    np.testing.assert_allclose(F @ F.T, kn.graph_kernel(A, "bandlimited", bandwidth=5),
                               atol=1e-10)
    Kd = kn.graph_kernel(A, "diffusion", eta=0.5)
    ld = np.sort(np.linalg.eigvalsh(Kd))[::-1]
    F, exact, _ = kn.graph_kernel_factor(A, "diffusion", eta=0.5, rank=7)
    assert not exact
    assert np.linalg.norm(Kd - F @ F.T, 2) == pytest.approx(ld[7], rel=1e-8)


def test_nystrom_factor_above_the_distinct_row_limit(monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 3))
    monkeypatch.setattr(kn, "DISTINCT_MAX", 10)
    F, exact, note = kn.feature_kernel_factor(X, "gaussian", gamma=0.5, rank=8,
                                              random_state=3)
    assert not exact and "Nyström" in note
    # landmarks: 8 of the distinct rows (np.unique's order), drawn uniformly with that seed
    Xu = np.unique(X, axis=0)
    idx = np.sort(np.random.default_rng(3).choice(40, size=8, replace=False))
    Z = Xu[idx]
    C = kn.gaussian_kernel(X, Z, gamma=0.5)
    W = kn.gaussian_kernel(Z, gamma=0.5)
    expected = C @ np.linalg.pinv(W) @ C.T  # the Nystrom approximation
    np.testing.assert_allclose(F @ F.T, expected, atol=1e-8)


def _feature_problem(seed=0, cold_user=None, cold_item=None):
    """Users with few distinct feature rows (factored exactly through them), items with a
    linear kernel on 3 features (factored as X), some users and items without entries."""
    rng = np.random.default_rng(seed)
    N, L = 30, 24
    U = pd.DataFrame({"age": rng.integers(1, 6, N).astype(float),
                      "flag": rng.integers(0, 2, N).astype(float)})
    V = pd.DataFrame(rng.standard_normal((L, 3)), columns=["a", "b", "c"])
    allowed = np.ones((N, L), bool)
    if cold_user is not None:
        allowed[cold_user] = False
    if cold_item is not None:
        allowed[:, cold_item] = False
    flat = np.sort(rng.choice(np.flatnonzero(allowed.ravel()), 200, replace=False))
    rows, cols = flat // L, flat % L
    vals = rng.standard_normal(rows.shape[0]) + 3.0
    r = Ratings.from_arrays(rows, cols, vals, user_ids=np.arange(N), item_ids=np.arange(L),
                            user_features=U, item_features=V)
    return r, U.to_numpy(float), V.to_numpy(float)


@pytest.mark.parametrize("solver", ["direct", "cg"])
@pytest.mark.parametrize("pc", ["jacobi", "eigen"])
def test_factored_fit_equals_the_dense_fit_including_cold_start(solver, pc):
    r, U, V = _feature_problem(cold_user=[3, 7], cold_item=[5])
    kw = dict(mu=0.3, center=True, solver=solver, preconditioner=pc, n_components=20,
              feature_kernel="linear", tol=1e-12, max_iter=2000)
    # users: the linear kernel of 2 features is factored as X; a Gaussian on the users goes
    # through their <= 10 distinct rows
    for row_kernel in ("linear", "gaussian"):
        dense = KernelMatrixCompletion(factor_kernels=False, **kw)
        fact = KernelMatrixCompletion(**kw)
        extra = {}
        if row_kernel == "gaussian":
            extra = dict(row_kernel=kn.gaussian_kernel(U, gamma=0.4))
            Fu, exact, _ = kn.feature_kernel_factor(U, "gaussian", gamma=0.4)
            assert exact
            dense.fit(r, **extra)
            fact.fit(r, row_kernel_factor=Fu)
        else:
            dense.fit(r)
            fact.fit(r)
        assert dense.solver_ == fact.solver_ == solver
        assert any("factored kernels" in e["message"] for e in fact.trace_.events)
        assert not any("factored kernels" in e["message"] for e in dense.trace_.events)
        np.testing.assert_allclose(fact.coef_, dense.coef_, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(fact.completed_matrix(), dense.completed_matrix(),
                                   rtol=1e-8, atol=1e-9)
        uu, ii = np.meshgrid(np.arange(30), np.arange(24), indexing="ij")
        np.testing.assert_allclose(fact.predict(uu, ii), dense.predict(uu, ii), rtol=1e-8,
                                   atol=1e-9)
        # the cold users and item are predicted (through the kernels), the same way
        assert np.isfinite(fact.predict([3, 7, 0], [0, 1, 5])).all()
        np.testing.assert_array_equal(fact.predictable_rows_, dense.predictable_rows_)
        np.testing.assert_array_equal(fact.predictable_cols_, dense.predictable_cols_)
        np.testing.assert_allclose(fact.row_kernel_, dense.row_kernel_, atol=1e-10)
        np.testing.assert_allclose(fact.col_kernel_, dense.col_kernel_, atol=1e-10)
        # extrapolation to new entities by their kernel rows
        kr = dense.row_kernel_[[3, 4]]
        kc = dense.col_kernel_[[5, 0, 2]]
        np.testing.assert_allclose(fact.predict_new(kr, kc), dense.predict_new(kr, kc),
                                   rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(fact.predict_new(), dense.completed_matrix(), rtol=1e-8,
                                   atol=1e-9)


def test_identity_side_is_never_formed_and_matches_the_dense_identity():
    r, U, V = _feature_problem(cold_item=[5])
    kw = dict(mu=0.2, center=True, solver="cg", feature_kernel="linear", row_prior="identity",
              tol=1e-12, max_iter=2000)
    fact = KernelMatrixCompletion(**kw).fit(r)
    dense = KernelMatrixCompletion(factor_kernels=False, **kw).fit(r)
    assert fact._arrays.get("row_kernel_identity") is not None
    assert fact._arrays.get("row_kernel") is None
    np.testing.assert_allclose(fact.completed_matrix(), dense.completed_matrix(), atol=1e-9)
    np.testing.assert_allclose(fact.row_kernel_, np.eye(30))


def test_kernel_rank_approximates_and_is_exact_at_full_rank():
    r, U, V = _feature_problem()
    kw = dict(mu=0.3, center=True, solver="direct", feature_kernel="gaussian", gamma=0.5)
    exact = KernelMatrixCompletion(factor_kernels=False, **kw).fit(r)
    # rank above the item kernel's numerical rank: the best rank-r part is the kernel
    full = KernelMatrixCompletion(kernel_rank=24, **kw).fit(r)
    np.testing.assert_allclose(full.completed_matrix(), exact.completed_matrix(), atol=1e-7)
    low = KernelMatrixCompletion(kernel_rank=3, **kw).fit(r)
    assert low.col_kernel_factor_.shape[1] == 3
    assert any("approximate" in e["message"] for e in low.trace_.events)
    assert np.abs(low.completed_matrix() - exact.completed_matrix()).max() > 1e-3


def test_saved_factored_model_predicts_the_same():
    r, U, V = _feature_problem(cold_user=[2])
    m = KernelMatrixCompletion(mu=0.3, center=True, solver="cg", feature_kernel="linear",
                               tol=1e-10,
                               max_iter=500).fit(r)
    arrays = m._fitted_arrays()
    assert "row_kernel" not in arrays and "row_kernel_factor" in arrays
    back = KernelMatrixCompletion._from_fitted_arrays(arrays, m.get_params(), m.trace_)
    uu, ii = np.meshgrid(np.arange(30), np.arange(24), indexing="ij")
    np.testing.assert_allclose(back.predict(uu, ii), m.predict(uu, ii))
    np.testing.assert_allclose(back.col_kernel_, V @ V.T, atol=1e-10)


def test_worse_than_the_mean_is_reported():
    r, U, V = _feature_problem()
    # uncentered values around 3 and a tiny CG budget: far worse than the mean
    with pytest.warns(ConvergenceWarning, match="no better than predicting the training "
                                                "mean.*try center=True"):
        bad = KernelMatrixCompletion(mu=100.0, solver="cg", max_iter=1, tol=0.0,
                                     feature_kernel="linear").fit(r)
    assert any("no better than predicting" in e["message"] for e in bad.trace_.events)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        good = KernelMatrixCompletion(mu=0.3, center=True, solver="direct",
                                      feature_kernel="linear").fit(r)
    assert not any("no better" in e["message"] for e in good.trace_.events)


def test_shifted_factor_side_equals_the_dense_kernel():
    """``I + 1 1^T`` on users (a per-user and a shared term) next to a linear item factor."""
    N, L, s = 13, 11, 60
    rng = np.random.default_rng(4)
    rows = rng.integers(0, N, s)
    cols = rng.integers(0, L, s)
    v = rng.standard_normal(s)
    r = krr.SideKernel(N, factor=np.ones((N, 1)), shift=1.0)
    np.testing.assert_allclose(r.dense(), np.eye(N) + 1.0)
    c = krr.SideKernel(L, factor=rng.standard_normal((L, 3)))
    g = krr.FactoredKronGram(r, c, rows, cols)
    assert g.route == "col"  # the shifted side cannot carry the product
    K_oo = krr.kkmcex_gram(r.dense(), c.dense(), rows, cols)
    np.testing.assert_allclose(g.matvec(v), K_oo @ v, rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(g.gram(), K_oo, rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(g.diagonal(), np.diag(K_oo), rtol=1e-12)
    with pytest.raises(ValueError, match="use KronGram"):
        krr.FactoredKronGram(r, krr.SideKernel(L, factor=np.ones((L, 1)), shift=2.0), rows,
                             cols)
    # a whole fit, saved and reloaded
    rr, U, V = _feature_problem(cold_item=[5])
    kw = dict(mu=0.5, center=True, solver="cg", preconditioner="eigen", n_components=10,
              feature_kernel="linear", tol=1e-12, max_iter=2000)
    side = krr.SideKernel(30, factor=np.ones((30, 1)), shift=1.0)
    fact = KernelMatrixCompletion(**kw).fit(rr, row_kernel_factor=side)
    dense = KernelMatrixCompletion(factor_kernels=False, **kw).fit(
        rr, row_kernel=np.eye(30) + 1.0)
    np.testing.assert_allclose(fact.completed_matrix(), dense.completed_matrix(), rtol=1e-8,
                               atol=1e-9)
    back = KernelMatrixCompletion._from_fitted_arrays(fact._fitted_arrays(),
                                                      fact.get_params(), fact.trace_)
    np.testing.assert_allclose(back.row_kernel_, np.eye(30) + 1.0)
    np.testing.assert_allclose(back.predict_new(), dense.completed_matrix(), rtol=1e-8,
                               atol=1e-9)


@pytest.mark.parametrize("row_prior", ["identity", "features"])
def test_add_constant_equals_the_dense_kernels_plus_ones(row_prior):
    r, U, V = _feature_problem(cold_item=[5])
    kw = dict(mu=0.5, center=True, solver="direct", feature_kernel="linear",
              row_prior=row_prior)
    fact = KernelMatrixCompletion(add_constant=True, **kw).fit(r)
    Kr = np.eye(30) if row_prior == "identity" else U @ U.T
    dense = KernelMatrixCompletion(factor_kernels=False, **kw).fit(
        r, row_kernel=Kr + 1.0, col_kernel=V @ V.T + 1.0)
    np.testing.assert_allclose(fact.row_kernel_, Kr + 1.0, atol=1e-10)
    np.testing.assert_allclose(fact.completed_matrix(), dense.completed_matrix(), rtol=1e-8,
                               atol=1e-9)
    # the dense path of the same option gives the same kernels
    also = KernelMatrixCompletion(add_constant=True, factor_kernels=False, **kw).fit(r)
    np.testing.assert_allclose(also.completed_matrix(), dense.completed_matrix(), rtol=1e-8,
                               atol=1e-9)
