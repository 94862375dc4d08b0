"""The coordinate-descent ALS of gFM (kmviz.gfm.als, kmviz.gfm._kernels.cd_sweep) against
dense NumPy oracles on tiny problems: every coordinate update is the exact minimizer of its
1-D quadratic, the objective never increases, and a pass solved to convergence equals the
LSQR pass (both reach the unique minimizer of each ridge-regularized half)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kmviz.gfm import als
from kmviz.gfm._kernels import cd_full_sweep, cd_sweep
from kmviz.gfm.operators import Standardizer


def _objective(Z, y, prm, lam):
    """``1/2 ||y - b - Z w - rowsum((Z U) * (Z V))||^2 + lam/2 (||w||^2 + ||U||^2 + ||V||^2)``
    on the dense Z."""
    r = y - prm["b"] - Z @ prm["w"] - np.einsum("ij,ij->i", Z @ prm["U"], Z @ prm["V"])
    return 0.5 * r @ r + 0.5 * lam * sum(np.sum(prm[n] ** 2) for n in "wUV")


def _oracle_sweep(Z, y, prm, lam, coords, fit_intercept):
    """The sweep done by brute force on the dense objective, coordinate by coordinate in
    ``coords`` ((name, index) pairs), knowing nothing of the kernel's sums.

    Without an intercept each coordinate goes to the vertex of the parabola through three
    evaluations of the objective. With one, each coordinate and the intercept go to the
    minimizer of the 2-D quadratic fitted through six evaluations; at the end the intercept
    alone. Returns the parameters and each step's (objective before, after)."""
    prm = {n: np.array(v, dtype=float) for n, v in prm.items()}

    def f(name, idx, t, c=0.0):
        old_t, old_b = prm[name][idx], prm["b"][()]
        prm[name][idx], prm["b"][()] = old_t + t, old_b + c
        val = _objective(Z, y, prm, lam)
        prm[name][idx], prm["b"][()] = old_t, old_b
        return val

    steps = []
    for name, idx in coords:
        before = _objective(Z, y, prm, lam)
        if fit_intercept:  # f(c, t) = a + g.x + x^T H x / 2 from six points
            f0 = f(name, idx, 0.0)
            fc1, fcm, ft1, ftm = (f(name, idx, 0.0, 1.0), f(name, idx, 0.0, -1.0),
                                  f(name, idx, 1.0), f(name, idx, -1.0))
            H = np.empty((2, 2))
            H[0, 0], H[1, 1] = fc1 - 2 * f0 + fcm, ft1 - 2 * f0 + ftm
            H[0, 1] = H[1, 0] = f(name, idx, 1.0, 1.0) - f0 - (fc1 - fcm) / 2 \
                - (ft1 - ftm) / 2 - (H[0, 0] + H[1, 1]) / 2
            g = np.array([(fc1 - fcm) / 2, (ft1 - ftm) / 2])
            c, t = np.linalg.lstsq(H, -g, rcond=None)[0]
        else:
            c, vals = 0.0, [f(name, idx, t) for t in (-1.0, 0.0, 1.0)]
            curv = vals[0] - 2 * vals[1] + vals[2]
            t = -0.5 * (vals[2] - vals[0]) / curv if curv > 0 else 0.0
        prm[name][idx] += t
        prm["b"][()] += c
        steps.append((before, _objective(Z, y, prm, lam)))
    if fit_intercept:
        before = _objective(Z, y, prm, lam)
        r = y - prm["b"] - Z @ prm["w"] - np.einsum("ij,ij->i", Z @ prm["U"], Z @ prm["V"])
        prm["b"][()] += np.mean(r)
        steps.append((before, _objective(Z, y, prm, lam)))
    return prm, steps


def _csc(Z):
    Zc = sp.csc_matrix(Z)
    Zc.sort_indices()
    return (Zc.indptr.astype(np.int64), Zc.indices.astype(np.int64), Zc.data.astype(float),
            np.asarray(Zc.multiply(Zc).sum(axis=0)).ravel())


def _tiny(seed=3, N=14, d=5, k=2):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((N, d)) * (rng.random((N, d)) < 0.6)
    Z[:, 3] = 0.0  # an empty column: its minimizer is 0 (the ridge alone)
    prm = {"b": np.array(0.3), "w": rng.standard_normal(d),
           "U": rng.standard_normal((d, k)), "V": rng.standard_normal((d, k))}
    return Z, rng.standard_normal(N), prm


def _check(Z, y, prm, out, oracle, steps, dec, r, lam, fit_intercept):
    for name in "wUV":
        np.testing.assert_allclose(out[name], oracle[name], rtol=1e-7, atol=1e-9)
    assert out["b"] == pytest.approx(float(oracle["b"]), abs=1e-9)
    assert not fit_intercept or out["b"] != float(prm["b"])  # the intercept moved
    assert abs(out["w"][3]) < 1e-15 and np.all(np.abs(out["U"][3]) < 1e-15)
    for old, new in steps:  # no coordinate's step raised the objective
        assert new <= old + 1e-12 * abs(old)
    before, after = _objective(Z, y, prm, lam), _objective(Z, y, out, lam)
    assert after < before
    assert dec == pytest.approx(before - after, rel=1e-8)  # the reported decrease
    fresh = y - out["b"] - Z @ out["w"] - np.einsum("ij,ij->i", Z @ out["U"], Z @ out["V"])
    np.testing.assert_allclose(r, fresh, atol=1e-11)  # the residual kept up to date


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_half_sweep_is_exact_coordinate_minimization(fit_intercept):
    Z, y, prm = _tiny()
    lam, (d, k) = 0.7, prm["U"].shape
    coords = [c for j in range(d) for c in [("w", j)] + [("U", (j, q)) for q in range(k)]]
    oracle, steps = _oracle_sweep(Z, y, prm, lam, coords, fit_intercept)
    out = {n: np.array(v, dtype=float) for n, v in prm.items()}
    b = np.array([float(prm["b"])])
    r = y - b[0] - Z @ out["w"] - np.einsum("ij,ij->i", Z @ out["U"], Z @ out["V"])
    GT = np.ascontiguousarray((Z @ prm["V"]).T)
    dec = cd_sweep(*_csc(Z), r, GT, out["U"], out["w"], b, lam, fit_intercept)
    out["b"] = b[0]
    # the penalty on the fixed V is a constant of the half: the decrease is the same
    _check(Z, y, prm, out, oracle, steps, dec, r, lam, fit_intercept)
    assert np.array_equal(out["V"], prm["V"])


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_full_sweep_is_exact_coordinate_minimization(fit_intercept):
    Z, y, prm = _tiny(seed=7)
    lam, (d, k) = 0.4, prm["U"].shape
    coords = [c for j in range(d) for c in
              [("w", j)] + [(n, (j, q)) for q in range(k) for n in "UV"]]
    oracle, steps = _oracle_sweep(Z, y, prm, lam, coords, fit_intercept)
    out = {n: np.array(v, dtype=float) for n, v in prm.items()}
    b = np.array([float(prm["b"])])
    PT, ST = np.ascontiguousarray((Z @ out["U"]).T), np.ascontiguousarray((Z @ out["V"]).T)
    r = y - b[0] - Z @ out["w"] - np.einsum("ij,ij->i", PT.T, ST.T)
    dec = cd_full_sweep(*_csc(Z), r, PT, ST, out["U"], out["V"], out["w"], b, lam,
                        fit_intercept)
    out["b"] = b[0]
    _check(Z, y, prm, out, oracle, steps, dec, r, lam, fit_intercept)
    np.testing.assert_allclose(PT, (Z @ out["U"]).T, atol=1e-12)  # projections kept
    np.testing.assert_allclose(ST, (Z @ out["V"]).T, atol=1e-12)


def _design(seed=0, N=120, year0=1980):
    """One-hot users and items, a 0/1 side column and a year-like column (year0 + 0..19)."""
    rng = np.random.default_rng(seed)
    n_users, n_items = 9, 7
    u, i = rng.integers(0, n_users, N), rng.integers(0, n_items, N)
    rows = np.repeat(np.arange(N), 4)
    cols = np.column_stack([u, n_users + i, np.full(N, n_users + n_items),
                            np.full(N, n_users + n_items + 1)]).ravel()
    vals = np.column_stack([np.ones(N), np.ones(N), rng.integers(0, 2, N),
                            year0 + rng.integers(0, 20, N)]).ravel().astype(float)
    X = sp.csr_matrix((vals, (rows, cols)), shape=(N, n_users + n_items + 2))
    y = (rng.standard_normal(n_users)[u] + rng.standard_normal(n_items)[i]
         + 0.5 * rng.standard_normal(N) + 3.0)
    return X, y


def test_coordinate_passes_never_increase_and_report_the_fresh_objective():
    X, y = _design()
    st = als.start(X, y, 3, standardize=False, fit_intercept=True, rng=1)
    prev, _ = als.objective(st, X, y, 0.05)
    for p in range(8):
        info = als.coordinate_pass(st, X, y, l2=0.05, inner_max=2, halves=p % 2 == 0)
        fresh, rmse = als.objective(st, X, y, 0.05)
        assert info["objective"] == pytest.approx(fresh, rel=1e-10)
        assert info["rmse"] == pytest.approx(rmse, rel=1e-10)
        assert info["objective"] <= prev * (1 + 1e-12)
        assert 1 <= info["n_inner"] <= 4
        prev = info["objective"]
    assert prev < 0.5 * np.var(y)  # better than the mean (the start's b)


def test_the_start_tames_large_columns_and_keeps_the_other_draws():
    X, y = _design()
    st = als.start(X, y, 2, standardize=False, fit_intercept=True, rng=5)
    raw = als.INIT_SCALE / np.sqrt(2) * np.random.default_rng(5).standard_normal((X.shape[1], 2))
    np.testing.assert_array_equal(st.U[:-1], raw[:-1])  # 0/1 columns: the plain draws
    np.testing.assert_allclose(st.U[-1], raw[-1] / 1999.0)  # the year column: / its max
    _, rmse = als.objective(st, X, y, 0.0)
    assert rmse < 2 * np.std(y)  # not ~1e4 from the year's square


@pytest.mark.parametrize("kind", ["sparse", "dense standardized"])
def test_a_converged_coordinate_pass_equals_the_lsqr_pass(kind):
    X, y = _design(seed=2, N=90, year0=0)
    standardize = kind != "sparse"
    if standardize:
        X = X.toarray()
    a = als.start(X, y, 2, standardize=standardize, fit_intercept=True, rng=4)
    b = als.start(X, y, 2, standardize=standardize, fit_intercept=True, rng=4)
    # one-hot blocks sum to the intercept's column: coordinate steps converge slowly along
    # that direction, so a strong ridge keeps the test short (~1,300 sweeps per half)
    for _ in range(2):
        ia = als.coordinate_pass(a, X, y, l2=1.0, inner_tol=1e-16, inner_max=20000,
                                    halves=True)
        ib = als.lsqr_pass(b, X, y, l2=1.0, inner_tol=1e-15, inner_max=20000)
        assert ia["objective"] == pytest.approx(ib["objective"], rel=1e-8)
        for name in ("w", "U", "V"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=1e-6)
        assert a.b == pytest.approx(b.b, abs=1e-6)


@pytest.mark.slow  # 80,000 sweeps, ~2-5 s
def test_on_a_raw_year_column_the_coordinate_pass_is_at_least_as_good_as_lsqr():
    """A column near 2000 makes the halves ill-conditioned: LSQR stops early in the second
    pass, the coordinate sweeps with the intercept paired reach as low or lower."""
    X, y = _design(seed=2, N=90)
    a = als.start(X, y, 2, standardize=False, fit_intercept=True, rng=4)
    b = als.start(X, y, 2, standardize=False, fit_intercept=True, rng=4)
    for _ in range(2):
        ia = als.coordinate_pass(a, X, y, l2=0.1, inner_tol=0.0, inner_max=20000,
                                    halves=True)
        ib = als.lsqr_pass(b, X, y, l2=0.1, inner_tol=1e-15, inner_max=20000)
        assert ia["objective"] <= ib["objective"] * (1 + 1e-9)


def test_one_pass_solves_a_standardized_sparse_design_with_lsqr():
    X, y = _design(seed=1, N=60)
    a = als.start(X, y, 2, standardize=True, fit_intercept=True, rng=0)
    b = als.start(X, y, 2, standardize=True, fit_intercept=True, rng=0)
    assert not a.std.is_identity
    ia, ib = als.one_pass(a, X, y, l2=0.1), als.lsqr_pass(b, X, y, l2=0.1)
    assert ia == ib and np.array_equal(a.U, b.U)
    with pytest.raises(ValueError, match="lsqr_pass"):
        als.columns(X, a.std)


def test_columns_are_the_standardized_rows():
    X, _ = _design(seed=3, N=30)
    D = X.toarray()
    std = Standardizer.from_data(D)
    indptr, indices, data, colsq = als.columns(D, std)
    Z = sp.csc_matrix((data, indices, indptr), shape=D.shape).toarray()
    np.testing.assert_allclose(Z, (D - std.mean) / std.scale, atol=1e-13)
    np.testing.assert_allclose(colsq, np.sum(Z * Z, axis=0), rtol=1e-12)
    indptr, indices, data, colsq = als.columns(X, Standardizer.identity(X.shape[1]))
    assert np.array_equal(sp.csc_matrix((data, indices, indptr), shape=X.shape).toarray(), D)
