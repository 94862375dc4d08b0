"""Each family's memory estimate next to the peak traced by tracemalloc (NumPy arrays).

    python bench/data/memory_estimates.py

Prints one row per (family, settings): the estimate, the measured peak, their ratio and
what a stopped fit keeps. Numba's and BLAS's own scratch is not traced.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
import warnings


def cases():
    from kmviz.data.synthetic import make_planted_lowrank, planted_km
    from kmviz.gfm import GeneralizedFM
    from kmviz.km import KolmogorovModel
    from kmviz.kmc import KernelMatrixCompletion
    from kmviz.ocmf import OneClassMF
    from kmviz.similarity import SimilarityLearning

    km = planted_km(n_users=400, n_items=2000, D=4, random_state=0)
    low, _ = make_planted_lowrank(n_users=600, n_items=400, rank=5, random_state=0)
    yield "km D=32", KolmogorovModel(D=32, max_iter=2), km
    yield "km D=8 n_rand=200", KolmogorovModel(D=8, n_rand=200, max_iter=2), km
    yield "kmc kkmcex", KernelMatrixCompletion(max_iter=5), low
    yield "kmc als rank=50", KernelMatrixCompletion(method="als", rank=50, max_iter=3), low
    yield "kmc pg", KernelMatrixCompletion(method="pg", rank=5, max_iter=3), low
    yield "ocmf k=64", OneClassMF(k=64, max_iter=2), low
    yield "gfm rank=5", GeneralizedFM(rank=5, n_batches=4), low
    yield "similarity k=64", SimilarityLearning(k=64, max_iter=2), low


def main() -> int:
    from kmviz._memory import check_fit_memory, format_bytes

    print(f"{'case':24} {'estimate':>10} {'peak':>10} {'est/peak':>8} {'kept':>10}")
    for name, model, data in cases():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(data, callback=lambda row: False)  # compile once
            gc.collect()
            estimate = check_fit_memory(model, model._validate_params(), data)
            tracemalloc.start()
            model.fit(data, callback=lambda row: row["iteration"] < 1)
            gc.collect()
            kept, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        print(f"{name:24} {format_bytes(estimate):>10} {format_bytes(peak):>10} "
              f"{estimate / peak:8.2f} {format_bytes(kept):>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
