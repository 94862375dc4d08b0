"""How the cost of one KM BCD iteration grows with the number of ratings: seconds per phase
and peak memory on MovieLens-shaped synthetic data, 100K to 25M ratings, D = 20.

Data: the shapes of MovieLens 100K / 1M / 10M / 25M (943 x 1,682 ... 162,000 x 62,000),
generated chunk-wise with NumPy only (no pandas frame): item popularity a shifted power law,
P(item of rank k) proportional to 1 / (k + 20) (Zipf-Mandelbrot, exponent 1; the top item
takes ~0.6% of the ratings at 62,000 items, MovieLens 25M's top film 0.3%); user activity a
power law, n_u proportional to rank^-0.8 on top of a floor of 20 ratings (MovieLens keeps
users with >= 20), capped at half the items; each user's items drawn by popularity without
repetition (draws with replacement, repeated pairs dropped, the shortfall drawn again four
times, then uniformly among the items, for the few heavy users still short);
ratings 1-5 from a user bias, an item bias and noise, rounded. The arrays go straight into
``kmviz.data.Ratings.from_arrays`` (int64 ids 0..n-1, float64 values).

Each size runs in its own child process (a fresh interpreter from a forkserver, the Numba
kernels loaded from the cache on a tiny fit first): generate, ``from_arrays``, then
``KolmogorovModel(D=20, max_iter=--iters, tol=0)`` with the package defaults (``fast``
BQP solver, exact EVDs, Numba's default threads). Peak memory is the child's peak resident
set (VmHWM of /proc/self/status): once after ``from_arrays`` (generation + validation), then
reset (``echo 5 > /proc/self/clear_refs``) and read again after the fit, so the fit's peak
counts the Ratings it holds plus everything the fit allocates. The phases are the trace's:
build (S_i, v_i of every item), bqp (psi step), lcqp (theta step, Frank-Wolfe per user),
objective; "s / iteration" is their sum, and "setup" the rest of the fit's wall time before
the first iteration's row (validation, probability mapping, the two CSR/CSC layouts, theta's
initialization; the trace's ``wall_s`` is cumulative).

Target (issue 11): linear growth; 25M ratings in <= 60 s per BCD iteration and < 8 GB peak.

    python bench/km/km_scaling.py [--quick] [--sizes 100k,1m,10m,25m] [--iters 2] [--D 20]
                               [--budget S]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _shapes import SHAPES, _reset_peak, movielens_like
from _common import footer, header, load_avg, parser, run_cell, status_kb, table

TARGET_S, TARGET_GB = 60.0, 8.0


def size_cell(emit, label, n_ratings, n_users, n_items, D, iters, seed):
    """Generate one size, build the Ratings, fit; times, trace rows and peaks (child)."""
    import gc
    import warnings

    from kmviz.data import Ratings
    from kmviz.km import KolmogorovModel

    from _common import warmup

    warmup("fast", "exact", D=D)
    _reset_peak()
    base_kb = status_kb("VmRSS")
    t0 = time.perf_counter()
    users, items, values = movielens_like(n_ratings, n_users, n_items, seed)
    t_gen = time.perf_counter() - t0
    raw_kb = status_kb("VmRSS")
    t0 = time.perf_counter()
    ratings = Ratings.from_arrays(users, items, values, r_min=1.0, r_max=5.0,
                                  user_ids=np.arange(n_users), item_ids=np.arange(n_items),
                                  name=f"synthetic {label}")
    t_arrays = time.perf_counter() - t0
    del users, items, values
    gc.collect()
    out = {"n_ratings": ratings.n_ratings, "t_gen": t_gen, "t_from_arrays": t_arrays,
           "base_gb": base_kb / 2**20, "raw_gb": (raw_kb - base_kb) / 2**20,
           "data_peak_gb": status_kb("VmHWM") / 2**20,
           "ratings_gb": (status_kb("VmRSS") - base_kb) / 2**20,
           "top_item_share": float(np.bincount(ratings.items).max() / ratings.n_ratings),
           "max_user": int(np.bincount(ratings.users).max())}
    emit({"stage": "data", **out})
    reset = _reset_peak()
    model = KolmogorovModel(D=D, max_iter=iters, tol=0.0, random_state=seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(ratings, callback=lambda row: emit({"stage": "iter", **dict(row)}))
    wall = time.perf_counter() - t0
    rows = [dict(r) for r in model.trace_.rows]
    out.update(fit_wall=wall, rows=rows, fit_peak_gb=status_kb("VmHWM") / 2**20,
               peak_reset=reset, load=load_avg())
    return out


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="comma list of 100k,1m,10m,25m")
    ap.add_argument("--iters", type=int, default=2, help="BCD iterations per size")
    ap.add_argument("--D", type=int, default=20)
    ap.add_argument("--budget", type=float, default=1800.0, help="seconds per size")
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("KM cost per BCD iteration against the number of ratings")
    sizes = (args.sizes or ("100k,1m" if args.quick else "100k,1m,10m,25m")).split(",")
    rows, phase_rows, mem_rows = [], [], []
    for label in sizes:
        n_ratings, n_users, n_items = SHAPES[label]
        print(f"- {label}: {n_users:,} users x {n_items:,} items, ~{n_ratings:,} ratings; "
              f"load {load_avg()}", flush=True)
        res = run_cell(size_cell, label, n_ratings, n_users, n_items, args.D, args.iters,
                       args.seed, budget=args.budget)
        if not res.ok:
            done = [p for p in res.partial if p.get("stage") == "iter"]
            print(f"  {res.status}: {res.reason}; {len(done)} iteration(s) finished")
            for p in done:
                print(f"  iteration {p['iteration']}: {p['wall_s']:.1f} s")
            rows.append({"size": label, "ratings": "-", "s / BCD iteration": res.reason})
            continue
        v = res.value
        it = v["rows"]
        per_iter = [r["t_build_s"] + r["t_bqp_s"] + r["t_lcqp_s"] + r["t_objective_s"]
                    for r in it]
        setup = it[0]["wall_s"] - per_iter[0]
        for r in it:
            phase_rows.append({
                "size": label, "iteration": r["iteration"], "build s": r["t_build_s"],
                "bqp s": r["t_bqp_s"], "of which dual s": r.get("t_bqp_dual_s"),
                "of which EVD s": r.get("t_evd_s"),
                "of which randomization s": r.get("t_randomization_s"),
                "lcqp s": r["t_lcqp_s"],
                "objective s": r["t_objective_s"],
                "s / iteration": r["t_build_s"] + r["t_bqp_s"] + r["t_lcqp_s"]
                + r["t_objective_s"],
                "FW iterations / user": r["n_fw_iter"] / n_users,
                "dual iterations / item": r["n_dual_iter"] / n_items,
                "psi changed": r["n_psi_changed"]})
        last = per_iter[-1]
        rows.append({"size": label, "users": f"{n_users:,}", "items": f"{n_items:,}",
                     "ratings": f"{v['n_ratings']:,}", "setup s": setup,
                     "iteration 1 s": per_iter[0],
                     f"iteration {len(per_iter)} s": last if len(per_iter) > 1 else None,
                     "s per 1M ratings (last)": last / (v["n_ratings"] / 1e6),
                     "fit peak GB": v["fit_peak_gb"],
                     "load": v["load"]})
        mem_rows.append({"size": label, "ratings": f"{v['n_ratings']:,}",
                         "generate s": v["t_gen"], "from_arrays s": v["t_from_arrays"],
                         "raw arrays GB": v["raw_gb"], "Ratings GB": v["ratings_gb"],
                         "peak generate + from_arrays GB": v["data_peak_gb"],
                         "fit peak GB (incl. Ratings)": v["fit_peak_gb"],
                         "interpreter + kernels GB": v["base_gb"],
                         "top item share": v["top_item_share"],
                         "most active user": v["max_user"]})
        print(f"  done in {res.seconds:.0f} s: iterations {', '.join(f'{x:.1f}' for x in per_iter)}"
              f" s; fit peak {v['fit_peak_gb']:.2f} GB", flush=True)
    print(f"\n## Seconds per BCD iteration and peak memory (D = {args.D}, {args.iters} "
          "iteration(s), the first from a random theta and psi = 0)\n")
    print(table(rows, floatfmt="{:.3g}"))
    print("\n## Where the time goes, per phase (trace columns)\n")
    print(table(phase_rows, floatfmt="{:.3g}"))
    print("\n## Data: generation, Ratings.from_arrays and memory\n")
    print(table(mem_rows, floatfmt="{:.3g}"))
    big = [r for r in rows if r["size"] == "25m" and isinstance(r.get("ratings"), str)
           and r["ratings"] != "-"]
    if big:
        r = big[0]
        last = r.get(f"iteration {args.iters} s") or r["iteration 1 s"]
        print(f"\nTarget, 25M ratings: {last:.1f} s per BCD iteration (<= {TARGET_S:g}: "
              f"{'PASS' if last <= TARGET_S else 'MISS'}), fit peak {r['fit peak GB']:.2f} GB "
              f"(< {TARGET_GB:g}: {'PASS' if r['fit peak GB'] < TARGET_GB else 'MISS'})")
    footer(t_start)


if __name__ == "__main__":
    main()
