"""One-class MF: the all-pairs fast path against the naive dense O(mn) computation.

For the W block of OCMF (items fixed) at m = n = 2,000, k = 32, 3% positives (ml100k's
density) and 0.5% (sparser, like larger recommender data), every loss: the function value,
the gradient and a Hessian-vector product by

- naive: the m x n score matrix S = P Q^T and every per-entry loss, weight and derivative
  (eq. (2)-(3) as written; BLAS for the m x n x k products; the gradient and Hv reuse S of
  the same point, as the fast path reuses its pair scores);
- fast: the loss split (6)-(7) with k x k Gramians and Numba kernels over the positives
  (kmviz.ocmf.problem.BlockProblem), O(|Omega+| k + (m + n) k^2).

Both are checked equal (relative error) before timing; times are the best of --reps runs.
The speed-up is bounded by the flop ratio: the naive Hv is two m n k GEMMs, the fast one
O(|Omega+| k + (m + n) k^2), so the ratio grows like m n / ((m + n) k) (31 at m = n = 2,000,
k = 32; ``--m 6000 --n 6000`` shows the growth); f and the gradient also save the per-entry
loss work on all m n entries, which dominates for the logistic loss.
The naive path uses BLAS with its default threads; the fast path runs as ``OneClassMF.fit``
does, Numba threads over the positives and one BLAS thread for the k x k products (Numba's
OpenMP threads and a multi-threaded OpenBLAS oversubscribe the cores otherwise).
Rows: plain OCMF (X = I) and X = [I | F] with 20 user features plus a 10-NN user graph.

    python bench/ocmf/ocmf_allpairs.py [--quick] [--m 2000] [--n 2000] [--k 32] [--reps 5]
                                  [--densities 0.03,0.005]
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table


def best_of(fn, reps):
    fn()
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def run_density(args, density):
    from kmviz._threads import single_blas_thread
    from kmviz.ocmf import AllPairsLoss, BlockProblem, ObservedPairs, SideMatrix, knn_graph
    from kmviz.ocmf import _reference as R
    from kmviz.ocmf.features import laplacian
    from kmviz.ocmf.losses import LOSSES

    rows = []
    rng = np.random.default_rng(args.seed)
    m, n, k = args.m, args.n, args.k
    Y = sp.random(m, n, density=density, random_state=rng, format="csr")
    Y.data[:] = 1.0
    pairs = ObservedPairs.from_matrix(Y)
    Yd = Y.toarray()
    rho, a_bar, lam_w, lam_g = 2.0 ** -5, -1.0, 1.0, 0.5
    p_w, q_w = np.full(m, rho), np.ones(n)
    print(f"m = {m}, n = {n}, k = {k}, |Omega+| = {pairs.nnz:,} "
          f"({pairs.nnz / (m * n):.1%}), rho = {rho:g}, a_bar = {a_bar:g}", flush=True)
    F = sp.csr_matrix(rng.standard_normal((m, 20)))
    setups = {
        "X = I": (SideMatrix(m, np.arange(m)), None),
        "X = [I | F], 20 features, 10-NN graph": (
            SideMatrix(m, np.arange(m), F, [f"f{c}" for c in range(20)]),
            laplacian(knn_graph(F, 10), m)),
    }
    Q = rng.standard_normal((n, k)) * 0.3
    for setup, (X, L) in setups.items():
        Xd = X.apply(np.eye(X.d))  # dense X for the naive path
        W = rng.standard_normal((X.d, k)) * 0.3
        V = rng.standard_normal((X.d, k))
        x, v = W.ravel(), V.ravel()
        for loss in LOSSES:
            apl = AllPairsLoss(pairs, loss, p_w, q_w, a_bar)
            prob = BlockProblem(apl.block("rows", Q), X, lam_w, L, lam_w * lam_g if L is not None
                                else 0.0, "off")
            lg = lam_g if L is not None else 0.0
            Ld = L

            # naive: dense m x n, caching S and the derivative matrices of the point
            cache = {}

            def naive_f():
                P = Xd @ W
                S = P @ Q.T
                value, _, _ = R.entry_terms(S, Yd, loss, p_w, q_w, a_bar, parts=(0,))
                cache.update(P=P, S=S)
                f = float(value.sum()) + lam_w * float(np.sum(W * W))
                if Ld is not None:
                    f += lam_w * lg * float(np.sum(P * (Ld @ P)))
                return f

            def naive_grad():
                _, first, second = R.entry_terms(cache["S"], Yd, loss, p_w, q_w, a_bar,
                                                 parts=(1, 2))
                cache["D2"] = second
                G = first @ Q
                if Ld is not None:
                    G += 2.0 * lam_w * lg * (Ld @ cache["P"])
                return Xd.T @ G + 2.0 * lam_w * W

            def naive_hv():
                N = Xd @ V
                U = (cache["D2"] * (N @ Q.T)) @ Q
                if Ld is not None:
                    U += 2.0 * lam_w * lg * (Ld @ N)
                return Xd.T @ U + 2.0 * lam_w * V

            def fast_f():
                return prob.fun(x) + apl.constant

            def fast_grad():
                return prob.grad(x)

            def fast_hv():
                return prob.hess_vec(v)

            fn, gn, hn = naive_f(), naive_grad(), naive_hv()
            ff = fast_f()
            gf, hf = fast_grad(), fast_hv()
            err = max(abs(ff - fn) / abs(fn), rel(gf, gn.ravel()), rel(hf, hn.ravel()))
            t = {}
            t["naive_f"] = best_of(naive_f, args.reps)
            t["naive_grad"] = best_of(naive_grad, args.reps)
            t["naive_hv"] = best_of(naive_hv, args.reps)
            with single_blas_thread():  # as OneClassMF.fit runs it (kmviz._threads)
                prob.fun(x)
                t["fast_f"] = best_of(fast_f, args.reps)
                prob.fun(x)
                t["fast_grad"] = best_of(fast_grad, args.reps)
                t["fast_hv"] = best_of(fast_hv, args.reps)
            row = {"density": f"{pairs.nnz / (m * n):.1%}", "setup": setup, "loss": loss,
                   "max rel. diff": f"{err:.1e}"}
            for part in ("f", "grad", "hv"):
                row[f"{part} naive ms"] = 1e3 * t[f"naive_{part}"]
                row[f"{part} fast ms"] = 1e3 * t[f"fast_{part}"]
                row[f"{part} speed-up"] = t[f"naive_{part}"] / t[f"fast_{part}"]
            rows.append(row)
            print(f"  done: {density:.1%}, {setup}, {loss}", flush=True)
    return rows


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=2000)
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--densities", default="0.03,0.005")
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    if args.quick:
        args.m, args.n, args.reps = 500, 500, 2
    t_start = time.perf_counter()
    header("OCMF all-pairs terms: fast path vs naive O(mn)")
    rows = []
    for density in [float(x) for x in args.densities.split(",")]:
        rows.extend(run_density(args, density))
    print()
    print(table(rows, floatfmt="{:.3g}"))
    ups = [r[f"{part} speed-up"] for r in rows for part in ("f", "grad", "hv")]
    print(f"smallest speed-up: {min(ups):.0f}x (target >= 100x at m = n = 2,000, k = 32)")
    footer(t_start)


if __name__ == "__main__":
    main()
