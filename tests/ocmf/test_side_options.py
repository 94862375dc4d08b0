"""The feature options of one-class MF (issue 10): interval bins, row normalization and the
bias column of encode_features; the fast all-pairs path still equals the naive O(mn)
computation with them; a planted popularity-by-features effect that only the bias column
recovers on cold items; explain() with a bias column."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from kmviz.ocmf import BlockProblem, OneClassMF, SideMatrix, cold_item_split, encode_features
from kmviz.ocmf import _reference as R
from kmviz.ocmf.features import normalize_rows
from kmviz.ocmf.synthetic import make_planted_pu


# ----------------------------------------------------------------------------- encoding
def test_bins_by_width_and_by_edges():
    df = pd.DataFrame({"year": [1995.0, 2001.0, np.nan, 1988.0, 1990.0],
                       "age": [17, 30, 60, 25, 18]})
    X, names, _ = encode_features(df, missing="zero", bins={"year": 10, "age": [18, 25, 35]})
    assert names == ["year=[1980, 1990)", "year=[1990, 2000)", "year=[2000, 2010)",
                     "age=(-inf, 18)", "age=[18, 25)", "age=[25, 35)", "age=[35, inf)"]
    D = X.toarray()
    np.testing.assert_array_equal(D[:, :3], [[0, 1, 0], [0, 0, 1], [0, 0, 0], [1, 0, 0],
                                             [0, 1, 0]])
    # 17 -> below the first edge; 18 -> [18, 25) (left-closed); 60 -> the open last interval
    np.testing.assert_array_equal(D[:, 3:], [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1],
                                             [0, 0, 1, 0], [0, 1, 0, 0]])
    with pytest.raises(ValueError, match="does not have"):
        encode_features(df, bins={"decade": 10})
    with pytest.raises(ValueError, match="increasing edges"):
        encode_features(df, missing="zero", bins={"age": [30, 20]})
    with pytest.raises(ValueError, match="positive"):
        encode_features(df, missing="zero", bins={"age": 0})


def test_normalize_and_bias_column():
    df = pd.DataFrame({"g": ["a", "b", None], "f1": [1, 1, 0], "f2": [1, 0, 0],
                       "x": [3.0, -1.0, np.nan]})
    raw, names, _ = encode_features(df, missing="zero")
    X1, names1, _ = encode_features(df, missing="zero", normalize="l1", bias=True)
    X2, _, _ = encode_features(df, missing="zero", normalize="l2")
    assert names1 == names + ["bias"]
    R0 = raw.toarray()
    D1 = X1.toarray()
    np.testing.assert_array_equal(D1[:, -1], 1.0)             # the bias, every row, unscaled
    np.testing.assert_allclose(np.abs(D1[:2, :-1]).sum(axis=1), 1.0)
    np.testing.assert_allclose(D1[:2, :-1], R0[:2] / np.abs(R0[:2]).sum(axis=1)[:, None])
    np.testing.assert_array_equal(D1[2, :-1], 0.0)            # a row of zeros stays zero
    np.testing.assert_allclose(np.linalg.norm(X2.toarray()[:2], axis=1), 1.0)
    with pytest.raises(ValueError, match="normalize"):
        normalize_rows(raw, "max")


# ----------------------------------------------------------------------------- fast == naive
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_fast_path_equals_naive_with_normalized_features_and_bias(tiny_factory, loss):
    t = tiny_factory(loss, seed=11)
    m, n = t.Y.shape
    rng = np.random.default_rng(3)
    Fu = encode_features(pd.DataFrame({"c": rng.choice(list("abc"), m),
                                       "f": (rng.random(m) < 0.5).astype(int)}),
                         normalize="l1", bias=True)[0]
    Fv = encode_features(pd.DataFrame({"y": rng.uniform(1960, 2010, n),
                                       "g": (rng.random(n) < 0.5).astype(int)}),
                         bins={"y": 10}, normalize="l2", bias=True)[0]
    X = SideMatrix(m, np.flatnonzero(t.Y.sum(axis=1) > 0), Fu, [f"u{c}" for c in
                                                                 range(Fu.shape[1])])
    Z = SideMatrix(n, np.flatnonzero(t.Y.sum(axis=0) > 0), Fv, [f"v{c}" for c in
                                                                range(Fv.shape[1])])
    Wu = rng.standard_normal((X.d, t.k)) * 0.5
    Wv = rng.standard_normal((Z.d, t.k)) * 0.5
    Xd, Zd = X.apply(np.eye(X.d)), Z.apply(np.eye(Z.d))
    a = dict(X=Xd, Z=Zd, Y=t.Y, loss=loss, p=t.p, q=t.q, a_bar=t.a_bar)
    for small_d in ("off", "on"):
        pw = BlockProblem(t.loss.block("rows", Z.apply(Wv)), X, t.lam_w, t.L, t.lam_graph,
                          small_d)
        ph = BlockProblem(t.loss.block("cols", X.apply(Wu)), Z, t.lam_h, None, 0.0, small_d)
        f = R.objective(Wu, Wv, lam_w=t.lam_w, lam_h=t.lam_h, lam_g=t.lam_g, L=t.L, **a)
        fw = pw.fun(Wu.ravel()) + t.loss.constant + t.lam_h * np.sum(Wv ** 2)
        assert fw == pytest.approx(f, rel=1e-12)
        np.testing.assert_allclose(
            pw.grad(Wu.ravel()).reshape(Wu.shape),
            R.grad_user(Wu, Wv, lam_w=t.lam_w, lam_g=t.lam_g, L=t.L, **a),
            rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(ph.grad(Wv.ravel()).reshape(Wv.shape),
                                   R.grad_item(Wu, Wv, lam_h=t.lam_h, **a),
                                   rtol=1e-10, atol=1e-11)
        Su, Sv = rng.standard_normal(Wu.shape), rng.standard_normal(Wv.shape)
        np.testing.assert_allclose(
            pw.hess_vec(Su.ravel()).reshape(Su.shape),
            R.hess_vec_user(Wu, Wv, Su, lam_w=t.lam_w, lam_g=t.lam_g, L=t.L, **a),
            rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(ph.hess_vec(Sv.ravel()).reshape(Sv.shape),
                                   R.hess_vec_item(Wu, Wv, Sv, lam_h=t.lam_h, **a),
                                   rtol=1e-10, atol=1e-11)


# ----------------------------------------------------------------------------- planted
def _cold_item_p5(model, train, test, cold):
    """p@5 of each user's ranking of the cold items (users with a cold positive)."""
    S = model.score_items(np.arange(train.n_users))[:, cold]
    cold_idx = np.flatnonzero(cold)
    hits = []
    for u in np.unique(test.users):
        liked = set(np.asarray(test.items)[np.asarray(test.users) == u].tolist())
        top = cold_idx[np.argsort(-S[u], kind="stable")[:5]]
        hits.append(len(liked & set(top.tolist())) / 5)
    return float(np.mean(hits))


def test_planted_popularity_by_features_is_recovered_by_the_bias_column():
    # popularity driven by the item features, taste unrelated to them: new items can only
    # be ranked by a popularity term by features, which the bias column holds explicitly
    # (w_0^T h_j); without it the users' shared direction plays that part
    ratings, truth = make_planted_pu(300, 240, 3, n_user_features=2, n_item_features=4,
                                     feature_share=0.0, popularity=1.5,
                                     popularity_share=1.0, density=0.06,
                                     graph_neighbors=0, random_state=5)
    assert np.linalg.norm(truth.popularity_effects) > 0
    train, test, cold = cold_item_split(ratings, 0.2, random_state=0)
    Fv = encode_features(ratings.item_features)[0]
    prm = dict(k=6, rho=0.1, lambda_w=1.0, lambda_h=1.0, max_iter=10, item_identity="known",
               random_state=0)
    plain = OneClassMF(**prm).fit(train, item_features=Fv)
    ones = sp.csr_matrix(np.ones((train.n_users, 1)))
    biased = OneClassMF(**prm).fit(train, user_features=ones, item_features=Fv)
    p_plain = _cold_item_p5(plain, train, test, cold)
    p_bias = _cold_item_p5(biased, train, test, cold)
    # the oracle: cold items ranked by their true popularity
    oracle = np.broadcast_to(truth.item_bias, (train.n_users, train.n_items))
    p_oracle = _cold_item_p5(type("O", (), {"score_items": lambda self, u: oracle[u]})(),
                             train, test, cold)
    assert p_bias > 0.9 * p_oracle and p_plain > 0.9 * p_oracle
    # a model that knows nothing of the cold items (random order) is far below
    rand = np.random.default_rng(0).random((train.n_users, train.n_items))
    p_rand = _cold_item_p5(type("O", (), {"score_items": lambda self, u: rand[u]})(),
                           train, test, cold)
    assert p_bias > p_rand + 0.1
    # the popularity vector of the items is w_0^T h_j: its order matches the truth's
    pop = biased.W_user_[-1] @ biased.item_factors_[cold].T
    assert np.corrcoef(pop, truth.item_bias[cold])[0, 1] > 0.8


def test_explain_with_a_bias_column_sums_to_the_score():
    ratings, _ = make_planted_pu(60, 40, 3, density=0.1, graph_neighbors=0, random_state=1)
    Fu = encode_features(ratings.user_features, normalize="l2", bias=True)[0]
    Fv = encode_features(ratings.item_features, bias=True)[0]
    model = OneClassMF(k=4, max_iter=3, random_state=0).fit(
        ratings, user_features=Fu, item_features=Fv)
    ex = model.explain(3, 5)
    assert ex.score == pytest.approx(model.score_items(3)[5])
    assert ex.user_terms["contribution"].sum() == pytest.approx(ex.score)
    assert ex.item_terms["contribution"].sum() == pytest.approx(ex.score)
    # the bias row of the user split is w_0^T h_j (value 1)
    row = ex.user_terms[ex.user_terms["feature"] == f"f{Fu.shape[1] - 1}"]
    assert row["value"].item() == 1.0
    assert row["contribution"].item() == pytest.approx(
        model.W_user_[-1] @ model.item_factors_[5])


# ----------------------------------------------------------------------------- sparse split
def test_sparse_user_split_keeps_exactly_keep_entries_of_the_chosen_users():
    from kmviz.ocmf.splits import sparse_user_split

    ratings, _ = make_planted_pu(80, 60, 3, density=0.15, graph_neighbors=0, random_state=2)
    train, test, sparse = sparse_user_split(ratings, 0.25, 4, random_state=0)
    before = np.bincount(np.asarray(ratings.users), minlength=80)
    after = np.bincount(np.asarray(train.users), minlength=80)
    held = np.bincount(np.asarray(test.users), minlength=80)
    assert sparse.sum() == round(0.25 * (before > 4).sum())
    assert np.all(before[sparse] > 4)
    np.testing.assert_array_equal(after[sparse], 4)
    np.testing.assert_array_equal(after[~sparse], before[~sparse])
    np.testing.assert_array_equal(held, np.where(sparse, before - 4, 0))
    assert train.n_ratings + test.n_ratings == ratings.n_ratings
    # the pairs of both parts are the original pairs (no pair in both)
    tr = set(zip(np.asarray(train.users).tolist(), np.asarray(train.items).tolist()))
    te = set(zip(np.asarray(test.users).tolist(), np.asarray(test.items).tolist()))
    assert not tr & te and len(tr | te) == ratings.n_ratings
