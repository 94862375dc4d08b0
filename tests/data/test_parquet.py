"""kmviz.data.read_parquet: a partitioned Parquet dataset equals the CSV loader's Ratings."""

import numpy as np
import pandas as pd
import pytest

import kmviz
from kmviz.data import load_delimited, read_parquet
from kmviz.exceptions import DataValueError, DuplicateRatingsError, FileFormatError

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")


def _frame(seed=0, n=400):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"user": rng.integers(0, 40, n) * 3,
                       "item": [f"m{j:03d}" for j in rng.integers(0, 30, n)],
                       "value": rng.integers(1, 6, n).astype(float)})
    return df.drop_duplicates(["user", "item"]).reset_index(drop=True)


def _write(df, folder, n_parts=3):
    folder.mkdir()
    for k, rows in enumerate(np.array_split(np.arange(len(df)), n_parts)):
        df.iloc[rows].to_parquet(folder / f"part.{k}.parquet", index=False)
    return folder


def _assert_same(a, b):
    for field in ("users", "items", "values", "user_ids", "item_ids"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    assert (a.n_users, a.n_items, a.r_min, a.r_max) == (b.n_users, b.n_items, b.r_min, b.r_max)


def test_parquet_partitions_equal_the_csv_loader(tmp_path):
    df = _frame()
    df.to_csv(tmp_path / "r.csv", index=False)
    _assert_same(load_delimited(tmp_path / "r.csv"), read_parquet(_write(df, tmp_path / "pq")))


def test_parquet_without_a_backend_reads_here_whatever_dask_defaults_to(tmp_path):
    """A distributed scheduler left as Dask's default (a user's Client, since closed) must
    not take over a read the user runs in this process."""
    import dask

    df = _frame()
    folder = _write(df, tmp_path / "parts")
    want = read_parquet(folder)
    with dask.config.set(scheduler="dask.distributed"):
        got = read_parquet(folder)
    np.testing.assert_array_equal(got.values, want.values)
    np.testing.assert_array_equal(got.users, want.users)


def test_parquet_one_class_and_named_columns(tmp_path):
    df = _frame().rename(columns={"user": "u", "item": "i"})[["u", "i"]]
    df.to_csv(tmp_path / "r.csv", index=False, header=False)
    got = read_parquet(_write(df, tmp_path / "pq"), user_col="u", item_col="i", value_col=None)
    _assert_same(load_delimited(tmp_path / "r.csv", value_col=None), got)
    assert got.implicit


def test_parquet_errors_name_the_problem(tmp_path):
    folder = _write(_frame(), tmp_path / "pq")
    with pytest.raises(FileFormatError, match=r"column\(s\) \['rating'\] not found"):
        read_parquet(folder, value_col="rating")
    with pytest.raises(FileFormatError, match="could not read a Parquet dataset"):
        read_parquet(tmp_path / "missing")
    bad = _frame()
    bad.loc[5, "value"] = np.nan
    with pytest.raises(DataValueError, match="not finite numbers.*partition 0"):
        read_parquet(_write(bad, tmp_path / "bad"))
    dup = pd.concat([_frame(), _frame().iloc[:1]])
    with pytest.raises(DuplicateRatingsError):
        read_parquet(_write(dup, tmp_path / "dup"))


@pytest.mark.slow
def test_parquet_read_on_the_workers_of_the_active_cluster(tmp_path):
    df = _frame(seed=1)
    df.to_csv(tmp_path / "r.csv", index=False)
    folder = _write(df, tmp_path / "pq")
    with kmviz.parallel_backend("dask", client="threads:2"):
        got = read_parquet(folder)
    _assert_same(load_delimited(tmp_path / "r.csv"), got)
