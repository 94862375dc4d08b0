"""The fast all-pairs path against the naive O(mn) computation, and against finite
differences: f, gradient and Hessian-vector products of both blocks, for every loss, with
user features, item features and a user graph (and without them), the small-d variant, the
line-search identity and the joint Gauss-Newton product of kmviz.ocmf.allpairs."""

import itertools

import numpy as np
import pytest

from kmviz.ocmf import BlockProblem, ObservedPairs
from kmviz.ocmf import _reference as R
from kmviz.ocmf.losses import LOSSES, numpy_loss

LOSS_CASES = list(LOSSES)
SIDE_CASES = [  # (user features, item features, graph, identity)
    (True, True, True, True),
    (False, False, False, True),
    (True, False, True, True),
    (False, True, False, True),
    (True, True, False, False),
]
SIDE_IDS = ["features+graph", "plain", "user-features+graph", "item-features",
            "inductive"]


def _problems(t, small_d="off"):
    """The W block (items fixed) and the H block (users fixed) of a Tiny problem."""
    Q = t.Z.apply(t.Wv)
    pw = BlockProblem(t.loss.block("rows", Q), t.X, t.lam_w, t.L, t.lam_graph, small_d)
    P = t.X.apply(t.Wu)
    ph = BlockProblem(t.loss.block("cols", P), t.Z, t.lam_h, None, 0.0, small_d)
    return pw, ph


def _naive_args(t):
    return dict(X=t.Xd, Z=t.Zd, Y=t.Y, loss=t.loss_name, p=t.p, q=t.q, a_bar=t.a_bar)


@pytest.mark.parametrize("loss", LOSS_CASES)
@pytest.mark.parametrize("case", SIDE_CASES, ids=SIDE_IDS)
@pytest.mark.parametrize("small_d", ["off", "on"])
def test_fast_path_equals_naive_dense_computation(tiny_factory, loss, case, small_d):
    uf, vf, graph, identity = case
    t = tiny_factory(loss, user_features=uf, item_features=vf, graph=graph,
                     identity=identity, seed=hash((loss, case)) % 1000)
    pw, ph = _problems(t, small_d)
    a = _naive_args(t)
    f_naive = R.objective(t.Wu, t.Wv, lam_w=t.lam_w, lam_h=t.lam_h, lam_g=t.lam_g, L=t.L, **a)
    # f: each block's value + the terms it holds fixed + the constant of L-
    const = t.loss.constant
    fw = pw.fun(t.Wu.ravel()) + const + t.lam_h * np.sum(t.Wv ** 2)
    P = t.X.apply(t.Wu)
    graph_term = t.lam_graph * np.sum(P * (t.L @ P)) if t.L is not None else 0.0
    fh = ph.fun(t.Wv.ravel()) + const + t.lam_w * np.sum(t.Wu ** 2) + graph_term
    assert fw == pytest.approx(f_naive, rel=1e-12, abs=1e-12)
    assert fh == pytest.approx(f_naive, rel=1e-12, abs=1e-12)
    # gradients
    gw = pw.grad(t.Wu.ravel()).reshape(t.Wu.shape)
    gh = ph.grad(t.Wv.ravel()).reshape(t.Wv.shape)
    np.testing.assert_allclose(gw, R.grad_user(t.Wu, t.Wv, lam_w=t.lam_w, lam_g=t.lam_g,
                                                L=t.L, **a), rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(gh, R.grad_item(t.Wu, t.Wv, lam_h=t.lam_h, **a),
                               rtol=1e-10, atol=1e-11)
    # Hessian-vector products
    Su = t.rng.standard_normal(t.Wu.shape)
    Sv = t.rng.standard_normal(t.Wv.shape)
    np.testing.assert_allclose(
        pw.hess_vec(Su.ravel()).reshape(Su.shape),
        R.hess_vec_user(t.Wu, t.Wv, Su, lam_w=t.lam_w, lam_g=t.lam_g, L=t.L, **a),
        rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(
        ph.hess_vec(Sv.ravel()).reshape(Sv.shape),
        R.hess_vec_item(t.Wu, t.Wv, Sv, lam_h=t.lam_h, **a), rtol=1e-10, atol=1e-11)


def _central_gradient(fun, x, h=1e-6):
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("block", ["w", "h"])
def test_gradient_matches_finite_differences(tiny_factory, loss, block):
    t = tiny_factory(loss, seed=3)
    pw, ph = _problems(t)
    prob, x = (pw, t.Wu.ravel().copy()) if block == "w" else (ph, t.Wv.ravel().copy())
    prob.fun(x)
    g = prob.grad(x)
    fd = _central_gradient(prob.fun, x)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(g).max()))


@pytest.mark.parametrize("loss", ["logistic", "squared", "squared_hinge"])
@pytest.mark.parametrize("block", ["w", "h"])
def test_hessian_vector_matches_finite_differences_of_the_gradient(tiny_factory, loss, block):
    t = tiny_factory(loss, seed=5)
    pw, ph = _problems(t)
    prob, x = (pw, t.Wu.ravel().copy()) if block == "w" else (ph, t.Wv.ravel().copy())
    v = t.rng.standard_normal(x.size)
    h = 1e-6
    if loss == "squared_hinge":  # keep every pair off the hinge's kink
        s = prob.terms.pair_scores(prob.embedding(x))
        assert np.min(np.abs(1.0 - s)) > 1e-3
    prob.fun(x + h * v)
    gp = prob.grad(x + h * v)
    prob.fun(x - h * v)
    gm = prob.grad(x - h * v)
    prob.fun(x)
    prob.grad(x)
    hv = prob.hess_vec(v)
    np.testing.assert_allclose(hv, (gp - gm) / (2 * h), rtol=1e-6,
                               atol=1e-6 * max(1.0, np.abs(hv).max()))


@pytest.mark.parametrize("loss", LOSS_CASES)
def test_hessian_is_symmetric_and_positive_definite(tiny_factory, loss):
    t = tiny_factory(loss, seed=7, rho=2.0)   # large rho: many l+'' < 0 on Omega+
    pw, _ = _problems(t)
    x = t.Wu.ravel()
    pw.fun(x)
    pw.grad(x)
    assert (pw.terms.d2 < 0).any()
    H = np.column_stack([pw.hess_vec(e) for e in np.eye(x.size)])
    np.testing.assert_allclose(H, H.T, atol=1e-10)
    assert np.linalg.eigvalsh(0.5 * (H + H.T)).min() >= 2 * t.lam_w - 1e-9


@pytest.mark.parametrize("loss", LOSS_CASES)
@pytest.mark.parametrize("block", ["w", "h"])
def test_line_search_identity_is_exact(tiny_factory, loss, block):
    """g(W + a D) - g(W) == L+ difference + a Val1 + a^2 Val2 (Supp-1.4)."""
    t = tiny_factory(loss, seed=11)
    pw, ph = _problems(t)
    prob, x = (pw, t.Wu.ravel().copy()) if block == "w" else (ph, t.Wv.ravel().copy())
    f0 = prob.fun(x)
    d = -prob.grad(x)
    ls = prob.line_search(x, d)
    for alpha in (1.0, 0.3, 1e-3):
        fa = BlockProblem.fun(prob, x + alpha * d)
        prob.fun(x)
        assert ls.decrease(alpha) == pytest.approx(fa - f0, rel=1e-10, abs=1e-10)
    x_new = ls.accept(0.3)
    parts = dict(prob.parts)
    prob.fun(x_new)
    for key, value in prob.parts.items():
        assert parts[key] == pytest.approx(value, rel=1e-10, abs=1e-10), key


def test_sq_sq_full_equals_dense_least_squares(tiny_factory):
    """With the squared loss, rho = 1 (p = q = 1) and a_bar = 0 the objective is the dense
    least squares ||Y - X W H^T||^2 + regularizers (the digest's test 6)."""
    t = tiny_factory("squared", seed=2, graph=False, item_features=False)
    from kmviz.ocmf import AllPairsLoss
    loss = AllPairsLoss(t.pairs, "squared", np.ones(t.Y.shape[0]), np.ones(t.Y.shape[1]), 0.0)
    prob = BlockProblem(loss.block("rows", t.Z.apply(t.Wv)), t.X, t.lam_w)
    P, Q = t.X.apply(t.Wu), t.Z.apply(t.Wv)
    dense = np.sum((t.Y - P @ Q.T) ** 2) + t.lam_w * np.sum(t.Wu ** 2)
    assert prob.fun(t.Wu.ravel()) + loss.constant == pytest.approx(dense, rel=1e-12)


@pytest.mark.parametrize("loss", LOSS_CASES)
def test_joint_gauss_newton_and_gradients_equal_naive(tiny_factory, loss):
    """The both-sides API (for nonlinear towers) in embedding space."""
    t = tiny_factory(loss, seed=13)
    rng = np.random.default_rng(0)
    m, n = t.Y.shape
    P, Q = rng.standard_normal((m, 3)), rng.standard_normal((n, 3))
    dP, dQ = rng.standard_normal((m, 3)), rng.standard_normal((n, 3))
    val = t.loss.value(P, Q)
    entry, first, _ = R.entry_terms(P @ Q.T, t.Y, loss, t.p, t.q, t.a_bar)
    assert val.total == pytest.approx(entry.sum(), rel=1e-12)
    GP, GQ = t.loss.gradients(P, Q)
    np.testing.assert_allclose(GP, first @ Q, rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(GQ, first.T @ P, rtol=1e-10, atol=1e-11)
    gp, gq = t.loss.gauss_newton(P, Q, dP, dQ)
    rp, rq = R.joint_gauss_newton(P, Q, dP, dQ, t.Y, loss, t.p, t.q, t.a_bar)
    np.testing.assert_allclose(gp, rp, rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(gq, rq, rtol=1e-10, atol=1e-11)


def test_losses_match_their_numpy_oracles():
    from kmviz.ocmf.losses import LOSS_CODES, loss_derivatives
    s = np.linspace(-40, 40, 161)
    for name, code in LOSS_CODES.items():
        for y in (1.0, -1.0):
            ref = numpy_loss(name, y, s)
            got = np.array([loss_derivatives(code, y, v) for v in s]).T
            for a, b in zip(got, ref):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)


def test_observed_pairs_layouts_agree():
    rng = np.random.default_rng(1)
    Y = rng.random((6, 5)) < 0.4
    pairs = ObservedPairs.from_matrix(Y)
    assert pairs.nnz == Y.sum()
    np.testing.assert_array_equal(pairs.to_csr().toarray() != 0, Y)
    for j, i in itertools.product(range(5), range(6)):
        col = pairs.col_rows[pairs.col_ptr[j]:pairs.col_ptr[j + 1]]
        assert (i in col) == Y[i, j]
    # column-major positions point at the same pairs in row-major order
    np.testing.assert_array_equal(pairs.cols[pairs.col_perm],
                                  np.repeat(np.arange(5), pairs.col_counts()))
    with pytest.raises(ValueError, match="more than once"):
        ObservedPairs([0, 0], [1, 1], 2, 2)
    with pytest.raises(ValueError, match="must lie in"):
        ObservedPairs([0, 3], [1, 1], 2, 2)


@pytest.mark.parametrize("case", SIDE_CASES, ids=SIDE_IDS)
def test_diagonal_preconditioner_is_the_hessian_diagonal(tiny_factory, case):
    uf, vf, graph, identity = case
    t = tiny_factory("logistic", user_features=uf, item_features=vf, graph=graph,
                     identity=identity, seed=21, rho=1.5)
    for prob, x in zip(_problems(t), (t.Wu.ravel(), t.Wv.ravel())):
        prob.fun(x)
        prob.grad(x)
        H = np.column_stack([prob.hess_vec(e) for e in np.eye(x.size)])
        np.testing.assert_allclose(prob.diag_hessian(), np.diag(H), rtol=1e-10, atol=1e-12)
        assert prob.diag_hessian().min() > 0


def test_preconditioned_and_plain_tron_reach_the_same_minimum(tiny_factory):
    from kmviz.ocmf import tron

    t = tiny_factory("logistic", seed=4)
    pw, _ = _problems(t)
    a = tron(pw, np.zeros(t.Wu.size), eps=1e-10, max_iter=100, precondition=True)
    b = tron(pw, np.zeros(t.Wu.size), eps=1e-10, max_iter=100, precondition=False)
    assert a.f == pytest.approx(b.f, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-5, atol=1e-7)
    assert {a.stop, b.stop} <= {"tolerance", "no_progress"}
