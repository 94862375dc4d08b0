"""OneClassMF on a Dask cluster: the observed-pair sums of every TRON (and gradient-descent)
call run as block tasks (kmviz.ocmf._dist) and the fit equals the in-process fit."""

import os
import signal

import numpy as np
import pytest

import kmviz
from kmviz import parallel
from kmviz.ocmf import OneClassMF, _dist
from kmviz.ocmf.synthetic import make_planted_pu

from tests.dask_checks import assert_lost_scheduler_ends_fit_cleanly, fits_with_a_killed_worker

pytest.importorskip("distributed")

CONFIGS = [
    {},                                                        # TRON, X = I, O_c diagonal
    {"solver": "gd"},                                          # batched line-search trials
    {"dtype": "float32"},
    {"side_features": "both", "graph": "ratings", "lambda_g": 0.5},
    {"side_features": "both", "small_d": "on"},                # hvp_observed + M_bar
]


def _data():
    data, _ = make_planted_pu(150, 90, 3, density=0.1, random_state=1)
    return data


def _ocmf(**kw):
    return OneClassMF(**{"k": 4, "max_iter": 3, "random_state": 0, **kw})


def _assert_same_fit(ref, got, *, exact):
    for a, b in ((ref.W_user_, got.W_user_), (ref.W_item_, got.W_item_)):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ref.trace_.column("objective"),
                               got.trace_.column("objective"), rtol=1e-10)
    # the same TRON path: the same Newton / CG counts per block
    for col in ("n_w_newton", "n_h_newton", "n_w_cg", "n_h_cg", "n_hess_vec"):
        np.testing.assert_array_equal(ref.trace_.column(col), got.trace_.column(col))


def _check(spec, data, refs, *, exact):
    with kmviz.parallel_backend("dask", client=spec, n_blocks=3):
        for cfg, ref in zip(CONFIGS, refs):
            got = _ocmf(**cfg).fit(data)
            _assert_same_fit(ref, got, exact=exact)
    phases = got.trace_.phase_names()
    for name in ("w_pairs_compute", "h_pairs_compute", "w_pairs_gather", "scatter_data"):
        assert name in phases


@pytest.mark.slow
def test_ocmf_on_worker_threads_equals_the_in_process_fit_bit_for_bit():
    data = _data()
    _check("threads:2", data, [_ocmf(**c).fit(data) for c in CONFIGS], exact=True)
    assert not _dist._STATE        # each fit freed its state on the workers


@pytest.mark.slow
def test_hessian_diagonal_returned_with_every_value_pass_gives_the_same_fit(monkeypatch):
    # DistPairs(diag=True): the diagonal rides with each value pass instead of its own call
    calls = []
    init = _dist.DistPairs.__init__

    def with_diag(self, backend, loss, k, *, diag=False):
        calls.append(k)
        init(self, backend, loss, k, diag=True)

    monkeypatch.setattr(_dist.DistPairs, "__init__", with_diag)
    data = _data()
    configs = [{}, {"side_features": "both", "dtype": "float32"}]
    refs = [_ocmf(**c).fit(data) for c in configs]
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        for cfg, ref in zip(configs, refs):
            _assert_same_fit(ref, _ocmf(**cfg).fit(data), exact=True)
    assert len(calls) == 2


@pytest.mark.slow
def test_ocmf_on_worker_processes_equals_the_in_process_fit():
    data = _data()
    _check("local:2", data, [_ocmf(**c).fit(data) for c in CONFIGS], exact=False)


@pytest.mark.slow
def test_ocmf_on_one_worker_process_of_two_threads_equals_the_in_process_fit():
    # local:1x2: one process, its two threads share the broadcast factors; the blocks are
    # planned per thread (two task slots), not per process
    data = _data()
    refs = [_ocmf(**c).fit(data) for c in CONFIGS[:2]]
    with kmviz.parallel_backend("dask", client="local:1x2") as backend:
        info = backend.client.scheduler_info()["workers"]
        assert len(info) == 1 and backend.n_workers() == 2
        assert len(backend.plan(np.ones(40), 0.0, min_blocks="workers")) == 2
        for cfg, ref in zip(CONFIGS[:2], refs):
            _assert_same_fit(ref, _ocmf(**cfg).fit(data), exact=False)


def test_work_arrays_taken_back_are_reused_as_views_of_the_longest_fitting_one():
    fit = "test-pool"
    try:
        a = _dist._take(fit, 1000)
        assert a.shape == (1000,) and a.base.shape[0] >= 1000 * _dist.SLACK
        with _dist._LOCK:
            _dist._give(fit, a, None)
        b = _dist._take(fit, 1050)        # fits the slack of a's array: the same memory
        assert b.base is a.base and b.shape == (1050,)
        c = _dist._take(fit, 900)         # nothing free: a new array
        assert c.base is not a.base
        with _dist._LOCK:
            _dist._give(fit, b, c)
        d = _dist._take(fit, 2000)        # longer than every free one: a new array
        assert d.base is not a.base and d.base is not c.base
        assert _dist._take(fit, 800).base is c.base   # the shortest that fits
    finally:
        _dist._clear_fit(fit)
    assert fit not in _dist._FREE


@pytest.mark.slow
def test_per_pair_work_arrays_are_made_a_few_times_per_fit_not_per_call(monkeypatch):
    # the workers keep the per-pair arrays (scores, l+'', line-search directions) of a fit
    # and hand them out again: a new array per call made the OS zero fresh pages each time
    made, taken = set(), [0]
    take = _dist._take

    def counting(fit, n):
        a = take(fit, n)
        taken[0] += 1
        made.add(id(a.base))      # the fit's arrays stay alive until it ends: ids unique
        return a

    monkeypatch.setattr(_dist, "_take", counting)
    data = _data()
    for cfg in ({}, {"solver": "gd"}):
        ref = _ocmf(**cfg).fit(data)
        made.clear()
        taken[0] = 0
        with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
            _assert_same_fit(ref, _ocmf(**cfg).fit(data), exact=True)
        # per block: two live points (scores, l+'') and the next one, a line search's
        # direction; the two sides share the arrays
        assert taken[0] > 4 * len(made) and len(made) <= 3 * 7
    assert not _dist._STATE and not _dist._FREE


def _malloc_env():
    return {k: os.environ.get(k) for k in parallel.WORKER_MALLOC_ENV}


@pytest.mark.slow
def test_local_worker_processes_start_with_malloc_keeping_freed_arrays():
    # set before the spawn (malloc reads it once), over the nanny's own trim threshold
    with kmviz.parallel_backend("dask", client="local:1") as backend:
        (env,) = backend.client.run(_malloc_env).values()
    assert env == parallel.WORKER_MALLOC_ENV


_LOSSES = {"every": 0, "n": 0, "lost": 0}
_TASK = _dist.block_task


def _flaky_block_task(block, shared, extra):
    """The block task, but every n-th call first drops all the OCMF state of this process
    (a block moved to a worker that never held it). Module level: Dask pickles a task's
    function, and a closure's counters would be copies."""
    _LOSSES["n"] += 1
    if _LOSSES["n"] % _LOSSES["every"] == 0:
        with _dist._LOCK:
            _LOSSES["lost"] += len(_dist._STATE)
            _dist._STATE.clear()
    return _TASK(block, shared, extra)


def _lose_state_every(n, monkeypatch):
    """Worker threads lose their state before every n-th task: the tasks answer LOST and
    the client rebuilds the state first."""
    _LOSSES.update(every=n, n=0, lost=0)
    monkeypatch.setattr(_dist, "block_task", _flaky_block_task)
    return _LOSSES


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [{}, {"side_features": "both"}, {"solver": "gd"}])
def test_state_lost_mid_half_step_is_rebuilt_and_the_fit_is_unchanged(cfg, monkeypatch):
    data = _data()
    ref = _ocmf(**cfg).fit(data)
    calls = _lose_state_every(7, monkeypatch)
    restore = _dist.DistBlockTerms._restore_ops
    rebuilt = []
    monkeypatch.setattr(_dist.DistBlockTerms, "_restore_ops",
                        lambda self, lo, hi: rebuilt.append(lo) or restore(self, lo, hi))
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        got = _ocmf(**cfg).fit(data)
    assert calls["lost"] > 0 and len(rebuilt) > 0
    # TRON rebuilds a point's state with the same value pass: bit for bit; gradient descent
    # recomputes a moved point's scores directly instead of s0 + alpha ds (rounding)
    _assert_same_fit(ref, got, exact=cfg.get("solver") != "gd")


@pytest.mark.slow
def test_ocmf_finishes_with_the_same_result_when_a_worker_dies_mid_half_step(monkeypatch):
    data = _data()
    ref = _ocmf().fit(data)
    with kmviz.parallel_backend("dask", client="local:2", n_blocks=3) as backend:
        pids = list(backend.client.run(os.getpid).values())
        hvp = _dist.DistBlockTerms.hvp
        count = {"n": 0}

        def hvp_then_kill(self, N):
            count["n"] += 1
            if count["n"] == 4:        # inside a TRON solve, between two CG steps
                os.kill(pids[0], signal.SIGKILL)
            return hvp(self, N)

        monkeypatch.setattr(_dist.DistBlockTerms, "hvp", hvp_then_kill)
        got = _ocmf().fit(data)
        assert count["n"] > 4
    _assert_same_fit(ref, got, exact=False)


@pytest.mark.slow
def test_ocmf_with_a_lost_scheduler_stops_with_a_clear_error_and_publishes_nothing():
    assert_lost_scheduler_ends_fit_cleanly(_ocmf(), _data(), "W_user_")


@pytest.mark.slow
def test_iterate_blocks_placed_on_their_workers_give_the_same_fit(monkeypatch):
    # every per-block argument above DIRECT_BYTES is scattered straight to the worker
    # holding its block instead of riding in the task graph; here all of them are
    monkeypatch.setattr(parallel, "DIRECT_BYTES", 0)
    placed = []
    submit = parallel.DaskBackend._submit

    def counting(self, fn, resident, shared_f, extras, homes=None):
        sent = []
        scatter = self.client.scatter

        def recording(data, **kw):
            sent.append((data[0], kw.get("workers")))
            return scatter(data, **kw)

        self.client.scatter = recording
        try:
            out = submit(self, fn, resident, shared_f, extras, homes)
        finally:
            del self.client.scatter
        blocks = self.client.who_has(resident.futures)
        for ex, workers in sent:
            j = next(j for j, e in enumerate(extras) if e is ex)
            assert workers and set(workers) & set(blocks[resident.futures[j].key])
        placed.append(len(sent))
        return out

    monkeypatch.setattr(parallel.DaskBackend, "_submit", counting)
    data = _data()
    configs = [{}, {"solver": "gd"}, {"dtype": "float32"}]
    refs = [_ocmf(**c).fit(data) for c in configs]
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        for cfg, ref in zip(configs, refs):
            _assert_same_fit(ref, _ocmf(**cfg).fit(data), exact=True)
    assert placed and max(placed) == 3     # calls without arrays (grad, diag) place none


def test_train_page_caption_names_the_families_that_run_on_the_cluster(monkeypatch):
    from kmviz import families
    from kmviz.ui.training import cluster_caption

    monkeypatch.setenv(parallel.DASK_ENV, "local:2")
    text = cluster_caption()
    on = [f for f in families.all_families() if f.distributed]
    off = [f for f in families.all_families() if not f.distributed]
    assert on and off
    head, _, rest = text.partition(" fits run on the Dask cluster `local:2`")
    tail = rest.rpartition("in-process fits. ")[2].removesuffix(" fit in this process.")
    assert head.split(", ") == [f.short for f in on]
    assert tail.split(", ") == [f.short for f in off]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_fixed_factors_are_broadcast_once_per_half_step_not_twice(dtype, monkeypatch):
    sent = []
    broadcast = parallel.DaskBackend.broadcast
    monkeypatch.setattr(parallel.DaskBackend, "broadcast",
                        lambda self, obj: sent.append(obj) or broadcast(self, obj))
    data = _data()
    ref = _ocmf(dtype=dtype).fit(data)
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        _assert_same_fit(ref, _ocmf(dtype=dtype).fit(data), exact=True)
    assert sent
    for obj in sent:     # float64: the kernels' copy Ok is O itself, sent as None
        assert (obj["Ok"] is None) == (dtype == "float64")
        if obj["Ok"] is not None:
            assert obj["Ok"].dtype == np.float32


#: The block task a killed worker dies in.
TASK = "kmviz.ocmf._dist:block_task"


@pytest.mark.slow
def test_a_worker_killed_at_any_call_gives_the_in_process_fit_or_a_cluster_error(monkeypatch):
    # one worker process killed right before a half-step's broadcast, a value pass or a
    # Hessian-vector product (TRON), or a line search's trials (gradient descent)
    data = _data()
    refs = {"tron": _ocmf().fit(data), "gd": _ocmf(solver="gd").fit(data)}
    tron = [(_dist.DistBlockTerms, "_broadcast", 3), (_dist.DistBlockTerms, "l_plus", 2),
            (_dist.DistBlockTerms, "hvp", 5)]
    gd = [(_dist.DistBlockTerms, "l_plus_shifted", 3)]
    outcomes = [("tron", got) for _, got in fits_with_a_killed_worker(
        "local:2", lambda: _ocmf().fit(data), TASK, tron, monkeypatch)]
    outcomes += [("gd", got) for _, got in fits_with_a_killed_worker(
        "local:2", lambda: _ocmf(solver="gd").fit(data), TASK, gd, monkeypatch)]
    fitted = [(solver, got) for solver, got in outcomes
              if not isinstance(got, parallel.ClusterError)]   # a clean error is allowed
    for solver, got in fitted:
        _assert_same_fit(refs[solver], got, exact=False)
    assert len(fitted) >= 3
