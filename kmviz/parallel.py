"""Where the families' half-steps run: in this process (Numba threads) or on a Dask cluster.

Every family here alternates between half-steps made of independent per-row subproblems (one
per user, one per item). By default they run in process, over Numba's ``prange``. Inside

    with kmviz.parallel_backend("dask", client="local:2"):
        model.fit(ratings)

they run on a Dask cluster instead: a family cuts its rows into contiguous blocks, puts the
blocks' data on the workers once per fit (:meth:`DaskBackend.scatter_blocks`; the rating
blocks stay resident across iterations), and each half-step broadcasts the other side's
factors once and runs one task per block (:meth:`DaskBackend.map_blocks`); the results come
back in block order, so a distributed fit equals the in-process fit with the same seed.
KM runs its half-steps this way (:mod:`kmviz.km._dist`). One-class MF's half-step is one
convex problem solved by TRON in this process; its observed-pair passes run as block tasks,
many per half-step, with the fixed factors broadcast once (:meth:`DaskBackend.broadcast`) and
per-pair state left on the workers (:mod:`kmviz.ocmf._dist`). Whole independent jobs (a
model's refits on resamples) run one task each through :meth:`DaskBackend.map_tasks`: their
shared data goes to the workers once, the results come back as they finish (progress, stop)
and are returned in task order.

``client`` is a ``distributed.Client``, a scheduler address (``"tcp://host:8786"``),
``"local:N"`` (a LocalCluster of N worker processes, one thread each), ``"local:PxT"`` (P
worker processes of T threads each: on one machine ``"local:1x2"`` holds the broadcast
factors once, shared by both cores) or ``"threads:N"`` (N worker threads in this process). A process cluster starts its workers with the ``spawn``
method, so a script that uses ``"local:N"`` needs an ``if __name__ == "__main__":`` guard.

Pitfalls handled here: every task limits Numba and BLAS to one thread (workers run one task
per thread; ``prange`` inside would oversubscribe the cores); the kernels are compiled (and
cached on disk) in this process before the first task (:meth:`DaskBackend.warm`), so worker
processes load the cache instead of racing to write it; a worker that dies loses its
resident blocks, which are scattered again from this process's copy (or, built on the
workers, computed again from their lineage) and the half-step is retried (the result is
unchanged); a lost scheduler raises :class:`ClusterError`.
"""

from __future__ import annotations

import math
import os
import threading
import time
from contextlib import contextmanager

import numpy as np

from ._cluster import CONNECT_TIMEOUT, WORKER_ENV, WORKER_MALLOC_ENV  # noqa: F401
from ._cluster import Broadcast, Resident, _lost_data_errors, _nbytes, cut_blocks  # noqa: F401
from ._cluster import ClusterError, gave_up_error, lost_scheduler_error, unrecoverable_error
from ._cluster import _hold, _local, _run_task, _run_whole_task, in_process  # noqa: F401

#: How long a task should run at least (seconds): Dask costs about 1 ms per task.
TASK_SECONDS = 0.1
#: How often a half-step is tried again after workers were lost.
MAX_RETRIES = 5
#: Back-off before retry n after a lost worker: n times this (seconds).
RETRY_SECONDS = 0.5
#: Per-block task arguments above this size go straight to their block's worker.
DIRECT_BYTES = 1 << 20
#: How often a call with pinned tasks checks that their workers are still there (seconds).
PIN_CHECK_SECONDS = 2.0
#: A broadcast may take this long plus its bytes at the rate below.
BROADCAST_SECONDS = 5.0
BROADCAST_BYTES_PER_SECOND = 10e6

_lock = threading.Lock()
_stack: list = []
_default = None
_warmed: set = set()
_env_lock = threading.Lock()


class _HomeLost(Exception):
    """A pinned task's worker left the cluster: its block moves to a live worker."""


def active_backend():
    """The backend of the innermost :func:`parallel_backend` (or the process default set by
    :func:`set_default_backend`); None means in process."""
    if getattr(_local, "in_process", False):
        return None
    with _lock:
        return _stack[-1] if _stack else _default


def make_backend(name="dask", *, client=None, n_blocks=None, task_seconds=TASK_SECONDS):
    """A backend object for ``name`` ("dask", or "numba" / None for in process)."""
    if name in (None, "numba", "inprocess", "in-process"):
        return None
    if name != "dask":
        raise ValueError(f"unknown parallel backend {name!r}; use 'dask' (with client=...) or "
                         f"'numba' (in process).")
    return DaskBackend(client, n_blocks=n_blocks, task_seconds=task_seconds)


@contextmanager
def parallel_backend(name="dask", *, client=None, n_blocks=None, task_seconds=TASK_SECONDS):
    """Run every fit inside the ``with`` block on ``name``'s engine.

    Parameters
    ----------
    name : {"dask", "numba"}, default="dask"
        "numba": in process (the default outside any ``with``).
    client : distributed.Client or str
        A Client, a scheduler address, ``"local:N"`` (a LocalCluster of N worker processes,
        closed on exit) or ``"threads:N"`` (N worker threads in this process).
    n_blocks : int, optional
        Blocks per half-step; by default from the rows' estimated cost, so that a task runs
        for about ``task_seconds``.
    task_seconds : float, default=0.1

    Yields
    ------
    DaskBackend or None
    """
    backend = make_backend(name, client=client, n_blocks=n_blocks, task_seconds=task_seconds)
    with _lock:
        _stack.append(backend)
    try:
        yield backend
    finally:
        with _lock:
            _stack.remove(backend)
        if backend is not None:
            backend.close()


def set_default_backend(name="dask", *, client=None, **options):
    """Make a backend the process default (the CLI's and the app's ``--dask``); returns it.
    ``set_default_backend(None)`` restores in-process fitting."""
    global _default
    backend = make_backend(name, client=client, **options)
    with _lock:
        old, _default = _default, backend
    if old is not None:
        old.close()
    return backend


def describe(backend=None, what: str = "Fits") -> str:
    """One line saying where fits (or ``what``) run (for the app's pages and the CLI)."""
    backend = active_backend() if backend is None else backend
    if backend is None:
        return f"{what} run in this process (Numba threads)."
    return backend.describe(what)


class DaskBackend:
    """Half-steps on a Dask cluster (see the module docstring). Made by
    :func:`parallel_backend`; families call :meth:`plan`, :meth:`scatter_blocks`,
    :meth:`map_blocks` and :meth:`warm`."""

    name = "dask"

    def __init__(self, client=None, *, n_blocks=None, task_seconds=TASK_SECONDS):
        if n_blocks is not None and (not isinstance(n_blocks, (int, np.integer))
                                     or n_blocks < 1):
            raise ValueError(f"n_blocks must be a positive integer or None; got {n_blocks!r}.")
        self.n_blocks = None if n_blocks is None else int(n_blocks)
        self.task_seconds = float(task_seconds)
        self._cluster = None
        self._spread = True         # broadcasts copy to every worker (until one was lost)
        self._own_client = False
        self.address = ""
        self.client = self._connect(client)

    # -- connection --------------------------------------------------------------------
    def _connect(self, client):
        from ._cluster import connect

        client, self._cluster, self._own_client, self.address = connect(client)
        return client

    def close(self):
        """Close the client and the cluster this backend started (not a Client passed in)."""
        if self._own_client:
            try:
                self.client.close()
            except Exception:  # noqa: BLE001 - closing a lost connection
                pass
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def n_workers(self) -> int:
        """Task slots: the workers' threads (a worker of T threads runs T tasks at once)."""
        try:
            try:
                workers = self.client.scheduler_info(n_workers=-1)["workers"]
            except TypeError:  # older distributed without n_workers=
                workers = self.client.scheduler_info()["workers"]
        except Exception as exc:  # noqa: BLE001
            raise self._lost("asking for the workers", exc) from exc
        return max(1, sum(int(w.get("nthreads", 1) or 1) for w in workers.values()))

    def describe(self, what: str = "Fits") -> str:
        return f"{what} run on the Dask cluster {self.address}."

    def _lost(self, doing, exc):
        return lost_scheduler_error(self.address, doing, exc)

    # -- planning ----------------------------------------------------------------------
    def plan(self, row_weights, seconds_per_weight, *, max_weight_per_block=None,
             min_blocks=1):
        """Row ranges for a half-step: about ``task_seconds`` of estimated work per block
        (``row_weights * seconds_per_weight``), at least ``min_blocks`` (``"workers"``: one
        per worker), at most 4 per worker unless ``max_weight_per_block`` (memory) needs
        more."""
        w = np.asarray(row_weights, dtype=np.float64)
        if self.n_blocks is not None:
            return cut_blocks(w, self.n_blocks)
        total = float(w.sum())
        n = int(total * seconds_per_weight // self.task_seconds)
        n_workers = self.n_workers()
        n = min(n, 4 * n_workers)
        n = max(n, n_workers if min_blocks == "workers" else int(min_blocks))
        if max_weight_per_block:
            n = max(n, math.ceil(total / max_weight_per_block))
        return cut_blocks(w, max(1, n))

    def warm(self, key, fn):
        """Run ``fn()`` once in this process (per ``key``) before tasks need it: compiles and
        caches the Numba kernels here, so worker processes only load the cache."""
        with _lock:
            if key in _warmed:
                return
            _warmed.add(key)
        with in_process():          # the warm-up's own fit must run here, not on the cluster
            fn()

    # -- data --------------------------------------------------------------------------
    def scatter_blocks(self, blocks, ranges=()) -> Resident:
        """Put per-block data on the workers once (kept for the fit); returns a
        :class:`Resident` to pass to :meth:`map_blocks`."""
        futures = self._guarded("scattering the data",
                                lambda: self.client.scatter(list(blocks), hash=False))
        return Resident(list(blocks), futures, list(ranges))

    def broadcast(self, obj) -> "Broadcast":
        """Put ``obj`` on every worker once, for many :meth:`map_blocks` calls (a half-step's
        fixed factors when the half-step makes many calls, as TRON does)."""
        return Broadcast(obj, self._guarded(
            "broadcasting the factors", lambda: self._broadcast_future(obj, self._spread)))

    def hold(self, obj):
        """A future of ``obj`` on a worker that the scheduler can compute again: ``obj``
        travels inside a task's graph (the scheduler keeps that copy), unlike
        :meth:`broadcast`'s scattered data. For the inputs of data built on the workers
        (:meth:`kmviz.data.PartitionedRatings.build_blocks`' id maps): a scattered input
        lost with a worker breaks the lineage of everything built from it, and Dask's
        active memory manager keeps one replica of a scattered broadcast within seconds:
        killing that worker lost it and every block built from it (a flaky killed-worker
        test of KM on Parquet blocks: FuturesCancelledError, "lost dependencies")."""
        return self._guarded("placing the data", lambda: self.client.submit(
            _hold, obj, pure=False))

    def _guarded(self, doing, fn):
        """``fn()``, tried again after a growing back-off (:data:`RETRY_SECONDS`) while it
        fails because a worker was lost; :class:`ClusterError` once the scheduler is gone
        or after :data:`MAX_RETRIES` retries; any other error as it is."""
        lost = _lost_data_errors()
        exc = None
        for attempt in range(MAX_RETRIES + 1):
            if attempt:
                time.sleep(RETRY_SECONDS * attempt)
            try:
                return fn()
            except ClusterError:
                raise
            except lost as err:
                if getattr(self.client, "status", "") != "running":
                    raise self._lost(doing, err) from err
                exc = err
                self._spread = False
            except Exception as err:  # noqa: BLE001
                self._raise_for(doing, err)
        raise self._gave_up(doing, exc) from exc

    def _broadcast_future(self, obj, spread=True):
        """``obj`` on every worker (``spread``), or on one, the tasks fetching it from there
        (after a lost worker: the scheduler's copying to every worker then waited for the
        dead one, or timed out, on every later call: seen in a killed-worker test)."""
        try:
            # a list of one, so that a tuple or dict travels as one object; Client.scatter's
            # own timeout= bounds only the wait for workers: the time limit of the whole
            # broadcast is the sync call's
            return self.client.sync(self.client._scatter, [obj], broadcast=spread, hash=False,
                                    callback_timeout=self._broadcast_timeout(obj))[0]
        except Exception as exc:  # noqa: BLE001
            self._raise_for("broadcasting the factors", exc)

    def _broadcast_timeout(self, obj) -> float:
        """Seconds a broadcast may take: a broadcast that started while a worker was dying
        can wait forever for the dead worker's copy; timed out, :meth:`map_blocks` treats
        it as a lost worker and tries again once the scheduler knows."""
        return BROADCAST_SECONDS + _nbytes(obj) / BROADCAST_BYTES_PER_SECOND

    def _raise_for(self, doing, exc):
        """Raise ClusterError if the scheduler is gone, else ``exc`` as it is."""
        if getattr(self.client, "status", "running") != "running":
            raise self._lost(doing, exc) from exc
        raise exc

    def _rescatter(self, resident):
        """Scatter again the resident blocks whose data a lost worker held."""
        for j, fut in enumerate(resident.futures):
            if fut.status != "finished" and resident.blocks[j] is not None:
                # a list of one: a tuple block travels as one object, as in scatter_blocks
                resident.futures[j] = self.client.scatter([resident.blocks[j]], hash=False)[0]

    def _recover(self, resident, attempt, name, exc):
        """Before retry ``attempt`` of a call that lost a worker: give the scheduler time
        to notice (a back-off growing with ``attempt``), scatter the lost blocks again
        from this process's copy, and refuse at once a block that can come back neither
        way (no copy here, and its lineage lost with the worker: retrying cannot help)."""
        time.sleep(RETRY_SECONDS * attempt)
        gone = [j for j, (blk, fut) in enumerate(zip(resident.blocks, resident.futures))
                if blk is None and fut.status in ("cancelled", "error")]
        if gone:
            raise unrecoverable_error(self.address, f"block {gone[0]} of {name}", exc)
        self._rescatter(resident)

    def _gave_up(self, doing, exc, retries=None):
        """The error after ``retries`` (:data:`MAX_RETRIES`) retries that lost a worker."""
        return gave_up_error(self.address, doing, exc, MAX_RETRIES if retries is None
                             else retries)

    def _homes(self, resident):
        """The worker each block's tasks are pinned to: one that holds the block, the
        fewest blocks per worker; kept for the fit (a block's per-pair state lives there)
        until a worker is lost. None for a block no worker holds (the scheduler places
        its task)."""
        if resident.homes is None:
            who = self.client.who_has(list(resident.futures))
            count: dict = {}
            homes = []
            for fut in resident.futures:
                holders = list(who.get(fut.key) or ())
                home = min(holders, key=lambda w: (count.get(w, 0), w)) if holders else None
                if home is not None:
                    count[home] = count.get(home, 0) + 1
                homes.append(home)
            resident.homes = homes
        return resident.homes

    def _submit(self, fn, resident, shared_f, extras, homes=None):
        """Submit ``fn``'s task per block; returns the futures (in block order) and the
        time of the first submission. An extra of more than :data:`DIRECT_BYTES` is
        scattered straight to the worker that holds its block, so it neither rides in the
        task graph through the scheduler nor moves again between workers (small extras
        travel in the graph); each block's task is submitted as soon as its extra is
        there, the workers taking turns, so every worker computes its first block while
        the client still sends the others. ``homes``: pin task j to ``homes[j]``."""
        big = [j for j, ex in enumerate(extras) if _nbytes(ex) > DIRECT_BYTES]
        where = homes
        if big and where is None:
            who = self.client.who_has([resident.futures[j] for j in big])
            where = [None] * len(extras)
            for j in big:
                holders = who.get(resident.futures[j].key) or ()
                where[j] = holders[0] if holders else None
        order = range(len(extras))
        if where is not None:       # round robin over the workers, each in block order
            rank: dict = {}
            turns = []
            for j in order:
                rank[where[j]] = rank.get(where[j], -1) + 1
                turns.append((rank[where[j]], j))
            order = [j for _, j in sorted(turns)]
        futures: list = [None] * len(extras)
        first = None
        for j in order:
            ex = extras[j]
            if j in big:
                ex = self.client.scatter([ex], hash=False, direct=True,
                                         workers=None if where[j] is None else [where[j]])[0]
            futures[j] = self.client.submit(
                _run_task, fn, resident.futures[j], shared_f, ex, pure=False,
                workers=None if homes is None or homes[j] is None else [homes[j]],
                allow_other_workers=False)
            first = time.perf_counter() if first is None else first
        return futures, first

    def _wait_pinned(self, futures, homes):
        """Wait for tasks pinned to ``homes``; a home that left the cluster (its tasks
        would wait for it forever) cancels the call and raises :class:`_HomeLost`."""
        from distributed import wait

        while True:
            try:
                with self.client.as_current():
                    wait(futures, timeout=PIN_CHECK_SECONDS)
                return
            except TimeoutError:
                pass
            try:
                alive = set(self.client.scheduler_info(n_workers=-1)["workers"])
            except TypeError:  # pragma: no cover - older distributed without n_workers=
                alive = set(self.client.scheduler_info()["workers"])
            gone = {h for h in homes if h is not None and h not in alive}
            if gone:
                self.client.cancel(futures)
                raise _HomeLost(f"worker {sorted(gone)[0]} left the cluster")

    def map_blocks(self, fn, resident, shared=None, extras=None, *, timer=None, name="step",
                   pin=False):
        """Run ``fn(block, shared, extra)`` once per resident block; the results in order.

        ``shared`` (the other side's factors) goes to every worker once (a :class:`Broadcast`
        from :meth:`broadcast`: already there); ``extras[j]`` (small, per block) travels
        with task j. Seconds go to ``timer[f"{name}_scatter"]`` (the broadcast and the
        placing until the first task was submitted), ``[..._compute]`` (from there until
        every task finished; the later blocks' placing overlaps it, and is also counted in
        ``[..._submit]``) and ``[..._gather]``: the three add up to the call's wall time.

        ``pin``: every call runs block j's task on the same worker (:meth:`_homes`), never
        moved by the scheduler's queueing or work stealing to an idle worker, for families
        that leave per-block state on the worker between calls. A pinned worker that dies
        moves its blocks to live workers, where ``fn`` must rebuild that state.
        """
        from distributed import wait

        extras = [None] * len(resident) if extras is None else list(extras)
        timer = {} if timer is None else timer
        lost = _lost_data_errors()
        exc = None
        for attempt in range(MAX_RETRIES + 1):
            try:
                if attempt:
                    # the way back is inside the same guard: a worker lost while the blocks
                    # are put back is one more retry, never a raw error
                    self._recover(resident, attempt, name, exc)
                t0 = time.perf_counter()
                if isinstance(shared, Broadcast):
                    if shared.future is None or shared.future.status != "finished":
                        # every holder was lost
                        shared.future = self._broadcast_future(shared.obj, self._spread)
                    shared_f = shared.future
                else:
                    shared_f = None if shared is None else \
                        self._broadcast_future(shared, self._spread)
                t1 = time.perf_counter()
                # no retries=: the scheduler reruns tasks of a lost worker by itself, and a
                # task's own exception would only repeat
                homes = self._homes(resident) if pin else None
                futures, t1b = self._submit(fn, resident, shared_f, extras, homes)
                t1b = time.perf_counter() if t1b is None else t1b
                t1c = time.perf_counter()
                if pin:
                    self._wait_pinned(futures, homes)
                else:
                    with self.client.as_current():
                        wait(futures)
                t2 = time.perf_counter()
                out = self.client.gather(futures)
                t3 = time.perf_counter()
            except ClusterError:
                raise
            except lost + (_HomeLost,) as err:
                if getattr(self.client, "status", "") != "running":
                    raise self._lost(f"running {name}", err) from err
                exc = err
                resident.homes = None
                # a worker died: from now on broadcasts go to one worker (the scheduler's
                # copying to every worker waited for the dead one, or timed out, on every
                # later call); the next attempt puts its blocks back first
                self._spread = False
                continue
            except Exception as err:  # noqa: BLE001 - a task's own error, or a lost scheduler
                self._raise_for(f"running {name}", err)
            for key, sec in ((f"{name}_scatter", t1b - t0), (f"{name}_compute", t2 - t1b),
                             (f"{name}_gather", t3 - t2), (f"{name}_submit", t1c - t1b)):
                timer[key] = timer.get(key, 0.0) + sec
            timer[f"{name}_task_max"] = max(timer.get(f"{name}_task_max", 0.0),
                                            max(s for _, s in out))
            timer[f"{name}_task_max_sum"] = timer.get(f"{name}_task_max_sum", 0.0) + \
                max(s for _, s in out)
            timer[f"{name}_task_sum"] = timer.get(f"{name}_task_sum", 0.0) + \
                sum(s for _, s in out)
            timer[f"{name}_calls"] = timer.get(f"{name}_calls", 0) + 1
            timer[f"{name}_bytes_in"] = timer.get(f"{name}_bytes_in", 0) + \
                sum(_nbytes(ex) for ex in extras)
            return [r for r, _ in out]
        raise self._gave_up(f"running {name}", exc) from exc

    def map_tasks(self, fn, tasks, shared=None, *, progress=None, stop=None, poll=0.25):
        """Run ``fn(task, shared)`` once per task, one task each; the results in task order.

        For whole jobs of a second or more (well above the ~1 ms a task costs). ``shared``
        goes to every worker once (never inside the task graph); each task carries only its
        own small ``task``. As tasks finish, ``progress(done, total)`` is called here (the
        caller's thread); ``stop()`` is checked every ``poll`` seconds and after each
        completion: when it turns true the tasks not finished are cancelled and the results
        so far come back, in task order. Returns ``(results, indices)``: the results and
        the positions in ``tasks`` they belong to (all of them unless stopped).

        A worker that dies takes its running tasks with it: the scheduler runs them again
        elsewhere, and a task whose data was lost is submitted again (up to
        :data:`MAX_RETRIES` times); a lost scheduler raises :class:`ClusterError`; a task's
        own error is raised as it is.
        """
        from distributed import wait

        tasks = list(tasks)
        total = len(tasks)
        lost = _lost_data_errors()
        holder = Broadcast(shared, None)
        retries = [0] * total

        def place():
            if holder.future is None or holder.future.status != "finished":
                # every worker holding it was lost
                holder.future = self._broadcast_future(holder.obj, self._spread)
            return holder.future

        def submit(k):
            return self._guarded("submitting the tasks", lambda: self.client.submit(
                _run_whole_task, fn, tasks[k], place(), pure=False))

        pending = {submit(k): k for k in range(total)}
        results: dict = {}
        try:
            while pending and not (stop is not None and stop()):
                try:
                    with self.client.as_current():
                        wait(list(pending), timeout=poll, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    pass
                if getattr(self.client, "status", "running") != "running":
                    raise self._lost("running the tasks", RuntimeError(
                        f"client {self.client.status}"))
                # "lost": a finished result whose worker died; the scheduler computes it
                # again, so it is waited for like a pending one
                for fut in [f for f in pending if f.status in ("finished", "error",
                                                               "cancelled")]:
                    k = pending.pop(fut)
                    try:
                        results[k] = fut.result()
                    except lost as exc:
                        if getattr(self.client, "status", "") != "running":
                            raise self._lost("running the tasks", exc) from exc
                        if retries[k] == MAX_RETRIES:
                            raise self._gave_up("running the tasks", exc) from exc
                        retries[k] += 1
                        pending[submit(k)] = k
                        continue
                    if progress is not None:
                        progress(len(results), total)
                    if stop is not None and stop():
                        break
        except ClusterError:
            raise
        except lost as exc:
            if getattr(self.client, "status", "") != "running":
                raise self._lost("running the tasks", exc) from exc
            raise self._gave_up("running the tasks", exc, retries=0) from exc
        finally:
            if pending:
                try:
                    self.client.cancel(list(pending))
                except Exception:  # noqa: BLE001 - cancelling on a lost connection
                    pass
        order = sorted(results)
        return [results[k] for k in order], order


#: The app's cluster, as ``kmviz app --dask`` passes it to the server process.
DASK_ENV = "KMVIZ_DASK"


def backend_from_env():
    """Make the cluster named by ``$KMVIZ_DASK`` the process default, once (None if unset).
    The app's server calls this; a second call returns the same backend."""
    spec = os.environ.get(DASK_ENV) or None
    if spec is None:
        return None
    with _env_lock:
        current = _default
        if current is not None and getattr(current, "spec", None) == spec:
            return current
        backend = set_default_backend("dask", client=spec)
        backend.spec = spec
        return backend
