"""kmviz.data.scan_parquet: a KM fit whose rating blocks are built on the workers equals the
in-process fit from read_parquet; the scan gives read_parquet's index space and errors."""

import os
import signal

import numpy as np
import pandas as pd
import pytest

import kmviz
from kmviz.data import PartitionedRatings, read_parquet, scan_parquet
from kmviz.exceptions import DataValueError, DuplicateRatingsError, EmptyDataError, \
    FileFormatError
from kmviz.km import _dist as _blocks
from kmviz.km.estimator import KolmogorovModel, _compressed
from tests.dask_checks import assert_same_km_fit

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")
pytest.importorskip("distributed")


def _frame(seed=0, n=900, text_items=True):
    rng = np.random.default_rng(seed)
    items = rng.integers(0, 30, n)
    df = pd.DataFrame({"user": rng.integers(0, 50, n) * 3,
                       "item": [f"m{j:03d}" for j in items] if text_items else items * 5 + 1,
                       "value": rng.integers(1, 6, n).astype(float)})
    return df.drop_duplicates(["user", "item"]).reset_index(drop=True)


def _write(df, folder, n_parts=3):
    folder.mkdir()
    for k, rows in enumerate(np.array_split(np.arange(len(df)), n_parts)):
        df.iloc[rows].to_parquet(folder / f"part.{k:02d}.parquet", index=False)
    return folder


def _km(**kw):
    return KolmogorovModel(**{"D": 4, "max_iter": 3, "tol": 0.0, "random_state": 7, **kw})


def _assert_same_fit(a, b, *, exact=True):
    assert_same_km_fit(a, b, exact=exact)
    np.testing.assert_allclose(a.trace_.column("train_nrmse"),
                               b.trace_.column("train_nrmse"), rtol=1e-10)
    assert (a.r_min_, a.r_max_) == (b.r_min_, b.r_max_)
    assert a.mean_p_ == pytest.approx(b.mean_p_, rel=1e-13)
    np.testing.assert_array_equal(a.known_users_, b.known_users_)
    np.testing.assert_array_equal(a.known_items_, b.known_items_)


def _message(fn, *args, **kw):
    with pytest.raises(Exception) as info:
        fn(*args, **kw)
    return type(info.value), str(info.value)


# ----------------------------------------------------------------------------- the scan
@pytest.mark.parametrize("text_items", [True, False])
def test_scan_gives_read_parquets_index_space_counts_and_scale(tmp_path, text_items):
    folder = _write(_frame(text_items=text_items), tmp_path / "pq", n_parts=4)
    ref, got = read_parquet(folder), scan_parquet(folder)
    assert isinstance(got, PartitionedRatings) and got.n_partitions == 4
    np.testing.assert_array_equal(got.user_ids, ref.user_ids)
    np.testing.assert_array_equal(got.item_ids, ref.item_ids)
    np.testing.assert_array_equal(got.user_counts(), ref.user_counts())
    np.testing.assert_array_equal(got.item_counts(), ref.item_counts())
    assert (got.n_users, got.n_items, got.n_ratings, got.r_min, got.r_max, got.implicit) == \
        (ref.n_users, ref.n_items, len(ref), ref.r_min, ref.r_max, ref.implicit)
    assert "4 partitions" in repr(got)
    loaded = got.load()
    np.testing.assert_array_equal(loaded.values, ref.values)


def test_scan_of_implicit_data_and_a_declared_scale(tmp_path):
    df = _frame(seed=2)
    df["value"] = (df["value"] > 3).astype(float)
    folder = _write(df, tmp_path / "pq")
    ref, got = read_parquet(folder, implicit=True), scan_parquet(folder, implicit=True)
    assert got.implicit and (got.r_min, got.r_max) == (0.0, 1.0)
    assert got.n_ratings == len(ref) == int(df["value"].sum())
    np.testing.assert_array_equal(got.user_counts(), ref.user_counts())
    wide = scan_parquet(_write(_frame(), tmp_path / "wide"), r_min=0, r_max=10)
    assert (wide.r_min, wide.r_max) == (0.0, 10.0)


def test_scan_refuses_bad_data_with_read_parquets_errors(tmp_path):
    good = _write(_frame(), tmp_path / "good")
    nan = _frame()
    nan.loc[400, "value"] = np.nan          # in the second partition
    huge = _frame()
    huge.loc[3, "value"] = 1e15
    one_user = _frame()
    one_user["user"] = 7
    one_user = one_user.drop_duplicates(["user", "item"])
    off = _frame()
    cases = [
        (tmp_path / "missing", {}),
        (good, {"value_col": "rating"}),
        (_write(nan, tmp_path / "nan"), {}),
        (_write(huge, tmp_path / "huge"), {}),
        (good, {"r_min": 1, "r_max": 4}),
        (good, {"r_min": 3, "r_max": 3}),
        (_write(one_user, tmp_path / "one"), {}),
        (_write(off, tmp_path / "off"), {"implicit": True}),
    ]
    kinds = set()
    for path, kw in cases:
        want = _message(read_parquet, path, **kw)
        got = _message(scan_parquet, path, **kw)
        assert got == want, (path, kw)
        kinds.add(want[0])
    assert kinds == {FileFormatError, DataValueError, EmptyDataError}
    assert "partition 1" in _message(scan_parquet, tmp_path / "nan")[1]


def test_a_partitioned_dataset_without_a_cluster_names_the_fix(tmp_path):
    data = scan_parquet(_write(_frame(), tmp_path / "pq"))
    with pytest.raises(TypeError, match=r"parallel_backend\('dask'.*\.load\(\)"):
        _km().fit(data)
    with pytest.raises(AttributeError, match="stay in their Parquet partitions"):
        data.values  # noqa: B018
    with pytest.raises(ValueError, match="duplicates"):
        scan_parquet(tmp_path / "pq", duplicates="sum")


def test_blocks_assembled_from_pieces_equal_the_in_process_layout():
    # the worker-side functions, run here: rows of one block coming from several
    # partitions, in any order, give _compressed's slice of the whole data
    from kmviz.data.partitioned import _assemble, _route

    rng = np.random.default_rng(3)
    key = rng.choice(40 * 25, 300, replace=False)
    u, i = np.divmod(key, 25)
    v = rng.integers(1, 6, u.size).astype(float)
    spec = {"user_col": "user", "item_col": "item", "value_col": "value",
            "implicit_filter": False, "user_text": False, "item_text": False, "clip": False,
            "n_users": 40, "n_items": 25}
    maps = (np.arange(40), np.arange(25))
    starts = np.array([0, 13, 29])
    parts = [pd.DataFrame({"user": u[s], "item": i[s], "value": v[s]})
             for s in np.array_split(rng.permutation(u.size), 4)]
    routed = [_route(df, maps, spec, "user", starts) for df in parts]
    assert all(len(r[b][0]) for r in routed for b in range(3))   # every block, every part
    ptr, idx, p = _compressed(u, i, v / 5, 40)
    for b, (lo, hi) in enumerate(zip(starts, [13, 29, 40])):
        (bp, bi, bv), info = _assemble([r[b] for r in routed], hi - lo, "error",
                                       lambda x: x / 5)
        want = _blocks._compressed_block(ptr, idx, p, lo, hi)
        for got_a, want_a in zip((bp, bi, bv), want):
            assert got_a.dtype == want_a.dtype
            np.testing.assert_array_equal(got_a, want_a)
        assert info["repeats"] == 0 and info["rows"] == bv.size


# ----------------------------------------------------------------------------- clusters
@pytest.mark.slow
def test_km_from_partitions_on_worker_threads_equals_the_in_process_fit(tmp_path):
    folder = _write(_frame(n=1500), tmp_path / "pq", n_parts=4)
    ref_data = read_parquet(folder)
    data = scan_parquet(folder)
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        got = _km().fit(data, validation=ref_data)
        liked = _km(threshold=4.0, mu_psi=0.5, bqp_solver="enhanced").fit(data)
        with pytest.raises(ValueError, match="no training rating is >= threshold=9"):
            _km(threshold=9.0).fit(data)
    _assert_same_fit(_km().fit(ref_data, validation=ref_data), got)
    _assert_same_fit(_km(threshold=4.0, mu_psi=0.5, bqp_solver="enhanced").fit(ref_data),
                     liked)
    np.testing.assert_allclose(got.trace_.column("validation_nrmse"),
                               got.trace_.column("train_nrmse"), rtol=1e-10)


@pytest.mark.slow
def test_repeated_pairs_across_partitions_follow_the_duplicates_rule(tmp_path):
    df = _frame(n=700)
    extra = df.sample(25, random_state=1).assign(value=lambda d: 6 - d["value"])
    # the repeats land in other partitions than their first rows
    folder = _write(pd.concat([df, extra, extra.iloc[:5]]).reset_index(drop=True),
                    tmp_path / "dup", n_parts=4)
    want = _message(read_parquet, folder)
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        got = _message(_km().fit, scan_parquet(folder))
        fits = {rule: _km().fit(scan_parquet(folder, duplicates=rule))
                for rule in ("mean", "first", "last")}
    assert got == want and got[0] is DuplicateRatingsError
    for rule, fit in fits.items():
        _assert_same_fit(_km().fit(read_parquet(folder, duplicates=rule)), fit)


def _worker_holding(backend, future, timeout=15.0):
    """The one worker holding ``future`` (once Dask's memory manager has dropped any other
    replica: it keeps one of a scattered broadcast within seconds)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        holders = backend.client.who_has([future])[future.key]
        if len(holders) == 1 or time.monotonic() > deadline:
            return holders[0]
        time.sleep(0.2)


@pytest.mark.slow
def test_km_from_partitions_on_worker_processes_survives_a_killed_worker(tmp_path,
                                                                          monkeypatch):
    # process workers build the blocks; a worker killed mid-fit loses its blocks, which the
    # scheduler builds again from the partitions: the result is unchanged. The worker
    # killed is the one holding the id maps the blocks are built from: when they were
    # scattered data they were lost with it, and with them every block (flaky in CI: the
    # fit failed whenever the killed worker held the maps' last replica)
    folder = _write(_frame(n=1500, text_items=False), tmp_path / "pq", n_parts=4)
    ref = _km().fit(read_parquet(folder))
    built = {}
    build = _blocks.build_from_partitions

    def keep_maps(backend, st):
        build(backend, st)
        built["maps"] = st.dask.maps

    monkeypatch.setattr(_blocks, "build_from_partitions", keep_maps)
    with kmviz.parallel_backend("dask", client="local:2", n_blocks=3) as backend:
        data = scan_parquet(folder)
        got = _km().fit(data)
        pids = backend.client.run(os.getpid)
        killed_pid = []

        def kill_one(row):
            if row["iteration"] == 1:
                killed_pid.append(pids[_worker_holding(backend, built["maps"])])
                os.kill(killed_pid[0], signal.SIGKILL)

        killed = _km().fit(data, callback=kill_one)
        assert killed_pid[0] not in backend.client.run(os.getpid).values()   # restarted
    _assert_same_fit(ref, got, exact=False)
    _assert_same_fit(ref, killed, exact=False)
