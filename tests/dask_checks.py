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
