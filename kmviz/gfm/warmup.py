"""Compile the gFM kernels once, so later fits start at once.

``python -m kmviz.gfm.warmup`` fits a tiny model with the Numba engine in a process of its
own (as :mod:`kmviz.km.warmup` does for KM): the compiled sweeps are cached on disk
(``cache=True``) and later processes load them in well under a second.
"""

from __future__ import annotations

import time


def compile_kernels() -> float:
    """Fit a tiny gFM with engine="numba" (both sweeps get compiled); returns seconds."""
    from .estimator import GeneralizedFM
    from .synthetic import make_gfm

    problem = make_gfm(8, 1, 3 * 64, random_state=0)
    start = time.perf_counter()
    GeneralizedFM(1, batch_size=64, n_batches=3, engine="numba",
                  random_state=0).fit(problem.X, problem.y)
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"kmviz: gFM kernels ready in {compile_kernels():.1f} s")
