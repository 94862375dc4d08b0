"""Ids to contiguous indices, and names and side information aligned with them: the
helpers :meth:`kmviz.data.Ratings.from_arrays` builds a dataset's index space with."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..exceptions import DataValueError


def _show(x) -> str:
    """repr of an id or value without NumPy's ``np.int64(...)`` wrapper (NumPy >= 2)."""
    return repr(x.item() if isinstance(x, np.generic) else x)


def _id_array(ids):
    """Ids as an ndarray, or a ``pd.Categorical`` as is (codes into distinct ids: what the
    loaders build for text ids, so every entry needs 8 bytes and not a string)."""
    if isinstance(ids, pd.Categorical):
        return ids
    if isinstance(ids, pd.Series) and isinstance(ids.dtype, pd.CategoricalDtype):
        return ids.array
    return np.asarray(ids)


def _dense_int_factorize(ids):
    """:func:`_factorize` of integer ids spanning a range not much wider than their count,
    by counting instead of sorting (25M ids: about 0.3 s against several seconds for
    ``np.unique``); None for other ids. Same result as ``np.unique(return_inverse=True)``."""
    if ids.dtype.kind not in "iu" or ids.size == 0:
        return None
    lo, hi = int(ids.min()), int(ids.max())
    if hi - lo >= max(4 * ids.size, 1 << 16):
        return None
    shifted = ids - lo
    present = np.bincount(shifted, minlength=hi - lo + 1) > 0
    rank = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present).astype(ids.dtype) + lo, rank[shifted]


def _count_distinct(codes, n) -> int:
    """Distinct values among indices in ``[0, n)``."""
    return int(np.count_nonzero(np.bincount(codes, minlength=n)))


def _factorize(ids, universe, what, where):
    """Map ids to contiguous indices: returns (sorted id universe, index per entry)."""
    if isinstance(ids, pd.Categorical):
        cats = np.asarray(ids.categories, dtype=object)
        codes = np.asarray(ids.codes, dtype=np.int64)
        if (codes < 0).any():
            raise DataValueError(f"{what} ids contain missing values", path=where)
        if universe is not None:
            lookup = pd.Index(np.asarray(universe))
            if not lookup.is_unique:
                raise DataValueError(f"{what}_ids contains repeated ids", path=where)
            pos = lookup.get_indexer(cats)
            used = np.zeros(len(cats), dtype=bool)
            used[codes] = True
            missing = np.flatnonzero(used & (pos < 0))
            if missing.size:
                raise DataValueError(f"{what} id {_show(cats[missing[0]])} is not in the given "
                                     f"{what}_ids", path=where)
            return np.asarray(universe), pos[codes].astype(np.int64)
        present = np.zeros(len(cats), dtype=bool)
        present[codes] = True
        try:
            order = np.argsort(cats, kind="stable")
        except TypeError:
            cats = cats.astype(str).astype(object)
            order = np.argsort(cats, kind="stable")
        order = order[present[order]]  # sorted ids that occur
        rank = np.full(len(cats), -1, dtype=np.int64)
        rank[order] = np.arange(order.shape[0])
        return cats[order], rank[codes]
    if universe is None:
        dense = _dense_int_factorize(ids)
        if dense is not None:
            return dense
        try:
            uniq, inv = np.unique(ids, return_inverse=True)
        except TypeError:
            ids = ids.astype(str)
            uniq, inv = np.unique(ids, return_inverse=True)
        return uniq, inv.reshape(-1).astype(np.int64, copy=False)
    universe = np.asarray(universe)
    lookup = pd.Index(universe)
    if not lookup.is_unique:
        raise DataValueError(f"{what}_ids contains repeated ids", path=where)
    idx = lookup.get_indexer(ids)
    if (idx < 0).any():
        k = int(np.flatnonzero(idx < 0)[0])
        raise DataValueError(f"{what} id {_show(ids[k])} is not in the given {what}_ids",
                             path=where)
    return universe, idx.astype(np.int64)


def _align_names(names, ids):
    if names is None:
        return None
    if isinstance(names, (dict, pd.Series)):
        s = pd.Series(names)
        out = s.reindex(ids).to_numpy(dtype=object)
        return np.array([None if (isinstance(x, float) and np.isnan(x)) else x for x in out], dtype=object)
    names = np.asarray(names, dtype=object)
    if names.shape[0] != len(ids):
        raise DataValueError(f"{names.shape[0]} names given for {len(ids)} ids")
    return names


def _align_features(df, ids):
    if df is None:
        return None
    if not isinstance(df, pd.DataFrame):
        df = pd.DataFrame(df)
        if len(df) != len(ids):
            raise DataValueError(f"side information has {len(df)} rows but there are {len(ids)} ids")
        df.index = ids
        return df
    return df.reindex(ids)
