"""SimilarityLearning on a Dask cluster: the observed-pair passes of every function value,
gradient and Gauss-Newton product run as block tasks (kmviz.similarity._dist) and the fit
equals the in-process fit bit for bit (threads and worker processes)."""

import os
import signal

import numpy as np
import pytest

import kmviz
from kmviz.similarity import SimilarityLearning, _dist
from kmviz.similarity import _kernels as K
from kmviz.similarity.allpairs import AllPairsProblem, ObservedPairs
from kmviz.similarity.synthetic import make_planted_towers
from kmviz.similarity.towers import IdentityTower

from kmviz import parallel
from tests.dask_checks import assert_lost_scheduler_ends_fit_cleanly, fits_with_a_killed_worker

pytest.importorskip("distributed")

CONFIGS = [
    {},                                                        # identity towers, Newton
    {"solver": "gd"},
    {"loss": "squared", "imputed": 0.0},
    {"loss": "squared", "solver": "gd"},
    {"item_tower": "mlp:8", "side_features": "item"},          # an MLP tower, Newton
    {"user_tower": "mlp:6", "side_features": "user", "solver": "gd"},
    {"solver": "sogram", "sample_ratio": 0.3},                 # full objective on the cluster
]


def _data():
    data, _ = make_planted_towers(120, 80, 3, density=0.1, random_state=1)
    return data


def _model(**kw):
    return SimilarityLearning(**{"k": 4, "max_iter": 3, "tol": 0, "random_state": 0, **kw})


def _assert_same_fit(ref, got, *, exact=True):
    for a, b in ((ref.theta_, got.theta_), (ref.user_factors_, got.user_factors_),
                 (ref.item_factors_, got.item_factors_)):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for col in ("objective", "l_plus"):
        if exact:
            np.testing.assert_array_equal(ref.trace_.column(col), got.trace_.column(col))
        else:
            np.testing.assert_allclose(ref.trace_.column(col), got.trace_.column(col),
                                       rtol=1e-10)
    # the same solver path: the same CG and line-search counts
    for col in ("n_cg", "n_line_search"):
        if col in ref.trace_.rows[0]:
            np.testing.assert_array_equal(ref.trace_.column(col), got.trace_.column(col))


# ----------------------------------------------------------------------------- no cluster
def _problem(m=40, n=30, k=3, seed=0):
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < 0.2
    rows, cols = np.nonzero(mask)
    pairs = ObservedPairs(rows, cols, m, n)
    prob = AllPairsProblem(pairs, IdentityTower(m, k), IdentityTower(n, k), None, None,
                           "logistic", 0.3, 1.0, rng.random(m) + 0.5, rng.random(n) + 0.5)
    ev = prob.evaluate(prob.init(rng))
    return prob, ev, rng


@pytest.mark.parametrize("weights", ["ones", "random"])
def test_block_tasks_reproduce_the_in_process_pair_sums_without_a_cluster(weights):
    prob, ev, rng = _problem()
    if weights == "ones":
        prob.a[:], prob.b[:] = 1.0, 1.0
        ev = prob.evaluate(ev.theta)
    users, items = [(0, 7), (7, 23), (23, 40)], [(0, 11), (11, 30)]
    ranges = users + items
    blocks = _dist.make_blocks(prob.pairs, prob.a, prob.b, prob.Pt, prob.Qt, users, items)
    W, H = rng.standard_normal(ev.P.shape), rng.standard_normal(ev.Q.shape)
    shared = {"key": "t", "omega": prob.omega, "code": prob.code, "P": ev.P, "Q": ev.Q,
              "W": W, "H": H}

    def run(op):
        out = [_dist.block_task(b, shared, (j, op, 1, lo, hi))
               for j, (b, (lo, hi)) in enumerate(zip(blocks, ranges))]
        return out[:3], out[3:]

    # a = b = 1 (the estimator's): bit for bit; else omega b_j a_i may round differently
    same = np.testing.assert_array_equal if weights == "ones" else \
        (lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-15))
    try:
        rows, none = run("value")
        # L+ is summed from the same per-row array: equal bit for bit
        assert float(np.concatenate(rows).sum()) == ev.l_plus and none == [None, None]
        XQ, XtP = prob._observed_gradient(ev)
        u, v = run("grad")
        np.testing.assert_array_equal(np.concatenate(u), XQ)
        same(np.concatenate(v), XtP)
        ZQ, ZtP = prob._observed_gn(ev, W, H)
        u, v = run("gn")
        np.testing.assert_array_equal(np.concatenate(u), ZQ)
        same(np.concatenate(v), ZtP)
        # a task whose block lost its cached X, c computes them again: the same answer
        _dist._clear_fit("t")
        again = _dist.block_task(blocks[4], shared, (4, "gn", 1, 11, 30))
        np.testing.assert_array_equal(again, v[1])
    finally:
        _dist._clear_fit("t")
    assert not _dist._STATE


def test_the_cache_keeps_the_most_recent_points_only(monkeypatch):
    prob, ev, _ = _problem()
    blocks = _dist.make_blocks(prob.pairs, prob.a, prob.b, prob.Pt, prob.Qt, [(0, 40)],
                               [(0, 30)])
    shared = {"key": "c", "omega": prob.omega, "code": prob.code, "P": ev.P, "Q": ev.Q}
    try:
        for pid in range(1, 6):
            _dist.block_task(blocks[0], shared, (0, "value", pid, 0, 40))
        assert list(_dist._STATE[("c", 0)]) == [3, 4, 5][-_dist.CACHE_POINTS:]
    finally:
        _dist._clear_fit("c")


def test_a_value_call_run_again_on_its_worker_gives_the_same_rows():
    # a call retried after another worker was lost runs again on the workers that had
    # already finished it: their X, c are cached, and the L+ rows must come back too (they
    # came back as None: "zero-dimensional arrays cannot be concatenated")
    prob, ev, _ = _problem()
    blocks = _dist.make_blocks(prob.pairs, prob.a, prob.b, prob.Pt, prob.Qt, [(0, 40)],
                               [(0, 30)])
    shared = {"key": "r", "omega": prob.omega, "code": prob.code, "P": ev.P, "Q": ev.Q}
    try:
        first = _dist.block_task(blocks[0], shared, (0, "value", 1, 0, 40))
        again = _dist.block_task(blocks[0], shared, (0, "value", 1, 0, 40))
        assert isinstance(again, np.ndarray)
        np.testing.assert_array_equal(again, first)
        assert float(again.sum()) == ev.l_plus
    finally:
        _dist._clear_fit("r")


# ----------------------------------------------------------------------------- on a cluster
@pytest.mark.slow
def test_similarity_on_worker_threads_equals_the_in_process_fit():
    data = _data()
    refs = [_model(**c).fit(data) for c in CONFIGS]
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        for cfg, ref in zip(CONFIGS, refs):
            got = _model(**cfg).fit(data)
            _assert_same_fit(ref, got)
            phases = got.trace_.phase_names()
            for name in ("scatter_data",) + _dist.PHASES:
                assert name in phases, (cfg, name)
            for row in got.trace_.rows:     # every iteration calls the cluster
                assert row["t_pairs_compute_s"] > 0 and row["t_pairs_gather_s"] > 0
                assert row["t_pairs_scatter_s"] > 0
                if "sample_ratio" not in cfg:     # a stochastic solver's objective is not
                    # in its phase times, the calls of its objective are
                    assert row["t_pairs_compute_s"] <= row["t_observed_pairs_s"]
            assert "t_scatter_data_s" in got.trace_.rows[0]
    assert not _dist._STATE        # each fit freed its state on the workers


@pytest.mark.slow
def test_a_fit_without_the_workers_cache_gives_the_same_fit_bit_for_bit(monkeypatch):
    # every gradient and Gauss-Newton task computes its block's X and c again from the P
    # rows and Q it was sent (what happens after a worker died): nothing changes
    data = _data()
    configs = [{}, {"item_tower": "mlp:8", "side_features": "item"}]
    with kmviz.parallel_backend("dask", client="threads:2", n_blocks=3):
        cached = [_model(**c).fit(data) for c in configs]
        monkeypatch.setattr(_dist, "CACHE_POINTS", 0)
        for cfg, ref in zip(configs, cached):
            _assert_same_fit(ref, _model(**cfg).fit(data), exact=True)


@pytest.mark.slow
def test_similarity_on_worker_processes_equals_the_in_process_fit():
    data = _data()
    configs = [{}, {"item_tower": "mlp:8", "side_features": "item", "loss": "squared",
                    "solver": "gd"}]
    refs = [_model(**c).fit(data) for c in configs]
    with kmviz.parallel_backend("dask", client="local:2", n_blocks=3):
        for cfg, ref in zip(configs, refs):
            _assert_same_fit(ref, _model(**cfg).fit(data))


@pytest.mark.slow
def test_similarity_finishes_with_the_same_result_when_a_worker_dies_mid_cg(monkeypatch):
    data = _data()
    ref = _model(max_iter=6).fit(data)
    assert ref.trace_.column("n_cg").sum() > 2
    with kmviz.parallel_backend("dask", client="local:2", n_blocks=3) as backend:
        pids = list(backend.client.run(os.getpid).values())
        gn = _dist.DistAllPairsProblem._observed_gn
        count = {"n": 0}

        def gn_then_kill(self, ev, W, H):
            count["n"] += 1
            if count["n"] == 2:        # inside a CG solve, between two Gauss-Newton products
                os.kill(pids[0], signal.SIGKILL)
            return gn(self, ev, W, H)

        monkeypatch.setattr(_dist.DistAllPairsProblem, "_observed_gn", gn_then_kill)
        got = _model(max_iter=6).fit(data)
        assert count["n"] > 2
    _assert_same_fit(ref, got)


@pytest.mark.slow
def test_similarity_with_a_lost_scheduler_stops_with_a_clear_error_and_publishes_nothing():
    assert_lost_scheduler_ends_fit_cleanly(_model(max_iter=4), _data(), "user_factors_")


#: The block task a killed worker dies in.
TASK = "kmviz.similarity._dist:block_task"


@pytest.mark.slow
def test_a_worker_killed_at_any_call_gives_the_in_process_fit_or_a_cluster_error(monkeypatch):
    # one worker process killed right before a value pass (the retried call ran again on
    # the live worker and found its cache), a gradient or a Gauss-Newton product
    data = _data()
    ref = _model(max_iter=4).fit(data)
    points = [(_dist.DistAllPairsProblem, "_pair_terms", 2),
              (_dist.DistAllPairsProblem, "_observed_gradient", 2),
              (_dist.DistAllPairsProblem, "_observed_gn", 3)]
    outcomes = fits_with_a_killed_worker(
        "local:2", lambda: _model(max_iter=4).fit(data), TASK, points, monkeypatch)
    for point, got in outcomes:
        if isinstance(got, parallel.ClusterError):
            continue            # a clean error is allowed; nothing else is
        _assert_same_fit(ref, got)
    assert sum(not isinstance(g, parallel.ClusterError) for _, g in outcomes) >= 2
