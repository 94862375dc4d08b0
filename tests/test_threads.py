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


def test_overlapping_fits_keep_the_limit_until_the_last_leaves(monkeypatch):
    """Two fits in two threads, the first to start finishing first (as in a served app): the
    limit is set once, stays while the second runs, and is restored after it. (Counted on a
    recording controller: OpenBLAS's own thread count read back from other threads is not
    reliable enough to assert on.)"""
    import kmviz._threads as T

    events = []

    class Limiter:
        def restore_original_limits(self):
            events.append("restore")

    class Controller:
        def limit(self, *, limits, user_api):
            events.append(("limit", limits, user_api))
            return Limiter()

    monkeypatch.setattr(T, "_controller", Controller())
    a_in, b_in, a_out = (threading.Event() for _ in range(3))

    def fit_a():
        with single_blas_thread():
            a_in.set()
            b_in.wait(10)
        events.append("a left")
        a_out.set()

    def fit_b():
        a_in.wait(10)
        with single_blas_thread():
            b_in.set()
            a_out.wait(10)
            events.append("b after a")
        events.append("b left")

    threads = [threading.Thread(target=fit_a), threading.Thread(target=fit_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert events == [("limit", 1, "blas"), "a left", "b after a", "restore", "b left"]
    assert T._holders == 0 and T._limiter is None
