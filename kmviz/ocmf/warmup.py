"""Compile the one-class MF kernels once, so later fits start at once.

``python -m kmviz.ocmf.warmup`` fits tiny models (TRON and gradient descent, with features
and a graph) and ranks, which compiles the serial Numba kernels and caches them on disk
(``cache=True``); the parallel twins compile on the first large problem.
"""

from __future__ import annotations

import time


def compile_kernels() -> float:
    """Fit tiny OCMF models through every kernel; returns seconds."""
    from .estimator import OneClassMF
    from .synthetic import make_planted_pu

    start = time.perf_counter()
    data, _ = make_planted_pu(30, 20, 2, density=0.2, random_state=0)
    for solver in ("tron", "gd"):
        model = OneClassMF(k=2, max_iter=1, solver=solver, side_features="both",
                           graph="ratings", lambda_g=0.5, random_state=0)
        model.fit(data, validation=data)
        model.recommend([0, 1], k=3)
    # the default settings (no side features) take the diagonal-O_c path of their own
    OneClassMF(k=2, max_iter=1, random_state=0).fit(data)
    return time.perf_counter() - start


def compile_cluster_kernels() -> float:
    """:func:`compile_kernels`, then a float32 fit (the dtype the distributed half-steps
    default to); what a :mod:`kmviz.parallel` backend runs in the client process before the
    blocks go to the workers (through ``Family.compile_kernels(cluster=True)``)."""
    from .estimator import OneClassMF
    from .synthetic import make_planted_pu

    start = time.perf_counter()
    compile_kernels()
    data, _ = make_planted_pu(30, 20, 2, density=0.2, random_state=0)
    OneClassMF(k=2, max_iter=1, dtype="float32", random_state=0).fit(data)
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"kmviz: OCMF kernels ready in {compile_kernels():.1f} s")
