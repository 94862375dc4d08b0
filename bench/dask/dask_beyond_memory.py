"""A KM iteration on 2 Dask workers whose memory limit is below the data's size.

A MovieLens-shaped synthetic set (``km_scaling.movielens_like``; ``--ratings`` ratings over
users and items scaled from MovieLens 25M's shape) is written once as ``--parts`` Parquet
partitions (user, item, value columns), by a separate process, so that this process never
holds the data. A LocalCluster of 2 worker processes, each with ``memory_limit=--limit``
(below the data's in-memory size, 24 bytes per rating as (int64, int64, float64)), scans
the partitions with :func:`kmviz.data.scan_parquet` (ids, counts and the scale: this
process receives O(users + items) numbers) and fits ``KolmogorovModel(D=--D,
max_iter=--iters)`` on the handle: the rating blocks (by user and by item) are built by
tasks on the workers straight from the partitions and stay there. ``--load`` instead reads
the data with :func:`kmviz.data.read_parquet` into this process (the previous path), for
comparison.

Dask's worker memory policy: managed data (the resident blocks, the routed pieces) spills
to the worker's local disk above 60% / 70% of the limit (Dask's defaults); this bench turns
off the pause (80%) and the nanny's kill (95%), so a worker over its limit keeps spilling
instead of stopping (``--dask-policy`` keeps them: a worker past 95% is restarted, and
the fit rebuilds its blocks). The resident blocks hold 2 x 16 bytes per rating (each orientation an
int64 index and a float64 target per rating), more than the 24 bytes of the columns, so
the workers hold their share of the blocks mostly on disk. Reported: each process's peak
resident size (``VmHWM``, asked after the fit; the client's includes the in-process
scheduler and the Numba warm-up), the bytes each worker spilled, and the time per KM
iteration.

    python bench/dask/dask_beyond_memory.py [--ratings 50000000] [--limit 1.0GB] [--parts 32]

Measured (2026-11-26, load 6-8 on the 2 cores): 100M ratings, limit 1.0 GB: client peak
0.70 GB (10.9 GB through read_parquet), workers 1.45 / 1.37 GB, 1.6 GB each on disk; build
220 s, one KM iteration 335 s. 10M, limit 0.1 GB, --load / scan / --load in a row: per
iteration 97.7 / 98.7 / 97.8 s, client 1.27 / 0.42 / 1.24 GB, build 3.3 / 25.9 / 3.1 s.
"""

from __future__ import annotations

import os
import resource
import shutil
import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, parser, table
from _shapes import movielens_like


def _peak_rss():
    """This process's peak resident size in bytes: VmHWM, the high-water mark of its own
    memory image. (getrusage's ru_maxrss is wrong for a worker: a spawned process keeps the
    maximum of the process it was forked from, here the client holding the data.)"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def write_partitions(folder, n_ratings, seed, parts):
    """MovieLens-25M-shaped synthetic ratings (scaled) as ``parts`` Parquet files."""
    import pandas as pd

    scale = n_ratings / 25_000_095
    n_users, n_items = int(162_000 * scale), int(62_000 * max(scale, 1.0) ** 0.5)
    users, items, values = movielens_like(n_ratings, n_users, n_items, seed)
    os.makedirs(folder, exist_ok=True)
    bounds = np.linspace(0, users.size, parts + 1).astype(np.int64)
    for p in range(parts):
        a, b = bounds[p], bounds[p + 1]
        pd.DataFrame({"user": users[a:b], "item": items[a:b], "value": values[a:b]}).to_parquet(
            os.path.join(folder, f"part-{p:04d}.parquet"), index=False)
    return users.size, n_users, n_items


def _spilled(dask_worker):
    """Bytes this worker's memory manager holds on disk now (0 if it cannot say)."""
    try:
        return int(dask_worker.data.spilled_total.disk)
    except AttributeError:
        return 0


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--ratings", type=int, default=50_000_000)
    p.add_argument("--limit", default="1.0GB", help="memory_limit of each worker")
    p.add_argument("--parts", type=int, default=32)
    p.add_argument("--dask-policy", action="store_true",
                   help="keep Dask's pause (80%%) and nanny restart (95%%) of the limit")
    p.add_argument("--D", type=int, default=20)
    p.add_argument("--iters", type=int, default=1)
    p.add_argument("--dir", default=None)
    p.add_argument("--keep", action="store_true", help="keep the Parquet folder")
    p.add_argument("--load", action="store_true",
                   help="read the data into this process (read_parquet), the old path")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("KM on 2 Dask workers with a memory limit below the data")
    import multiprocessing

    from dask.utils import parse_bytes
    from distributed import Client, LocalCluster

    import kmviz
    from kmviz.data import read_parquet, scan_parquet
    from kmviz.km.estimator import KolmogorovModel
    from kmviz.parallel import WORKER_ENV

    folder = args.dir or f"/tmp/kmviz_beyond_{args.ratings}"
    t0 = time.perf_counter()
    if not os.path.isdir(folder):
        # in another process: this one must never hold the data
        proc = multiprocessing.get_context("spawn").Process(
            target=write_partitions, args=(folder, args.ratings, args.seed, args.parts))
        proc.start()
        proc.join()
        if proc.exitcode:
            raise SystemExit(f"writing the partitions failed ({proc.exitcode})")
        print(f"wrote {args.ratings:,} ratings as {args.parts} partitions in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    on_disk = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    limit = parse_bytes(args.limit)
    import dask

    if not args.dask_policy:
        dask.config.set({"distributed.worker.memory.pause": False,
                         "distributed.worker.memory.terminate": False})
    print("worker memory policy: " + ("Dask's (pause at 80%, restart at 95% of the limit)"
                                      if args.dask_policy else "spill only, no pause or kill"),
          flush=True)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           memory_limit=limit, env=dict(WORKER_ENV), dashboard_address=None,
                           silence_logs=40)
    client = Client(cluster, set_as_default=False)
    try:
        with kmviz.parallel_backend("dask", client=client):
            t1 = time.perf_counter()
            data = read_parquet(folder) if args.load else scan_parquet(folder)
            t_read = time.perf_counter() - t1
            n = len(data)
            data_bytes = 24 * n
            print(f"{'read' if args.load else 'scanned'} {n:,} ratings ({data.n_users:,} "
                  f"users x {data.n_items:,} items) on the workers in {t_read:.0f} s; in "
                  f"memory {data_bytes / 1e9:.2f} GB (24 B / rating), on disk "
                  f"{on_disk / 1e9:.2f} GB, worker limit {limit / 1e9:.2f} GB (x2 = "
                  f"{2 * limit / data_bytes:.0%} of the data); client peak so far "
                  f"{_peak_rss() / 1e9:.2f} GB; load {load_avg()}", flush=True)
            t2 = time.perf_counter()
            model = KolmogorovModel(D=args.D, max_iter=args.iters, tol=0.0, random_state=0)
            spilled = {}

            def on_disk_now(row):   # the blocks are released with the fit: ask during it
                for addr, b in client.run(_spilled).items():
                    spilled[addr] = max(spilled.get(addr, 0), b)

            model.fit(data, callback=on_disk_now)
            t_fit = time.perf_counter() - t2
        peaks = client.run(_peak_rss)
    finally:
        client.close()
        cluster.close()
    tr = model.trace_
    wall = np.diff(np.concatenate(([0.0], tr.column("wall_s"))))
    rows = [{"iteration": i + 1, "wall s": w, **{ph: tr.column(f"t_{ph}_s")[i] for ph in (
        "scatter_data", "items_compute", "users_compute", "items_scatter", "users_scatter")}}
        for i, w in enumerate(wall)]
    print(table(rows))
    print(table([{"process": f"worker {addr}", "peak RSS GB": v / 1e9, "limit GB": limit / 1e9,
                  "on disk GB (max after an iteration)": spilled.get(addr, 0) / 1e9,
                  "data GB": data_bytes / 1e9} for addr, v in peaks.items()]
                + [{"process": "client (+ scheduler)", "peak RSS GB": _peak_rss() / 1e9,
                    "limit GB": "-", "on disk GB (max after an iteration)": "-",
                    "data GB": data_bytes / 1e9}]))
    per_iter = (wall - tr.column("t_scatter_data_s")).mean()
    print(f"\n{'read' if args.load else 'scan'} {t_read:.1f} s, fit {t_fit:.1f} s "
          f"({args.iters} iteration(s); blocks built in {tr.column('t_scatter_data_s')[0]:.1f}"
          f" s, then {per_iter:.1f} s per KM iteration), objective "
          f"{tr.column('objective')[-1]:.6g}; load {load_avg()}")
    if not args.keep and args.dir is None:
        shutil.rmtree(folder, ignore_errors=True)
    footer(t_start)


if __name__ == "__main__":
    main()
