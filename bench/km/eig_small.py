"""Small symmetric EVD inside Numba: kmviz's sym_eig against LAPACK (np.linalg.eigh).

The dual solvers need one EVD of the (D+1) x (D+1) matrix C(u) per evaluation, from Numba
threads, with one BLAS thread. This micro-benchmark times both inside the same compiled loop
(a perturbed matrix each call, so nothing is cached), best of 3 repetitions, and prints the
ratio that sets ``kmviz.km._kernels.eigen.DENSE_N`` (the size where eigh_into switches to LAPACK).
It times kernels below the public API on purpose.

    python bench/km/eig_small.py [--sizes 9,17,24,32,48,64,101]
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table
from kmviz._threads import single_blas_thread
from kmviz.km._kernels.eigen import DENSE_N, sym_eig


@njit
def _loop_sym_eig(A, w, V, e, reps):
    s = 0.0
    for _ in range(reps):
        A[0, 0] += 1e-9
        sym_eig(A, w, V, e)
        s += w[0]
    return s


@njit
def _loop_lapack(A, reps):
    s = 0.0
    for _ in range(reps):
        A[0, 0] += 1e-9
        w, V = np.linalg.eigh(A)
        s += w[0]
    return s


def best_of(fn, *args, reps):
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        fn(*args, reps)
        best = min(best, time.perf_counter() - t0)
    return best / reps


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="9,17,24,32,48,64,101")
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("sym_eig vs LAPACK eigh inside Numba, one BLAS thread")
    rows = []
    with single_blas_thread():
        for n in (int(x) for x in args.sizes.split(",")):
            rng = np.random.default_rng(args.seed + n)
            X = rng.standard_normal((n, n))
            A = X + X.T
            w, V, e = np.empty(n), np.empty((n, n)), np.empty(n)
            _loop_sym_eig(A, w, V, e, 2)  # compile
            _loop_lapack(A, 2)
            reps = max(50, (20000 if args.quick else 200000) // n ** 2)
            t_own = best_of(_loop_sym_eig, A, w, V, e, reps=reps)
            t_lap = best_of(_loop_lapack, A, reps=reps)
            _loop_sym_eig(A, w, V, e, 1)  # w now belongs to A as it is
            err = np.abs(np.linalg.eigvalsh(A) - w).max() / np.abs(w).max()
            rows.append({"n": n, "sym_eig us": t_own * 1e6, "LAPACK us": t_lap * 1e6,
                         "sym_eig / LAPACK": t_own / t_lap,
                         "rel. eigenvalue error vs eigvalsh": err,
                         "eigh_into uses": "sym_eig" if n <= DENSE_N else "LAPACK"})
    print(table(rows))
    print(f"DENSE_N = {DENSE_N}: eigh_into calls sym_eig up to this n.")
    footer(t_start)


if __name__ == "__main__":
    main()
