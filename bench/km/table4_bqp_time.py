"""Table IV of the KM paper: BQP time per BCD iteration vs D for every BQP solver, on the toy
set D1 and on MovieLens 100K (D2); and the LCQP (Frank-Wolfe) time per BCD iteration (the
paper's Table III column, ~7.1 s on ML100K).

How each cell is measured:
- fit: KolmogorovModel(D, bqp_solver, evd) fitted for --iters BCD iterations (tol=0, seeded,
  p = r / r_max on ML100K, the 80% train part of a seeded 80/20 split); the BQP seconds of
  each iteration are the trace's t_bqp_s. Reported: mean over all iterations (the paper's
  "total time / BCD iterations"), and the first iteration (random Dirichlet theta, cold dual,
  psi = 0) separately; later iterations are warm-started from the previous duals.
- extrapolated (ML100K only, labelled): when a solver would not finish the fit within the cell
  budget (judged from the sample), or always for SDR on ML100K, the BQPs of k random items at
  the first iteration's statistics (random Dirichlet theta, psi_prev = 0, cold) are timed in
  one batch and the per-item time is multiplied by the number of items.
- "-": over the budget (reason given), or not run (B&B beyond D = 20, SDR beyond D = 20 on D1
  and D = 12 on ML100K, as the paper; and any D above one where the same solver already ran
  out of budget).

    python bench/km/table4_bqp_time.py [--quick] [--iters N] [--budget S] [--k K]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import (
    bqp_seconds, fmt_s, footer, header, item_stats, km_fit_rows, load_ml100k, parser,
    random_theta, run_cell, sample_items, table,
)

SOLVERS = [
    ("original GD (Alg. 1)", "gd", "exact"),
    ("enhanced GD, exact EVD (Alg. 2)", "enhanced", "exact"),
    ("enhanced GD + Lanczos (Alg. 5)", "enhanced", "lanczos"),
    ("fast (default)", "fast", "exact"),
    ("fast + Lanczos", "fast", "lanczos"),
    ("B&B (exact, DMO-like)", "bnb", "exact"),
    ("SDRwR (cvxpy)", "sdr", "exact"),
    ("quasi-Newton (BFGS on the dual)", "bfgs", "exact"),
]
DS = (4, 8, 12, 20, 50, 100)
# paper Table IV, seconds (None = not reported)
PAPER = {
    "D1": {
        "SDRwR": (7.11, 7.36, 7.62, None, None, None),
        "DMO": (0.121, 1.85, 1.00e3, None, None, None),
        "quasi-Newton": (None, None, None, 1.91, 17.6, 80.4),
        "original GD": (8.16e-2, 1.12e-1, 1.32e-1, 1.47, 14.8, 67.6),
        "enhanced GD (exact EVD)": (8.10e-2, 8.60e-2, 1.07e-1, 1.63e-1, 5.34e-1, 2.56),
        "enhanced GD (approx. EVD)": (None, None, None, 1.55e-1, 1.98e-1, 2.87e-1),
    },
    "ML100K": {
        "SDRwR": (299, 308, 318, None, None, None),
        "DMO": (20.2, 78.0, 7.57e3, None, None, None),
        "original GD": (21.4, 22.4, 24.1, 102, 553, 5.10e3),
        "enhanced GD (exact EVD)": (21.0, 21.9, 23.0, 26.7, 54.9, 259),
        "enhanced GD (approx. EVD)": (None, None, None, 25.8, 32.0, 38.7),
    },
}
PAPER_LCQP = {"D1": "0.137-0.151 (D = 8)", "ML100K": "7.05-7.11 (D = 8)"}


def sample_cell(emit, S, v, method, evd, gamma):
    """Per-item seconds of one cold batch of the sampled items' BQPs (child process)."""
    from kmviz.km.solvers import solve_bqp_batch

    from _common import warmup

    warmup(method, evd)
    kw = {} if method in ("sdr", "bfgs", "bnb") else {"evd": evd}
    t0 = time.perf_counter()
    res = solve_bqp_batch(S, v, np.zeros(v.shape), method=method, gamma=gamma, rng=0, **kw)
    dt = time.perf_counter() - t0
    return {"per_item": dt / S.shape[0], "evd_item": float(np.mean(res.n_evd)),
            "k": S.shape[0]}


def limit(dataset, method, D):
    if method == "bnb" and D > 20:
        return "not run (exponential)"
    if method == "sdr" and D > (20 if dataset == "D1" else 12):
        return "not run (cvxpy SDP too slow)"
    return None


def run_dataset(name, ratings, Ds, iters, budget, k, seed, gamma, quick_solvers=None):
    """Returns {(method, evd, D): dict(text=..., evd=..., lcqp=...)}."""
    out = {}
    dead = {}  # (method, evd) -> D where it ran out of budget
    n_items = int(np.sum(np.bincount(np.asarray(ratings.items), minlength=ratings.n_items) > 0))
    for D in Ds:
        S = v = None
        if name == "ML100K":
            items = sample_items(ratings, k, seed)
            S, v = item_stats(ratings, random_theta(ratings.n_users, D, seed), items, "max")
        for label, method, evd in SOLVERS:
            if quick_solvers is not None and (method, evd) not in quick_solvers:
                continue
            key = (method, evd, D)
            why = limit(name, method, D)
            if why is None and (method, evd) in dead:
                why = f"skipped (over budget at D = {dead[method, evd]})"
            if why:
                out[key] = {"text": f"- ({why})"}
                continue
            extrap = None
            if name == "ML100K":
                sc = run_cell(sample_cell, S, v, method, evd, gamma, budget=budget)
                if not sc.ok:
                    out[key] = {"text": f"- ({sc.reason} on {len(S)} items)"}
                    dead[method, evd] = D
                    continue
                est = sc.value["per_item"] * n_items
                extrap = {"text": f"~{fmt_s(est)} [extrapolated from {sc.value['k']} items, "
                                  f"1st iteration]", "evd": sc.value["evd_item"]}
                if method == "sdr" or est * 1.5 > budget:
                    out[key] = extrap
                    if est > 4 * budget:
                        dead[method, evd] = D
                    continue
            fit_ratings = ratings
            cell = run_cell(km_fit_rows, fit_ratings, D, iters, seed, budget=budget,
                            bqp_solver=method, evd=evd, gamma=gamma,
                            probability="max" if name == "ML100K" else "minmax")
            rows = cell.value if cell.ok else cell.partial
            if not rows:
                if extrap is not None:
                    out[key] = extrap
                else:
                    out[key] = {"text": f"- ({cell.reason} before the 1st BCD iteration "
                                        f"ended)"}
                dead[method, evd] = D
                continue
            t = [bqp_seconds(r) for r in rows]
            n_it = ratings.n_items if name == "D1" else n_items
            txt = f"{fmt_s(float(np.mean(t)))} (1st {fmt_s(t[0])})"
            if not cell.ok:
                txt += f" [{len(rows)}/{iters} it., {cell.reason}]"
                dead[method, evd] = D
            out[key] = {"text": txt,
                        "evd": float(np.mean([r["n_evd"] for r in rows])) / n_it,
                        "lcqp": float(np.mean([r["t_lcqp_s"] for r in rows]))}
    return out


def print_dataset(name, res, Ds, quick_solvers=None):
    print(f"## {name}: BQP seconds per BCD iteration, mean over the fit (1st iteration)\n")
    rows = []
    for label, method, evd in SOLVERS:
        if quick_solvers is not None and (method, evd) not in quick_solvers:
            continue
        rows.append({"solver": label, **{f"D={D}": res.get((method, evd, D), {}).get("text")
                                         for D in Ds}})
    for plabel, vals in PAPER[name].items():
        rows.append({"solver": f"paper: {plabel}",
                     **{f"D={D}": (fmt_s(vals[DS.index(D)]) if vals[DS.index(D)] else "-")
                        for D in Ds}})
    print(table(rows))
    print(f"## {name}: EVDs (or Lanczos runs) per item per BCD iteration\n")
    rows = []
    for label, method, evd in SOLVERS:
        if method in ("bnb", "sdr"):
            continue
        if quick_solvers is not None and (method, evd) not in quick_solvers:
            continue
        rows.append({"solver": label, **{
            f"D={D}": (f"{res[(method, evd, D)]['evd']:.1f}"
                       if "evd" in res.get((method, evd, D), {}) else "-") for D in Ds}})
    print(table(rows))
    print(f"## {name}: LCQP (pairwise Frank-Wolfe) seconds per BCD iteration\n")
    rows = []
    for D in Ds:
        vals = [r["lcqp"] for (m, e, d), r in res.items() if d == D and "lcqp" in r]
        rows.append({"D": D, "LCQP s / BCD iteration (median over the fits)":
                     fmt_s(float(np.median(vals))) if vals else "-",
                     "fits": len(vals), "paper (Table III)": PAPER_LCQP[name] if D == 8 else "-"})
    print(table(rows))


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=None, help="BCD iterations per fit (default "
                    "3 on D1, 2 on ML100K)")
    ap.add_argument("--budget", type=float, default=None, help="seconds per cell (default 15 "
                    "on D1 and 30 on ML100K; --quick 10 / 20)")
    ap.add_argument("--k", type=int, default=30, help="items sampled for extrapolation")
    ap.add_argument("--gamma", type=float, default=100.0)
    ap.add_argument("--no-ml100k", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("Table IV: BQP seconds per BCD iteration vs D, all solvers; LCQP seconds")
    b1 = args.budget or (10.0 if args.quick else 15.0)
    b2 = args.budget or (20.0 if args.quick else 30.0)
    it1 = args.iters or 3
    it2 = args.iters or 2
    ds1 = (4, 8) if args.quick else DS
    ds2 = (8,) if args.quick else DS
    qs = [("fast", "exact"), ("enhanced", "exact"), ("sdr", "exact")] if args.quick else None
    print(f"gamma = {args.gamma:g}, n_rand = 50, dual eps = 1e-6, seed {args.seed}. D1: "
          f"{it1}-iteration fits of km_toy(20 x 40), budget {b1:.0f} s per cell. ML100K: "
          f"{it2}-iteration fits on the 80% train part, budget {b2:.0f} s per cell; "
          f"extrapolations from k = {args.k} random items. Times in seconds on this machine "
          f"(paper: MATLAB cputime on an i7-7700), so compare ratios across a row or column, "
          f"not with the paper's absolute values.\n")

    from kmviz.data import load

    res1 = run_dataset("D1", load("km-toy"), ds1, it1, b1, args.k, args.seed, args.gamma, qs)
    print_dataset("D1", res1, ds1, qs)
    if not args.no_ml100k:
        r = load_ml100k(args.ml100k)
        if r is not None:
            train, _ = r.split(0.2, random_state=args.seed)
            res2 = run_dataset("ML100K", train, ds2, it2, b2, args.k, args.seed, args.gamma,
                               qs)
            print_dataset("ML100K", res2, ds2, qs)
    print("Notes: the cells of one column ran one after another on a shared 2-core box "
          "(load average in the header/footer); the ratios between solvers are the result. "
          "Extrapolated cells time the cold first iteration only; in a fit later iterations "
          "are warm-started and cheaper.")
    footer(t_start)


if __name__ == "__main__":
    main()
