"""A partitioned Parquet dataset of (user, item, value) rows, read through ``dask.dataframe``.

The partitions are read and checked where Dask runs them: on the workers of the active
:func:`kmviz.parallel_backend` (each worker reads its partitions straight from the path, a local
folder or any URL fsspec reads: ``s3://``, ``gs://``, ``hdfs://`` ...), else by Dask's threads in
this process. The workers check every partition (numeric, finite values) and find the distinct
ids; this process then receives only the compact columns (int64 ids or codes into the distinct
text ids, float64 values) and builds the :class:`~kmviz.data.Ratings` with the same validation
and id mapping as the text loaders (:meth:`Ratings.from_arrays`: scale, duplicates, sorted
distinct ids as indices).

Column types are Parquet's own: an integer id column gives integer ids, a string column text
ids (``"7"`` stays text, unlike a CSV file, whose plain-integer columns become integers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..exceptions import DataValueError, FileFormatError
from .parquet_ids import check_id_reports, id_report
from .ratings import Ratings


#: Without a kmviz backend, Dask's threads in this process, named explicitly: a
#: ``distributed.Client`` made the default elsewhere (and perhaps closed since) must not take
#: over a read that the user asked to run here.
LOCAL_SCHEDULER = "threads"


def _scheduler():
    from ..parallel import active_backend

    backend = active_backend()
    return None if backend is None else backend.client


def _compute(*objs):
    import dask

    client = _scheduler()
    if client is not None:
        return client.compute(list(objs), sync=True)
    return dask.compute(*objs, scheduler=LOCAL_SCHEDULER)


def _compute_partitions(ddf):
    """The partitions of ``ddf`` as a list of pandas frames, each gathered on its own."""
    import dask

    parts = ddf.to_delayed()
    client = _scheduler()
    if client is not None:
        return client.gather(client.compute(parts))
    return list(dask.compute(*parts, scheduler=LOCAL_SCHEDULER))


def _compact(df, user_col, item_col, value_col, categories):
    """Per partition: int64 ids (codes into the distinct text ids) and float64 values."""
    out = {}
    for c in (user_col, item_col):
        out[c] = (_codes(df[c], categories[c]) if c in categories
                  else df[c].astype(np.int64))
    if value_col is not None:
        out[value_col] = df[value_col].astype(np.float64)
    return pd.DataFrame(out, index=df.index)


def numeric_values(column) -> np.ndarray:
    """A value column as float64; entries that are not numbers become NaN."""
    try:
        return pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        return np.full(len(column), np.nan)


def not_finite_error(count, first, part, value_col, shown) -> DataValueError:
    return DataValueError(
        f"{count} value(s) in column {value_col!r} are not finite numbers "
        f"(first: {first!r}, in partition {part})", path=shown,
        expected="finite numbers", fix="remove or fill the missing ratings")


def not_binary_error(value, value_col, shown) -> DataValueError:
    return DataValueError(f"found {value:g} in column {value_col!r}", path=shown,
                          expected="0 or 1",
                          fix="pass implicit=False to read the values as ratings")


def _partition_check(df, value_col, id_cols=()):
    """Per partition: rows, non-finite values, first bad value, and the reports of the id
    columns (:func:`~kmviz.data.parquet_ids.id_report`), checked on the worker."""
    reports = {f"ids_{c}": [id_report(df[c])] for c in id_cols}
    if value_col is None:
        return pd.DataFrame({"rows": [len(df)], "bad": [0], "first_bad": [np.nan], **reports})
    v = numeric_values(df[value_col])
    bad = ~np.isfinite(v)
    first = df[value_col].iloc[int(np.flatnonzero(bad)[0])] if bad.any() else np.nan
    return pd.DataFrame({"rows": [len(df)], "bad": [int(bad.sum())],
                         "first_bad": [str(first) if bad.any() else np.nan], **reports})


def _codes(series, categories):
    return pd.Series(pd.Categorical(series.astype(str), categories=categories).codes,
                     index=series.index, dtype=np.int64)


def _open(path, user_col, item_col, value_col, storage_options):
    """The dataset's named columns as a ``dask.dataframe`` (lazy: nothing read yet), and the
    column names; a clear FileFormatError for a bad path or a missing column."""
    import dask.dataframe as dd

    from .loaders.checks import refuse_special_file

    shown = str(path)
    cols = [c for c in (user_col, item_col, value_col) if c is not None]
    refuse_special_file(path)  # a named pipe or device is never opened
    try:
        ddf = dd.read_parquet(str(path), storage_options=storage_options)
    except (FileNotFoundError, OSError, ValueError) as exc:
        raise FileFormatError(f"could not read a Parquet dataset ({type(exc).__name__}: {exc})",
                              path=shown, expected="a Parquet file or a folder of partitions",
                              fix="check the path (and storage_options for a remote store)"
                              ) from exc
    missing = [c for c in cols if c not in ddf.columns]
    if missing:
        raise FileFormatError(f"column(s) {missing} not found; the dataset has "
                              f"{list(ddf.columns)}", path=shown,
                              expected="user, item and value columns",
                              fix="name them with user_col=, item_col=, value_col=")
    return ddf[cols], cols


def read_parquet(path, *, user_col="user", item_col="item", value_col="value", r_min=None,
                 r_max=None, duplicates="error", implicit=None, storage_options=None,
                 name=None) -> Ratings:
    """Read a partitioned Parquet dataset of ratings on the workers (module docstring).

    Parameters
    ----------
    path : str or Path
        A Parquet file, a folder of partitions, a glob, or any fsspec URL.
    user_col, item_col : str, default="user", "item"
    value_col : str or None, default="value"
        None reads 0/1 interactions (every row a positive).
    r_min, r_max : float, optional
        The declared rating scale (default: the observed range).
    duplicates : {"error", "mean", "first", "last"}, default="error"
    implicit : bool, optional
        As in :func:`kmviz.data.load_delimited`.
    storage_options : dict, optional
        Passed to fsspec (credentials of a bucket, ...).
    name : str, optional
        Label of the dataset (default: the path's last part).

    Returns
    -------
    Ratings

    Raises
    ------
    FileFormatError
        No dataset at the path, or a named column missing.
    DataValueError
        Non-numeric or non-finite values (with the partition), and everything
        :meth:`Ratings.from_arrays` refuses.
    """
    shown = str(path)
    ddf, cols = _open(path, user_col, item_col, value_col, storage_options)
    id_cols = (user_col, item_col)
    meta = pd.DataFrame({"rows": pd.Series(dtype=np.int64), "bad": pd.Series(dtype=np.int64),
                         "first_bad": pd.Series(dtype=object),
                         **{f"ids_{c}": pd.Series(dtype=object) for c in id_cols}})
    checks = ddf.map_partitions(_partition_check, value_col, id_cols, meta=meta)
    text = {c: not pd.api.types.is_integer_dtype(ddf[c].dtype) for c in (user_col, item_col)}
    distinct = {c: ddf[c].astype(str).unique() for c in text if text[c]}
    checked, *found = _compute(checks, *distinct.values())
    # the id columns first: a null, an unsigned id >= 2^63 or a partition of another type
    # would otherwise fail in a cast (or change sign) below
    check_id_reports([{"user": checked[f"ids_{user_col}"].iloc[k],
                       "item": checked[f"ids_{item_col}"].iloc[k]}
                      for k in range(len(checked))], {"user": user_col, "item": item_col},
                     path, shown)
    bad = checked["bad"].to_numpy()
    if bad.sum():
        part = int(np.flatnonzero(bad)[0])
        raise not_finite_error(int(bad.sum()), checked["first_bad"].iloc[part], part,
                               value_col, shown)
    categories = {c: np.sort(np.asarray(v, dtype=object)) for c, v in zip(distinct, found)}
    out_cols = [user_col, item_col] + ([value_col] if value_col is not None else [])
    meta_out = pd.DataFrame({c: pd.Series(dtype=np.float64 if c == value_col else np.int64)
                             for c in out_cols})
    compact = ddf.map_partitions(_compact, user_col, item_col, value_col,
                                 {c: categories[c] for c in categories}, meta=meta_out)
    # each partition's compact columns come here on their own: no worker ever holds (or
    # concatenates) the whole dataset, as a computed Series would
    pieces = _compute_partitions(compact)
    arrays = {c: (np.concatenate([pc[c].to_numpy() for pc in pieces]) if pieces else
                  np.zeros(0, dtype=meta_out[c].dtype)) for c in out_cols}

    def ids(c):
        a = arrays[c]
        return pd.Categorical.from_codes(a, categories[c]) if text[c] else a

    users, items = ids(user_col), ids(item_col)
    values = None if value_col is None else arrays[value_col]
    if implicit and values is not None:
        off = (values != 0) & (values != 1)
        if off.any():
            raise not_binary_error(values[np.flatnonzero(off)[0]], value_col, shown)
        keep = values == 1
        users, items, values = users[keep], items[keep], None
    label = name or shown.rstrip("/").rsplit("/", 1)[-1]
    return Ratings.from_arrays(users, items, values, r_min=r_min, r_max=r_max,
                               duplicates=duplicates, implicit=values is None, name=label,
                               source=shown)
