"""Kernel MC timing: KKMCEX direct vs matrix-free CG, the two targets, and Figs. 3.5-3.6.

Problems: the thesis's Chapter 3 synthetic matrix (``kmviz.kmc.make_kernel_mc``: two
Erdős–Rényi graphs, p = 0.03, diffusion kernels, ``F = K_row Gamma K_col``), observed
uniformly at random.

1. Targets of issue 9: KKMCEX with s = 6,250 on 250 x 250 in <= 2 s; s = 20,000 on 500 x 500
   through CG in <= 60 s and < 2 GB peak. Every cell runs in a child process (``run_cell``)
   and reports the fit's wall time, its phases, CG iterations, peak RSS of the child (which
   includes the ~0.1 GB of the preloaded interpreter) and NumPy's traced peak during the fit.
2. The vec-trick product ``K_OO v``: dense BLAS route vs the sparse Numba kernel per
   observed density (the crossover sets ``kmviz.kmc.krr.SPARSE_DENSITY``).
3. Fig. 3.5 / 3.6 in shape: NMSE and time vs P_s for KKMCEX, RRMCEX (d = 250), ALS (p = 10;
   its kernels with jitter 1e-4, since it inverts them) and online RRMCEX (one pass),
   noiseless and at snr = 1, with the spectrum shares of F.
4. Online RRMCEX vs ALS on the same entries: time to ALS's final whole-matrix NMSE.

    python bench/kmc/kmc_timing.py [--quick] [--eta 1.0] [--mu 1e-3] [--skip-figs]
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, fmt_s, header, parser, run_cell, table


def _problem(n, s, eta, seed, snr=None):
    from kmviz.kmc import make_kernel_mc

    return make_kernel_mc(n, n, eta=eta, observed=s / (n * n), snr=snr, random_state=seed)


def target_cell(emit, n, s, solver, mu, eta, seed, preconditioner="jacobi", tol=1e-8,
                max_iter=5000, precision="auto", threads=None):
    """One KKMCEX fit in a child: wall and CPU time, phases, iterations, peak memory, NMSE.

    ``precision`` ("auto", "mixed", "double") and ``threads`` (BLAS threads of the dense
    factor; None: ``krr.factor_threads()``, which reads the load) set the direct solve's
    module switches in the child.
    """
    import resource
    import tracemalloc

    from kmviz.kmc import KernelMatrixCompletion, krr, nmse

    if precision == "double":
        krr.dense.MIXED_MIN_S = 10 ** 12
    elif precision == "mixed":
        krr.dense.MIXED_MIN_S = 0
    if threads is not None:  # each krr module reads its own name (as krr.py's did)
        for module in (krr.dense, krr.factored, krr.eigen):
            module.factor_threads = lambda n=None: threads

    ratings, truth = _problem(n, s, eta, seed)
    # warm the Numba kernels (cache load) on a tiny problem first
    small, _ = _problem(20, 40, eta, seed)
    KernelMatrixCompletion(solver="cg", max_iter=2, tol=0.0).fit(small)
    model = KernelMatrixCompletion(mu=mu, solver=solver, preconditioner=preconditioner,
                                   tol=tol, max_iter=max_iter)
    tracemalloc.start()
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    c0 = time.process_time()
    model.fit(ratings, row_kernel=truth.row_kernel, col_kernel=truth.col_kernel)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    frame = model.trace_.to_frame()
    phases = {c[2:-2]: float(frame[c].sum()) for c in frame if c.startswith("t_")}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    F = model.completed_matrix()
    last = model.trace_.rows[-1]
    return {"wall": wall, "cpu": cpu, "load": load, "phases": phases, "iters": model.n_iter_,
            "threads": last.get("blas_threads"), "refine": last.get("refine_iter"),
            "mixed": last.get("mixed_precision"),
            "stop": model.trace_.stop_reason, "residual": last.get("cg_residual"),
            "peak_rss_gb": rss / 2 ** 30, "traced_gb": traced / 2 ** 30,
            "nmse": nmse(F, truth.matrix), "objective": last["objective"]}


def matvec_cell(emit, n, densities, reps, seed):
    from kmviz.kmc import krr
    from kmviz.kmc.rkhs import diffusion_kernel, erdos_renyi_graph

    K = diffusion_kernel(erdos_renyi_graph(n, 0.03, random_state=seed))
    rng = np.random.default_rng(seed)
    out = []
    for dens in densities:
        s = int(dens * n * n)
        flat = rng.choice(n * n, s, replace=False)
        rows, cols = flat % n, flat // n
        v = rng.standard_normal(s)
        row = {"n": n, "density": dens, "s": s}
        for route in ("dense", "sparse"):
            g = krr.KronGram(K, K, rows, cols, route=route)
            g.matvec(v)
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                g.matvec(v)
                times.append(time.perf_counter() - t0)
            row[f"{route} min"] = min(times)
            row[f"{route} median"] = float(np.median(times))
        row["dense/sparse (min)"] = row["dense min"] / row["sparse min"]
        out.append(row)
    return out


def figs_cell(emit, n, pcts, eta, mu_grid, snr, seed):
    """NMSE and seconds per method and P_s, best mu over the grid (oracle tuning, as the
    thesis's grid search)."""
    import warnings

    from kmviz.exceptions import ConvergenceWarning
    from kmviz.kmc import KernelMatrixCompletion, nmse, spectrum_shares

    rows = []
    for pct in pcts:
        ratings, truth = _problem(n, int(pct / 100 * n * n), eta, seed, snr=snr)
        kern = dict(row_kernel=truth.row_kernel, col_kernel=truth.col_kernel)
        methods = {
            "KKMCEX": dict(method="kkmcex", solver="direct" if pct <= 4 else "cg", tol=1e-8,
                           max_iter=3000),
            "RRMCEX d=250": dict(method="rrmcex", n_components=250),
            "online RRMCEX (1 pass)": dict(method="online_rrmcex", n_components=250,
                                           max_iter=1, tol=0.0),
            "ALS p=10": dict(method="als", rank=10, max_iter=200, tol=1e-6, jitter=1e-4),
        }
        for name, prm in methods.items():
            best = (np.inf, None, None)
            for mu in mu_grid:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    t0 = time.perf_counter()
                    m = KernelMatrixCompletion(mu=mu, random_state=seed, **prm).fit(
                        ratings, **kern)
                    sec = time.perf_counter() - t0
                e = nmse(m.completed_matrix(), truth.matrix)
                if e < best[0]:
                    best = (e, mu, sec)
            rows.append({"P_s %": pct, "method": name, "NMSE": best[0], "best mu": best[1],
                         "seconds": best[2]})
            emit(rows[-1])
    shares = spectrum_shares(truth.matrix)
    return {"rows": rows, "shares": shares}


def online_cell(emit, n, pct, eta, mu_grid, ds, seed):
    """Time for online RRMCEX to reach ALS's final whole-matrix NMSE on the same entries
    (the thesis's Figs. 3.10-3.11 claim), and ALS's time to reach each online run's final
    NMSE (the comparison at equal error both ways), all tracked with ``truth_nmse`` per row,
    each at its best mu of the grid (oracle). Online RRMCEX for each d in ``ds``, four passes
    in rows of a tenth of a pass; the closed-form RRMCEX NMSE with the same d (its floor)."""
    import warnings

    from kmviz.exceptions import ConvergenceWarning
    from kmviz.kmc import KernelMatrixCompletion, nmse

    ratings, truth = _problem(n, int(pct / 100 * n * n), eta, seed)
    kern = dict(row_kernel=truth.row_kernel, col_kernel=truth.col_kernel, truth=truth.matrix)
    runs = [("ALS p=10", dict(method="als", rank=10, max_iter=300, tol=1e-7, jitter=1e-4),
             None)]
    for d in ds:
        runs.append((f"online RRMCEX d={d}",
                     dict(method="online_rrmcex", n_components=d, max_iter=40,
                          batch_size=ratings.n_ratings // 10, tol=0.0), d))
    out = {}
    for name, prm, d in runs:
        best = None
        for mu in mu_grid:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                m = KernelMatrixCompletion(random_state=seed, mu=mu, **prm).fit(ratings, **kern)
            fr = m.trace_.to_frame()
            if best is None or fr["truth_nmse"].min() < best[1]["truth_nmse"].min():
                best = (mu, fr)
        mu, fr = best
        # wall time without the truth bookkeeping
        clock = fr["wall_s"] - fr["t_truth_s"].fillna(0).cumsum()
        floor = None
        if d is not None:
            floor = min(nmse(KernelMatrixCompletion(method="rrmcex", n_components=d, mu=g)
                             .fit(ratings, row_kernel=truth.row_kernel,
                                  col_kernel=truth.col_kernel).completed_matrix(),
                             truth.matrix) for g in mu_grid)
        seen = (fr["n_seen"] / ratings.n_ratings if "n_seen" in fr else fr["iteration"])
        out[name] = (mu, fr["truth_nmse"].to_numpy(), clock.to_numpy(), seen.to_numpy(), floor)
        emit(name)
    als = out["ALS p=10"]
    target = als[1][-1]
    rows = []
    for name, (mu, e, clock, seen, floor) in out.items():
        hit = np.flatnonzero(e <= target)
        row = {"method": name, "best mu": mu, "final NMSE": f"{e[-1]:.4g}",
               "min NMSE": f"{e.min():.4g}",
               "RRMCEX floor (same d)": "-" if floor is None else f"{floor:.4g}",
               "s to final": fmt_s(clock[-1]),
               "s to ALS's final NMSE": fmt_s(clock[hit[0]]) if hit.size else "never",
               "passes / sweeps by then": f"{seen[hit[0]]:.3g}" if hit.size else "-"}
        if name != "ALS p=10":
            back = np.flatnonzero(als[1] <= e.min())
            row["ALS s to this min NMSE"] = fmt_s(als[2][back[0]]) if back.size else "never"
        rows.append(row)
    return rows


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--eta", type=float, default=1.0)
    p.add_argument("--mu", type=float, default=1e-3)
    p.add_argument("--budget", type=float, default=600)
    p.add_argument("--skip-figs", action="store_true")
    p.add_argument("--reps", type=int, default=1, help="repeat the target cells")
    p.add_argument("--only-targets", action="store_true", help="section 1 only")
    p.add_argument("--only-figs", action="store_true", help="sections 3 and 4 only")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("Kernel MC: KKMCEX direct vs CG, issue 9's timing targets, Figs. 3.5-3.6")

    if not args.only_figs:
        # 1. targets --------------------------------------------------------------------------
        print(f"## 1. Targets (thesis synthetic, eta = {args.eta}, mu = {args.mu}, noiseless, "
              f"CG tol 1e-8 on the relative residual)\n")
        # (label, n, s, solver, preconditioner, precision, factor threads, target s, GB)
        cells = [
            ("250 x 250, s = 6,250", 250, 6250, "direct", "-", "mixed", None, 2.0, None),
            ("250 x 250, s = 6,250", 250, 6250, "direct", "-", "mixed", 1, 2.0, None),
            ("250 x 250, s = 6,250", 250, 6250, "direct", "-", "mixed", 2, 2.0, None),
            ("250 x 250, s = 6,250", 250, 6250, "direct", "-", "double", None, 2.0, None),
            ("250 x 250, s = 6,250", 250, 6250, "direct", "-", "double", 2, 2.0, None),
            ("250 x 250, s = 6,250", 250, 6250, "cg", "jacobi", "-", None, 2.0, None),
            ("250 x 250, s = 6,250", 250, 6250, "cg", "eigen", "-", None, 2.0, None),
            ("500 x 500, s = 20,000", 500, 20000, "cg", "jacobi", "-", None, 60.0, 2.0),
            ("500 x 500, s = 20,000", 500, 20000, "cg", "eigen", "-", None, 60.0, 2.0),
        ]
        if args.quick:
            cells = [c for c in cells if c[1] == 250]
        rows = []
        for _ in range(args.reps):
            for label, n, s, solver, pc, prec, threads, target_s, target_gb in cells:
                res = run_cell(target_cell, n, s, solver, args.mu, args.eta, args.seed,
                               preconditioner=pc if solver == "cg" else "jacobi",
                               precision=prec if solver == "direct" else "auto",
                               threads=threads, budget=args.budget)
                name = (f"direct {prec}, threads {threads or 'auto'}" if solver == "direct"
                        else f"cg ({pc})")
                row = {"problem": label, "solver": name}
                if not res.ok:
                    row.update(wall_s="-", note=res.reason)
                    rows.append(row)
                    continue
                v = res.value
                ph = v["phases"]
                ok = v["wall"] <= target_s and (target_gb is None or
                                                v["peak_rss_gb"] < target_gb)
                direct = solver == "direct"
                row.update({
                    "load": f"{v['load']:.1f}", "fit s": fmt_s(v["wall"]),
                    "CPU s": fmt_s(v["cpu"]), "target s": target_s,
                    "kernels s": fmt_s(ph.get("kernels")),
                    "gram s": fmt_s(ph.get("gram")) if direct else "-",
                    "factor s": fmt_s(ph.get("factor", 0) + ph.get("solve", 0)) if direct
                    else "-",
                    "refine s (sweeps)": f"{fmt_s(ph.get('refine', 0))} ({v['refine']})"
                    if direct and v["mixed"] else "-",
                    "threads": v["threads"] if direct else "-",
                    "setup s": fmt_s(ph.get("setup", 0) + ph.get("eig", 0)) if not direct
                    else "-",
                    "cg s": fmt_s(ph.get("cg")) if not direct else "-",
                    "iters": v["iters"], "rel. residual": "-" if v["residual"] is None
                    else f"{v['residual']:.1e}",
                    "peak RSS GB": f"{v['peak_rss_gb']:.2f}",
                    "numpy peak GB": f"{v['traced_gb']:.2f}",
                    "NMSE": f"{v['nmse']:.4g}", "verdict": "PASS" if ok else "MISS"})
                rows.append(row)
                print(table([row]).splitlines()[-1], file=sys.stderr, flush=True)
        print(table(rows))
        print("fit s: the whole `fit` (kernel checks, K_OO or CG set-up, solve); CPU s: the "
              "child's process time over the fit (all threads; a spinning BLAS thread counts); "
              "load: 1-min load average just before the fit; direct: `mixed` = float32 "
              "factor + float64 refinement to LAPACK dsposv's backward-error test, `double` = "
              "one float64 potrf; threads `auto` = krr.factor_threads() (cores left free by "
              "the load); peak RSS: the child process (interpreter and kmviz included).\n")

        if args.only_targets:
            footer(t_start)
            return
        # 2. matvec crossover --------------------------------------------------------------------
        from kmviz.kmc.krr import SPARSE_DENSITY

        print("## 2. The vec-trick product K_OO v: dense BLAS route vs sparse Numba kernel "
              "(seconds; min and median of the repetitions)\n")
        dens = [0.01, 0.05, 0.1, 0.25, 0.5]
        mv = []
        for n in ((250,) if args.quick else (250, 500)):
            res = run_cell(matvec_cell, n, dens, 10 if args.quick else 30, args.seed, budget=300)
            if res.ok:
                mv += res.value
        for r in mv:
            for k in ("dense min", "dense median", "sparse min", "sparse median"):
                r[k] = fmt_s(r[k])
            r["dense/sparse (min)"] = f"{r['dense/sparse (min)']:.2f}"
        print(table(mv))
        print(f"sparse route used below density {SPARSE_DENSITY} (kmviz.kmc.krr.SPARSE_DENSITY)\n")

    # 3. Figs. 3.5-3.6 -------------------------------------------------------------------
    if not args.skip_figs:
        n = 120 if args.quick else 250
        pcts = [1, 4, 10]
        grid = [1e-8, 1e-6, 1e-4, 1e-2] if not args.quick else [1e-6, 1e-3]
        for snr in (None, 1.0):
            print(f"## 3. Fig. 3.5 / 3.6 in shape: {n} x {n}, eta = {args.eta}, "
                  f"{'noiseless' if snr is None else f'snr = {snr:g}'}; best mu of "
                  f"{grid} per cell (oracle, as the thesis's grid search)\n")
            res = run_cell(figs_cell, n, pcts, args.eta, grid, snr, args.seed,
                           budget=args.budget * 3)
            out = res.value["rows"] if res.ok else [r for r in res.partial]
            for r in out:
                r["NMSE"] = f"{r['NMSE']:.3g}"
                r["seconds"] = fmt_s(r["seconds"])
            print(table(out))
            if res.ok:
                sh = res.value["shares"]
                print(f"spectrum of F: top-10 share of sigma {sh['sigma']:.3f}, of sigma^2 "
                      f"{sh['sigma2']:.3f} (thesis: 96 % of the 'eigenvalues')\n")
            else:
                print(f"(cell stopped: {res.reason})\n")
    # 4. online RRMCEX vs ALS -------------------------------------------------------------
    n = 120 if args.quick else 250
    print(f"## 4. Online RRMCEX vs ALS on the same entries: {n} x {n}, P_s = 10 %, "
          f"eta = {args.eta}, noiseless (whole-matrix NMSE per row; bookkeeping time "
          f"excluded)\n")
    res = run_cell(online_cell, n, 10, args.eta, [1e-8, 1e-6, 1e-4, 1e-2], (250, 1000),
                   args.seed, budget=args.budget * 2)
    print(table(res.value) if res.ok else f"(cell stopped: {res.reason})\n")
    footer(t_start)


if __name__ == "__main__":
    main()
