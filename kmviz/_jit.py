"""One place decides the Numba options used by every kernel in kmviz.

fastmath is restricted to a flag subset: ``nnan``/``ninf`` would turn NaN checks into
constants, so they are left out on purpose.

``run_rows`` is the other way to spread independent rows over the cores: a serial kernel
``kernel(lo, hi, *args)`` (``JIT``: nogil) run on row blocks from Python threads. Compiling
a ``parallel=True`` kernel costs several times its serial twin, because Numba compiles the
loop body (with every kernel it calls linked in) once more as a gufunc: for one family's
default batch kernel that was 17.7 of the 52.5 CPU seconds of a first fit
(``bench/app/first_fit.py``).
Kernels whose rows are many small independent problems use ``run_rows``; ``PJIT`` stays for
loops whose body is a few lines.

``parallel_and_serial`` compiles one loop written once (``for i in prange(...)``) twice, with
``parallel=True`` and without (where ``prange`` is ``range``), for callers that pick the
threaded loop only above a size: no hand-written twin to keep in step.
"""

from __future__ import annotations

import threading
import types

JIT = dict(cache=True, nogil=True, fastmath={"reassoc", "contract", "arcp"})
PJIT = dict(JIT, parallel=True)



def _renamed(func, suffix: str):
    """A copy of ``func`` named ``<name>_<suffix>``: Numba's disk cache keys a function by its
    file, qualified name and line, not by its options, so two compilations of one function
    with different ``parallel`` would load each other's machine code (numba issue 6845)."""
    copy = types.FunctionType(func.__code__, func.__globals__, f"{func.__name__}_{suffix}",
                              func.__defaults__, func.__closure__)
    copy.__qualname__ = f"{func.__qualname__}_{suffix}"
    copy.__module__ = func.__module__
    copy.__doc__ = func.__doc__
    copy.__kwdefaults__ = func.__kwdefaults__
    return copy


def parallel_and_serial(func, options: dict = JIT):
    """``(parallel, serial)``: ``func`` compiled with ``options`` and ``parallel=True``, and
    with ``options`` and ``parallel=False``. Write its loop over independent rows with
    ``prange``; the serial one runs it as ``range``. Both are cached on disk under names of
    their own (``<name>_parallel``, ``<name>_serial``). Results are the same bit for bit when
    every iteration writes only its own outputs (no reduction across iterations)."""
    from numba import njit

    parallel = njit(**{**options, "parallel": True})(_renamed(func, "parallel"))
    serial = njit(**{**options, "parallel": False})(_renamed(func, "serial"))
    return parallel, serial


#: Blocks per thread: later blocks go to whichever thread is free (rows differ in cost).
BLOCKS_PER_THREAD = 4


def row_blocks(n_rows: int, n_threads: int) -> list[tuple[int, int]]:
    """Contiguous (lo, hi) blocks covering range(n_rows), about BLOCKS_PER_THREAD each."""
    if n_rows <= 0:
        return []
    n_blocks = max(1, min(n_rows, n_threads * BLOCKS_PER_THREAD if n_threads > 1 else 1))
    step, extra = divmod(n_rows, n_blocks)
    blocks, lo = [], 0
    for b in range(n_blocks):
        hi = lo + step + (b < extra)
        blocks.append((lo, hi))
        lo = hi
    return blocks


def run_rows(kernel, n_rows: int, *args, n_threads: int | None = None) -> None:
    """``kernel(lo, hi, *args)`` over row blocks of range(n_rows), on ``n_threads`` threads
    (default: Numba's thread count, as a ``prange`` would use), the calling one among them.

    The kernel must release the GIL (``nogil=True``, as ``JIT`` sets) and write only the
    rows lo..hi-1 of its outputs, so the result does not depend on the blocks or threads.
    An exception in any block is raised here after every thread has stopped.
    """
    if n_threads is None:
        import numba

        n_threads = numba.get_num_threads()
    blocks = row_blocks(n_rows, n_threads)
    if len(blocks) <= 1 or n_threads <= 1:
        for lo, hi in blocks:
            kernel(lo, hi, *args)
        return
    todo = iter(blocks[1:])  # the calling thread always runs the first block itself
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work():
        while True:
            with lock:
                if errors:
                    return
                block = next(todo, None)
            if block is None:
                return
            try:
                kernel(block[0], block[1], *args)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                with lock:
                    errors.append(exc)
                return

    threads = [threading.Thread(target=work, daemon=True)
               for _ in range(min(n_threads, len(blocks)) - 1)]
    for t in threads:
        t.start()
    try:
        kernel(blocks[0][0], blocks[0][1], *args)
    except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others stop
        with lock:
            errors.append(exc)
    work()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
