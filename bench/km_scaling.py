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

    python bench/km_scaling.py [--quick] [--sizes 100k,1m,10m,25m] [--iters 2] [--D 20]
                               [--budget S]
"""

from __future__ import annotations

import time

import numpy as np

from _common import footer, header, load_avg, parser, run_cell, status_kb, table

#: (label, n_ratings, n_users, n_items): the MovieLens releases' shapes.
SHAPES = {
    "100k": (100_000, 943, 1_682),
    "1m": (1_000_209, 6_040, 3_706),
    "10m": (10_000_054, 69_878, 10_677),
    "25m": (25_000_095, 162_000, 62_000),
}
TARGET_S, TARGET_GB = 60.0, 8.0


def _activity(n_ratings, n_users, n_items, rng):
    """Ratings per user: a floor of 20 plus a power-law share of the rest, capped at half
    the items (the excess of capped users handed on to the others)."""
    floor = min(20, n_items // 2)
    cap = n_items // 2
    w = np.arange(1, n_users + 1, dtype=np.float64) ** -0.8
    n_u = np.full(n_users, floor, dtype=np.int64)
    left = n_ratings - floor * n_users
    free = np.ones(n_users, bool)
    for _ in range(50):
        if left <= 0 or not free.any():
            break
        add = np.floor(left * w * free / (w * free).sum()).astype(np.int64)
        add[np.flatnonzero(free)[: left - int(add.sum())]] += 1  # rounding, to the first
        n_u += add
        over = np.maximum(n_u - cap, 0)
        n_u -= over
        free &= n_u < cap
        left = int(over.sum())
    rng.shuffle(n_u)
    return n_u


def movielens_like(n_ratings, n_users, n_items, seed, chunk_users=8192):
    """(users, items, values) arrays of ``n_ratings`` distinct pairs (module docstring)."""
    rng = np.random.default_rng(seed)
    n_u = _activity(n_ratings, n_users, n_items, rng)
    pop = 1.0 / (np.arange(n_items, dtype=np.float64) + 20.0)
    cdf = np.cumsum(pop / pop.sum())
    cdf[-1] = 1.0
    item_of_rank = rng.permutation(n_items)  # popularity rank -> item index
    rank_of_item = np.argsort(item_of_rank)
    b_user = rng.normal(0.0, 0.45, n_users)
    # popular items are rated a little higher, as in MovieLens
    b_item = rng.normal(0.0, 0.35, n_items) + 0.25 * (cdf[rank_of_item] < 0.5)
    keys_out, vals_out = [], []
    for lo in range(0, n_users, chunk_users):
        hi = min(lo + chunk_users, n_users)
        want = n_u[lo:hi]
        keys = np.zeros(0, np.int64)
        need = want.copy()
        # by popularity, with replacement, repeated pairs dropped, the shortfall drawn again;
        # after 4 rounds the few users still short (heavy users, where the rare items are
        # what is left) get uniform draws, which converge since n_u <= n_items / 2
        for rnd in range(500):
            if not need.any():
                break
            u = np.repeat(np.arange(lo, hi, dtype=np.int64), need)
            if rnd < 4:
                ranks = np.searchsorted(cdf, rng.random(u.size), side="right")
                it = item_of_rank[np.minimum(ranks, n_items - 1)]
            else:
                it = rng.integers(0, n_items, u.size)
            keys = np.concatenate([keys, u * n_items + it])
            keys.sort()  # then drop repeated pairs (np.union1d's hash path is ~15x slower)
            keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
            need = want - np.bincount(keys // n_items - lo, minlength=hi - lo)
        u, i = np.divmod(keys, n_items)
        r = 3.5 + b_user[u] + b_item[i] + rng.normal(0.0, 0.9, keys.size)
        keys_out.append(keys)
        vals_out.append(np.clip(np.rint(r), 1.0, 5.0))
    keys = np.concatenate(keys_out)
    del keys_out
    users, items = np.divmod(keys, n_items)
    del keys
    return users, items, np.concatenate(vals_out)


def _reset_peak():
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


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
