"""The data side of one-class MF: Ratings.binarize, feature encoding, user graphs, the
planted PU generator and cold splits; and the ranking metrics' conventions against rankings
computed by hand."""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from kmviz import metrics
from kmviz.data import Ratings
from kmviz.exceptions import DataValueError, EmptyDataError, InvalidParameterError
from kmviz.ocmf import (
    cointeraction_graph,
    cold_user_split,
    encode_features,
    knn_graph,
    laplacian,
    make_planted_pu,
)


# ----------------------------------------------------------------------------- metrics
def test_precision_and_ndcg_by_hand():
    # user 0: ranked [3, 1, 4, 2, 0], held-out {1, 2}; user 1: [0, 2, 1], held-out {5}
    # user 2: no held-out positive (left out of every average)
    ranked = [[3, 1, 4, 2, 0], [0, 2, 1], [1, 2, 3]]
    relevant = [{1, 2}, {5}, set()]
    # P@3: user 0 has 1 hit in its top 3 -> 1/3; user 1 has 0 -> 0; mean 1/6
    assert metrics.precision_at_k(ranked, relevant, 3) == pytest.approx(1 / 6)
    # P@5 divides by 5 although user 1's list has 3 items: (2/5 + 0) / 2
    assert metrics.precision_at_k(ranked, relevant, 5) == pytest.approx(0.2)
    # nDCG@3 of user 0: DCG = 1/log2(3), IDCG = 1 + 1/log2(3)
    n0 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert metrics.ndcg_at_k(ranked, relevant, 3) == pytest.approx(n0 / 2)
    # nDCG@1 equals P@1
    assert metrics.ndcg_at_k(ranked, relevant, 1) == metrics.precision_at_k(ranked, relevant, 1)


def test_capped_precision_is_implicits_pooled_ratio():
    ranked = [[3, 1, 4, 2, 0], [0, 5, 1], [1, 2, 3]]
    relevant = [{1, 2}, {5}, set()]
    # k = 5: hits 2 + 1, caps min(5, 2) + min(5, 1) = 3 -> 1.0 (LightFM's P@5 is 0.3)
    assert metrics.capped_precision_at_k(ranked, relevant, 5) == pytest.approx(1.0)
    assert metrics.precision_at_k(ranked, relevant, 5) == pytest.approx((2 / 5 + 1 / 5) / 2)
    # k = 1: hits 0 + 0 over caps 1 + 1
    assert metrics.capped_precision_at_k(ranked, relevant, 1) == 0.0
    # k = 2: hits 1 + 1 over 2 + 1
    assert metrics.capped_precision_at_k(ranked, relevant, 2) == pytest.approx(2 / 3)
    per = metrics.capped_precision_at_k(ranked, relevant, 2, per_user=True)
    np.testing.assert_allclose(per[:2], [0.5, 1.0])
    assert math.isnan(per[2])
    with pytest.raises(ValueError, match="no user has a held-out positive"):
        metrics.capped_precision_at_k([[1]], [set()], 1)


# ----------------------------------------------------------------------------- binarize
def _graded():
    return Ratings.from_arrays([1, 1, 2, 2, 3, 3], [10, 20, 10, 30, 20, 30],
                               [5.0, 3.0, 4.0, 1.0, 2.0, 4.5], name="tiny")


def test_binarize_keeps_ratings_at_or_above_the_threshold():
    r = _graded()
    b = r.binarize(4)
    assert b.implicit and (b.r_min, b.r_max) == (0.0, 1.0)
    assert (b.n_users, b.n_items) == (r.n_users, r.n_items)
    kept = {(int(u), int(i)) for u, i in zip(b.users, b.items)}
    assert kept == {(0, 0), (1, 0), (2, 2)}
    assert np.all(b.values == 1.0)
    assert b.info["binarized_threshold"] == 4.0 and b.info["binarized_kept"] == 3
    assert b.name == "tiny (r >= 4)"
    np.testing.assert_array_equal(b.user_ids, r.user_ids)


def test_binarize_refuses_bad_thresholds():
    with pytest.raises(EmptyDataError, match=r"no rating of 'tiny' is >= 6"):
        _graded().binarize(6)
    with pytest.raises(InvalidParameterError, match="The 'threshold' parameter of "
                                                    "Ratings.binarize must be a float"):
        _graded().binarize(float("nan"))


# ----------------------------------------------------------------------------- features
def test_encode_features_one_hot_and_standardize():
    df = pd.DataFrame({"age": [20.0, 30.0, np.nan, 40.0],
                       "gender": ["F", "M", None, "F"], "ok": [True, False, None, True]})
    X, names, info = encode_features(df, missing="error")
    assert names == ["age", "gender=F", "gender=M", "ok=False", "ok=True"]
    D = X.toarray()
    np.testing.assert_array_equal(D[2], 0.0)              # the row with no value at all
    np.testing.assert_allclose(D[[0, 1, 3], 0], [-1.224744871391589, 0.0, 1.224744871391589])
    np.testing.assert_array_equal(D[:, 1], [1, 0, 0, 1])
    assert info == {"n_missing_filled": 0, "n_rows_without_features": 1}
    df.loc[1, "age"] = np.nan
    with pytest.raises(DataValueError, match="column 'age' has 1 missing value"):
        encode_features(df)
    X, _, info = encode_features(df, missing="zero")
    assert X[1, 0] == 0 and info["n_missing_filled"] == 1


def test_graphs_are_symmetric_nonnegative_and_their_laplacian_is_psd():
    ratings, truth = make_planted_pu(40, 30, 3, density=0.2, random_state=0)
    for S in (cointeraction_graph(ratings, 5), knn_graph(truth.user_latent, 5)):
        assert S.shape == (40, 40)
        assert abs(S - S.T).max() < 1e-12 and S.diagonal().max() == 0 and S.min() >= 0
        assert (np.diff(S.indptr) >= 5).mean() > 0.5
        L = laplacian(S, 40).toarray()
        assert np.linalg.eigvalsh(L).min() > -1e-10
        np.testing.assert_allclose(L.sum(axis=1), 0, atol=1e-12)
    # co-interaction: two users with the same items are neighbours with similarity 1
    Y = sp.csr_matrix(np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]], dtype=float))
    S = cointeraction_graph(Y, 1).toarray()
    assert S[0, 1] == pytest.approx(1.0) and S[1, 0] == pytest.approx(1.0)
    with pytest.raises(DataValueError, match="not symmetric"):
        laplacian(np.array([[0, 1.0], [0, 0]]), 2)


# ----------------------------------------------------------------------------- generator
def test_planted_pu_is_reproducible_and_positive_unlabeled():
    a, ta = make_planted_pu(120, 80, 3, density=0.05, label_rate=0.6, random_state=7)
    b, _ = make_planted_pu(120, 80, 3, density=0.05, label_rate=0.6, random_state=7)
    np.testing.assert_array_equal(a.users, b.users)
    np.testing.assert_array_equal(a.items, b.items)
    assert a.implicit and (a.n_users, a.n_items) == (120, 80)
    assert ta.positives.nnz / (120 * 80) == pytest.approx(0.05, abs=0.015)
    # every observed pair is a true positive; about label_rate of them are observed
    obs = ta.observed.toarray() > 0
    pos = ta.positives.toarray() > 0
    assert not (obs & ~pos).any()
    assert obs.sum() / pos.sum() == pytest.approx(0.6, abs=0.08)
    np.testing.assert_array_equal(a.csr.toarray() > 0, obs)
    assert list(a.user_features.columns) == [f"u{c}" for c in range(6)]
    assert ta.user_effects.shape == (6, 3) and ta.item_effects.shape == (4, 3)
    assert a.user_graph is not None and a.user_graph.shape == (120, 120)
    # the features explain the latent vectors as planted
    fit = np.linalg.lstsq(a.user_features.to_numpy(), ta.user_latent, rcond=None)[0]
    np.testing.assert_allclose(fit, np.sqrt(ta.feature_share) * ta.user_effects, atol=0.3)


def test_cold_user_split_leaves_the_test_users_without_training_positives():
    ratings, _ = make_planted_pu(100, 50, 3, density=0.1, random_state=1)
    train, test, cold = cold_user_split(ratings, 0.2, random_state=0)
    assert train.n_ratings + test.n_ratings == ratings.n_ratings
    assert not np.isin(np.asarray(train.users), np.flatnonzero(cold)).any()
    assert set(np.asarray(test.users)) == set(np.flatnonzero(cold))
