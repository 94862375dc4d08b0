"""The parts of :class:`kmviz.parallel.DaskBackend` below its protocol: connecting to a
cluster (a ``distributed.Client`` passed in, a scheduler address, or a cluster started here:
``"local:N"``, ``"local:PxT"``, ``"threads:N"``) with the environment its worker processes
need, every ``client=`` string checked before anything connects (:func:`parse_client`);
the wrappers its tasks run in on the workers and :func:`in_process`; the blocks it keeps
there (:func:`cut_blocks`, :class:`Resident`, :class:`Broadcast`); :class:`ClusterError`
and the errors that mean a worker's data was lost. Nothing here imports
:mod:`kmviz.parallel`, which builds on it."""

from __future__ import annotations

import re
import threading
import time
from contextlib import contextmanager
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


class ClusterError(RuntimeError):
    """The Dask cluster could not be reached or was lost during a fit."""


ClusterError.__module__ = "kmviz.parallel"      # its public name (kmviz.parallel re-exports)


def lost_scheduler_error(address, doing, exc):
    return ClusterError(
        f"lost the Dask scheduler at {address} while {doing} ({type(exc).__name__}: {exc}); "
        f"the fit stopped and nothing was saved. Restart the scheduler and fit again, or fit "
        f"without --dask.")


def gave_up_error(address, doing, exc, retries):
    again = f" on each of {retries} retries" if retries else ""
    return ClusterError(
        f"workers of the Dask cluster at {address} were lost{again} while {doing} (last: "
        f"{type(exc).__name__}: {exc}); the fit stopped and nothing was saved. Check the "
        f"workers (their logs, memory limits) and fit again, or fit without --dask.")


def unrecoverable_error(address, what, exc):
    return ClusterError(
        f"a worker of the Dask cluster at {address} was lost with data that cannot be "
        f"computed again ({what}: {type(exc).__name__}: {exc}); the fit stopped and nothing "
        f"was saved. Fit again (the cluster's workers are restarted), or fit without --dask.")


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
    kind, a, b = parse_client(client)
    spec = client.strip()
    if kind in ("local", "threads"):
        cluster = _local_cluster(a, b, kind == "local", LocalCluster)
        return (Client(cluster, set_as_default=False), cluster, True,
                f"{spec} ({cluster.scheduler_address})")
    address = a
    timeout = parse_timedelta(CONNECT_TIMEOUT)
    _probe(address, timeout)
    try:
        return (Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False), None, True,
                address)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise ClusterError(
            f"could not reach a Dask scheduler at {spec!r} ({type(exc).__name__}: {exc}). "
            f"{_FIX}") from exc


#: The forms of ``client=`` (and ``--dask``) strings, for error messages.
CLIENT_FORMS = ("'local:N' (N worker processes on this machine), 'local:PxT' (P processes "
                "of T threads), 'threads:N' (N worker threads in this process), or a "
                "scheduler address 'tcp://HOST:PORT' (or HOST:PORT)")
#: Workers (and threads per worker) a ``local:`` or ``threads:`` spec may ask for.
MAX_LOCAL = 256
_FIX = ("Start one with `dask scheduler` (and `dask worker ADDRESS`), check the address and "
        "port, or use 'local:N' for a cluster on this machine.")
_COUNT = re.compile(r"[1-9][0-9]{0,5}", re.ASCII)
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)"
                   r"(:(?P<port>[0-9]{1,5}))?", re.ASCII)
_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")


def parse_client(spec):
    """``("local", P, T)``, ``("threads", N, 1)`` or ``("address", normalized address,
    None)`` for a ``client=`` string, checked without connecting or starting anything;
    :class:`~kmviz.exceptions.InvalidParameterError` naming the accepted forms for
    anything else (a count that is not a plain ASCII number from 1 to :data:`MAX_LOCAL`,
    text that is no host:port)."""
    from .exceptions import InvalidParameterError

    if not isinstance(spec, str):
        raise TypeError(f"client must be a distributed.Client or a string; got "
                        f"{type(spec).__name__}.")
    text = spec.strip()
    for prefix, processes in (("local:", True), ("threads:", False)):
        if text.startswith(prefix):
            count, x, threads = text[len(prefix):].partition("x")
            ok = _count(count) and (not x or (processes and _count(threads)))
            if not ok:
                raise InvalidParameterError(
                    f"{spec!r}: expected {prefix}N with N a positive number of workers "
                    f"(ASCII digits, at most {MAX_LOCAL}), e.g. '{prefix}2'"
                    + (", or local:PxT (P processes of T threads)" if processes else "")
                    + f". The accepted forms of a cluster are {CLIENT_FORMS}.")
            return prefix[:-1], int(count), int(threads or 1)
    scheme, sep, loc = text.rpartition("://")
    scheme = scheme if sep else "tcp"
    m = _HOST.fullmatch(loc)
    port = None if m is None or m.group("port") is None else int(m.group("port"))
    if scheme not in _SCHEMES or m is None or (port is not None and not 0 < port < 65536):
        raise InvalidParameterError(
            f"{spec!r} is not a Dask cluster kmviz can use: expected {CLIENT_FORMS}, e.g. "
            f"'local:2' or 'tcp://127.0.0.1:8786'.")
    return "address", f"{scheme}://{loc}", None


def _count(text) -> bool:
    return bool(_COUNT.fullmatch(text)) and int(text) <= MAX_LOCAL


def parse_timedelta(value) -> float:
    from dask.utils import parse_timedelta as parse

    return float(parse(value, default="seconds"))


def _probe(address, timeout):
    """Refuse, within ``timeout`` seconds, an address where no Dask scheduler answers:
    nothing listening (after retrying until the deadline: a scheduler may be starting), a
    server that accepts and never answers (Dask's own handshake waits for it without a time
    limit), or one that answers in another protocol (an HTTP server's reply, read as a
    Dask frame length, asked for exabytes). Only for ``tcp://``: other schemes go straight
    to the Client."""
    import socket

    scheme, _, loc = address.rpartition("://")
    if scheme != "tcp":
        return
    host, _, port = loc.rpartition(":") if not loc.endswith("]") else (loc, "", "")
    host, port = (host or loc).strip("[]"), int(port or 8786)
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), max(0.1, deadline - time.monotonic()))\
                .close()
            break
        except OSError as exc:
            if time.monotonic() + 0.25 >= deadline:
                raise ClusterError(f"could not reach a Dask scheduler at {address} "
                                   f"({type(exc).__name__}: {exc}). {_FIX}") from exc
            time.sleep(0.25)
    problem = _handshake(address, max(0.5, deadline - time.monotonic()))
    if problem:
        raise ClusterError(f"{address} is not a Dask scheduler: {problem}. Check the "
                           f"address and port (the scheduler's, 8786 unless it was set), "
                           f"or use 'local:N' for a cluster on this machine.")


def _handshake(address, seconds):
    """Dask's connection handshake with ``address``, at most ``seconds`` long, in a thread
    of its own (the caller may be inside an event loop); what went wrong, or ''."""
    import asyncio

    from distributed.comm import connect

    out = {"problem": f"it accepted the connection but did not answer within "
                      f"{seconds:.0f} s"}

    async def shake():
        comm = await asyncio.wait_for(connect(address, timeout=seconds), seconds)
        await comm.close()

    def run():
        try:
            asyncio.run(shake())
            out["problem"] = ""
        except (asyncio.TimeoutError, TimeoutError):
            pass
        except BaseException as exc:  # noqa: BLE001 - any reply that is not Dask's
            out["problem"] = (f"it answered in another protocol (its reply, read as a Dask "
                              f"message, gave {type(exc).__name__})")

    thread = threading.Thread(target=run, name="kmviz-dask-probe", daemon=True)
    thread.start()
    thread.join(seconds + 2.0)
    return out["problem"]


def _local_cluster(count, threads, processes, LocalCluster):
    extra = {"env": dict(WORKER_ENV)} if processes else {}
    from dask import config

    with config.set({f"distributed.nanny.pre-spawn-environ.{k}": v
                     for k, v in WORKER_MALLOC_ENV.items()} if processes else {}):
        return LocalCluster(n_workers=count, threads_per_worker=threads,
                            processes=processes, dashboard_address=None, silence_logs=40,
                            **extra)


# ----------------------------------------------------------------------------- tasks
_local = threading.local()      # in_process: this thread fits in process (warm-up fits)


@contextmanager
def in_process():
    """Fits of this thread run in process inside this block, whatever backend is active
    (a warm-up's small fits: never sent to a cluster another thread is fitting on)."""
    before = getattr(_local, "in_process", False)
    _local.in_process = True
    try:
        yield
    finally:
        _local.in_process = before


def _hold(obj):
    """A task whose result is its argument (:meth:`DaskBackend.hold`)."""
    return obj


def _run_task(fn, block, shared, extra):
    """A task on a worker: one Numba and BLAS thread, then ``fn(block, shared, extra)``."""
    import numba

    from ._threads import single_blas_thread

    numba.set_num_threads(1)    # thread-local: workers run one task per thread
    start = time.perf_counter()
    with single_blas_thread():
        out = fn(block, shared, extra)
    return out, time.perf_counter() - start


def _run_whole_task(fn, task, shared):
    """A whole job on a worker (:meth:`DaskBackend.map_tasks`): one Numba and BLAS thread,
    and any fit inside runs right here (a worker thread of this process must not send its
    own fit back to the cluster it runs on), then ``fn(task, shared)``."""
    import numba

    from ._threads import single_blas_thread

    numba.set_num_threads(1)
    with in_process(), single_blas_thread():
        return fn(task, shared)


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
