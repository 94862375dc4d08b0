"""Compile the KM kernels once, so later fits start at once.

Numba compiles a kernel on its first call and caches the machine code on disk
(``cache=True``). ``python -m kmviz.km.warmup`` does that compilation in a process of its own:
the app runs it in the background (:mod:`kmviz.ui.warmup`, the family the user picks first) so
the compiler, which holds Python's GIL, never slows the server, and the server then loads the
cached kernels in about a second.
"""

from __future__ import annotations

import time

import numpy as np


def compile_kernels() -> float:
    """Fit a tiny KM (the default solver's whole call graph gets compiled); returns seconds."""
    from ..data import Ratings
    from .estimator import KolmogorovModel

    rng = np.random.default_rng(0)
    users, items = np.divmod(np.arange(12 * 8), 8)
    data = Ratings.from_arrays(users, items, rng.uniform(size=users.size), r_min=0.0, r_max=1.0)
    start = time.perf_counter()
    KolmogorovModel(D=3, max_iter=2, tol=0.0, random_state=0).fit(data)
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"kmviz: KM kernels ready in {compile_kernels():.1f} s")
