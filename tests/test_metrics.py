"""Metrics against values worked out by hand on tiny cases."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from kmviz.metrics import (
    map_at_k,
    ndcg_at_k,
    nrmse_probability,
    nrmse_ratings,
    precision_at_k,
    rank_items,
    ranking_metrics,
    recall_at_k,
    rmse,
)

# ----------------------------------------------------------------------------- rating errors


def test_rmse_hand_value():
    # errors 0, 1, 0, 2 -> squares 0, 1, 0, 4 -> mean 5/4 -> sqrt(5)/2 = 1.1180339887
    assert rmse([1, 2, 3, 4], [1, 3, 3, 2]) == pytest.approx(1.1180339887, abs=1e-10)


def test_rmse_accepts_matrices_of_equal_shape():
    # the same four errors laid out 2 x 2
    assert rmse([[1, 2], [3, 4]], [[1, 3], [3, 2]]) == pytest.approx(math.sqrt(5) / 2)


def test_nrmse_ratings_divides_by_scale_width():
    # RMSE sqrt(5)/2 = 1.1180339887 over the scale [1, 5] of width 4 -> 0.2795084972
    assert nrmse_ratings([1, 2, 3, 4], [1, 3, 3, 2], 1, 5) == pytest.approx(0.2795084972)


def test_nrmse_probability_hand_value():
    # diffs 0.2, 0.3 -> squares 0.04, 0.09 -> mean 0.065 -> sqrt = 0.2549509757
    assert nrmse_probability([0.2, 1.0], [0.4, 0.7]) == pytest.approx(0.2549509757)


def test_nrmse_probability_matches_ratings_divided_by_r_max():
    r_true, r_pred = np.array([1.0, 5.0, 3.0]), np.array([2.0, 4.0, 3.0])
    # p = r / 5: diffs 0.2, 0.2, 0 -> mean square 0.08/3 -> sqrt = 0.1632993162
    assert nrmse_probability(r_true / 5, r_pred / 5) == pytest.approx(0.1632993162)


def test_nrmse_probability_tolerates_rounding_just_outside_unit_interval():
    assert nrmse_probability([1.0], [1.0 + 1e-12]) == pytest.approx(0.0, abs=1e-11)


@pytest.mark.parametrize(
    "func, args, match",
    [
        (rmse, ([1, 2], [1, 2, 3]), r"same shape; got \(2,\) and \(3,\)"),
        (rmse, ([], []), "empty"),
        (rmse, ([1.0, np.nan], [1.0, 2.0]), "y_true holds 1 NaN"),
        (rmse, ([1.0, 2.0], [np.inf, 2.0]), "y_pred holds 1 NaN or infinite"),
        (rmse, (["a"], ["b"]), "numeric arrays"),
        (nrmse_probability, ([0.5, 4.0], [0.5, 0.5]), r"p_true must hold probabilities in \[0, 1"),
        (nrmse_probability, ([0.5], [-0.2]), "p_pred must hold probabilities"),
        (nrmse_ratings, ([1, 2], [1, 2], 5, 5), r"r_min < r_max; got \[5, 5\]"),
        (nrmse_ratings, ([1, 2], [1, 2], 1, np.nan), "finite r_min < r_max"),
        (nrmse_ratings, ([1], [1, 2], 1, 5), "r_true and r_pred must have the same shape"),
    ],
)
def test_rating_metrics_reject_bad_input(func, args, match):
    with pytest.raises(ValueError, match=match):
        func(*args)


# ----------------------------------------------------------------------------- ranking metrics

# Three users; user 1 has no held-out positive and is left out of every average.
RECOMMENDED = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
RELEVANT = [{2, 4, 9}, set(), {10}]
L2, L3, L5 = math.log2(2), math.log2(3), math.log2(5)  # log2(r + 1) for ranks 1, 2, 4


def test_precision_at_k_hand_values():
    # k=4: user 0 hits items 2 and 4 -> 2/4; user 2 hits item 10 -> 1/4; mean 0.375
    assert precision_at_k(RECOMMENDED, RELEVANT, 4) == pytest.approx(0.375)
    # k=2: both users hit at rank 2 -> 1/2 each
    assert precision_at_k(RECOMMENDED, RELEVANT, 2) == pytest.approx(0.5)
    # k=1: items 1 and 9 are misses
    assert precision_at_k(RECOMMENDED, RELEVANT, 1) == 0.0


def test_precision_denominator_is_k_even_with_few_positives():
    # one positive, ranked first: 1/3, not 1/min(3, 1)
    assert precision_at_k([[7, 8, 9]], [{7}], 3) == pytest.approx(1 / 3)


def test_recall_at_k_hand_values():
    # k=4: user 0 finds 2 of 3 -> 2/3; user 2 finds 1 of 1 -> 1; mean 5/6 = 0.8333333333
    assert recall_at_k(RECOMMENDED, RELEVANT, 4) == pytest.approx(0.8333333333)
    # k=2: user 0 finds 1 of 3, user 2 finds 1 of 1 -> (1/3 + 1)/2 = 0.6666666667
    assert recall_at_k(RECOMMENDED, RELEVANT, 2) == pytest.approx(0.6666666667)


def test_ndcg_at_k_hand_values():
    # user 0, k=4: DCG = 1/log2(3) + 1/log2(5) = 0.6309297536 + 0.4306765581 = 1.0616063117
    #   IDCG over min(4, 3) = 3 ranks: 1 + 0.6309297536 + 0.5 = 2.1309297536 -> 0.4981895289
    # user 2, k=4: DCG = 0.6309297536, IDCG = 1 -> 0.6309297536
    # mean = 0.5645596412
    assert ndcg_at_k(RECOMMENDED, RELEVANT, 4) == pytest.approx(0.5645596412)
    per_user = ndcg_at_k(RECOMMENDED, RELEVANT, 4, per_user=True)
    assert per_user[0] == pytest.approx((1 / L3 + 1 / L5) / (1 / L2 + 1 / L3 + 1 / math.log2(4)))
    assert per_user[0] == pytest.approx(0.4981895289)
    assert math.isnan(per_user[1])
    assert per_user[2] == pytest.approx(0.6309297536)


def test_ndcg_at_1_equals_precision_at_1():
    recs, rel = [[2, 1], [1, 2], [3, 1]], [{2}, {2}, {1, 3}]
    # hits at rank 1 for users 0 and 2 -> 2/3 for both metrics
    assert ndcg_at_k(recs, rel, 1) == pytest.approx(2 / 3)
    assert precision_at_k(recs, rel, 1) == pytest.approx(2 / 3)


def test_map_at_k_hand_values():
    # user 0, k=4: hits at ranks 2 and 4, P@2 = 1/2, P@4 = 2/4 -> (1/2 + 1/2) / min(4, 3) = 1/3
    # user 2, k=4: hit at rank 2, P@2 = 1/2 -> (1/2) / min(4, 1) = 1/2
    # MAP = (1/3 + 1/2) / 2 = 5/12 = 0.4166666667
    assert map_at_k(RECOMMENDED, RELEVANT, 4) == pytest.approx(0.4166666667)
    # k=2: user 0 -> (1/2) / 2 = 0.25; user 2 -> 0.5; mean 0.375
    assert map_at_k(RECOMMENDED, RELEVANT, 2) == pytest.approx(0.375)


def test_perfect_ranking_scores_one_except_precision():
    # positives {1, 3} in the first two of three places
    recs, rel = [[3, 1, 2]], [{1, 3}]
    assert precision_at_k(recs, rel, 3) == pytest.approx(2 / 3)
    assert recall_at_k(recs, rel, 3) == 1.0
    assert ndcg_at_k(recs, rel, 3) == pytest.approx(1.0)
    assert map_at_k(recs, rel, 3) == pytest.approx(1.0)


def test_per_user_precision_marks_users_without_positives_nan():
    out = precision_at_k(RECOMMENDED, RELEVANT, 4, per_user=True)
    assert out[0] == 0.5 and out[2] == 0.25 and math.isnan(out[1])


def test_relevant_as_sparse_and_boolean_matrix():
    recs = np.array([[0, 1], [2, 0]])
    dense = np.array([[False, True, False], [True, False, False]])
    # user 0 hits item 1 at rank 2, user 1 hits item 0 at rank 2 -> P@2 = 1/2
    assert precision_at_k(recs, dense, 2) == 0.5
    assert precision_at_k(recs, sp.csr_matrix(dense.astype(float)), 2) == 0.5
    assert precision_at_k(recs, dense.astype(int), 2) == 0.5  # 0/1 ints: an indicator matrix
    with pytest.raises(ValueError, match="must be a 0/1 indicator matrix; got dtype <U1"):
        precision_at_k(recs, np.array([["a", "b"], ["c", "d"]]), 2)


def test_padding_counts_as_misses():
    # -1 pads a user with fewer candidates than k; it is a miss, not a repeated item
    assert precision_at_k(np.array([[4, -1, -1]]), [{4}], 3) == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    "recs, rel, k, match",
    [
        (RECOMMENDED, RELEVANT[:2], 4, "recommended has 3 users but relevant has 2"),
        ([], [], 3, "empty; need at least one user"),
        (RECOMMENDED, RELEVANT, 0, "k must be a positive int; got 0"),
        (RECOMMENDED, RELEVANT, 2.5, "k must be a positive int"),
        ([[1, 1, 2]], [{1}], 3, r"recommended\[0\] lists an item twice"),
        (np.array([[1.0, np.nan]]), [{1}], 2, "recommended holds NaN"),
        ([[1, 2]], [set()], 2, "no user has a held-out positive"),
        ([[1, 2]], [5], 2, r"relevant\[0\] must be a collection"),
        (np.array([1, 2, 3]), [{1}], 2, "2-D array"),
        ("abc", [{1}], 2, "one ranked list per user"),
    ],
)
def test_ranking_metrics_reject_bad_input(recs, rel, k, match):
    with pytest.raises(ValueError, match=match):
        precision_at_k(recs, rel, k)


# ----------------------------------------------------------------------------- ranking from scores


def test_rank_items_excludes_training_positives_and_breaks_ties_by_index():
    scores = np.array([[0.9, 0.1, 0.5, 0.3], [0.2, 0.8, 0.8, 0.1]])
    # user 0 loses item 0 (a training positive): 2 (0.5), 3 (0.3), 1 (0.1)
    # user 1: items 1 and 2 tie at 0.8, lower index first, then item 0 (0.2)
    out = rank_items(scores, 3, exclude=[{0}, set()])
    np.testing.assert_array_equal(out, [[2, 3, 1], [1, 2, 0]])
    assert out.dtype == np.int64
    sparse_excl = sp.csr_matrix(np.array([[1, 0, 0, 0], [0, 0, 0, 0]]))
    np.testing.assert_array_equal(rank_items(scores, 3, exclude=sparse_excl), out)


def test_rank_items_pads_with_minus_one_and_caps_k_at_n_items():
    out = rank_items(np.array([[0.3, 0.7], [0.1, 0.2]]), 5, exclude=[{0, 1}, {1}])
    np.testing.assert_array_equal(out, [[-1, -1], [0, -1]])


@pytest.mark.parametrize(
    "scores, exclude, match",
    [
        (np.array([[np.nan, 1.0]]), None, "scores holds 1 NaN"),
        (np.array([1.0, 2.0]), None, r"2-D array \(n_users, n_items\); got shape \(2,\)"),
        (np.zeros((0, 3)), None, "non-empty 2-D"),
        (np.zeros((2, 3)), np.zeros((2, 2), dtype=bool), r"exclude has shape \(2, 2\)"),
        (np.zeros((2, 3)), [{1}], "exclude has 1 users but scores has 2"),
        (np.zeros((1, 3)), [{3}], r"item index 3 outside 0..2"),
    ],
)
def test_rank_items_rejects_bad_input(scores, exclude, match):
    with pytest.raises(ValueError, match=match):
        rank_items(scores, 2, exclude=exclude)


def test_ranking_metrics_from_scores():
    scores = np.array([[0.9, 0.1, 0.5, 0.3], [0.2, 0.8, 0.7, 0.1], [0.5, 0.4, 0.3, 0.2]])
    train = [{0}, set(), set()]
    test = [{3}, {2}, set()]
    # user 0 ranks [2, 3, 1] (item 0 excluded): item 3 at rank 2
    # user 1 ranks [1, 2, 0, 3]: item 2 at rank 2; user 2 has no test positive
    out = ranking_metrics(scores, test, ks=(1, 2), exclude=train)
    assert out["n_users_evaluated"] == 2
    assert out["precision@1"] == 0.0 and out["ndcg@1"] == 0.0
    assert out["precision@2"] == 0.5
    assert out["recall@2"] == 1.0
    # each: DCG = 1/log2(3) = 0.6309297536, IDCG = 1
    assert out["ndcg@2"] == pytest.approx(0.6309297536)
    # each: (1/2) / min(2, 1) = 0.5
    assert out["map@2"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="ks is empty"):
        ranking_metrics(scores, test, ks=())
