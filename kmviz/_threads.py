"""One BLAS thread around kmviz's parallel kernels.

Numba's ``np.linalg`` calls go to the OpenBLAS that ships with SciPy. Called from several
Numba threads at once, a multi-threaded OpenBLAS oversubscribes the cores (a 101 x 101 eigh
took 24 ms instead of 1.3 ms on a 2-core box), so every parallel kernel runs inside
``single_blas_thread()``.

``threadpoolctl.threadpool_limits`` scans the process's loaded libraries on each call,
which cost ~1.6 ms here: more than a whole BQP batch of a few items at D = 8. The scan is
done once, into a shared controller; each limit then costs ~10 us.
"""

from __future__ import annotations

import threading

from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_controller: ThreadpoolController | None = None


def _get_controller() -> ThreadpoolController:
    global _controller
    with _lock:
        if _controller is None:
            import scipy.linalg  # noqa: F401  loads the OpenBLAS that Numba's LAPACK calls use

            _controller = ThreadpoolController()
        return _controller


def single_blas_thread():
    """Context manager: BLAS/LAPACK limited to one thread inside, restored on exit."""
    return _get_controller().limit(limits=1, user_api="blas")
