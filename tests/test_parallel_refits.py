"""KM's refits (kmviz.km.stability.map_refits) on a Dask cluster: one task per refit, the
ratings on the workers once, progress and stop here, and the same table as in process."""

import os
import signal

import numpy as np
import pandas as pd
import pytest

import kmviz
from kmviz import parallel
from kmviz.data import Ratings, make_planted_km
from kmviz.km import stable_implications
from kmviz.km.stability import _settings, map_refits, refit_supports, stability_caption

pytest.importorskip("distributed")

B = 4
SETTINGS = {"D": 3, "max_iter": 8}


def _data():
    ratings, _ = make_planted_km(200, 12, 3, observed=0.7, random_state=0)
    return ratings


def _table(ratings, **kw):
    return stable_implications(ratings, n_refits=B, random_state=5,
                               items=np.ones(ratings.n_items, bool), **SETTINGS, **kw)


def _all_refits(ratings):
    """Every refit of ``_table``'s run, in process (to rebuild a partial table from)."""
    seeds = np.random.SeedSequence(5).generate_state(B)
    settings = _settings(ratings, None, "ratings", SETTINGS)
    tasks = [{"seed": int(s), "resampling": "subsample", "fraction": 0.5,
              "settings": settings} for s in seeds]
    return map_refits(refit_supports, tasks, shared=ratings)


def _assert_same_table(a, b):
    pd.testing.assert_frame_equal(a, b)
    np.testing.assert_array_equal(a.attrs["held"], b.attrs["held"])
    assert a.attrs["seeds"] == b.attrs["seeds"]


class _Stopper:
    """progress / stop pair: stop() turns true after ``after`` progress calls."""

    def __init__(self, after=None):
        self.after, self.seen = after, []

    def progress(self, done, total):
        self.seen.append((done, total))

    def stop(self):
        return self.after is not None and len(self.seen) >= self.after


# ----------------------------------------------------------------------------- no cluster
def test_describe_names_what_runs_where():
    assert parallel.describe(None, "The refits") == \
        "The refits run in this process (Numba threads)."
    backend = parallel.DaskBackend.__new__(parallel.DaskBackend)   # no cluster needed
    backend.address = "tcp://10.0.0.5:8786"
    assert backend.describe("The refits") == \
        "The refits run on the Dask cluster tcp://10.0.0.5:8786."
    assert backend.describe() == "Fits run on the Dask cluster tcp://10.0.0.5:8786."


def test_in_process_refits_pass_the_shared_data_and_stop_between_refits(monkeypatch):
    from kmviz.km import _refits

    monkeypatch.setattr(_refits, "REFIT_THREADS", 1)
    seen = []
    out = map_refits(lambda t, s: (t, s), range(4), shared="data",
                     progress=lambda d, n: seen.append((d, n)), stop=lambda: len(seen) >= 2)
    assert out == [(0, "data"), (1, "data")] and seen == [(1, 4), (2, 4)]


def test_refits_on_threads_leave_the_warning_filters_as_they_were():
    import warnings

    from kmviz.exceptions import ConvergenceWarning
    from kmviz.km._refits import _no_convergence_warnings

    def fit(t):
        with _no_convergence_warnings():
            warnings.warn("inside a refit", ConvergenceWarning)
        return t

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = list(warnings.filters)
        assert map_refits(fit, range(8)) == list(range(8))
        assert warnings.filters == before
        warnings.warn("after the refits", ConvergenceWarning)
    assert [str(w.message) for w in caught] == ["after the refits"]


# ----------------------------------------------------------------------------- clusters
@pytest.mark.slow
def test_refits_on_worker_threads_give_the_in_process_table_and_stop_the_same_way(
        monkeypatch):
    ratings = _data()
    ref = _table(ratings)
    assert ref.attrs.get("refits_ran") is None and len(ref)
    refits = _all_refits(ratings)
    local = _Stopper(after=2)
    ref_part = _table(ratings, progress=local.progress, stop=local.stop)
    # in process the refit running on the other thread when stop turned true finishes
    n = len(local.seen)
    assert local.seen == [(k, B) for k in range(1, n + 1)] and 2 <= n < B
    assert ref_part.attrs["n_refits"] == n
    _assert_same_table(ref_part, _table(ratings, refits=refits[:n]))

    submitted = []
    with kmviz.parallel_backend("dask", client="threads:2") as backend:
        submit = backend.client.submit

        def recording(fn, *args, **kw):
            submitted.append(args)
            return submit(fn, *args, **kw)

        monkeypatch.setattr(backend.client, "submit", recording)
        full = _Stopper()
        got = _table(ratings, progress=full.progress, stop=full.stop)
        part = _Stopper(after=2)
        got_part = _table(ratings, progress=part.progress, stop=part.stop)
        assert parallel.active_backend() is backend
    # the same table, whatever order the refits finished in
    _assert_same_table(ref, got)
    assert full.seen == [(k, B) for k in range(1, B + 1)]
    # one task per refit; the ratings went to the workers once, not inside the tasks
    assert len(submitted) >= 2 * B
    for args in submitted:
        assert not any(isinstance(a, Ratings) for a in args)
        assert not any(isinstance(v, Ratings) for a in args if isinstance(a, dict)
                       for v in a.values())
    # stopped after two refits (the others cancelled): those two refits' table, as in
    # process the table of the refits reported
    assert part.seen == [(1, B), (2, B)] and got_part.attrs["n_refits"] == 2
    by_seed = {r["seed"]: r for r in refits}
    _assert_same_table(got_part, _table(ratings, refits=[by_seed[s]
                                                         for s in got_part.attrs["seeds"]]))
    assert "The refits run on the Dask cluster threads:2" in stability_caption(got)


@pytest.mark.slow
def test_refits_finish_with_the_same_table_when_a_worker_process_dies():
    ratings = _data()
    ref = _table(ratings)
    with kmviz.parallel_backend("dask", client="local:2") as backend:
        pids = list(backend.client.run(os.getpid).values())
        seen = []

        def kill_after_first(done, total):
            seen.append(done)
            if done == 1:
                os.kill(pids[0], signal.SIGKILL)

        got = _table(ratings, progress=kill_after_first)
        assert len(backend.client.scheduler_info()["workers"]) >= 1
    assert seen == list(range(1, B + 1))
    _assert_same_table(ref, got)


@pytest.mark.slow
def test_a_lost_scheduler_ends_the_refits_with_a_clear_error():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                           dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    try:
        with kmviz.parallel_backend("dask", client=client):
            def close_scheduler(done, total):
                if done == 1:
                    cluster.close()

            with pytest.raises(parallel.ClusterError, match="lost the Dask scheduler"):
                _table(_data(), progress=close_scheduler)
    finally:
        client.close()


# ----------------------------------------------------------------------------- the app
@pytest.mark.slow
def test_app_stability_runs_its_refits_on_the_operators_cluster_with_progress_and_stop(
        monkeypatch):
    import time

    from tests.app import apphelpers as ah

    monkeypatch.setenv(parallel.DASK_ENV, "threads:1")
    try:
        at = ah.goto(ah.train(ah.load_planted(ah.new_session())), ah.KM_IMPLICATIONS)
        assert not at.error, [e.value for e in at.error]
        # stopped by the user after the first refit: the table of the refits done
        at.number_input(key="impl_stab_B").set_value(60)
        at.button(key="impl_stab_go").click().run()
        job = next(iter(at.session_state["impl_stability_jobs"].values()))
        end = time.time() + 300
        while job.done_n < 1 and not job.finished and time.time() < end:
            time.sleep(0.05)
        job.stop_event.set()            # what the Stop button does
        while not job.finished and time.time() < end:
            time.sleep(0.2)
        assert job.finished and job.error is None, job.error
        done = job.result.attrs["n_refits"]
        assert 1 <= done < 60 and done == job.done_n
        at.run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        caption = " ".join(c.value for c in at.caption)
        assert f"{done} refits on resampled users" in caption
        assert "The refits run on the Dask cluster threads" in caption
    finally:
        parallel.set_default_backend(None)
