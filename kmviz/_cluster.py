"""The parts of :class:`kmviz.parallel.DaskBackend` below its protocol: connecting to a
cluster (a ``distributed.Client`` passed in, a scheduler address, or a cluster started here:
``"local:N"``, ``"local:PxT"``, ``"threads:N"``) with the environment its worker processes
need; the blocks it keeps there (:func:`cut_blocks`, :class:`Resident`, :class:`Broadcast`);
and the errors that mean a worker's data was lost."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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


# ----------------------------------------------------------------------------- blocks
def cut_blocks(weights, n_blocks) -> list[tuple[int, int]]:
    """Contiguous row ranges ``[(lo, hi), ...]`` with about equal total weight, in order."""
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[0]
    n_blocks = int(max(1, min(n_blocks, n))) if n else 1
    if n == 0:
        return [(0, 0)]
    cum = np.cumsum(w)
    total = cum[-1]
    if total <= 0:
        bounds = np.linspace(0, n, n_blocks + 1).round().astype(np.int64)
    else:
        targets = total * np.arange(1, n_blocks) / n_blocks
        bounds = np.concatenate(([0], np.searchsorted(cum, targets, side="left") + 1, [n]))
        # exactly n_blocks non-empty blocks: each bound after the previous one, and room left
        # for one row per later block
        for k in range(1, n_blocks):
            bounds[k] = min(max(bounds[k], bounds[k - 1] + 1), n - (n_blocks - k))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


@dataclass
class Resident:
    """Blocks kept on the workers for a whole fit: their futures and this process's copy
    (to scatter again if a worker holding one dies); a block built by tasks on the workers
    has no copy here (None): the scheduler computes it again from its lineage."""

    blocks: list
    futures: list
    ranges: list = field(default_factory=list)
    #: per block, the worker its tasks are pinned to (``map_blocks(pin=True)``); None: not
    #: chosen yet, or to be chosen again after a worker was lost
    homes: list | None = None

    def __len__(self):
        return len(self.blocks)


@dataclass
class Broadcast:
    """An object on every worker (:meth:`DaskBackend.broadcast`) and this process's copy."""

    obj: object
    future: object


def _nbytes(obj) -> int:
    """Bytes of the arrays in ``obj`` (nested tuples / lists / dicts)."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(x) for x in obj)
    if isinstance(obj, dict):
        return sum(_nbytes(x) for x in obj.values())
    return 0


def _lost_data_errors():
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    from distributed.comm.core import CommClosedError

    errors = (FutureCancelledError, KilledWorker, CommClosedError, OSError)
    try:
        from concurrent.futures import CancelledError

        errors += (CancelledError,)
    except ImportError:  # pragma: no cover
        pass
    return errors
