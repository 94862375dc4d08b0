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


def test_side_labels_colour_by_feature_and_activity(model):
    from kmviz.similarity.analysis import ACTIVITY, colour_options, positives_per, side_labels

    m, ratings = model
    assert colour_options(ratings, "items")[-1] == ACTIVITY
    quart = side_labels(ratings, "items", "f0")
    assert set(quart) <= {"1st quartile", "2nd quartile", "3rd quartile", "4th quartile"}
    counts = positives_per(m, "users")
    assert counts.sum() == ratings.n_ratings
    assert len(side_labels(ratings, "users", ACTIVITY, counts=counts)) == ratings.n_users
    with pytest.raises(ValueError, match="not a column"):
        side_labels(ratings, "items", "nope")


def test_activity_labels_name_each_bands_own_counts():
    """Every count falls in exactly one label: the old labels ("0-1", "1-3") put the
    boundary counts in two."""
    from kmviz.similarity.analysis import ACTIVITY, side_labels

    class Shape:
        n_users, n_items = 3, 12

    counts = np.array([0, 0, 0, 0, 1, 1, 1, 2, 3, 5, 8, 192])
    labels = side_labels(Shape(), "items", ACTIVITY, counts=counts)
    assert sorted(set(labels)) == ["0 positives", "1-3 positives", "5-192 positives"]
    for name in set(labels):
        lo, _, hi = name.split()[0].partition("-")
        got = counts[labels == name]
        assert (got.min(), got.max()) == (int(lo), int(hi or lo))


def test_genre_year_and_age_labels():
    import pandas as pd

    from kmviz.data import Ratings
    from kmviz.similarity.analysis import colour_options, side_labels

    items = pd.DataFrame({"Drama": [1, 0, 0], "Comedy": [1, 1, 0], "year": [1995, 2001, None]})
    users = pd.DataFrame({"age": [17, 30, 60]})
    r = Ratings.from_arrays([0, 1, 2], [0, 1, 2], [1.0, 1.0, 1.0], user_features=users,
                            item_features=items, implicit=True)
    assert colour_options(r, "items")[:2] == ["genre", "year"]
    assert list(side_labels(r, "items", "genre")) == ["Drama", "Comedy", "none"]
    assert list(side_labels(r, "items", "year")) == ["1990s", "2000s", "unknown"]
    assert list(side_labels(r, "users", "age")) == ["under 18", "25-34", "56+"]


def test_cold_item_scores_drop_the_id_columns(model):
    from kmviz.similarity.analysis import cold_item_scores, cold_scoring_problem, rank_agreement

    m, _ = model                      # item_ids="none": features only, cold == warm
    assert cold_scoring_problem(m) is None
    cold, warm = cold_item_scores(m, 5)
    np.testing.assert_allclose(cold, warm, atol=1e-12)
    assert rank_agreement(cold, warm) == pytest.approx(1.0)


def test_compare_solvers_same_start_and_relative_difference():
    from kmviz.similarity.optimizers import compare_solvers, time_to_reach

    data, _ = make_planted_towers(80, 50, 3, density=0.1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compare_solvers(data, data, ["newton", "gd"], {"k": 3, "max_iter": 4})
    f = c.frame
    assert set(f["solver"]) == {"newton", "gd"} and (f["time_s"] >= 0).all()
    start = f[f["iteration"] == 0]           # the same theta: the same starting objective
    assert len(start) == 2 and start["objective"].nunique() == 1
    assert (start["time_s"] == 0).all()
    assert f["relative_objective_difference"].min() == 0.0
    assert c.best_objective == f["objective"].min()
    assert (f.groupby("solver")["time_s"].apply(lambda t: t.is_monotonic_increasing)).all()
    table = time_to_reach(f, 1e-3)
    assert table.loc[table["solver"] == "newton", "iterations"].item() >= 1
    with pytest.raises(ValueError, match="subset of"):
        compare_solvers(data, data, ["lbfgs"])
