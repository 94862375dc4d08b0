"""KM and implicit ALS side by side on the same MovieLens-shaped ratings: seconds per
iteration, the ratio, peak memory, KM's phase shares, and the bytes each iteration streams
against one pass over the ratings at this box's measured memory bandwidth (issue 36).

Data: ``km_scaling.movielens_like`` (NumPy only: Zipf-Mandelbrot item popularity, power-law
user activity, MovieLens' shapes), generated once per size in this process and written to a
temporary ``.npz`` that the child processes read (deleted at the end).

Each model runs in its own child process (``python bench/km/km_vs_als.py --child ...``, a fresh
interpreter), so each peak RSS (VmHWM, reset with ``/proc/self/clear_refs`` after the data
are loaded) is that model's alone, with the ratings it holds:

- KM: ``KolmogorovModel(D=--D, max_iter=--iters, tol=0)``, package defaults (``fast`` BQP,
  exact EVDs, Numba's default threads), on ``Ratings.from_arrays`` of the arrays. Seconds per
  iteration = the trace's phases build + bqp + lcqp + objective.
- implicit ALS: ``AlternatingLeastSquares(factors=--D, iterations=--iters)`` (its defaults:
  CG solver, float32, all cores, OpenBLAS at one thread as implicit asks) on the users x items
  CSR of the same pairs with the ratings as confidences. Seconds per iteration = implicit's own
  per-epoch callback time (both half-steps).

"s / iteration" is the median of iterations 2..k (the first KM iteration starts from psi = 0,
cold duals); "CPU s/iter" is the child's process CPU time over the same iterations (both
threads), less sensitive than wall time to the other loads on a shared box. ``--ref TREE`` adds a KM column run from another source tree (for example the
code at an older commit, extracted with ``git archive``), in the same run, so a change is
measured as a before/after ratio on the same data and load.

Bytes per iteration (a model of the streamed arrays, not a hardware counter): KM streams the
CSC layout in the build (8 B index + 8 B value per rating), the CSR layout in Frank-Wolfe
(16 B, plus the rated item's support offsets, 16 B), and users, items, p and the prediction in
the objective (40 B): 88 B per rating, plus gathers of theta rows (8 D B per rating, twice)
and psi rows (8 D B) that stay in cache while theta and psi fit there. ALS streams its CSR
twice (user side and item side: int32 index + float32 value, 8 B each), plus factor gathers
(4 D B per rating per side). "one pass" is 16 B per rating (one int64 + float64 layout) read
at the bandwidth of a single-threaded NumPy sum over a 512 MB array (best of 5).

    python bench/km/km_vs_als.py [--sizes 1m,10m] [--iters 3] [--D 20] [--ref TREE]
                              [--no-als] [--budget S]
    python bench/km/km_vs_als.py --sizes 1m,10m,25m      # 25M: several minutes more
    python bench/km/km_vs_als.py --sizes ml100k,1m --iters 10 --no-als --ref TREE
                                                      # trajectories against TREE
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import (footer, header, load_avg, load_ml100k, parser, status_kb,  # noqa: E402
                     table)
from _shapes import SHAPES, _reset_peak, movielens_like  # noqa: E402

KM_PHASES = ("build", "bqp", "lcqp", "objective")
KM_STREAM_B = 88       # bytes streamed per rating per KM iteration (module docstring)
ALS_STREAM_B = 16      # two passes over a CSR of int32 + float32
PASS_B = 16            # one pass over the ratings: int64 index + float64 value


def memory_bandwidth(n_bytes=512 * 2**20, reps=5):
    """GB/s of a single-threaded NumPy streaming sum over ``n_bytes`` of float64."""
    a = np.ones(n_bytes // 8)
    a.sum()
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t0)
    return n_bytes / best / 1e9


# ----------------------------------------------------------------------------- children
def _load(path):
    z = np.load(path)
    return z["users"], z["items"], z["values"], int(z["n_users"]), int(z["n_items"])


def child_km(path, D, iters, seed):
    import warnings

    import kmviz
    from kmviz.data import Ratings
    from kmviz.km import KolmogorovModel

    from _common import warmup

    warmup("fast", "exact", D=D)
    users, items, values, n_users, n_items = _load(path)
    ratings = Ratings.from_arrays(users, items, values, r_min=1.0, r_max=5.0,
                                  user_ids=np.arange(n_users), item_ids=np.arange(n_items))
    del users, items, values
    _reset_peak()
    model = KolmogorovModel(D=D, max_iter=iters, tol=0.0, random_state=seed)
    cpu = [time.process_time()]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(ratings, callback=lambda row: cpu.append(time.process_time()))
    wall = time.perf_counter() - t0
    rows = [{k: (float(v) if isinstance(v, (int, float, np.number)) else None)
             for k, v in dict(r).items()} for r in model.trace_.rows]
    return {"rows": rows, "wall": wall, "peak_gb": status_kb("VmHWM") / 2**20,
            "cpu_s": np.diff(cpu).tolist(), "kmviz": kmviz.__file__,
            "n_items": int(np.sum(ratings.item_counts() > 0))}


def child_als(path, D, iters, seed):
    import scipy.sparse as sp
    from implicit.cpu.als import AlternatingLeastSquares

    users, items, values, n_users, n_items = _load(path)
    ui = sp.csr_matrix((values.astype(np.float32), (users, items)), shape=(n_users, n_items))
    del users, items, values
    _reset_peak()
    secs, cpu = [], [time.process_time()]

    def callback(it, elapsed, loss):
        secs.append(elapsed)
        cpu.append(time.process_time())

    model = AlternatingLeastSquares(factors=D, iterations=iters, random_state=seed)
    t0 = time.perf_counter()
    model.fit(ui, show_progress=False, callback=callback)
    return {"iter_s": secs, "wall": time.perf_counter() - t0, "cpu_s": np.diff(cpu).tolist(),
            "peak_gb": status_kb("VmHWM") / 2**20}


def run_child(kind, path, D, iters, seed, budget, tree=None):
    """Run one model in a fresh interpreter; its JSON result or {"error": text}."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    if kind == "als":
        for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = "1"   # implicit's advice: its own threads, BLAS single-threaded
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--data", path,
           "--D", str(D), "--iters", str(iters), "--seed", str(seed)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return {"error": f"> {budget:.0f} s budget"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"error": f"exit {proc.returncode}: {' / '.join(tail)}"}


# ----------------------------------------------------------------------------- report
def km_iter_seconds(rows):
    return [sum(r.get(f"t_{p}_s") or 0.0 for p in KM_PHASES) for r in rows]


def median_after_first(xs):
    return statistics.median(xs[1:]) if len(xs) > 1 else xs[0]


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1m,10m",
                    help="comma list of 100k,1m,10m,25m (generated) and ml100k (--ml100k)")
    ap.add_argument("--iters", type=int, default=3, help="iterations per model (>= 2)")
    ap.add_argument("--D", type=int, default=20, help="KM's D and ALS's factors")
    ap.add_argument("--ref", default=None, help="another source tree: a 'KM (ref)' column")
    ap.add_argument("--no-als", action="store_true", help="skip implicit ALS")
    ap.add_argument("--budget", type=float, default=1800.0, help="seconds per child")
    ap.add_argument("--child", choices=("km", "als"), help=argparse_hidden())
    ap.add_argument("--data", help=argparse_hidden())
    args = ap.parse_args()
    if args.child:
        fn = child_km if args.child == "km" else child_als
        print("RESULT " + json.dumps(fn(args.data, args.D, args.iters, args.seed)), flush=True)
        return
    t_start = time.perf_counter()
    header("KM vs implicit ALS per iteration, same ratings, same rank")
    bw = memory_bandwidth()
    print(f"memory bandwidth (single-threaded NumPy sum, 512 MB, best of 5): {bw:.2f} GB/s\n")
    variants = [("KM", None)] + ([("KM (ref)", args.ref)] if args.ref else [])
    main_rows, phase_rows, byte_rows, traj_rows = [], [], [], []
    tmp = tempfile.mkdtemp(prefix="km_vs_als_")
    try:
        for label in args.sizes.split(","):
            t0 = time.perf_counter()
            if label == "ml100k":   # read from --ml100k, never kept (only a /tmp copy)
                data = load_ml100k(args.ml100k)
                if data is None:
                    continue
                users, items, values = (np.asarray(data.users), np.asarray(data.items),
                                        np.asarray(data.values, dtype=np.float64))
                n_users, n_items = int(data.n_users), int(data.n_items)
                del data
            else:
                n_ratings, n_users, n_items = SHAPES[label]
                users, items, values = movielens_like(n_ratings, n_users, n_items, args.seed)
            path = os.path.join(tmp, f"{label}.npz")
            np.savez(path, users=users, items=items, values=values, n_users=n_users,
                     n_items=n_items)
            nnz = int(users.size)
            del users, items, values
            print(f"- {label}: {n_users:,} x {n_items:,}, {nnz:,} ratings (generated in "
                  f"{time.perf_counter() - t0:.0f} s); load {load_avg()}", flush=True)
            res = {}
            for name, tree in variants:
                res[name] = run_child("km", path, args.D, args.iters, args.seed,
                                      args.budget, tree)
                print(f"  {name}: {res[name].get('error') or 'done'}", flush=True)
            if not args.no_als:
                res["ALS"] = run_child("als", path, args.D, args.iters, args.seed,
                                       args.budget)
                print(f"  ALS: {res['ALS'].get('error') or 'done'}", flush=True)
            os.remove(path)
            t_pass = PASS_B * nnz / (bw * 1e9)
            als = res.get("ALS", {})
            als_s = median_after_first(als["iter_s"]) if "iter_s" in als else None
            row = {"size": label, "ratings": f"{nnz:,}"}
            for name, _ in variants:
                r = res[name]
                if "rows" not in r:
                    row[f"{name} s/iter"] = r.get("error")
                    continue
                secs = km_iter_seconds(r["rows"])
                km_s = median_after_first(secs)
                row[f"{name} s/iter"] = km_s
                row[f"{name} CPU s/iter"] = median_after_first(r["cpu_s"])
                row[f"{name} peak GB"] = r["peak_gb"]
                if als_s:
                    row[f"{name} / ALS"] = km_s / als_s
                    row[f"{name} / ALS (CPU)"] = (row[f"{name} CPU s/iter"]
                                                  / median_after_first(als["cpu_s"]))
                for it, (rr, s) in enumerate(zip(r["rows"], secs), 1):
                    phase_rows.append({
                        "size": label, "model": name, "iteration": it, "s": s,
                        **{f"{p} %": 100 * (rr.get(f"t_{p}_s") or 0.0) / s for p in KM_PHASES},
                        "EVD % of bqp": 100 * (rr.get("t_evd_s") or 0.0)
                        / max(rr.get("t_bqp_s") or 1e-300, 1e-300),
                        "dual % of bqp": 100 * (rr.get("t_bqp_dual_s") or 0.0)
                        / max(rr.get("t_bqp_s") or 1e-300, 1e-300),
                        "EVDs / item": (rr.get("n_evd") or 0.0) / r["n_items"],
                        "Newton steps / item": (rr.get("n_dual_iter") or 0.0) / r["n_items"],
                        "CPU s": r["cpu_s"][it - 1] if it <= len(r["cpu_s"]) else None,
                        "objective": rr.get("objective")})
                byte_rows.append({
                    "size": label, "model": name, "GB streamed / iter": KM_STREAM_B * nnz / 1e9,
                    "s at bandwidth": KM_STREAM_B * nnz / (bw * 1e9), "s / iter": km_s,
                    "s / one pass": km_s / t_pass})
            if args.ref and all("rows" in res[n] for n, _ in variants):
                a = [r["objective"] for r in res["KM"]["rows"]]
                b = [r["objective"] for r in res["KM (ref)"]["rows"]]
                for it, (x, y) in enumerate(zip(a, b), 1):
                    traj_rows.append({"size": label, "iteration": it, "KM objective": x,
                                      "ref objective": y,
                                      "relative difference": abs(x - y) / max(abs(y), 1e-300)})
            if als_s:
                row["ALS s/iter"] = als_s
                row["ALS CPU s/iter"] = median_after_first(als["cpu_s"])
                row["ALS peak GB"] = als["peak_gb"]
                byte_rows.append({
                    "size": label, "model": "ALS", "GB streamed / iter": ALS_STREAM_B * nnz / 1e9,
                    "s at bandwidth": ALS_STREAM_B * nnz / (bw * 1e9), "s / iter": als_s,
                    "s / one pass": als_s / t_pass})
            elif "error" in als:
                row["ALS s/iter"] = als["error"]
            row["one pass s"] = t_pass
            main_rows.append(row)
    finally:
        for f in Path(tmp).glob("*"):
            f.unlink()
        os.rmdir(tmp)
    print(f"\n## Seconds per iteration (median of iterations 2..{args.iters}), D = factors = "
          f"{args.D}, peak RSS of each child\n")
    print(table(main_rows, floatfmt="{:.3g}"))
    print("\n## KM phases per iteration (share of the iteration's seconds)\n")
    print(table(phase_rows, floatfmt="{:.3g}"))
    print(f"\n## Bytes streamed per iteration vs one pass over the ratings ({PASS_B} B/rating "
          f"at {bw:.2f} GB/s)\n")
    print(table(byte_rows, floatfmt="{:.3g}"))
    if traj_rows:
        print("\n## Objective trajectory: KM vs the --ref tree (same data, same seed)\n")
        print(table(traj_rows, floatfmt="{:.6g}"))
        worst = max(r["relative difference"] for r in traj_rows)
        print(f"\nworst relative difference: {worst:.3g} (target <= 1e-6: "
              f"{'PASS' if worst <= 1e-6 else 'MISS'})")
    footer(t_start)


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
