"""Ratings as FM regression data (one-hot user, one-hot item, side features -> rating), and
the estimator on ratings: the data path the app's registry entry would use."""

import math

import numpy as np
import pandas as pd
import pytest

from kmviz.data import Ratings
from kmviz.gfm import GeneralizedFM
from kmviz.gfm.design import RatingsDesign


def _ratings(seed=0, n_users=30, n_items=20, density=0.6):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    users, items = np.nonzero(mask)
    year = rng.integers(1980, 2020, n_items).astype(float)
    year[3] = np.nan
    feats = pd.DataFrame({"comedy": rng.integers(0, 2, n_items).astype(np.int8),
                          "year": year, "kind": rng.choice(["a", "b"], n_items)})
    p, q = rng.normal(0, 0.5, (n_users, 2)), rng.normal(0, 0.5, (n_items, 2))
    values = 3.0 + 0.3 * rng.standard_normal(n_users)[users] + np.einsum(
        "ij,ij->i", p[users], q[items]) + 0.1 * rng.standard_normal(users.size)
    return Ratings.from_arrays(users, items, np.clip(values, 1, 5), r_min=1.0, r_max=5.0,
                               item_features=feats, name="toy")


def test_design_rows_are_one_hot_user_item_and_side_features():
    r = _ratings()
    design = RatingsDesign().fit(r)
    data = design.transform(r)
    n_u, n_i = r.n_users, r.n_items
    assert data.X.shape == (r.n_ratings, n_u + n_i + 4)  # comedy, year, kind_a, kind_b
    assert design.item_columns_ == ["comedy", "year", "kind_a", "kind_b"]
    X = data.X.toarray()
    np.testing.assert_array_equal(X[np.arange(r.n_ratings), r.users], 1.0)
    np.testing.assert_array_equal(X[np.arange(r.n_ratings), n_u + r.items], 1.0)
    np.testing.assert_array_equal(X[:, :n_u + n_i].sum(axis=1), 2.0)
    year = X[:, n_u + n_i + 1]
    missing = r.items == 3
    assert missing.any()
    np.testing.assert_allclose(year[missing], design.item_fill_[1])  # training mean
    assert design.item_fill_[1] == pytest.approx(np.nanmean(
        r.item_features["year"].to_numpy()[r.items]))
    np.testing.assert_array_equal(data.y, r.values)
    assert data.feature_names[0] == f"user={r.user_ids[0]}"
    assert data.feature_names[-3] == "item:year"
    back = RatingsDesign.from_arrays(design.to_arrays())
    assert (back.transform(r).X != data.X).nnz == 0
    with pytest.raises(ValueError, match="split one Ratings"):
        design.transform(_ratings(n_users=31))


def test_generalized_fm_fits_and_evaluates_ratings():
    train, test = _ratings().split(test_size=0.2, random_state=0)
    model = GeneralizedFM(2, n_batches=3, random_state=0)
    model.fit(train, validation=test)
    metrics = model.evaluate(test)
    assert set(metrics) == {"rmse", "nmse"} and all(math.isfinite(v) for v in metrics.values())
    assert model.trace_.rows[-1]["validation_rmse"] == pytest.approx(metrics["rmse"])
    assert model.predict(test).shape == (test.n_ratings,)
    assert model.feature_names_in_[0].startswith("user=")
    top = model.top_interactions(3)
    assert top["feature_a"].str.contains("=|:").all()
    arrays = {k: np.array(v) for k, v in model._fitted_arrays().items()}
    back = GeneralizedFM._from_fitted_arrays(arrays, model.get_params(), model.trace_)
    assert back.evaluate(test) == metrics
    with pytest.raises(TypeError, match="fitted on arrays"):
        GeneralizedFM(2, n_batches=2).fit(np.ones((10, 3)), np.ones(10)).evaluate(test)


def test_ratings_are_shuffled_before_batching_with_the_seed():
    r = _ratings(seed=1)
    a = GeneralizedFM(2, n_batches=3, random_state=5).fit(r)
    b = GeneralizedFM(2, n_batches=3, random_state=5).fit(r)
    c = GeneralizedFM(2, n_batches=3, random_state=6).fit(r)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)
