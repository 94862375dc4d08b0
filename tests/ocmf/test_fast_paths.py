"""The faster passes of a block against the plain ones: the fused value + gradient +
diagonal pass against the naive O(mn) oracle and against the separate kernels (after a line
search), the copy-free identity side with constant weights, the float32 pair passes against
float64, TRON in float32 never accepting a rising step, and the fused CG vector kernels."""

import numpy as np
import pytest
import scipy.sparse as sp

from kmviz.ocmf import AllPairsLoss, BlockProblem, ObservedPairs, OneClassMF, SideMatrix
from kmviz.ocmf import _kernels as K
from kmviz.ocmf import _reference as R
from kmviz.ocmf import make_planted_pu, tron, weighted_gram
from kmviz.ocmf.losses import LOSSES


def _plain_identity(loss, seed=0, m=12, n=9, k=4, rho=0.3):
    """X = I and Z = I exactly (every user and item has a positive), constant weights."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((m, n)) < 0.35).astype(float)
    Y[np.arange(m), np.arange(m) % n] = 1.0
    Y[np.arange(n) % m, np.arange(n)] = 1.0
    pairs = ObservedPairs.from_matrix(Y)
    p, q = np.full(m, rho), np.ones(n)
    ap = AllPairsLoss(pairs, loss, p, q, -1.0)
    X, Z = SideMatrix(m, np.arange(m)), SideMatrix(n, np.arange(n))
    assert X.pure_identity and Z.pure_identity
    Wu, Wv = rng.standard_normal((m, k)) * 0.5, rng.standard_normal((n, k)) * 0.5
    return dict(Y=Y, p=p, q=q, loss=ap, X=X, Z=Z, Wu=Wu, Wv=Wv, rng=rng, name=loss)


@pytest.mark.parametrize("loss", LOSSES)
def test_identity_side_without_copies_equals_the_naive_computation(loss):
    c = _plain_identity(loss, seed=3)
    lam_w, lam_h = 0.7, 0.4
    a = dict(X=np.eye(c["X"].d), Z=np.eye(c["Z"].d), Y=c["Y"], loss=loss, p=c["p"],
             q=c["q"], a_bar=-1.0)
    Wu, Wv = c["Wu"], c["Wv"]
    pw = BlockProblem(c["loss"].block("rows", Wv), c["X"], lam_w)
    ph = BlockProblem(c["loss"].block("cols", Wu), c["Z"], lam_h)
    const = c["loss"].constant
    f = R.objective(Wu, Wv, lam_w=lam_w, lam_h=lam_h, lam_g=0.0, L=None, **a)
    assert pw.fun(Wu.ravel()) + const + lam_h * np.sum(Wv ** 2) == pytest.approx(f, rel=1e-12)
    assert ph.fun(Wv.ravel()) + const + lam_w * np.sum(Wu ** 2) == pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(pw.grad(Wu.ravel()).reshape(Wu.shape),
                               R.grad_user(Wu, Wv, lam_w=lam_w, lam_g=0.0, L=None, **a),
                               rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(ph.grad(Wv.ravel()).reshape(Wv.shape),
                               R.grad_item(Wu, Wv, lam_h=lam_h, **a), rtol=1e-10, atol=1e-11)
    S = c["rng"].standard_normal(Wu.shape)
    np.testing.assert_allclose(
        pw.hess_vec(S.ravel()).reshape(S.shape),
        R.hess_vec_user(Wu, Wv, S, lam_w=lam_w, lam_g=0.0, L=None, **a), rtol=1e-10,
        atol=1e-11)
    H = np.column_stack([pw.hess_vec(e) for e in np.eye(Wu.size)])
    np.testing.assert_allclose(pw.diag_hessian(), np.diag(H), rtol=1e-10, atol=1e-12)
    # nothing handed out aliases the iterate: TRON's x is left as it was
    x = Wu.ravel().copy()
    pw.fun(x)
    g = pw.grad(x)
    g += 1.0
    np.testing.assert_array_equal(x, Wu.ravel())


@pytest.mark.parametrize("loss", LOSSES)
def test_fused_pass_equals_the_separate_kernels_after_a_line_search(tiny_factory, loss):
    """grad and diag at a point reached by a line search (scores set directly, the separate
    kernels) equal those of a fresh value pass there (the fused kernel)."""
    t = tiny_factory(loss, seed=13)
    Q = t.Z.apply(t.Wv)
    prob = BlockProblem(t.loss.block("rows", Q), t.X, t.lam_w, t.L, t.lam_graph)
    x = t.Wu.ravel().copy()
    prob.fun(x)
    ls = prob.line_search(x, -prob.grad(x))
    x2 = ls.accept(0.2)
    g_sep = prob.grad(x2)
    d_sep = prob.diag_hessian()
    fresh = BlockProblem(t.loss.block("rows", Q), t.X, t.lam_w, t.L, t.lam_graph)
    fresh.fun(x2)
    np.testing.assert_allclose(g_sep, fresh.grad(x2), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d_sep, fresh.diag_hessian(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("features", [False, True], ids=["plain", "features+graph"])
def test_float32_pair_passes_match_float64(tiny_factory, loss, features):
    t = tiny_factory(loss, seed=17, user_features=features, item_features=features,
                     graph=features)
    for side, O, S, x in (("rows", t.Z.apply(t.Wv), t.X, t.Wu.ravel()),
                          ("cols", t.X.apply(t.Wu), t.Z, t.Wv.ravel())):
        graph, lg = (t.L, t.lam_graph) if side == "rows" else (None, 0.0)
        p64 = BlockProblem(t.loss.block(side, O), S, t.lam_w, graph, lg)
        p32 = BlockProblem(t.loss.block(side, O, np.float32), S, t.lam_w, graph, lg)
        assert p32.fun(x) == pytest.approx(p64.fun(x), rel=1e-5)
        g64, g32 = p64.grad(x), p32.grad(x)
        assert g32.dtype == np.float64
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5 * np.abs(g64).max())
        v = t.rng.standard_normal(x.size)
        h64, h32 = p64.hess_vec(v), p32.hess_vec(v)
        np.testing.assert_allclose(h32, h64, rtol=1e-4, atol=1e-5 * np.abs(h64).max())
        np.testing.assert_allclose(p32.diag_hessian(), p64.diag_hessian(), rtol=1e-4)


@pytest.mark.parametrize("loss", LOSSES)
def test_tron_in_float32_never_accepts_a_step_that_raises_the_objective(loss):
    """The acceptance test guards the exact (double) objective of the float32 passes."""
    rng = np.random.default_rng(5)
    Y = rng.random((60, 40)) < 0.1
    pairs = ObservedPairs.from_matrix(Y)
    ap = AllPairsLoss(pairs, loss, np.full(60, 0.25), np.ones(40), -1.0)
    X = SideMatrix(60, np.flatnonzero(Y.any(axis=1)),
                   sp.csr_matrix(rng.standard_normal((60, 5))), list("abcde"))
    Q = rng.standard_normal((40, 6))
    for seed in range(3):
        prob = BlockProblem(ap.block("rows", Q, np.float32), X, 0.1)
        x0 = np.random.default_rng(seed).standard_normal(X.d * 6) * 3.0
        res = tron(prob, x0, eps=1e-8, max_iter=40)
        accepted = [s for s in res.steps if s["accepted"]]
        assert accepted
        for s in accepted:
            assert s["f_new"] <= s["f"]
        exact = BlockProblem(ap.block("rows", Q), X, 0.1)
        assert exact.fun(res.x) <= exact.fun(x0)


def test_estimator_in_float32_matches_float64():
    ratings, _ = make_planted_pu(200, 150, 4, n_user_features=5, n_item_features=3,
                                 density=0.08, random_state=2)
    train, test = ratings.split(0.1, random_state=3)
    kw = dict(k=6, max_iter=5, rho=0.05, lambda_w=0.5, lambda_h=0.5, side_features="both",
              random_state=0)
    a = OneClassMF(**kw).fit(train)
    b = OneClassMF(**kw, dtype="float32").fit(train)
    assert b.trace_.column("objective")[-1] == pytest.approx(
        a.trace_.column("objective")[-1], rel=1e-4)
    assert abs(a.evaluate(test)["precision_at_5"] - b.evaluate(test)["precision_at_5"]) < 0.02
    for row in b.trace_.rows[1:]:
        assert row["objective_increase"] <= 1e-6 * abs(row["objective"])


def test_cg_vector_kernels_match_numpy():
    rng = np.random.default_rng(0)
    n = 1001
    s, d, r, Hd = (rng.standard_normal(n) for _ in range(4))
    M = 0.5 + rng.random(n)
    dHd, sMd, dMd = K.cg_curvature(s, d, Hd, M)
    assert (dHd, sMd, dMd) == pytest.approx((d @ Hd, s @ (M * d), d @ (M * d)), rel=1e-12)
    s2, r2, z = s.copy(), r.copy(), np.empty(n)
    zr = K.cg_advance(s2, d, r2, Hd, 1.0 / M, 0.3, z)
    np.testing.assert_allclose(s2, s + 0.3 * d, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r2, r - 0.3 * Hd, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(z, (r - 0.3 * Hd) / M, rtol=1e-12, atol=1e-15)
    assert zr == pytest.approx(z @ r2, rel=1e-12)
    d2 = d.copy()
    K.cg_direction(d2, z, 0.7)
    np.testing.assert_allclose(d2, z + 0.7 * d, rtol=1e-12, atol=1e-15)


def test_weighted_gram_with_constant_weights_equals_the_general_formula():
    rng = np.random.default_rng(1)
    E = rng.standard_normal((50, 6))
    for w in (np.full(50, 0.125), 0.5 + rng.random(50)):
        np.testing.assert_allclose(weighted_gram(E, w), E.T @ (E * w[:, None]), rtol=1e-12)
