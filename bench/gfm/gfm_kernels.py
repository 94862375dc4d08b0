"""One-pass gFM: the fused Numba sweeps against NumPy/BLAS for the per-batch products.

One step of Algorithm 1 reads its batch twice: the statistics pass (``residual_pass``:
``r = y - b - Z w - A(M)`` and ``Z^T [r, r (Z U)]``) and the V pass (``weighted_pass``:
``Z^T (r (Z U_new))``). Both are timed with ``engine="numba"`` and ``engine="numpy"`` on
dense standardized batches of n = 10 k d rows (at least 2,000), k = 3, best of several
repetitions. The ratio sets ``kmviz.gfm.operators.NUMBA_MIN_D``.

    python bench/gfm/gfm_kernels.py [--quick] [--dims 20,50,...]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table


def best_of(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--dims", default="20,50,100,128,200,500,1000")
    p.add_argument("--k", type=int, default=3)
    args = p.parse_args()
    t_start = time.perf_counter()
    header("One-pass gFM: Numba sweeps vs NumPy/BLAS per batch pass")
    from kmviz.gfm.operators import (
        NUMBA_MIN_D,
        ChunkedBatch,
        Standardizer,
        residual_pass,
        weighted_pass,
    )

    dims = [int(x) for x in args.dims.split(",")]
    if args.quick:
        dims = [d for d in dims if d <= 200]
    k = args.k
    rows = []
    for d in dims:
        n = max(2000, 10 * k * d)
        rng = np.random.default_rng(args.seed)
        X = rng.standard_normal((n, d)) * 1.5 + 0.2
        y = rng.standard_normal(n)
        U, V = rng.standard_normal((d, k)), rng.standard_normal((d, k))
        w = rng.standard_normal(d)
        std = Standardizer.from_data(X)
        batch = ChunkedBatch.from_arrays(X, y)
        r = y.copy()
        reps = max(3, int(3e8 / (n * d * (k + 1))))
        cell = {"d": d, "n": n}
        for engine in ("numpy", "numba"):
            cell[f"stats {engine} ms"] = 1e3 * best_of(
                lambda: residual_pass(batch, U, V, w, 0.0, std, engine, check=False), reps)
            cell[f"V pass {engine} ms"] = 1e3 * best_of(
                lambda: weighted_pass(batch, r, U, std, engine), reps)
        cell["stats speed-up"] = cell["stats numpy ms"] / cell["stats numba ms"]
        cell["V pass speed-up"] = cell["V pass numpy ms"] / cell["V pass numba ms"]
        cell["auto uses"] = "numba" if d >= NUMBA_MIN_D else "numpy"
        rows.append(cell)
        print(f"d = {d} done", flush=True)
    print()
    print(f"k = {k}; speed-up = NumPy time / Numba time (> 1: Numba faster); "
          f"NUMBA_MIN_D = {NUMBA_MIN_D}\n")
    print(table(rows, floatfmt="{:.3g}"))
    footer(t_start)


if __name__ == "__main__":
    main()
