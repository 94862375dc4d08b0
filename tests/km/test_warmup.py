"""The warm-up entry point the app runs in a child process at launch."""

import subprocess
import sys

import numpy as np
import pytest

from kmviz.data import Ratings
from kmviz.km import KolmogorovModel
from kmviz.km.warmup import compile_kernels


def test_compile_kernels_fits_a_tiny_model(kernel_calls):
    """The warm-up calls KM's kernels (compiled afterwards), among them every kernel a
    default fit calls on other data (1-5 stars, another D)."""
    compile_kernels()
    warmed = list(kernel_calls.dispatchers)
    assert any(k.py_func.__module__.startswith("kmviz.km.") for k in warmed), warmed
    assert all(k.signatures for k in warmed)
    kernel_calls.clear()
    rng = np.random.default_rng(1)
    users, items = np.divmod(np.arange(15 * 10), 10)
    stars = Ratings.from_arrays(users, items, rng.integers(1, 6, users.size).astype(float),
                                r_min=1, r_max=5)
    KolmogorovModel(D=4, max_iter=2, random_state=1).fit(stars)
    missed = [k for k in kernel_calls.dispatchers if not any(k is w for w in warmed)]
    assert kernel_calls.dispatchers and not missed, [k.py_func.__name__ for k in missed]


@pytest.mark.slow
def test_warmup_module_runs_as_a_script():
    out = subprocess.run([sys.executable, "-m", "kmviz.km.warmup"], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "KM kernels ready" in out.stdout
