"""Checks shared by the Dask backend's tests of several families."""

import numpy as np
import pytest

import kmviz
from kmviz import parallel


def assert_lost_scheduler_ends_fit_cleanly(model, data, fitted_attr: str) -> None:
    """Fit ``model`` on a one-worker in-process cluster whose scheduler closes after the
    first iteration: the fit raises ClusterError and publishes nothing (``fitted_attr``)."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                           dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    try:
        with kmviz.parallel_backend("dask", client=client, n_blocks=2):
            def stop_scheduler(row):
                if row["iteration"] == 1:
                    cluster.close()

            with pytest.raises(parallel.ClusterError, match="lost the Dask scheduler"):
                model.fit(data, callback=stop_scheduler)
            assert not hasattr(model, fitted_attr)  # nothing half-fitted is published
    finally:
        client.close()


def assert_same_km_fit(a, b, *, exact=True):
    """Two KM fits agree: bit for bit in one process; across processes to 1e-10 (a worker
    loads the kernels from Numba's cache, and a kernel loaded from the cache and one compiled
    in-process can differ in the last bits of a float)."""
    np.testing.assert_array_equal(a.psi_, b.psi_)
    for x, y in ((a.theta_, b.theta_), (a.dual_u_, b.dual_u_)):
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.trace_.column("objective"), b.trace_.column("objective"),
                               rtol=1e-10)


def _die_in_next_task(module, name, seconds):
    """Run on one worker (``Client.run``): its next task that calls ``module.name`` (a block
    task, found by name when a task is unpickled) runs for ``seconds``, then this worker
    process dies (SIGKILL) with the task unfinished."""
    import importlib
    import os
    import signal
    import time

    def dying(*args, **kwargs):
        time.sleep(seconds)
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(importlib.import_module(module), name, dying)


def fits_with_a_killed_worker(spec, fit, task, kill_points, monkeypatch, *, seconds=0.5):
    """One fit per kill point ``(cls, method, n)``, each on a new cluster ``spec`` (waiting
    for a nanny to restart a killed worker took minutes on a loaded box). At the ``n``-th
    call of ``cls.method`` the worker holding most of the cluster's data is armed: its
    next block task (``task``, ``"module:function"``) runs ``seconds`` and then the worker
    dies mid-call, after the other worker finished its blocks of that call. Returns
    ``[(point, outcome)]``: the fitted model, or the ClusterError the fit raised; any other
    exception propagates (it is the defect these tests look for)."""
    import os

    module, name = task.split(":")
    outcomes = []
    for point in kill_points:
        cls, method, n = point
        original = getattr(cls, method)
        armed = {}
        with kmviz.parallel_backend("dask", client=spec, n_blocks=3) as backend:

            def arm_then_call(self, *args, _original=original, _n=n, _armed=armed, **kw):
                _armed["calls"] = _armed.get("calls", 0) + 1
                if _armed["calls"] == _n:
                    pids = backend.client.run(os.getpid)
                    held = backend.client.has_what()
                    victim = max(pids, key=lambda w: (len(held.get(w, ())), w))
                    _armed["pid"] = pids[victim]
                    backend.client.run(_die_in_next_task, module, name, seconds,
                                       workers=[victim])
                return _original(self, *args, **kw)

            with monkeypatch.context() as m:
                m.setattr(cls, method, arm_then_call)
                try:
                    outcome = fit()
                except parallel.ClusterError as exc:
                    outcome = exc
            assert "pid" in armed, f"{point}: the fit made fewer than {n} calls"
            assert armed["pid"] not in backend.client.run(os.getpid).values(), \
                f"{point}: the armed worker ran no task after it"
        outcomes.append((point, outcome))
    return outcomes
