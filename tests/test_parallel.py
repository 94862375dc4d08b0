"""kmviz.parallel: fits on a Dask cluster equal in-process fits; faults and bad addresses."""

import os
import signal
import time

import numpy as np
import pytest

import kmviz
from kmviz import _cluster, parallel
from kmviz.data import Ratings
from kmviz.exceptions import InvalidParameterError
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
    # what kmviz.km._dist relies on for bit-equal randomization
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


def test_cluster_module_builds_nothing_on_parallel():
    # kmviz.parallel builds on kmviz._cluster; _cluster imported kmviz.parallel back inside
    # its functions (for ClusterError): a cycle. No import of it at any level now, and the
    # names parallel re-exports are the same objects
    import ast
    from pathlib import Path

    tree = ast.parse(Path(_cluster.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(("." * node.level) + (node.module or ""))
            imported.update(f"{'.' * node.level}{node.module or ''}.{a.name}"
                            for a in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert [m for m in imported if "parallel" in m.split(".")] == []
    for name in ("ClusterError", "in_process", "Resident", "Broadcast", "cut_blocks"):
        assert getattr(parallel, name) is getattr(_cluster, name)
    assert parallel.ClusterError.__module__ == "kmviz.parallel"


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


@pytest.mark.parametrize("spec", [
    "local:\uff12", "local:0", "local:-1", "local:1x", "local:", "local:2x", "local:x2",
    "local:\u0662", "local:1e3", "local:99999", "threads:0", "threads:2x2", "garbage here",
    "tcp://", "tcp://host:99999", "tcp://host:0", "http://127.0.0.1:8786", "local 2",
    "127.0.0.1:port", ""])
def test_bad_client_strings_are_refused_at_once_naming_the_accepted_forms(spec):
    # "local:\uff12" (a full-width 2) passed str.isdigit and failed after 10 s with a bare
    # AssertionError; "garbage" was tried as a scheduler address for the connect timeout
    start = time.perf_counter()
    with pytest.raises(InvalidParameterError) as info:
        with kmviz.parallel_backend("dask", client=spec):
            pass
    assert time.perf_counter() - start < 1.0
    msg = str(info.value)
    assert repr(spec) in msg and "local:PxT" in msg and "tcp://HOST:PORT" in msg


@pytest.mark.parametrize("spec, want", [
    ("local:2", ("local", 2, 1)), (" local:1x2 ", ("local", 1, 2)),
    ("threads:3", ("threads", 3, 1)), ("127.0.0.1:8786", ("address", "tcp://127.0.0.1:8786",
                                                          None)),
    ("tls://sched.example:8786", ("address", "tls://sched.example:8786", None)),
    ("tcp://[::1]:8786", ("address", "tcp://[::1]:8786", None)),
    ("tcp://scheduler", ("address", "tcp://scheduler", None))])
def test_good_client_strings_parse_to_what_they_name(spec, want):
    assert _cluster.parse_client(spec) == want


class _Servers:
    """Two tiny TCP servers on 127.0.0.1 (ports picked by the system): "silent" accepts
    and never sends a byte; "http" answers whatever it is sent with an HTTP 400 reply and
    closes, as web servers do on bytes that are no request. Both stop when the block ends."""

    REPLY = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

    def __enter__(self):
        import socket
        import threading

        self.stop = threading.Event()
        self.socks = {name: socket.create_server(("127.0.0.1", 0)) for name in
                      ("silent", "http")}
        self.held = []

        def serve(name):
            sock = self.socks[name]
            sock.settimeout(0.2)
            while not self.stop.is_set():
                try:
                    conn = sock.accept()[0]
                except OSError:
                    continue
                if name == "silent":
                    self.held.append(conn)
                    continue
                conn.settimeout(2.0)
                try:
                    conn.recv(4096)
                    conn.sendall(self.REPLY)
                except OSError:
                    pass
                conn.close()

        self.threads = [threading.Thread(target=serve, args=(n,), daemon=True)
                        for n in self.socks]
        for t in self.threads:
            t.start()
        return self

    def address(self, which):
        return "127.0.0.1:%d" % self.socks[which].getsockname()[1]

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(5)
        for conn in self.held:
            conn.close()
        for sock in self.socks.values():
            sock.close()


@pytest.mark.slow
@pytest.mark.timeout(60)        # it hung past 150 s
@pytest.mark.parametrize("which", ["silent", "http"])
def test_an_address_that_is_no_scheduler_fails_within_the_connect_timeout(which,
                                                                          monkeypatch):
    # a server that accepts and never answers hung the client past 150 s (Dask's handshake
    # waits without a limit); an HTTP server's reply was read as a frame length
    # ("Unable to allocate 3.07 EiB")
    monkeypatch.setattr(_cluster, "CONNECT_TIMEOUT", "2s")
    with _Servers() as servers:
        address = servers.address(which)
        start = time.perf_counter()
        with pytest.raises(parallel.ClusterError) as info:
            with kmviz.parallel_backend("dask", client=address):
                pass
        assert time.perf_counter() - start < 5.0
    msg = str(info.value)
    assert f"tcp://{address} is not a Dask scheduler" in msg and "\n" not in msg
    assert ("did not answer within 2 s" if which == "silent" else "another protocol") in msg
    assert "check the address and port" in msg.lower()


def test_cli_refuses_a_bad_dask_spec_at_once_in_one_line(capsys, monkeypatch):
    from kmviz import cli

    served = []
    monkeypatch.setattr(cli, "_serve", lambda cmd, env=None, cwd=None: served.append(1) or 0)
    for argv in (["app", "--dask", "local:\uff12"], ["app", "--dask", "tcp://host:99999"],
                 ["train", "km", "--data", "km-toy", "--dask", "local:1x"]):
        code = cli.main(argv)
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
        assert err.startswith(f"error: {argv[-1]!r}") and "local:PxT" in err
    assert served == []     # the app's server was never started


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_cli_dask_at_a_silent_server_fails_in_one_line_with_exit_2(capsys, monkeypatch):
    from kmviz import cli

    monkeypatch.setattr(_cluster, "CONNECT_TIMEOUT", "2s")
    with _Servers() as servers:
        address = servers.address("silent")
        start = time.perf_counter()
        code = cli.main(["train", "km", "--data", "km-toy", "--dask", address])
        assert time.perf_counter() - start < 30.0
    err = capsys.readouterr().err.strip()
    assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1
    assert err.startswith(f"error: tcp://{address} is not a Dask scheduler")


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


def _block_sum(block, shared, extra):
    return int(block.sum())


def _lose_block_and_fail_scatters(backend, monkeypatch, n_failures):
    """A resident block lost with its worker (its future cancelled), and the next
    ``n_failures`` scatters fail as a scatter to a dying worker does."""
    from distributed.comm.core import CommClosedError

    resident = backend.scatter_blocks([np.arange(3) + k for k in range(4)])
    backend.client.cancel([resident.futures[1]])
    real = backend.client.scatter
    calls = {"n": 0}

    def scatter(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] <= n_failures:
            raise CommClosedError("in <TCP (closed)>: the worker died (test)")
        return real(*args, **kwargs)

    monkeypatch.setattr(backend.client, "scatter", scatter)
    monkeypatch.setattr(parallel, "RETRY_SECONDS", 0.05, raising=False)
    return resident, calls


@pytest.mark.slow
def test_a_worker_lost_while_its_blocks_are_put_back_is_one_more_retry(monkeypatch):
    # the retry's own rescatter met a dying worker: a raw CommClosedError (OneClassMF, 1 in
    # 9 killed-worker runs); now it is the next retry
    with kmviz.parallel_backend("dask", client="threads:2") as backend:
        resident, calls = _lose_block_and_fail_scatters(backend, monkeypatch, 1)
        assert backend.map_blocks(_block_sum, resident) == [3 * k + 3 for k in range(4)]
        assert calls["n"] == 2 and resident.futures[1].status == "finished"


@pytest.mark.slow
def test_workers_lost_on_every_retry_end_with_a_cluster_error(monkeypatch):
    with kmviz.parallel_backend("dask", client="threads:2") as backend:
        resident, calls = _lose_block_and_fail_scatters(backend, monkeypatch, 10 ** 6)
        with pytest.raises(parallel.ClusterError,
                           match=r"were lost on each of 5 retries while running step .*"
                                 r"CommClosedError.* fit again, or fit without --dask"):
            backend.map_blocks(_block_sum, resident)
        assert calls["n"] == parallel.MAX_RETRIES


@pytest.mark.slow
def test_a_block_with_neither_a_copy_nor_a_lineage_fails_at_once(monkeypatch):
    # a block built on the workers (no copy here) whose inputs were lost cannot come back:
    # retrying on a fixed back-off only delayed the error (FuturesCancelledError after 7.5 s)
    with kmviz.parallel_backend("dask", client="threads:2") as backend:
        resident = backend.scatter_blocks([np.arange(3) + k for k in range(3)])
        resident.blocks = [None] * 3
        backend.client.cancel([resident.futures[2]])
        start = time.perf_counter()
        with pytest.raises(parallel.ClusterError, match="cannot be computed again"):
            backend.map_blocks(_block_sum, resident, name="users")
        assert time.perf_counter() - start < 3.0
