"""kmviz.parallel: fits on a Dask cluster equal in-process fits; faults and bad addresses."""

import os
import signal
import time

import numpy as np
import pytest

import kmviz
from kmviz import _cluster, parallel
from kmviz.data import Ratings
from kmviz.km.estimator import KolmogorovModel

from tests.dask_checks import assert_lost_scheduler_ends_fit_cleanly, assert_same_km_fit

pytest.importorskip("distributed")


def _ratings(n_users=120, n_items=50, nnz=1500, seed=0):
    rng = np.random.default_rng(seed)
    k = rng.choice(n_users * n_items, nnz, replace=False)
    users, items = np.divmod(k, n_items)
    # item n_items - 1 gets no rating, so the blocks must skip unknown items as fit does
    keep = items != n_items - 1
    return Ratings.from_arrays(users[keep], items[keep],
                               rng.integers(1, 6, int(keep.sum())).astype(float),
                               r_min=1.0, r_max=5.0, item_ids=np.arange(n_items))


def _km(**kw):
    return KolmogorovModel(**{"D": 4, "max_iter": 3, "tol": 0.0, "random_state": 7, **kw})


_assert_same_fit = assert_same_km_fit


# ----------------------------------------------------------------------------- no cluster
def test_cut_blocks_are_contiguous_and_balanced():
    w = np.array([1, 1, 1, 1, 10, 1, 1, 1, 1, 1], dtype=float)
    blocks = parallel.cut_blocks(w, 3)
    assert blocks[0][0] == 0 and blocks[-1][1] == w.size
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert parallel.cut_blocks(w, 50) == [(k, k + 1) for k in range(10)]
    assert parallel.cut_blocks(np.zeros(0), 3) == [(0, 0)]


def test_draws_cut_at_block_boundaries_equal_one_draw():
    # what kmviz.km._blocks relies on for bit-equal randomization
    whole = np.random.default_rng(5).standard_normal((10, 3, 4))
    gen = np.random.default_rng(5)
    parts = [gen.standard_normal((k, 3, 4)) for k in (3, 0, 7)]
    np.testing.assert_array_equal(whole, np.concatenate(parts))


def test_no_backend_by_default_and_numba_backend_is_in_process():
    assert parallel.active_backend() is None
    with kmviz.parallel_backend("numba") as backend:
        assert backend is None and parallel.active_backend() is None


@pytest.mark.parametrize("spec, match", [
    ("local:0", "positive number of workers"), ("threads:x", "positive number"),
    ("local:2x0", r"local:PxT \(P processes of T threads\)"), ("local:1xy", "local:PxT"),
    ("threads:1x2", "positive number")])
def test_bad_local_specs_are_refused(spec, match):
    with pytest.raises(ValueError, match=match):
        with kmviz.parallel_backend("dask", client=spec):
            pass


def test_unknown_backend_and_missing_client_are_refused():
    with pytest.raises(ValueError, match="unknown parallel backend 'spark'"):
        with kmviz.parallel_backend("spark"):
            pass
    with pytest.raises(ValueError, match="needs client="):
        with kmviz.parallel_backend("dask"):
            pass


# ----------------------------------------------------------------------------- clusters
def _check_cluster_fits(spec, data, ref, *, kill_one_worker=False):
    exact = spec.startswith("threads:")
    with kmviz.parallel_backend("dask", client=spec, n_blocks=3) as backend:
        assert parallel.active_backend() is backend
        got = _km().fit(data)
        got_enhanced = _km(bqp_solver="enhanced", mu_psi=0.5).fit(data)
        if kill_one_worker:
            pids = list(backend.client.run(os.getpid).values())

            def kill_one(row):
                if row["iteration"] == 1:
                    os.kill(pids[0], signal.SIGKILL)

            killed = _km().fit(data, callback=kill_one)
            _assert_same_fit(ref, killed, exact=exact)
    assert parallel.active_backend() is None
    _assert_same_fit(ref, got, exact=exact)
    _assert_same_fit(_km(bqp_solver="enhanced", mu_psi=0.5).fit(data), got_enhanced,
                     exact=exact)
    phases = got.trace_.phase_names()
    for name in ("items_scatter", "items_compute", "items_gather", "users_compute"):
        assert name in phases


@pytest.mark.slow
def test_km_on_worker_threads_equals_the_in_process_fit():
    data = _ratings()
    _check_cluster_fits("threads:2", data, _km().fit(data))


@pytest.mark.slow
def test_km_on_worker_processes_equals_in_process_even_when_a_worker_dies_mid_fit():
    # one cluster start for both checks (process workers take seconds to start): the killed
    # worker's blocks are scattered again and its tasks rerun; the result is unchanged
    data = _ratings()
    _check_cluster_fits("local:2", data, _km().fit(data), kill_one_worker=True)


@pytest.mark.slow
def test_a_lost_scheduler_ends_the_fit_with_a_clear_error():
    assert_lost_scheduler_ends_fit_cleanly(_km(), _ratings(), "theta_")


@pytest.mark.slow
def test_an_unreachable_address_gives_a_clear_error(monkeypatch):
    monkeypatch.setattr(_cluster, "CONNECT_TIMEOUT", "2s")
    with pytest.raises(parallel.ClusterError, match="could not reach a Dask scheduler"):
        with kmviz.parallel_backend("dask", client="127.0.0.1:9"):
            pass


# ----------------------------------------------------------------------------- CLI and app
def test_cli_dask_option_reaches_the_app_and_bad_specs_fail_cleanly(capsys, monkeypatch):
    from kmviz import cli

    calls = []
    monkeypatch.setattr(cli, "_serve",
                        lambda cmd, env=None, cwd=None: calls.append(env) or 0)
    assert cli.main(["app", "--dask", "tcp://10.0.0.5:8786"]) == 0
    assert calls[0][parallel.DASK_ENV] == "tcp://10.0.0.5:8786"
    capsys.readouterr()
    code = cli.main(["train", "km", "--data", "km-toy", "--dask", "local:0"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: 'local:0': expected local:N")


def test_train_page_caption_names_the_operators_cluster(monkeypatch):
    from kmviz.ui.training import cluster_caption

    monkeypatch.delenv(parallel.DASK_ENV, raising=False)
    assert cluster_caption() is None
    monkeypatch.setenv(parallel.DASK_ENV, "local:2")
    assert "Dask cluster `local:2`" in cluster_caption()


@pytest.mark.slow
def test_app_started_with_dask_fits_on_that_cluster(monkeypatch):
    from tests.app import apphelpers as ah

    monkeypatch.setenv(parallel.DASK_ENV, "threads:1")
    try:
        at = ah.new_session()
        ah.load_planted(at)
        ah.goto(at, ah.TRAIN)
        assert any("Dask cluster `threads:1`" in c.value for c in at.caption)
        ah.train(at)
        run = ah.only_run(at)
        assert "items_compute" in run.trace.phase_names()
    finally:
        parallel.set_default_backend(None)


def test_warm_up_fits_run_in_process_even_inside_a_backend():
    seen = []
    backend = parallel.DaskBackend.__new__(parallel.DaskBackend)   # no cluster needed
    with parallel._lock:
        parallel._stack.append(backend)
    try:
        backend.warm("test-key", lambda: seen.append(parallel.active_backend()))
        backend.warm("test-key", lambda: seen.append("again"))
        assert seen == [None] and parallel.active_backend() is backend
    finally:
        with parallel._lock:
            parallel._stack.remove(backend)
        parallel._warmed.discard("test-key")


def _failing_task(block, shared, extra):
    raise ValueError(f"bad block {block}")


@pytest.mark.slow
def test_map_blocks_keeps_order_and_a_tasks_own_error():
    with kmviz.parallel_backend("dask", client="threads:2") as backend:
        resident = backend.scatter_blocks([np.arange(k, k + 3) for k in range(5)])
        out = backend.map_blocks(lambda b, s, e: int(b.sum()) * s + e, resident, 10,
                                 list(range(5)), name="t")
        assert out == [(3 * k + 3) * 10 + k for k in range(5)]
        with pytest.raises(ValueError, match="bad block"):
            backend.map_blocks(_failing_task, resident)


def _where(block, shared, extra):
    """Sleep ``extra`` seconds; the worker this ran on."""
    from distributed import get_worker

    time.sleep(extra)
    return get_worker().address


@pytest.mark.slow
def test_pinned_blocks_run_on_their_own_worker_while_another_one_is_idle():
    with kmviz.parallel_backend("dask", client="threads:2") as backend:
        resident = backend.scatter_blocks([np.arange(3) + k for k in range(6)])
        first = backend.map_blocks(_where, resident, None, [0.0] * 6, pin=True)
        assert set(first) == set(backend.client.scheduler_info()["workers"])
        assert first == resident.homes
        # one worker's blocks are slow: unpinned, work stealing moves some of its queued
        # tasks to the idle worker (2 of 12 in 4 such calls, seen once)
        slow = [0.5 if w == first[0] else 0.0 for w in first]
        for _ in range(4):
            assert backend.map_blocks(_where, resident, None, slow, pin=True) == first


@pytest.mark.slow
def test_a_pinned_worker_that_left_moves_its_blocks_to_a_live_worker(monkeypatch):
    monkeypatch.setattr(parallel, "PIN_CHECK_SECONDS", 0.2)
    with kmviz.parallel_backend("dask", client="threads:2") as backend:
        resident = backend.scatter_blocks([np.arange(3) + k for k in range(4)])
        homes = backend.map_blocks(_where, resident, None, [0.0] * 4, pin=True)
        resident.homes = ["tcp://127.0.0.1:9"] + homes[1:]     # a worker that is gone
        again = backend.map_blocks(_where, resident, None, [0.0] * 4, pin=True)
        alive = set(backend.client.scheduler_info()["workers"])
        # asked again: each block's home is the live worker holding its data
        assert set(again) <= alive and again == homes == resident.homes
