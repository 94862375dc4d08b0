"""The shared BLAS thread limit (kmviz._threads)."""

import threading

import scipy.linalg  # noqa: F401  SciPy's OpenBLAS is one of the libraries limited
from threadpoolctl import threadpool_info

from kmviz._threads import single_blas_thread


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_single_blas_thread_limits_and_restores():
    before = _blas_threads()
    assert before, "no BLAS library found: the limit would do nothing"
    with single_blas_thread():
        assert all(n == 1 for n in _blas_threads())
        with single_blas_thread():  # nested, as estimator -> solve_bqp_batch does
            assert all(n == 1 for n in _blas_threads())
        assert all(n == 1 for n in _blas_threads())
    assert _blas_threads() == before


def test_single_blas_thread_from_threads():
    errors = []

    def work():
        try:
            for _ in range(20):
                with single_blas_thread():
                    pass
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
