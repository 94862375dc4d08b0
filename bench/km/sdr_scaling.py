"""The cvxpy SDR baseline against 'fast' and enhanced GD as D grows (the speed-up of target (c)
as a function of D).

ML100K items (80% train part), S and v at a Dirichlet(1) theta (a first BCD iteration), cold
duals, no incumbent, the same 50 Gaussian draws for every solver. Per item and serial: SDR is
timed item by item (median; alongside, the solve_time Clarabel reports by its own clock, which
can exceed the wall time around it); 'fast' and enhanced as one batch on one Numba thread / k
(best of 3 for 'fast'). Enhanced runs with a budget of --budget-enh seconds per D and is shown
as '-' beyond it.

    python bench/km/sdr_scaling.py [--quick] [--sizes 8,16,24,32,50] [--budget-enh S]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import (
    footer, header, item_stats, load_ml100k, parser, random_theta, run_cell, sample_items,
    table,
)


def batch_cell(emit, S, v, xi, method, reps):
    import numba

    from kmviz.km.solvers import solve_bqp_batch

    from _common import warmup

    warmup(method)
    numba.set_num_threads(1)
    k, D = v.shape
    best, res = np.inf, None
    for _ in range(reps):
        t0 = time.perf_counter()
        res = solve_bqp_batch(S, v, np.zeros(v.shape), method=method, xi=xi)
        best = min(best, time.perf_counter() - t0)
    return {"t": best / k, "f": res.objective}


def sdr_cell(emit, S, v, xi):
    from kmviz.km import solve_bqp

    from _common import warmup

    warmup("sdr")
    solve_bqp(S[0], v[0], method="sdr", xi=xi[0])  # builds this size's problem
    t, t_ipm, f = [], [], []
    for i in range(v.shape[0]):
        t0 = time.perf_counter()
        r = solve_bqp(S[i], v[i], method="sdr", xi=xi[i])
        t.append(time.perf_counter() - t0)
        t_ipm.append(r.info["solve_time"])
        f.append(r.objective)
        emit(i)
    return {"t": float(np.median(t)), "t_ipm": float(np.median(t_ipm)), "f": np.array(f)}


def gap(f, f_ref):
    return f"{100 * (f.sum() - f_ref.sum()) / abs(f_ref.sum()):+.2f}%"


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="D values (default 8,16,24,32,50; quick 8,16)")
    ap.add_argument("--budget-enh", type=float, default=60.0)
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("cvxpy SDR vs 'fast' and enhanced GD across D (ML100K items, serial, per item)")
    r = load_ml100k(args.ml100k)
    if r is None:
        footer(t_start)
        return
    train, _ = r.split(0.2, random_state=args.seed)
    sizes = [int(x) for x in (args.sizes or ("8,16" if args.quick else "8,16,24,32,50"))
             .split(",")]
    rows = []
    for D in sizes:
        k = max(4, min(30, 400 // D)) if not args.quick else 8
        items = sample_items(train, k, args.seed + 5)
        S, v = item_stats(train, random_theta(train.n_users, D, args.seed + 1), items)
        xi = np.random.default_rng(args.seed).standard_normal((len(items), 50, D + 1))
        cs = run_cell(sdr_cell, S, v, xi, budget=600)
        cf = run_cell(batch_cell, S, v, xi, "fast", 3, budget=120)
        ce = run_cell(batch_cell, S, v, xi, "enhanced", 1, budget=args.budget_enh)
        row = {"D": D, "items": len(items)}
        if cs.ok:
            row["SDR ms"] = cs.value["t"] * 1e3
            row["Clarabel solve_time ms"] = cs.value["t_ipm"] * 1e3
        for name, c in (("fast", cf), ("enhanced", ce)):
            if c.ok:
                row[f"{name} ms"] = c.value["t"] * 1e3
                if cs.ok:
                    row[f"SDR / {name}"] = cs.value["t"] / c.value["t"]
                    row[f"{name} objective vs SDR"] = gap(c.value["f"], cs.value["f"])
            else:
                row[f"{name} ms"] = f"- ({c.reason})"
        rows.append(row)
        print(f"D = {D} done", flush=True)
    print()
    print(table(rows, ["D", "items", "SDR ms", "Clarabel solve_time ms", "fast ms", "SDR / fast",
                       "fast objective vs SDR", "enhanced ms", "SDR / enhanced",
                       "enhanced objective vs SDR"]))
    print("Objective: summed BQP objective of the returned psi relative to SDR's (negative: "
          "better than SDR). Times on a shared 2-core box; the ratios are the claim.")
    footer(t_start)


if __name__ == "__main__":
    main()
