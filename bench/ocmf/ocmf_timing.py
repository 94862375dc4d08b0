"""One-class MF: time per outer iteration and per phase, beside implicit's ALS (issue 10).

Same data, same k, same thread count for both: MovieLens 100K and MovieLens latest-small,
r >= 4 positive, a 90/10 split of the positives (the training part is timed). OCMF runs
LR-wSQ and SQ-wSQ at its defaults (rho = 2^-3, lambda = 4, the LR-wSQ optimum of
bench/ocmf/ocmf_ml100k.py on ML-100K), 10 outer iterations, with the pair passes in double
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

TRON solves each block in the eigenbasis of the fixed side's Gramian with a Jacobi
preconditioner (the estimator's default, kmviz.ocmf.estimator.TRON_BASIS); the "W-basis"
rows run it as before, in W's own basis with LIBLINEAR's M = 0.99 I + 0.01 diag(H), in the
same run. ``--accuracy`` also tunes every method on a 3 x 3 (rho, lambda) grid by validation
p@5 and reports its test p@5, so that a faster setting is seen not to cost accuracy.

``--parallel-min-work 0`` runs the pair kernels on Numba's threads at MovieLens sizes (by
default they run on one: measured slower on this shared 2-core box, see kmviz.ocmf._kernels).

    python bench/ocmf/ocmf_timing.py [--threads 1|2] [--k 64] [--reps 5] [--ml100k DIR]
                                [--accuracy] [--datasets ml100k,movielens-small]
                                [--methods LR-wSQ,...] [--parallel-min-work N]
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _threads_env import pin_threads

THREADS = pin_threads("1")  # before numpy: the libraries read it once, when they load

import numpy as np  # noqa: E402  (after the thread variables)
from _common import footer, header, load_ml100k, parser, table  # noqa: E402

METHODS = {"LR-wSQ": {"loss": "logistic"}, "SQ-wSQ": {"loss": "squared"},
           "LR-wSQ float32": {"loss": "logistic", "dtype": "float32"},
           "SQ-wSQ float32": {"loss": "squared", "dtype": "float32"},
           # TRON as it was before the eigenbasis: W's own basis, LIBLINEAR's M
           "LR-wSQ W-basis": {"loss": "logistic", "_basis": None},
           "SQ-wSQ W-basis": {"loss": "squared", "_basis": None}}
DEFAULT_METHODS = "LR-wSQ,SQ-wSQ,LR-wSQ float32,SQ-wSQ float32,LR-wSQ W-basis,SQ-wSQ W-basis"
PHASES = ("precompute", "function", "gradient", "hessian_vector")


@contextmanager
def _tron_basis(params):
    """Run with the estimator's TRON setting named by ``params["_basis"]`` ("eig": the
    eigenbasis of the fixed side's Gramian with a Jacobi preconditioner, the default; None:
    W's own basis with LIBLINEAR's M = 0.99 I + 0.01 diag(H)); yields the other params."""
    import kmviz.ocmf.estimator as est

    params = dict(params)
    basis = params.pop("_basis", "eig")
    saved = est.TRON_BASIS, est.TRON_PCG_ALPHA
    est.TRON_BASIS, est.TRON_PCG_ALPHA = (basis, 1.0) if basis == "eig" else (None, 0.01)
    try:
        yield params
    finally:
        est.TRON_BASIS, est.TRON_PCG_ALPHA = saved


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
    with _tron_basis(params) as prm:
        model = OneClassMF(k=k, max_iter=iters, random_state=seed, **prm)
        model.fit(train, callback=clock)
    wall, cpu = clock.per_iteration()
    return wall, cpu, model.trace_.to_frame()


def ocmf_accuracy(train, test, k, params, seed):
    """The paper's protocol on a 3 x 3 grid (log2 rho in {-5, -3, -1}, log2 lambda in
    {0, 2, 4}, bench/ocmf/ocmf_ml100k.py --grid quick): tune (rho, lambda, outer iteration <= 15)
    by validation p@5 on 10% of the training positives, refit on all of them, test p@5."""
    from kmviz.ocmf import OneClassMF

    sub, val = train.split(0.1, random_state=seed + 1)
    best = (-1.0, None, 0)
    with _tron_basis(params) as prm:
        for rho in (2.0 ** -5, 2.0 ** -3, 2.0 ** -1):
            for lam in (1.0, 4.0, 16.0):
                g = {**prm, "rho": rho, "lambda_w": lam, "lambda_h": lam}
                model = OneClassMF(k=k, max_iter=15, random_state=seed, **g)
                model.fit(sub, validation=val)
                p5 = model.trace_.column("validation_precision_at_5")
                it = int(np.nanargmax(p5))
                if p5[it] > best[0]:
                    best = (float(p5[it]), g, it + 1)
        v, g, n_iter = best
        model = OneClassMF(k=k, max_iter=n_iter, random_state=seed, **g).fit(train)
    return {"rho": f"2^{int(np.log2(g['rho']))}", "lambda": f"2^{int(np.log2(g['lambda_w']))}",
            "iters": n_iter, "val p@5": 100 * v,
            "test p@5": 100 * model.evaluate(test)["precision_at_5"]}


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
    p.add_argument("--parallel-min-work", type=int, default=None,
                   help="override kmviz.ocmf._kernels.PARALLEL_MIN_WORK (pairs x k from which "
                        "the pair kernels run on Numba's threads; 0: always)")
    p.add_argument("--accuracy", action="store_true",
                   help="also tune every method on a 3 x 3 grid and report its test p@5")
    p.add_argument("--methods", default=DEFAULT_METHODS,
                   help="OCMF variants to time (comma-separated names of the table)")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("One-class MF vs implicit ALS: time per outer iteration and per phase")
    import numba
    import pandas as pd

    from kmviz.data import load

    threads = int(args.threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    if args.parallel_min_work is not None:
        import kmviz.ocmf._kernels as K

        K.PARALLEL_MIN_WORK = args.parallel_min_work
        print(f"PARALLEL_MIN_WORK = {K.PARALLEL_MIN_WORK:,} (MovieLens: about 3,000,000 "
              "pairs x k, so 0 runs the pair kernels on Numba's threads)\n")
    import importlib.util

    if importlib.util.find_spec("implicit") is None:
        print("implicit is not installed (pip install implicit): nothing to compare with")
        return
    methods = {m: METHODS[m] for m in args.methods.split(",")}
    reps = 2 if args.quick else args.reps
    print(f"k = {args.k}, {threads} thread(s) for both (Numba and implicit's num_threads; "
          f"BLAS single-threaded in both), {reps} repetitions.\n")
    rows, phase_rows, acc_rows = [], [], []
    for name in args.datasets.split(","):
        data = load_ml100k(args.ml100k) if name == "ml100k" else load(name)
        if data is None:
            continue
        train, test = data.binarize(4).split(0.1, random_state=args.seed)
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
        if args.accuracy:
            for m, prm in methods.items():
                acc_rows.append({"data": label, "method": f"OCMF {m}",
                                 **ocmf_accuracy(train, test, args.k, prm, args.seed)})
        print(f"  done: {label} ({time.perf_counter() - t_start:.0f} s)", flush=True)
    print("\n## Time per outer iteration (s)\n")
    print(table(rows, floatfmt="{:.4f}"))
    print("## OCMF per phase (median ms per outer iteration; counts are means)\n")
    print("'other' is the iteration's median minus the phase medians: building the two blocks' "
          "problems, the embeddings X W and Z W_2, TRON's vector algebra.\n")
    print(table(phase_rows, floatfmt="{:.2f}"))
    if acc_rows:
        print("## Accuracy (--accuracy): test p@5 (percent) after tuning on validation\n")
        print("3 x 3 grid (log2 rho in {-5, -3, -1}, log2 lambda in {0, 2, 4}) and the outer "
              "iteration (<= 15) by validation p@5 on 10% of the training positives, refit on "
              "all of them (the protocol of bench/ocmf/ocmf_ml100k.py --grid quick).\n")
        print(table(acc_rows, floatfmt="{:.2f}"))
    footer(t_start)


if __name__ == "__main__":
    main()
