"""Checks of the id columns of a Parquet dataset, per partition (on the workers) and over
all of them: missing ids, unsigned ids that a signed 64-bit integer cannot hold, and an id
column that is integer in some partitions and text in others. Shared by
:func:`~kmviz.data.read_parquet` and :func:`~kmviz.data.scan_parquet`, which raise the same
errors."""

from __future__ import annotations

import glob
import os

import numpy as np
import pandas as pd

from ..exceptions import DataValueError, FileFormatError

_INT64_MAX = np.iinfo(np.int64).max


def id_report(col) -> dict:
    """One partition's id column: its kind ("integers" or "text"), how many ids are
    missing, and the first unsigned id of 2^63 or more (as text), if any."""
    out = {"kind": "integers" if pd.api.types.is_integer_dtype(col.dtype) else "text",
           "missing": int(col.isna().sum()), "over": None}
    if pd.api.types.is_unsigned_integer_dtype(col.dtype) and len(col):
        values = col.to_numpy()
        big = values > np.uint64(_INT64_MAX)
        if big.any():
            out["over"] = str(values[np.flatnonzero(big)[0]])
    return out


def check_id_reports(reports, sides, path, shown) -> None:
    """Raise the error for the first problem in ``reports`` (one dict a partition, side ->
    :func:`id_report`); ``sides`` maps "user"/"item" to the column name."""
    for side, col in sides.items():
        missing = [(k, rep[side]["missing"]) for k, rep in enumerate(reports)
                   if rep[side]["missing"]]
        if missing:
            raise DataValueError(
                f"{side} ids contain missing values ({sum(n for _, n in missing)} in column "
                f"{col!r}, first in partition {missing[0][0]})", path=shown,
                expected=f"a {side} id in every row",
                fix=f"remove the rows without a {side} id")
    for side, col in sides.items():
        kinds = {}
        for k, rep in enumerate(reports):
            kinds.setdefault(rep[side]["kind"], k)
        if len(kinds) > 1:
            (ka, pa), (kb, pb) = sorted(kinds.items(), key=lambda kv: kv[1])[:2]
            raise FileFormatError(
                f"column {col!r} holds {ka} in partition {pa}{_file(path, pa, reports)} but "
                f"{kb} in partition {pb}{_file(path, pb, reports)}", path=shown,
                expected=f"one type of {side} id in every partition",
                fix=f"write {col!r} with one type in every file (for example cast it to "
                    "string everywhere)")
    for side, col in sides.items():
        over = [(k, rep[side]["over"]) for k, rep in enumerate(reports) if rep[side]["over"]]
        if over:
            k, value = over[0]
            raise DataValueError(
                f"{side} id {value} in column {col!r} (partition {k}) is 2^63 or more: "
                "unsigned ids this large do not fit the signed 64-bit integers ids are "
                "kept in, and would change sign", path=shown,
                expected="integer ids below 9,223,372,036,854,775,808",
                fix=f"store {col!r} as text (a string column), or renumber the ids")


def _file(path, k, reports) -> str:
    """`` (name)`` of partition ``k`` when the dataset is a local folder of one file per
    partition (Dask's default), else nothing."""
    try:
        if not os.path.isdir(str(path)):
            return ""
        files = sorted(glob.glob(os.path.join(str(path), "**", "*.parquet"), recursive=True))
    except (OSError, TypeError):
        return ""
    if len(files) != len(reports):
        return ""
    return f" ({os.path.relpath(files[k], str(path))})"
