"""One BLAS thread around kmviz's parallel kernels.

Numba's ``np.linalg`` calls go to the OpenBLAS that ships with SciPy. Called from several
Numba threads at once, a multi-threaded OpenBLAS oversubscribes the cores (a 101 x 101 eigh
took 24 ms instead of 1.3 ms on a 2-core box), so every parallel kernel runs inside
``single_blas_thread()``.

``threadpoolctl.threadpool_limits`` scans the process's loaded libraries on each call,
which cost ~1.6 ms here: more than a whole BQP batch of a few items at D = 8. The scan is
done once, into a shared controller; each limit then costs ~10 us.

The limit is process-wide while the Numba thread count is per calling thread, and a served
app runs several fits at once. So the limit is counted: the first fit to enter sets it, the
last to leave restores the original. (A plain limit per fit would let the first fit to finish
restore several BLAS threads under the fits still running, and the last one leave the
process limited to one for good.)
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_controller: ThreadpoolController | None = None
_count_lock = threading.Lock()
_holders = 0      # contexts inside single_blas_thread() now, over all threads
_limiter = None   # what restores the original limits when the last one leaves


def _get_controller() -> ThreadpoolController:
    global _controller
    with _lock:
        if _controller is None:
            import scipy.linalg  # noqa: F401  loads the OpenBLAS that Numba's LAPACK calls use

            _controller = ThreadpoolController()
        return _controller


@contextmanager
def single_blas_thread():
    """Context manager: BLAS/LAPACK limited to one thread inside; the original limits come
    back when the last context open in the process (any thread) exits."""
    global _holders, _limiter
    controller = _get_controller()
    with _count_lock:
        if _holders == 0:
            _limiter = controller.limit(limits=1, user_api="blas")
        _holders += 1
    try:
        yield
    finally:
        with _count_lock:
            _holders -= 1
            if _holders == 0:
                _limiter.restore_original_limits()
                _limiter = None
