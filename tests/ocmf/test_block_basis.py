"""TRON's blocks in the eigenbasis of the fixed side's Gramian (``BlockProblem(basis="eig")``)
with a plain Jacobi preconditioner (``tron(pcg_alpha=1)``): the same objective, the naive
O(mn) oracles' gradient and Hessian rotated by V, the same block minimum as LIBLINEAR's
setting in W's own basis, and never a step that raises the objective."""

import numpy as np
import pytest

from kmviz.ocmf import BlockProblem, tron
from kmviz.ocmf import _reference as R
from kmviz.ocmf.losses import LOSSES

SIDE_CASES = [  # (user features, item features, graph, identity)
    (True, True, True, True),
    (False, False, False, True),
    (True, True, False, False),
]
SIDE_IDS = ["features+graph", "plain", "inductive"]


def _problems(t, small_d="off", basis=None):
    Q = t.Z.apply(t.Wv)
    pw = BlockProblem(t.loss.block("rows", Q), t.X, t.lam_w, t.L, t.lam_graph, small_d,
                      basis=basis)
    P = t.X.apply(t.Wu)
    ph = BlockProblem(t.loss.block("cols", P), t.Z, t.lam_h, None, 0.0, small_d,
                      basis=basis)
    return pw, ph


@pytest.mark.parametrize("loss", list(LOSSES))
@pytest.mark.parametrize("case", SIDE_CASES, ids=SIDE_IDS)
@pytest.mark.parametrize("small_d", ["off", "on"])
def test_rotated_block_equals_the_naive_computation(tiny_factory, loss, case, small_d):
    uf, vf, graph, identity = case
    t = tiny_factory(loss, user_features=uf, item_features=vf, graph=graph,
                     identity=identity, seed=7 + len(loss))
    pw, ph = _problems(t, small_d, basis="eig")
    a = dict(X=t.Xd, Z=t.Zd, Y=t.Y, loss=t.loss_name, p=t.p, q=t.q, a_bar=t.a_bar)
    for prob in (pw, ph):
        V = prob.V
        np.testing.assert_allclose(V.T @ V, np.eye(t.k), atol=1e-12)
        # the rotated Gramian is diagonal: the point of the basis
        Oc = prob.terms.Oc
        assert np.abs(Oc - np.diag(np.diag(Oc))).max() <= 1e-10 * np.abs(Oc).max()
    # round trip
    np.testing.assert_allclose(pw.from_inner(pw.to_inner(t.Wu)), t.Wu, atol=1e-13)
    f_naive = R.objective(t.Wu, t.Wv, lam_w=t.lam_w, lam_h=t.lam_h, lam_g=t.lam_g, L=t.L, **a)
    P = t.X.apply(t.Wu)
    graph_term = t.lam_graph * np.sum(P * (t.L @ P)) if t.L is not None else 0.0
    xw, xh = pw.to_inner(t.Wu), ph.to_inner(t.Wv)
    fw = pw.fun(xw) + t.loss.constant + t.lam_h * np.sum(t.Wv ** 2)
    fh = ph.fun(xh) + t.loss.constant + t.lam_w * np.sum(t.Wu ** 2) + graph_term
    assert fw == pytest.approx(f_naive, rel=1e-12, abs=1e-12)
    assert fh == pytest.approx(f_naive, rel=1e-12, abs=1e-12)
    # gradient and Hessian-vector products: the naive ones times V
    gw = pw.grad(xw).reshape(t.Wu.shape)
    gh = ph.grad(xh).reshape(t.Wv.shape)
    Gw = R.grad_user(t.Wu, t.Wv, lam_w=t.lam_w, lam_g=t.lam_g, L=t.L, **a)
    Gh = R.grad_item(t.Wu, t.Wv, lam_h=t.lam_h, **a)
    np.testing.assert_allclose(gw, Gw @ pw.V, rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(gh, Gh @ ph.V, rtol=1e-10, atol=1e-11)
    Su = t.rng.standard_normal(t.Wu.shape)
    Sv = t.rng.standard_normal(t.Wv.shape)
    Hu = R.hess_vec_user(t.Wu, t.Wv, Su, lam_w=t.lam_w, lam_g=t.lam_g, L=t.L, **a)
    Hv = R.hess_vec_item(t.Wu, t.Wv, Sv, lam_h=t.lam_h, **a)
    np.testing.assert_allclose(pw.hess_vec(pw.to_inner(Su)).reshape(Su.shape), Hu @ pw.V,
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ph.hess_vec(ph.to_inner(Sv)).reshape(Sv.shape), Hv @ ph.V,
                               rtol=1e-10, atol=1e-10)
    # the preconditioner's diagonal is the rotated Hessian's
    for prob, x in ((pw, xw), (ph, xh)):
        prob.fun(x)
        prob.grad(x)
        H = np.column_stack([prob.hess_vec(e) for e in np.eye(x.size)])
        np.testing.assert_allclose(prob.diag_hessian(), np.diag(H), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", list(LOSSES))
@pytest.mark.parametrize("case", SIDE_CASES, ids=SIDE_IDS)
def test_rotated_jacobi_tron_reaches_liblinears_minimum(tiny_factory, loss, case):
    uf, vf, graph, identity = case
    t = tiny_factory(loss, user_features=uf, item_features=vf, graph=graph,
                     identity=identity, seed=11 + len(loss))
    plain, _ = _problems(t)
    rot, _ = _problems(t, basis="eig")
    a = tron(plain, t.Wu.ravel(), eps=1e-11, max_iter=200, gnorm0="start")
    b = tron(rot, rot.to_inner(t.Wu), eps=1e-11, max_iter=200, gnorm0="start",
             pcg_alpha=1.0)
    assert {a.stop, b.stop} <= {"tolerance", "no_progress"}
    assert b.f == pytest.approx(a.f, rel=1e-11, abs=1e-11)
    np.testing.assert_allclose(rot.from_inner(b.x), a.x.reshape(t.Wu.shape), rtol=1e-6,
                               atol=1e-7)
    for s in b.steps:
        if s["accepted"]:
            assert s["f_new"] <= s["f"]


@pytest.mark.parametrize("loss", list(LOSSES))
def test_rotated_jacobi_tron_never_accepts_a_rising_step(tiny_factory, loss):
    for seed in range(3):
        t = tiny_factory(loss, seed=seed)
        _, ph = _problems(t, basis="eig")
        x0 = ph.to_inner(np.random.default_rng(seed).standard_normal(t.Wv.shape) * 3.0)
        res = tron(ph, x0, eps=1e-10, max_iter=40, pcg_alpha=1.0)
        accepted = [s for s in res.steps if s["accepted"]]
        assert accepted
        for s in accepted:
            assert s["f_new"] <= s["f"]
        assert res.f == pytest.approx(ph.fun(res.x), rel=1e-12)


def test_pcg_alpha_is_checked(tiny_factory):
    t = tiny_factory("squared")
    pw, _ = _problems(t)
    with pytest.raises(ValueError, match="pcg_alpha"):
        tron(pw, t.Wu.ravel(), pcg_alpha=0.0)
    with pytest.raises(ValueError, match="basis"):
        _problems(t, basis="svd")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("basis", [None, "eig"])
def test_hessian_diagonal_at_a_later_point_is_computed_on_demand(tiny_factory, dtype, basis):
    # the value pass leaves the diagonal only at a block's first point; at a later point
    # (TRON's accepted trial step) diag_hessian makes its own pass: both equal diag(H)
    t = tiny_factory("logistic", seed=5)
    Q = t.Z.apply(t.Wv)
    prob = BlockProblem(t.loss.block("rows", Q, dtype), t.X, t.lam_w, t.L, t.lam_graph,
                        basis=basis)
    x0 = prob.to_inner(t.Wu)
    x1 = x0 + 0.3 * t.rng.standard_normal(x0.size)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    for x in (x0, x1):
        prob.fun(x)
        prob.grad(x)
        H = np.column_stack([prob.hess_vec(e) for e in np.eye(x.size)])
        np.testing.assert_allclose(prob.diag_hessian(), np.diag(H), **tol)
    assert prob.terms._diag_rows is None      # the second point took the on-demand pass


@pytest.mark.parametrize("loss", list(LOSSES))
@pytest.mark.parametrize("graph", [False, True])
def test_rotated_pure_identity_block_equals_the_naive_computation(loss, graph):
    # X = I on every row (the paper's plain MF): the one-pass dense terms of the rotated
    # block (diag_quadratic_parts, add_dense_gradient_diag) against the O(mn) oracles
    from kmviz.ocmf import AllPairsLoss, ObservedPairs, SideMatrix, laplacian

    rng = np.random.default_rng(3)
    m, n, k = 8, 6, 3
    Y = (rng.random((m, n)) < 0.4).astype(float)
    Y[np.arange(m), np.arange(m) % n] = 1.0          # every user and item has a positive
    p, q = 0.3 * (0.5 + rng.random(m)), 0.5 + rng.random(n)
    loss_ = AllPairsLoss(ObservedPairs.from_matrix(Y), loss, p, q, -1.0)
    X, Z = SideMatrix(m, np.arange(m)), SideMatrix(n, np.arange(n))
    assert X.pure_identity and Z.pure_identity
    L, lam_g = None, 0.0
    if graph:
        S = np.triu(rng.random((m, m)), 1)
        L, lam_g = laplacian(S + S.T, m), 0.5
    Wu, Wv = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    lam_w, lam_h = 0.7, 0.4
    a = dict(X=np.eye(m), Z=np.eye(n), Y=Y, loss=loss, p=p, q=q, a_bar=-1.0)
    pw = BlockProblem(loss_.block("rows", Wv), X, lam_w, L, lam_w * lam_g, basis="eig")
    ph = BlockProblem(loss_.block("cols", Wu), Z, lam_h, basis="eig")
    assert pw._fused_dense and ph._fused_dense
    f = R.objective(Wu, Wv, lam_w=lam_w, lam_h=lam_h, lam_g=lam_g, L=L, **a)
    graph_term = lam_w * lam_g * np.sum(Wu * (L @ Wu)) if graph else 0.0
    xw, xh = pw.to_inner(Wu), ph.to_inner(Wv)
    assert pw.fun(xw) + loss_.constant + lam_h * np.sum(Wv ** 2) == pytest.approx(f, rel=1e-12)
    assert ph.fun(xh) + loss_.constant + lam_w * np.sum(Wu ** 2) + graph_term == \
        pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(
        pw.grad(xw).reshape(m, k),
        R.grad_user(Wu, Wv, lam_w=lam_w, lam_g=lam_g, L=L, **a) @ pw.V, rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(
        ph.grad(xh).reshape(n, k), R.grad_item(Wu, Wv, lam_h=lam_h, **a) @ ph.V,
        rtol=1e-10, atol=1e-11)
    S = rng.standard_normal((n, k))
    np.testing.assert_allclose(
        ph.hess_vec(ph.to_inner(S)).reshape(n, k),
        R.hess_vec_item(Wu, Wv, S, lam_h=lam_h, **a) @ ph.V, rtol=1e-10, atol=1e-10)


def test_cg_start_kernel_matches_numpy():
    from kmviz.ocmf import _kernels as K

    rng = np.random.default_rng(2)
    n = 1003
    g = rng.standard_normal(n)
    M = 0.5 + rng.random(n)
    s, inv_m, r, z, d = (np.full(n, np.nan) for _ in range(5))
    zr = K.cg_start(g, M, s, inv_m, r, z, d)
    assert not s.any()
    np.testing.assert_allclose(inv_m, 1.0 / M, rtol=1e-15)
    np.testing.assert_array_equal(r, -g)
    np.testing.assert_allclose(z, -g / M, rtol=1e-15)
    np.testing.assert_array_equal(d, z)
    assert zr == pytest.approx(g @ (g / M), rel=1e-12)


@pytest.mark.parametrize("side", [False, True])
def test_fitted_factors_reproduce_the_traced_objective(tiny_factory, side):
    # the estimator keeps W and W_2 in the last H block's eigenbasis (a common rotation):
    # the published pair must still give the objective the trace reports (naive oracle)
    from kmviz.data import Ratings
    from kmviz.ocmf import OneClassMF

    t = tiny_factory("logistic", seed=8, user_features=side, item_features=side,
                     graph=False)
    u, i = np.nonzero(t.Y)
    data = Ratings(u, i, np.ones(u.size), n_users=t.Y.shape[0], n_items=t.Y.shape[1],
                   r_min=1.0, r_max=1.0, implicit=True)
    inputs = {}
    if side:
        inputs = {"user_features": t.X.F, "item_features": t.Z.F}
    model = OneClassMF(k=3, rho=0.3, lambda_w=0.7, lambda_h=0.4, max_iter=4,
                       random_state=0).fit(data, **inputs)
    X = model.user_side_.apply(np.eye(model.user_side_.d))
    Z = model.item_side_.apply(np.eye(model.item_side_.d))
    f = R.objective(model.W_user_, model.W_item_, X=X, Z=Z, Y=t.Y, loss="logistic",
                    p=np.full(t.Y.shape[0], 0.3), q=np.ones(t.Y.shape[1]), a_bar=-1.0,
                    lam_w=0.7, lam_h=0.4)
    assert model.trace_.rows[-1]["objective"] == pytest.approx(f, rel=1e-10)
    np.testing.assert_allclose(model.predict(u, i),
                               np.sum(model.user_factors_[u] * model.item_factors_[i], axis=1),
                               rtol=1e-12, atol=1e-12)
