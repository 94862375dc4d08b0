"""Inputs that are not plain data (issue 35, defects 10 and 14): a named pipe, socket or
device named as a data file is refused at once; Parquet ids that are null, unsigned beyond
2^63 or of another type in another partition get one clear message from both readers."""

import os
import socket
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from kmviz.data import load, load_basket, load_delimited, load_table, read_parquet, scan_parquet
from kmviz.exceptions import DataValueError, FileFormatError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("dask.dataframe")

READERS = (load, load_delimited, load_basket, load_table, read_parquet)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "ratings.csv"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("reader", READERS, ids=lambda f: f.__name__)
def test_a_named_pipe_is_refused_at_once(fifo, reader):
    t0 = time.perf_counter()
    with pytest.raises(FileFormatError, match=r"ratings\.csv: is a named pipe \(FIFO\), not "
                                              r"a regular file.*Fix: save the data"):
        reader(fifo)
    assert time.perf_counter() - t0 < 2  # opening it would wait for a writer forever


def test_a_socket_and_a_device_are_refused(tmp_path):
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(FileFormatError, match="is a socket, not a regular file"):
            load(path)
    finally:
        server.close()
    if os.path.exists("/dev/zero"):
        with pytest.raises(FileFormatError, match="is a character device"):
            load("/dev/zero")


@pytest.mark.slow
def test_data_describe_of_a_fifo_exits_at_once(fifo):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kmviz", "data", "describe", str(fifo)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and time.perf_counter() - t0 < 60
    assert done.stderr.count("\n") == 1 and "named pipe" in done.stderr


def _table(users, n=None):
    n = len(users) if n is None else n
    return {"item": pa.array(np.arange(n) % 7, pa.int64()),
            "value": pa.array(np.arange(n) % 5 + 1.0)}


@pytest.mark.parametrize("reader", [read_parquet, scan_parquet], ids=lambda f: f.__name__)
def test_unsigned_ids_beyond_2_63_are_refused_not_made_negative(tmp_path, reader):
    big = [2**63 + 5, 1, 2, 3]
    pq.write_table(pa.table({"user": pa.array(big, pa.uint64()), **_table(big)}),
                   tmp_path / "u.parquet")
    with pytest.raises(DataValueError, match=r"user id 9223372036854775813 in column 'user' "
                                             r"\(partition 0\) is 2\^63 or more.*as text"):
        reader(tmp_path / "u.parquet")
    small = [2**63 - 1, 1, 2, 3]  # the largest that fits is kept exactly
    pq.write_table(pa.table({"user": pa.array(small, pa.uint64()), **_table(small)}),
                   tmp_path / "ok.parquet")
    r = read_parquet(tmp_path / "ok.parquet")
    assert sorted(r.user_ids.tolist()) == sorted(small)


@pytest.mark.parametrize("reader", [read_parquet, scan_parquet], ids=lambda f: f.__name__)
@pytest.mark.parametrize("kind", [pa.int64(), pa.string()], ids=["int", "text"])
def test_a_null_id_gets_the_same_clear_message(tmp_path, reader, kind):
    ids = [1, None, 2, 3] if kind == pa.int64() else ["a", None, "b", "c"]
    pq.write_table(pa.table({"user": pa.array(ids, kind), **_table(ids)}), tmp_path / "n.parquet")
    with pytest.raises(DataValueError, match=r"n\.parquet: user ids contain missing values "
                                             r"\(1 in column 'user', first in partition 0\).*"
                                             r"Fix: remove the rows without a user id"):
        reader(tmp_path / "n.parquet")


@pytest.mark.parametrize("reader", [read_parquet, scan_parquet], ids=lambda f: f.__name__)
@pytest.mark.parametrize("first", ["int", "text"])
def test_int_and_text_ids_across_partitions_name_the_partitions(tmp_path, reader, first):
    folder = tmp_path / "mixed"
    folder.mkdir()
    ints = pa.array([1, 2, 3], pa.int64())
    texts = pa.array(["x", "y", "z"], pa.string())
    a, b = (ints, texts) if first == "int" else (texts, ints)
    pq.write_table(pa.table({"user": a, **_table([0] * 3)}), folder / "part.0.parquet")
    pq.write_table(pa.table({"user": b, **_table([0] * 3)}), folder / "part.1.parquet")
    kinds = ("integers", "text") if first == "int" else ("text", "integers")
    with pytest.raises(FileFormatError, match=rf"column 'user' holds {kinds[0]} in partition 0 "
                                              rf"\(part\.0\.parquet\) but {kinds[1]} in "
                                              rf"partition 1 \(part\.1\.parquet\).*Fix:"):
        reader(folder)


def test_parquet_reading_is_unchanged_for_good_ids(tmp_path):
    df = pd.DataFrame({"user": np.arange(30) % 6, "item": [f"i{k % 5}" for k in range(30)],
                       "value": np.arange(30) % 5 + 1.0}).drop_duplicates(["user", "item"])
    df.to_parquet(tmp_path / "g.parquet", index=False)
    r = read_parquet(tmp_path / "g.parquet")
    s = scan_parquet(tmp_path / "g.parquet").load()
    assert r.n_ratings == len(df) and s.n_ratings == len(df)
    np.testing.assert_array_equal(r.user_ids, s.user_ids)
