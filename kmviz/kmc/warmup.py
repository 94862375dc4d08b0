"""Compile the kernel-MC Numba kernels once, so later fits start at once.

``python -m kmviz.kmc.warmup`` calls every kernel of :mod:`kmviz.kmc._kernels` (the sparse
vec-trick product of the CG path, the online RRMCEX and SGD sweeps) on tiny inputs in a
process of its own, as :mod:`kmviz.km.warmup` does for KM: the machine code is cached on disk
(``cache=True``) and later processes load it in well under a second.
"""

from __future__ import annotations

import time


def compile_kernels() -> float:
    """Call each kernel once on tiny inputs; returns seconds."""
    from . import _kernels

    start = time.perf_counter()
    _kernels.compile_kernels()
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"kmviz: kernel-MC kernels ready in {compile_kernels():.1f} s")
