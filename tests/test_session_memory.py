"""Memory a served session keeps (issue 24): one copy of each loaded dataset, shared by the
sessions that load it, and freed once none uses it."""

from __future__ import annotations

import gc
import threading

import numpy as np

from kmviz.data import planted_km
from kmviz.ui.datacache import SharedDatasets, dataset_bytes


def _make(calls, seed=0, n_users=40):
    def make():
        calls.append(seed)
        return planted_km(n_users=n_users, n_items=12, D=3, random_state=seed)
    return make


def test_same_key_gives_the_same_object_while_a_session_holds_it():
    cache = SharedDatasets(keep_bytes=0)  # nothing kept by the cache itself
    calls = []
    a = cache.get(("built-in", "planted-km", ()), _make(calls))
    b = cache.get(("built-in", "planted-km", ()), _make(calls))
    assert a is b and calls == [0]            # shared, made once
    c = cache.get(("built-in", "planted-km", (("random_state", 1),)), _make(calls, 1))
    assert c is not a and calls == [0, 1]


def test_a_dataset_no_session_holds_is_freed_when_over_the_keep_budget():
    cache = SharedDatasets(keep_bytes=0)
    calls = []
    a = cache.get("k", _make(calls))
    assert len(cache) == 1
    del a
    gc.collect()
    assert len(cache) == 0                    # the cache held no copy of its own
    cache.get("k", _make(calls))
    assert calls == [0, 0]


def test_small_datasets_stay_within_the_keep_budget():
    one = planted_km(n_users=40, n_items=12, D=3, random_state=0)
    size = dataset_bytes(one)
    cache = SharedDatasets(keep_bytes=2 * size + size // 2)  # room for two
    calls = []
    for seed in range(3):
        cache.get(seed, _make(calls, seed))   # nobody holds them
    gc.collect()
    assert len(cache) == 2                    # the oldest was dropped
    cache.get(2, _make(calls, 2))
    assert calls == [0, 1, 2]                 # the newest is still there: not made again
    big = SharedDatasets(keep_bytes=size - 1)
    big.get("x", _make(calls, 5))
    gc.collect()
    assert len(big) == 0                      # larger than the budget: never kept alone


def test_concurrent_first_loads_end_with_one_shared_object():
    cache = SharedDatasets()
    got, calls = [], []
    start = threading.Barrier(4)

    def worker():
        start.wait()
        got.append(cache.get("k", _make(calls)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = cache.get("k", _make(calls))
    assert len(got) == 4 and all(g is first for g in got)
    assert len(cache) == 1


def test_unhashable_options_load_without_sharing():
    cache = SharedDatasets()
    calls = []
    a = cache.get(("k", [1]), _make(calls))
    b = cache.get(("k", [1]), _make(calls))
    assert a is not b and calls == [0, 0] and len(cache) == 0


def test_app_loaders_share_one_copy(monkeypatch):
    """The Data page's loaders go through one shared cache: two sessions loading the same
    planted set get one object (before, each got its own unpickled copy and the cache kept
    a pickled one: three copies)."""
    from kmviz.ui import datasets as ds

    monkeypatch.setattr(ds, "DATASETS", SharedDatasets())
    options = tuple(sorted({"n_users": 30, "n_items": 10, "D": 3, "random_state": 7}.items()))
    a = ds.load_builtin("planted-km", options)
    b = ds.load_builtin("planted-km", options)
    assert a is b
    assert not a.users.flags.writeable and not a.values.flags.writeable  # safe to share
    np.testing.assert_array_equal(
        a.values, planted_km(n_users=30, n_items=10, D=3, random_state=7,
                             noise=a.info["noise"]).values)


# ---------------------------------------------------------------- bytes a rating, measured
#: A loaded dataset's entries: int32 user and item indices and float64 values.
BYTES_PER_RATING = 4 + 4 + 8
SLACK = 1 << 20  # ids, names, small arrays and Python objects


def _entry_bytes(r) -> int:
    return r.users.nbytes + r.items.nbytes + r.values.nbytes


def _planted_options(seed=0, n_users=4000):
    return tuple(sorted({"n_users": n_users, "n_items": 100, "D": 4,
                         "random_state": seed}.items()))


def test_a_ratings_and_its_split_hold_16_bytes_a_rating():
    """Stated bound: a loaded Ratings holds 16 bytes a rating in its entries, and its
    train / validation / test parts together 16 more (each rating in one part, no copy
    kept of an intermediate part). int64 indices would be 24."""
    from kmviz.data.splits import make_split

    r = planted_km(n_users=4000, n_items=100, D=4, random_state=0)
    n = r.n_ratings
    assert r.users.dtype == np.int32 and r.items.dtype == np.int32
    assert r.values.dtype == np.float64     # the kernels' and oracles' precision
    assert _entry_bytes(r) == BYTES_PER_RATING * n
    split = make_split(r)
    parts = list(split.parts().values())
    assert sum(p.n_ratings for p in parts) == n
    assert sum(_entry_bytes(p) for p in parts) == BYTES_PER_RATING * n
    assert all(p.users.dtype == np.int32 for p in parts)


def test_the_app_keeps_one_dataset_and_one_split_per_session(monkeypatch):
    """Measured with tracemalloc through the Data page's own calls: a session's load and
    split keep at most 2 x 16 bytes a rating (st.cache_data kept 3 x 24: its pickle, the
    session's copy and the split); a second session loading the same set adds only its
    split."""
    import tracemalloc

    from kmviz.ui import datasets as ds

    monkeypatch.setattr(ds, "DATASETS", SharedDatasets(keep_bytes=0))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        ratings = ds.load_builtin("planted-km", _planted_options())
        split, _, _ = ds._split_for(ratings, ds.DEFAULT_SPLIT)
        gc.collect()
        first = tracemalloc.get_traced_memory()[0] - before
        again = ds.load_builtin("planted-km", _planted_options())
        split2, _, _ = ds._split_for(again, ds.DEFAULT_SPLIT)
        gc.collect()
        second = tracemalloc.get_traced_memory()[0] - before - first
    finally:
        tracemalloc.stop()
    n = ratings.n_ratings
    assert again is ratings
    assert first <= 2 * BYTES_PER_RATING * n + SLACK, (first, n)
    assert second <= BYTES_PER_RATING * n + SLACK, (second, n)
    del split, split2


def test_a_finished_fit_keeps_no_work_arrays():
    """A finished training job of the app keeps the fitted model (and the session's data,
    which it shares), never the fit's work arrays (KM: the ratings by user and by item,
    targets, predictions: about 72 bytes a training rating)."""
    import tracemalloc

    from kmviz.data.splits import make_split
    from kmviz.ui.training import TrainingJob

    r = planted_km(n_users=4000, n_items=100, D=4, random_state=0)
    split = make_split(r)
    params = {"D": 4, "max_iter": 2, "tol": 0.0, "random_state": 0}
    warm = TrainingJob("km", params, split, dataset_name=r.name, fingerprint="x",
                       save=False).start()     # kernels loaded before measuring
    warm.thread.join()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        job = TrainingJob("km", params, split, dataset_name=r.name, fingerprint="x",
                          save=False).start()
        job.thread.join()
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert job.status == "done", job.progress()["message"]
    model = job.result.model
    own = sum(a.nbytes for a in vars(model).values() if isinstance(a, np.ndarray))
    assert own > 0 and job.result.split is split
    assert kept <= own + SLACK, (kept, own, split.train.n_ratings)
    assert 40 * split.train.n_ratings > SLACK + own   # a kept work array would show


def test_saved_split_keeps_int32_indices_and_reopens_equal():
    """Saving a run writes the split's indices as stored (no int64 copy of every part);
    reopening gives the same parts, and int64 indices (runs saved before) still read."""
    from kmviz.data.splits import make_split, split_arrays, split_from_arrays
    from kmviz.runs.models import dataset_meta

    r = planted_km(n_users=300, n_items=40, D=3, random_state=2)
    split = make_split(r)
    arrays = split_arrays(split)
    assert arrays["data_train_users"].dtype == np.int32
    assert arrays["data_train_users"] is split.train.users      # no copy
    meta = dataset_meta(r, split)
    for saved in (arrays, {k: (v.astype(np.int64) if v.dtype == np.int32 else v)
                           for k, v in arrays.items()}):
        whole, back = split_from_arrays(saved, meta, split.settings())
        assert whole.fingerprint() == r.fingerprint()
        for part in ("train", "validation", "test"):
            a, b = getattr(split, part), getattr(back, part)
            np.testing.assert_array_equal(a.users, b.users)
            np.testing.assert_array_equal(a.values, b.values)
            assert b.users.dtype == np.int32
