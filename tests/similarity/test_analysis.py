"""The Embeddings page's data: PCA, neighbours, tower layers, cold scores."""

import warnings

import numpy as np
import pytest

from kmviz.similarity import SimilarityLearning
from kmviz.similarity.analysis import (
    embedding_pca, nearest, score_from_features, tower_activations)
from kmviz.similarity.synthetic import make_planted_towers


@pytest.fixture(scope="module")
def model():
    ratings, _ = make_planted_towers(60, 40, 3, density=0.1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SimilarityLearning(k=4, item_tower="mlp:8", item_ids="none",
                                  side_features="item", max_iter=3, random_state=0
                                  ).fit(ratings), ratings


def test_pca_and_nearest(model):
    m, _ = model
    xy, ratio = embedding_pca(m, "items")
    assert xy.shape == (40, 2) and 0 < ratio.sum() <= 1 + 1e-12
    idx, cos = nearest(m, 3, k=5)
    assert 3 not in idx and np.all(np.diff(cos) <= 0)
    with pytest.raises(ValueError, match="out of range"):
        nearest(m, 99)


def test_tower_layers_and_cold_scores(model):
    m, ratings = model
    layers = tower_activations(m, 2, "items")
    assert layers[0][1].shape == (8,) and layers[-1][1].shape == (4,)
    np.testing.assert_allclose(layers[-1][1], m.item_factors_[2])
    assert tower_activations(m, 1, "users")[0][1].shape == (4,)
    # an item known only by its features scores as the tower scores its row
    feats = m.item_input_[[5]].toarray().ravel()
    np.testing.assert_allclose(score_from_features(m, feats, ids_width=0),
                               m.user_factors_ @ m.item_factors_[5])
