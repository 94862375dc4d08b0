"""kmviz._jit.run_rows: serial row kernels spread over threads instead of parallel=True."""

import threading
import time

import numpy as np
import pytest
from numba import njit

from kmviz._jit import JIT, row_blocks, run_rows


@njit(**dict(JIT, cache=False))
def _square_rows(lo, hi, x, out):
    for i in range(lo, hi):
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i, j] * x[i, j]
        out[i] = s


@pytest.mark.parametrize("n_rows,n_threads", [(0, 2), (1, 2), (7, 1), (7, 2), (100, 3),
                                              (5, 8)])
def test_row_blocks_cover_every_row_once(n_rows, n_threads):
    blocks = row_blocks(n_rows, n_threads)
    rows = [r for lo, hi in blocks for r in range(lo, hi)]
    assert rows == list(range(n_rows))
    assert all(hi > lo for lo, hi in blocks)
    if n_threads == 1 and n_rows:
        assert blocks == [(0, n_rows)]


@pytest.mark.parametrize("n_threads", [1, 2, 4])
def test_run_rows_equals_one_serial_call(n_threads):
    x = np.random.default_rng(0).standard_normal((101, 5))
    want = np.empty(101)
    _square_rows(0, 101, x, want)
    got = np.full(101, np.nan)
    run_rows(_square_rows, 101, x, got, n_threads=n_threads)
    assert np.array_equal(got, want)


def test_run_rows_uses_several_threads_and_raises_their_errors():
    seen = set()
    bad = []

    def kernel(lo, hi, out):
        seen.add(threading.get_ident())
        time.sleep(0.005)  # hold this thread a moment, so the other one takes blocks too
        if lo <= 13 < hi and bad:
            raise ValueError("row 13 is bad")
        out[lo:hi] = 2.0

    out = np.zeros(40)
    run_rows(kernel, 40, out, n_threads=2)
    assert np.all(out == 2.0)
    assert len(seen) == 2
    bad.append(13)
    with pytest.raises(ValueError, match="row 13"):
        run_rows(kernel, 40, out, n_threads=2)
