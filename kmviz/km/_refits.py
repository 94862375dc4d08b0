"""Where KM's refits run (:func:`map_refits`): in process on a few threads, or one task
each on the active :mod:`kmviz.parallel` backend; and the refits' quiet fits.

Split from :mod:`kmviz.km.stability` (which re-exports :func:`map_refits`).
"""

from __future__ import annotations

import os
import threading
import warnings
from contextlib import contextmanager
from functools import partial
from typing import Callable, Iterable

from ..exceptions import ConvergenceWarning

#: Refits run at once in process (None: one per Numba thread, each refit on one thread;
#: 1: one after the other, each on every Numba thread). B = 6 refits of D = 8 on ML-100K,
#: 2 cores shared with other jobs, alternating in one run: at load ~4.2, 7.3-7.4 s on 2
#: threads against 8.7-9.1 s one after the other (the same supports); at load 6.5-8, a
#: median of 14.0 s against 14.7 s over six rounds (ratios 0.81-1.09, five of six faster).
#: B = 20 in bench/miner/implications_stability.py --section cost: 28.0 against 34.2 s in one
#: run, 59.4 against 34.7 s in another whose load rose during the threaded part.
REFIT_THREADS = None


def map_refits(fn: Callable, tasks: Iterable, *, shared=None,
               progress: Callable | None = None,
               stop: Callable[[], bool] | None = None) -> list:
    """``[fn(t) for t in tasks]`` (``fn(t, shared)`` when ``shared`` is given) on the active
    :mod:`kmviz.parallel` backend, calling ``progress(done, total)`` in this thread after
    each task and ending early when ``stop()`` turns true.

    In process :func:`refit_threads` refits run at once, each on one Numba thread (faster
    here than one refit on every thread: :data:`REFIT_THREADS`); ``stop()`` is checked
    before each refit starts and, for a ``fn`` marked ``takes_stop`` (the KM refits),
    after every BCD iteration inside it: a refit stopped midway is dropped. Under the Dask backend each task
    is one Dask task, ``shared`` (the ratings) goes to the workers once, and ``stop()``
    cancels the tasks not finished. Either way the results are those of the tasks reported
    through ``progress``, in task order.
    """
    from ..parallel import active_backend

    tasks = list(tasks)
    backend = active_backend()
    if backend is not None and hasattr(backend, "map_tasks"):
        from ._dist import _warm

        backend.warm("km", _warm)      # compile here once; the workers load the cache
        out, _ = backend.map_tasks(partial(_apply, fn), tasks, shared, progress=progress,
                                   stop=stop)
        return out
    n_threads = refit_threads(len(tasks))
    if n_threads > 1:
        return _map_threads(fn, tasks, shared, n_threads, progress, stop)
    out = []
    for t in tasks:
        if stop is not None and stop():
            break
        out.append(_apply(fn, t, shared, stop))
        if progress is not None:
            progress(len(out), len(tasks))
    return _finished(out)


def _apply(fn, task, shared, stop=None):
    """``fn(task[, shared])``; a ``fn`` marked ``takes_stop`` also gets ``stop`` (checked
    inside it, e.g. after each BCD iteration of a refit) and may return ``{"stopped":
    True}``, which the maps drop."""
    if stop is not None and getattr(fn, "takes_stop", False):
        return fn(task, shared, stop=stop) if shared is not None else fn(task, stop=stop)
    return fn(task) if shared is None else fn(task, shared)


def _finished(results: list) -> list:
    return [r for r in results if not (isinstance(r, dict) and r.get("stopped"))]


def refit_threads(n_tasks: int) -> int:
    """How many refits run at once in process: one per Numba thread (each refit then uses
    one), at most ``n_tasks``; 1 when :data:`REFIT_THREADS` is 1 or one thread is all
    there is."""
    import numba

    n = numba.get_num_threads() if REFIT_THREADS is None else int(REFIT_THREADS)
    return max(1, min(n, os.cpu_count() or 1, int(n_tasks)))


def _one_thread(fn, task, shared, stop=None):
    """A refit on a pool thread: one Numba and one BLAS thread (thread-local settings)."""
    import numba

    from .._threads import single_blas_thread

    numba.set_num_threads(1)
    with single_blas_thread():
        return _apply(fn, task, shared, stop)


def _map_threads(fn, tasks, shared, n_threads, progress, stop) -> list:
    """The in-process map on ``n_threads`` threads, at most that many refits running. On
    stop no refit starts and the running ones end (a thread cannot be interrupted): the
    results are then the first ones in task order, each reported through ``progress``."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    results: dict = {}
    running: dict = {}
    nxt = 0
    with ThreadPoolExecutor(n_threads, thread_name_prefix="kmviz-refit") as pool:
        try:
            while nxt < len(tasks) or running:
                while nxt < len(tasks) and len(running) < n_threads and not (
                        stop is not None and stop()):
                    running[pool.submit(_one_thread, fn, tasks[nxt], shared, stop)] = nxt
                    nxt += 1
                if not running:
                    break
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for fut in done:
                    k, result = running.pop(fut), fut.result()
                    if isinstance(result, dict) and result.get("stopped"):
                        continue  # stopped midway: dropped, so not reported as done
                    results[k] = result
                    if progress is not None:
                        progress(len(results), len(tasks))
                if stop is not None and stop():
                    nxt = len(tasks)
        finally:
            for fut in running:
                fut.cancel()
    return _finished([results[k] for k in sorted(results)])


_quiet_lock = threading.Lock()
_quiet_users = 0
_QUIET = ("ignore", None, ConvergenceWarning, None, 0)


@contextmanager
def _no_convergence_warnings():
    """No ConvergenceWarning from the refits' fits (they stop at max_iter by design).
    ``warnings.catch_warnings`` swaps the process-wide filters and is not safe when refits
    run on several threads at once (one thread's exit restores the filters another entered
    with); this adds one filter while any refit runs and removes it after the last."""
    global _quiet_users
    with _quiet_lock:
        if _quiet_users == 0:
            warnings.filterwarnings("ignore", category=ConvergenceWarning)
        _quiet_users += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_users -= 1
            if _quiet_users == 0:
                try:
                    warnings.filters.remove(_QUIET)
                    warnings._filters_mutated()
                except ValueError:  # someone's catch_warnings already dropped it
                    pass
