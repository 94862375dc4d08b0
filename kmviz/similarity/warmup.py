"""Compile the similarity-learning kernels once, so later fits start at once.

``python -m kmviz.similarity.warmup`` fits tiny models (Newton with an identity and an MLP
tower, and SOGram) and ranks, which compiles the serial Numba kernels and caches them on
disk (``cache=True``); the parallel twins compile on the first large problem.
"""

from __future__ import annotations

import time


def compile_kernels() -> float:
    """Fit tiny models through every kernel; returns seconds."""
    from .estimator import SimilarityLearning
    from .synthetic import make_planted_towers

    start = time.perf_counter()
    data, _ = make_planted_towers(30, 20, 2, density=0.2, random_state=0)
    for params in (dict(solver="newton"), dict(solver="newton", item_tower="mlp:4",
                                               side_features="item"),
                   dict(solver="sogram", sample_ratio=0.2)):
        model = SimilarityLearning(k=2, max_iter=1, tol=0, random_state=0, **params)
        model.fit(data, validation=data)
        model.recommend([0, 1], k=3)
    return time.perf_counter() - start


def compile_cluster_kernels() -> float:
    """:func:`compile_kernels`, then the item-side Gauss-Newton kernel only the block tasks
    call (:mod:`kmviz.similarity._dist`); what a :mod:`kmviz.parallel` backend runs in the
    client process before the blocks go to the workers (``Family.compile_kernels(
    cluster=True)``)."""
    import numpy as np

    from ._dist import _gn_items_seq

    start = time.perf_counter()
    compile_kernels()
    one = np.ones((1, 1))
    _gn_items_seq(np.array([0, 1]), np.array([0]), np.ones(1), one, one, one, one,
                  np.empty((1, 1)))
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"kmviz: similarity kernels ready in {compile_kernels():.1f} s")
