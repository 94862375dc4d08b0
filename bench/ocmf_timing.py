"""One-class MF: time per outer iteration and per phase, beside implicit's ALS (issue 10).

Same data, same k, same thread count for both: MovieLens 100K and MovieLens latest-small,
r >= 4 positive, a 90/10 split of the positives (the training part is timed). OCMF runs
LR-wSQ and SQ-wSQ at its defaults (rho = 2^-3, lambda = 4, the LR-wSQ optimum of
bench/ocmf_ml100k.py on ML-100K), 10 outer iterations, with the pair passes in double
and in single precision (``dtype="float32"``); implicit's ALS runs its defaults
(conjugate gradient, 3 steps) with regularization 10, alpha 1, 15 iterations, BLAS limited
to one thread as implicit advises. Fits alternate (OCMF, ALS, OCMF, ALS, ...) so that both
see the same load; the first iteration of every fit is dropped (warm start of later ones).

Per iteration: the wall-clock and the process CPU time between two calls of each method's
own per-iteration callback (OCMF: the W block, the H block, the objective split and the
trace row; ALS: both half-steps), so setup and the first iteration are left out of both.
Reported: the median (and the wall minimum) over every timed iteration of every repetition,
and the ratio OCMF / ALS of each. On a shared box CPU time is the steadier measure (time
spent waiting for a core is not in it). Per phase (W and H blocks: Gramians, function
values, gradients, Hessian-vector products with the preconditioner's diagonal) the median
milliseconds per iteration and the evaluation counts.

    python bench/ocmf_timing.py [--threads 1|2] [--k 64] [--reps 5] [--ml100k DIR]
"""

from __future__ import annotations

import os
import sys
import time

THREADS = "1"
for _i, _a in enumerate(sys.argv):
    if _a == "--threads" and _i + 1 < len(sys.argv):
        THREADS = sys.argv[_i + 1]
for _v in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, THREADS)

import numpy as np  # noqa: E402  (after the thread variables)
from _common import footer, header, load_ml100k, parser, table  # noqa: E402

METHODS = {"LR-wSQ": {"loss": "logistic"}, "SQ-wSQ": {"loss": "squared"},
           "LR-wSQ float32": {"loss": "logistic", "dtype": "float32"},
           "SQ-wSQ float32": {"loss": "squared", "dtype": "float32"}}
PHASES = ("precompute", "function", "gradient", "hessian_vector")


class _Clock:
    """Wall and CPU seconds between consecutive calls (one call at the end of every
    iteration, from the method's own callback): iterations 2, 3, ... of a fit."""

    def __init__(self):
        self.marks = []

    def __call__(self, *args):
        self.marks.append((time.perf_counter(), time.process_time()))

    def per_iteration(self):
        t = np.asarray(self.marks)
        return np.diff(t[:, 0]), np.diff(t[:, 1])


def ocmf_iterations(train, k, params, iters, seed):
    """(wall, cpu) seconds of outer iterations 2..iters, and the trace."""
    from kmviz.ocmf import OneClassMF

    clock = _Clock()
    model = OneClassMF(k=k, max_iter=iters, random_state=seed, **params)
    model.fit(train, callback=clock)
    wall, cpu = clock.per_iteration()
    return wall, cpu, model.trace_.to_frame()


def als_iterations(train, k, threads, iters, seed):
    """(wall, cpu) seconds of ALS iterations 2..iters."""
    from implicit.cpu.als import AlternatingLeastSquares
    from threadpoolctl import threadpool_limits

    clock = _Clock()
    model = AlternatingLeastSquares(factors=k, regularization=10.0, alpha=1.0,
                                    iterations=iters, num_threads=threads, random_state=seed)
    with threadpool_limits(1, "blas"):
        model.fit(train.csr.astype(np.float32), show_progress=False, callback=clock)
    return clock.per_iteration()


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--threads", default=THREADS)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--datasets", default="ml100k,movielens-small")
    p.add_argument("--methods", default=",".join(METHODS),
                   help="OCMF variants to time (comma-separated names of the table)")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("One-class MF vs implicit ALS: time per outer iteration and per phase")
    import numba
    import pandas as pd

    from kmviz.data import load

    threads = int(args.threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        import implicit  # noqa: F401
    except ImportError:
        print("implicit is not installed (pip install implicit): nothing to compare with")
        return
    methods = {m: METHODS[m] for m in args.methods.split(",")}
    reps = 2 if args.quick else args.reps
    print(f"k = {args.k}, {threads} thread(s) for both (Numba and implicit's num_threads; "
          f"BLAS single-threaded in both), {reps} repetitions.\n")
    rows, phase_rows = [], []
    for name in args.datasets.split(","):
        data = load_ml100k(args.ml100k) if name == "ml100k" else load(name)
        if data is None:
            continue
        train, _ = data.binarize(4).split(0.1, random_state=args.seed)
        label = "ML-100K" if name == "ml100k" else name
        # compile / load every kernel once, outside the timing
        for prm in methods.values():
            ocmf_iterations(train, args.k, prm, 2, args.seed)
        als_iterations(train, args.k, threads, 2, args.seed)
        o_wall = {m: [] for m in methods}
        o_cpu = {m: [] for m in methods}
        frames = {m: [] for m in methods}
        a_wall, a_cpu = [], []
        for rep in range(reps):
            for m, prm in methods.items():
                w, c, df = ocmf_iterations(train, args.k, prm, 10, args.seed + rep)
                o_wall[m].append(w)
                o_cpu[m].append(c)
                frames[m].append(df.iloc[1:])
            w, c = als_iterations(train, args.k, threads, 15, args.seed + rep)
            a_wall.append(w)
            a_cpu.append(c)
        aw, ac = np.concatenate(a_wall), np.concatenate(a_cpu)
        for m in methods:
            ow, oc = np.concatenate(o_wall[m]), np.concatenate(o_cpu[m])
            rows.append({"data": label, "method": f"OCMF {m}",
                         "wall median": float(np.median(ow)), "ALS wall median":
                         float(np.median(aw)), "ratio wall": float(np.median(ow) /
                                                                   np.median(aw)),
                         "wall min": float(ow.min()), "ALS wall min": float(aw.min()),
                         "ratio min": float(ow.min() / aw.min()),
                         "CPU median": float(np.median(oc)), "ALS CPU median":
                         float(np.median(ac)), "ratio CPU": float(np.median(oc) /
                                                                  np.median(ac))})
            df = pd.concat(frames[m])
            r = {"data": label, "method": f"OCMF {m}"}
            for block in ("w", "h"):
                for ph in PHASES:
                    col = f"t_{block}_{ph}_s"
                    r[f"{block.upper()} {ph} ms"] = 1e3 * float(df[col].median()) \
                        if col in df else 0.0
            r["objective ms"] = 1e3 * float(df["t_objective_s"].median())
            r["other ms"] = 1e3 * float(np.median(ow)) - sum(
                v for key, v in r.items() if key.endswith(" ms"))
            for c in ("n_fun", "n_grad", "n_hess_vec", "n_w_cg", "n_h_cg"):
                r[c] = float(df[c].mean())
            phase_rows.append(r)
        print(f"  done: {label} ({time.perf_counter() - t_start:.0f} s)", flush=True)
    print("\n## Time per outer iteration (s)\n")
    print(table(rows, floatfmt="{:.4f}"))
    print("## OCMF per phase (median ms per outer iteration; counts are means)\n")
    print("'other' is the iteration's median minus the phase medians: building the two blocks' "
          "problems, the embeddings X W and Z W_2, TRON's vector algebra.\n")
    print(table(phase_rows, floatfmt="{:.2f}"))
    footer(t_start)


if __name__ == "__main__":
    main()
