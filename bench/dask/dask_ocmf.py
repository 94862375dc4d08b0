"""What fitting one-class MF on a Dask cluster costs: a LocalCluster of N worker processes
against the in-process fit (Numba threads), OneClassMF(k=64) on MovieLens-shaped synthetic
data, and a projection of one iteration at 1B positives on 8 / 32 / 128 workers.

Data: ``km_scaling.movielens_like`` (the shapes of MovieLens 1M / 10M / 25M), every rating a
positive. Both fits use ``OneClassMF(k=--k, max_iter=--iters, random_state=0)`` (TRON, the
defaults) and must end with the same W and W_2 (checked: equal, or the largest difference).
"s / iteration" is the median wall time of iterations 2.. (iteration 1 holds the cluster's
one-off scatter of the pairs and the workers' first kernel loads); "first" is iteration 1's.
The distributed phases are the trace's ``{w,h}_pairs_scatter`` (the broadcast of the fixed
side once per half-step), ``_compute`` (until every task of a call ended, summed over the
calls) and ``_gather``.

Projection (on paper, from this run's measurements): per half-step TRON makes ``c`` calls
(measured: function values + Hessian-vector products, and the Hessian diagonals that come
with them); each call moves the varying side's rows of one iterate to the workers and one
or two result arrays back (rows x k float64 each way, 8 bytes), the fixed side's factors
are broadcast once. Compute: this run's worker core-seconds per positive per iteration
times 1e9 / workers. Transfer at 1.25 GB/s (10 GbE) out of and into one client; 2 ms per
call of scheduling latency. Shape for 1B positives: 6.5M users x 250k items.

``--clusters local:2,local:1x2`` compares cluster layouts in one run: 2 worker processes of
one thread against 1 worker process of 2 threads (kmviz.parallel's ``"local:PxT"``). Why
the layout matters (profile at 5M positives, k = 64, load 3-6): the value-pass kernel on
the same block, timed inside the task, runs 1.1-1.25x slower in a worker process than
in the client alone, and with both workers busy 1.2-1.5x slower than two threads of one
process on the same two blocks; over a whole fit the workers of ``local:2`` spent 13.7-14.8
CPU-seconds in 2 iterations where ``local:1x2`` spent 10.8 (in process: 10.2 with its TRON
work). Two processes each hold a copy of the broadcast factors O, which every pair reads at
a random row (16.6 MB for the users at 5M, 83 MB at 25M), so the two copies share one
32 MB L3 cache; the two threads of one process read one copy. Block count mattered less
(2 vs 4 blocks: 13.7 vs 14.8 worker CPU-s); per-call transfer (17.5 MB in, gather
27 ms per call at 5M) was small against the tasks.

Most of the kernels' extra CPU in the workers was page faults, not the cache: Dask's
nanny starts workers with a 64 kB malloc trim threshold, which makes every array above
128 kB (each call's rows in and out, per-pair scores) a fresh mapping faulted in on first
write. With kmviz.parallel.WORKER_MALLOC_ENV and the workers' pool of per-pair arrays
(kmviz.ocmf._dist), 5M positives, local:1x2, 3 iterations (runs alternated, load 4-5):
worker page faults 270k -> 41k, kernel CPU inside the tasks 15.3-15.9 -> 11.8-12.2 s.
In ``local:2`` the scheduler's work stealing used to move a queued task to the idle
worker, which did not hold that block's per-pair state: the block was rebuilt there
(`blocks restored`: 7 in 3 iterations at 25M, 1.52x of in-process). Blocks are now pinned
to their worker (``map_blocks(pin=True)``) and a call's per-block arrays go out block by
block, each task starting as its array lands (``scatter ms`` is the broadcast and the
first block's placing; ``placing + submit ms`` the rest of it, overlapping the tasks).
``--repeat R`` runs R rounds of (in-process fit, cluster fits) and prints each cluster's
median ratio: on this shared box one round's ratio moved by 0.1-0.2 between runs.

    python bench/dask/dask_ocmf.py [--sizes 1m,25m] [--workers 2] [--clusters SPECS] [--iters 3]
        [--repeat R]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, parser, per_iteration, table, trace_median
from _shapes import SHAPES, movielens_like

#: MovieLens 25M's shape scaled to 5M ratings (for profiling runs).
SHAPES = {**SHAPES, "5m": (5_000_000, 32_400, 12_400)}

BANDWIDTH = 1.25e9      # bytes / s: one 10 GbE link at the client
CALL_LATENCY = 2e-3     # s per call (submit + wait + gather of a few tasks)
BIG = (1_000_000_000, 6_500_000, 250_000)


def _per_call(label, timers):
    """Per-call means of the cluster calls' phases (ms) over the half-steps after the
    first iteration (its W and H steps also scatter the pairs)."""
    ts = timers[2:] or timers
    calls = sum(t.get("pairs_calls", 0) for t in ts) or 1

    def ms(key):
        return 1e3 * sum(t.get(key, 0.0) for t in ts) / calls

    wait = ms("pairs_compute") - ms("pairs_submit")
    return {"positives": label, "calls": calls,
            "scatter ms (broadcast + first placing)": ms("pairs_scatter"),
            "placing + submit ms": ms("pairs_submit"),
            "wait ms": wait, "task max ms": ms("pairs_task_max_sum"),
            "task sum ms": ms("pairs_task_sum"), "gather ms": ms("pairs_gather"),
            "wait - task max ms": wait - ms("pairs_task_max_sum"),
            "in MB": sum(t.get("pairs_bytes_in", 0) for t in ts) / calls / 1e6,
            "blocks restored": sum(t.get("pairs_restored", 0) for t in ts)}


def projection(per_positive, calls_w, calls_h, k, *, shape=BIG, workers=(8, 32, 128)):
    """Rows of the 1B projection table (module docstring) from measured figures:
    ``per_positive`` worker core-seconds per positive per iteration, ``calls_*`` calls per
    half-step (each moving about 2.5 rows x k arrays: iterate in, one or two results out)."""
    n_pos, n_u, n_i = shape
    rows = []
    for w in workers:
        compute = per_positive * n_pos / w
        bcast_w, bcast_h = n_i * k * 8 * w, n_u * k * 8 * w      # O to every worker
        per_call_w, per_call_h = 2.5 * n_u * k * 8, 2.5 * n_i * k * 8
        volume = bcast_w + bcast_h + calls_w * per_call_w + calls_h * per_call_h
        rows.append({"workers": w, "compute s": compute,
                     "broadcast GB / W-step": bcast_w / 1e9,
                     "broadcast GB / H-step": bcast_h / 1e9,
                     "per-call GB (W, H)": f"{per_call_w / 1e9:.2f}, {per_call_h / 1e9:.2f}",
                     "transfer s": volume / BANDWIDTH,
                     "latency s": (calls_w + calls_h) * CALL_LATENCY,
                     "s / iteration": compute + volume / BANDWIDTH
                     + (calls_w + calls_h) * CALL_LATENCY})
    return rows


def _round(args, label, data, ocmf, clusters, rnd, rows, calls_rows):
    """One round: the in-process fit, then each cluster's; a row per cluster."""
    import kmviz
    from kmviz.ocmf import _dist

    load0 = load_avg()
    ref = ocmf().fit(data)
    first_in, it_in = per_iteration(ref.trace_)
    for spec in clusters:
        timers = []
        block0 = _dist.DistPairs.block

        def block(self, side, O, dtype=np.float64, timer=None, _t=timers):
            out = block0(self, side, O, dtype, timer)
            _t.append(out.timer)
            return out

        _dist.DistPairs.block = block
        try:
            with kmviz.parallel_backend("dask", client=spec) as backend:
                slots = backend.n_workers()
                t0 = time.perf_counter()
                got = ocmf().fit(data)
                wall = time.perf_counter() - t0
        finally:
            _dist.DistPairs.block = block0
        calls_rows.append(_per_call(f"{label} {spec}", timers))
        first_d, it_d = per_iteration(got.trace_)
        diff = max(float(np.abs(ref.W_user_ - got.W_user_).max()),
                   float(np.abs(ref.W_item_ - got.W_item_).max()))
        row = {"positives": label, "round": rnd + 1, "cluster": spec,
               "in-process s/iter": it_in, "cluster s/iter": it_d, "ratio": it_d / it_in,
               "first in/dask": f"{first_in:.2f}/{first_d:.2f}",
               "max |W diff|": diff, "load before/after": f"{load0} / {load_avg()}"}
        for side in ("w", "h"):
            for ph in ("pairs_scatter", "pairs_compute", "pairs_gather"):
                row[f"{side}_{ph}"] = trace_median(got.trace_, f"t_{side}_{ph}_s")
        row["calls / iter"] = (trace_median(got.trace_, "n_fun")
                               + trace_median(got.trace_, "n_hess_vec"))
        row["dask fit wall s"] = wall
        rows.append(row)
        row["_slots"], row["_trace"] = slots, got.trace_
        del backend


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1m")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--clusters", default=None,
                   help="comma-separated cluster specs to compare (default local:WORKERS), "
                        "e.g. local:2,local:1x2")
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--repeat", type=int, default=1,
                   help="rounds of (in-process fit, cluster fits); the median ratio")
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--direct-mb", type=float, default=None,
                   help="per-block task arguments above this many MB go straight to their "
                        "block's worker (kmviz.parallel.DIRECT_BYTES); a huge value: all in "
                        "the task graph")
    args = p.parse_args()
    if args.direct_mb is not None:
        from kmviz import parallel

        parallel.DIRECT_BYTES = int(args.direct_mb * 1e6)
    t_start = time.perf_counter()
    header("Dask LocalCluster vs in process, one-class MF")
    from kmviz.data import Ratings
    from kmviz.ocmf import OneClassMF
    from kmviz.ocmf.warmup import compile_kernels

    compile_kernels()
    rows, src, calls_rows = [], None, []
    clusters = (args.clusters or f"local:{args.workers}").split(",")
    for label in args.sizes.split(","):
        n_r, n_u, n_i = SHAPES[label]
        users, items, values = movielens_like(n_r, n_u, n_i, args.seed)
        data = Ratings.from_arrays(users, items, values, r_min=1.0, r_max=5.0)
        del users, items, values

        def ocmf():
            return OneClassMF(k=args.k, max_iter=args.iters, random_state=0)

        for rnd in range(args.repeat):
            _round(args, label, data, ocmf, clusters, rnd, rows, calls_rows)
            last = rows[-1]
            src = (len(data.values), last, last["_slots"], last["_trace"])
            for r in rows:
                r.pop("_slots", None), r.pop("_trace", None)
    print(table(rows))
    if args.repeat > 1:
        print(f"\nMedian over {args.repeat} rounds (each round: the in-process fit, then "
              "each cluster's, so slow spells of the shared box hit both sides of a ratio):")
        print(table([{"positives": label, "cluster": spec,
                      "ratios": ", ".join(f"{r['ratio']:.3f}" for r in rows
                                          if r["cluster"] == spec and r["positives"] == label),
                      "median ratio": float(np.median([r["ratio"] for r in rows
                                                       if r["cluster"] == spec
                                                       and r["positives"] == label]))}
                     for label in args.sizes.split(",") for spec in clusters]))
    print("\nPer call of the pair passes (all half-steps after the first iteration's two; "
          "ms per call; `task max` = the slowest block's compute inside its task, `task sum` "
          "= all blocks' compute; `in MB` = per-block arrays sent per call; `blocks restored` = "
          "tasks that ran where their block's state was not (a stolen task) and were run "
          "again after a rebuild):")
    print(table(calls_rows))

    nnz, row, W, trace = src
    core_s = W * (row["w_pairs_compute"] + row["h_pairs_compute"])
    per_pos = core_s / nnz
    calls = {}
    for side in ("w", "h"):
        # value passes (n_fun counts both blocks: split by the Newton steps) + hvps
        calls[side] = (trace_median(trace, f"n_{side}_newton")
                       + trace_median(trace, f"n_{side}_rejected")
                       + 1 + trace_median(trace, f"n_{side}_cg"))
    print(f"\nMeasured at {nnz:,} positives: {core_s:.3g} worker core-seconds per iteration "
          f"in the pair passes = {per_pos * 1e9:.3g} ns per positive (upper bound); calls per "
          f"half-step W {calls['w']:.0f}, H {calls['h']:.0f}.\n")
    print(f"Projection, 1B positives (6.5M users x 250k items), k = {args.k}:")
    print(table(projection(per_pos, calls["w"], calls["h"], args.k)))
    footer(t_start)


if __name__ == "__main__":
    main()
