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
