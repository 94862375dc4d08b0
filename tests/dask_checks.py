"""Checks shared by the Dask backend's tests of several families."""

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
