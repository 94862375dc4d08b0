"""Built-in kernel-MC data: Gapminder with its graphs, the cold-start split, Boston."""

from __future__ import annotations

import numpy as np
import pytest

from kmviz.kmc import KernelMatrixCompletion
from kmviz.kmc.datasets import cold_start_split, gapminder_matrix, load_boston, load_gapminder


def test_gapminder_is_countries_by_years_with_region_and_year_graphs():
    r = load_gapminder()
    M, countries, years, regions = gapminder_matrix()
    assert (r.n_users, r.n_items) == (185, 57) == M.shape
    assert r.n_ratings == 185 * 57  # life expectancy is complete
    G = r.user_graph.toarray()
    i, j = np.nonzero(G)
    assert (regions[i] == regions[j]).all() and np.diag(G).sum() == 0
    T = r.item_graph.toarray()
    assert T[0].sum() == 3 and T[30].sum() == 6
    assert r.user_label(0) == str(countries[0])
    log = load_gapminder("gdp")
    assert log.info["log"] and log.n_ratings < 185 * 57


def test_cold_start_split_hides_whole_countries_and_kkmcex_predicts_them():
    r = load_gapminder()
    train, test = cold_start_split(r, n_rows=10, test_size=0.5, random_state=0)
    cold = train.info["cold_rows"]
    assert len(cold) == 10 and not np.isin(train.users, cold).any()
    assert np.isin(test.users, cold).sum() == 10 * 57
    m = KernelMatrixCompletion(mu=1e-2, center=True, eta=0.5, solver="cg", tol=1e-8,
                               max_iter=2000).fit(train)
    assert m.predictable_rows_[cold].all()
    pred = m.predict(test.users, test.items)
    is_cold = np.isin(test.users, cold)
    rmse = np.sqrt(np.mean((pred[is_cold] - test.values[is_cold]) ** 2))
    base = m.mean_predictor_metrics(train, test.subset(is_cold))["rmse"]
    assert rmse < 0.8 * base, (rmse, base)


def test_boston():
    X, y, names = load_boston()
    assert X.shape == (506, 13) and y.shape == (506,) and "lstat" in names
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1, atol=1e-12)
    with pytest.raises(ValueError):
        load_gapminder("gpd")
