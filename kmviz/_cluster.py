"""Connecting :class:`kmviz.parallel.DaskBackend` to a cluster: a ``distributed.Client``
passed in, a scheduler address, or a cluster started here (``"local:N"``, ``"local:PxT"``,
``"threads:N"``), with the environment its worker processes need."""

from __future__ import annotations

#: Environment of the worker processes a ``"local:N"`` cluster starts (one thread each).
WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1"}
#: glibc malloc settings of those workers, set before the spawn: Dask's nanny sets a 64 kB
#: trim threshold, which makes every array above 128 kB a new mapping faulted in page by page
#: (OneClassMF, 5M positives, local:1x2: 270k page faults in 3 iterations, 41k with these).
WORKER_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20),
                     "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}
#: How long connecting to a scheduler address may take.
CONNECT_TIMEOUT = "10s"


def connect(client):
    """``(Client, cluster started here or None, whether the Client is ours to close,
    a description of the address)`` for ``client`` as :func:`kmviz.parallel_backend`
    takes it."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the dask backend needs dask.distributed: "
                          "pip install 'kmviz[dask]'") from exc
    if client is None:
        raise ValueError("parallel_backend('dask') needs client=: a distributed.Client, a "
                         "scheduler address such as 'tcp://10.0.0.5:8786', or 'local:N' "
                         "for a cluster of N worker processes on this machine.")
    if isinstance(client, Client):
        return client, None, False, str(client.scheduler.address)
    if not isinstance(client, str):
        raise TypeError(f"client must be a distributed.Client or a string; got "
                        f"{type(client).__name__}.")
    spec = client.strip()
    for prefix, processes in (("local:", True), ("threads:", False)):
        if spec.startswith(prefix):
            cluster = _local_cluster(spec, prefix, processes, LocalCluster)
            return (Client(cluster, set_as_default=False), cluster, True,
                    f"{spec} ({cluster.scheduler_address})")
    address = spec if "://" in spec else f"tcp://{spec}"
    try:
        return (Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False), None, True,
                address)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        from .parallel import ClusterError

        raise ClusterError(
            f"could not reach a Dask scheduler at {spec!r} ({type(exc).__name__}: {exc}). "
            f"Start one with `dask scheduler` (and `dask worker ADDRESS`), check the "
            f"address and port, or use 'local:N' for a cluster on this machine.") from exc


def _local_cluster(spec, prefix, processes, LocalCluster):
    count, _, threads = spec[len(prefix):].partition("x")
    if not count.isdigit() or int(count) < 1 or (
            threads and (not threads.isdigit() or int(threads) < 1 or not processes)):
        raise ValueError(f"{spec!r}: expected {prefix}N with N a positive number "
                         f"of workers, e.g. '{prefix}2'"
                         + (", or local:PxT (P processes of T threads)"
                            if processes else "") + ".")
    extra = {"env": dict(WORKER_ENV)} if processes else {}
    from dask import config

    with config.set({f"distributed.nanny.pre-spawn-environ.{k}": v
                     for k, v in WORKER_MALLOC_ENV.items()} if processes else {}):
        return LocalCluster(n_workers=int(count), threads_per_worker=int(threads or 1),
                            processes=processes, dashboard_address=None, silence_logs=40,
                            **extra)
