"""A KM iteration on 2 Dask workers whose memory limit is below the data's size.

A MovieLens-shaped synthetic set (``km_scaling.movielens_like``; ``--ratings`` ratings over
users and items scaled from MovieLens 25M's shape) is written once as ``--parts`` Parquet
partitions (user, item, value columns). A LocalCluster of 2 worker processes, each with
``memory_limit=--limit`` (below the data's in-memory size, 24 bytes per rating), reads the
partitions with :func:`kmviz.data.read_parquet` (the partitions are read and checked on the
workers) and fits ``KolmogorovModel(D=--D, max_iter=--iters)``; the rating blocks are
spread over the two workers, each holding its share.

Dask's worker memory policy: managed data (the scattered blocks) spills to the worker's
local disk above 60% / 70% of the limit (Dask's defaults); this bench turns off the pause
(80%) and the nanny's kill (95%), so a worker over its limit keeps spilling instead of
stopping. Each worker's peak resident size is reported against the limit.

What this does NOT show: the client still receives the compact id and value columns and
builds the blocks (``read_parquet`` returns a Ratings, and the KM blocks are cut from the
client's CSR), so the client must hold the data once. The workers' peak is each worker
process's own peak resident size (``VmHWM``), asked after the fit.

    python bench/dask_beyond_memory.py [--ratings 50000000] [--limit 1.1GB] [--parts 32]
"""

from __future__ import annotations

import os
import resource
import shutil
import time

import numpy as np

from _common import footer, header, load_avg, parser, table
from km_scaling import movielens_like


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


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--ratings", type=int, default=50_000_000)
    p.add_argument("--limit", default="1.1GB", help="memory_limit of each worker")
    p.add_argument("--parts", type=int, default=32)
    p.add_argument("--D", type=int, default=20)
    p.add_argument("--iters", type=int, default=1)
    p.add_argument("--dir", default=None)
    p.add_argument("--keep", action="store_true", help="keep the Parquet folder")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("KM on 2 Dask workers with a memory limit below the data")
    from dask.utils import parse_bytes
    from distributed import Client, LocalCluster

    import kmviz
    from kmviz.data import read_parquet
    from kmviz.km.estimator import KolmogorovModel
    from kmviz.parallel import WORKER_ENV

    folder = args.dir or f"/tmp/kmviz_beyond_{args.ratings}"
    t0 = time.perf_counter()
    if not os.path.isdir(folder):
        n, n_u, n_i = write_partitions(folder, args.ratings, args.seed, args.parts)
        print(f"wrote {n:,} ratings ({n_u:,} users x {n_i:,} items) as {args.parts} "
              f"partitions in {time.perf_counter() - t0:.0f} s", flush=True)
    on_disk = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    limit = parse_bytes(args.limit)
    import dask

    dask.config.set({"distributed.worker.memory.pause": False,
                     "distributed.worker.memory.terminate": False})
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           memory_limit=limit, env=dict(WORKER_ENV), dashboard_address=None,
                           silence_logs=40)
    client = Client(cluster, set_as_default=False)
    try:
        with kmviz.parallel_backend("dask", client=client):
            t1 = time.perf_counter()
            ratings = read_parquet(folder)
            t_read = time.perf_counter() - t1
            n = len(ratings.values)
            data_bytes = 24 * n
            print(f"read {n:,} ratings on the workers in {t_read:.0f} s; in memory "
                  f"{data_bytes / 1e9:.2f} GB (24 B / rating), on disk {on_disk / 1e9:.2f} GB, "
                  f"worker limit {limit / 1e9:.2f} GB; load {load_avg()}", flush=True)
            t2 = time.perf_counter()
            model = KolmogorovModel(D=args.D, max_iter=args.iters, tol=0.0, random_state=0)
            model.fit(ratings)
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
    print(table([{"worker": addr, "peak RSS GB": v / 1e9, "limit GB": limit / 1e9,
                  "data GB": data_bytes / 1e9} for addr, v in peaks.items()]
                + [{"worker": "client", "peak RSS GB": _peak_rss() / 1e9, "limit GB": "-",
                    "data GB": data_bytes / 1e9}]))
    print(f"\nread {t_read:.1f} s, fit {t_fit:.1f} s ({args.iters} iteration(s)), "
          f"objective {tr.column('objective')[-1]:.6g}; load {load_avg()}")
    if not args.keep and args.dir is None:
        shutil.rmtree(folder, ignore_errors=True)
    footer(t_start)


if __name__ == "__main__":
    main()
