"""kmviz.serving.FactorServing on a hand-made model (no fit): what every one-class family
that mixes it in gets, checked against a dense score matrix."""

from types import SimpleNamespace

import numpy as np
import pytest

from kmviz.exceptions import EmptyDataError
from kmviz.serving import FactorServing


class Fitted(FactorServing):
    """The attributes FactorServing reads, set by hand."""

    def __init__(self, P, Q, seen, threshold=None):
        self.user_factors_, self.item_factors_ = P, Q
        self._seen_ptr = np.cumsum([0] + [len(s) for s in seen]).astype(np.int64)
        self._seen_idx = np.array([j for s in seen for j in s], dtype=np.int64)
        self.threshold = threshold

    def _check_fitted(self):
        pass


@pytest.fixture
def model():
    rng = np.random.default_rng(3)
    P, Q = rng.standard_normal((5, 3)), rng.standard_normal((8, 3))
    return Fitted(P, Q, [[0, 1], [], [2, 3, 4, 5, 6, 7], [7], [1]])


def _dense_top(S, seen, k):
    out = np.full((S.shape[0], k), -1)
    for u, row in enumerate(S):
        order = [j for j in np.argsort(-row, kind="stable") if j not in seen[u]][:k]
        out[u, :len(order)] = order
    return out


def test_recommend_leaves_out_the_training_positives(model):
    S = model.user_factors_ @ model.item_factors_.T
    seen = [[0, 1], [], [2, 3, 4, 5, 6, 7], [7], [1]]
    np.testing.assert_array_equal(model.recommend(np.arange(5), k=3), _dense_top(S, seen, 3))
    assert model.recommend(2, k=3).tolist() == _dense_top(S, seen, 3)[2].tolist()  # -1 pads
    np.testing.assert_array_equal(model.recommend([4], k=8, exclude_seen=False)[0],
                                  np.argsort(-S[4], kind="stable"))
    for k in (0, True, 2.0):
        with pytest.raises(ValueError, match="k must be a positive int"):
            model.recommend(0, k=k)


def test_predict_broadcasts_and_checks_indices(model):
    S = model.user_factors_ @ model.item_factors_.T
    one = model.predict(1, 2)
    assert isinstance(one, np.ndarray) and one.shape == () and one == pytest.approx(S[1, 2])
    np.testing.assert_allclose(model.predict(np.arange(5)[:, None], np.arange(8)[None, :]), S)
    with pytest.raises(ValueError, match=r"item index 8 is out of range.*8 items"):
        model.predict(0, 8)
    with pytest.raises(ValueError, match="users must be integer indices"):
        model.predict([0.5], 0)


def _ratings(users, items, values, n_users, n_items):
    """What the checks read of a kmviz.data.Ratings (its ids already 0-based indices)."""
    return SimpleNamespace(users=np.array(users), items=np.array(items),
                           values=np.array(values), n_users=n_users, n_items=n_items)


def test_held_out_rankings_drop_only_the_pairs_evaluated(model):
    # user 0 holds out item 1, one of its training positives: it is ranked, item 0 is not
    test = _ratings([0, 3, 3], [1, 2, 5], [1.0, 1.0, 0.2], 5, 8)
    model.threshold = 0.5
    users, items, eval_users, top, relevant = model._held_out_rankings(test, 8)
    assert users.tolist() == [0, 3] and items.tolist() == [1, 2]
    assert eval_users.tolist() == [0, 3] and relevant == [{1}, {2}]
    assert 1 in top[0] and 0 not in top[0] and 7 not in top[1]
    model.threshold = 2.0
    with pytest.raises(EmptyDataError, match="hold no positives"):
        model._held_out_rankings(test, 5)
    with pytest.raises(TypeError, match="ratings must be a kmviz.data.Ratings"):
        model._held_out_rankings("ratings.csv", 5)
    wrong = _ratings([0], [1], [1.0], 6, 8)
    with pytest.raises(ValueError, match=r"shape \(6, 8\).*\(5, 8\)"):
        model._held_out_rankings(wrong, 5)
