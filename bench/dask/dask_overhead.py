"""What fitting on a Dask cluster costs: a LocalCluster of N worker processes against the
in-process fit (Numba threads) on the same MovieLens-shaped synthetic data, KM with D = 20,
and a projection of one iteration at 1B ratings on 8 / 32 / 128 workers.

Data: ``km_scaling.movielens_like`` (the shapes of MovieLens 1M / 10M / 25M). Both fits use
``KolmogorovModel(D=20, max_iter=--iters, tol=0, random_state=0)`` and must end with the same
theta and psi (checked). "s / iteration" is the median wall time of iterations 2.. (the first
holds the cluster's one-off scatter of the rating blocks and, in process, nothing special);
"first" is iteration 1's. The distributed phases are the trace's: ``items_*`` / ``users_*``
scatter (the broadcast of theta / psi), compute (until every task ended), gather.

Projection (on paper, from this run's measurements): the cluster's compute core-seconds per
rating (workers x compute wall / ratings, an upper bound: idle tail included) times 1e9 /
workers, plus the broadcast of theta (n_users x D float64) and psi (n_items x D) to every
worker at 1.25 GB/s (10 GbE) from one client, plus 1 ms per task. Shape assumed for 1B
ratings: 6.5M users x 250k items (MovieLens 25M's users x 40, items x 4).

One-class MF (k = 64) has its own bench, ``bench/dask/dask_ocmf.py`` (its TRON half-step stays in
the client; the observed-pair passes of every call run on the workers).

    python bench/dask/dask_overhead.py [--sizes 1m,25m] [--workers 2] [--iters 3] [--D 20] [--blocks N]
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table
from _shapes import SHAPES, movielens_like

BANDWIDTH = 1.25e9      # bytes / s: one 10 GbE link out of the client
TASK_OVERHEAD = 1e-3    # s per task (Dask's documented order of magnitude)
BIG = (1_000_000_000, 6_500_000, 250_000)


def _per_iter(trace):
    wall = np.diff(np.concatenate(([0.0], trace.column("wall_s"))))
    return float(wall[0]), float(statistics.median(wall[1:])) if wall.size > 1 else float("nan")


def _phase(trace, name):
    col = trace.column(f"t_{name}_s")
    return float(np.nanmedian(col[1:])) if col.size > 1 else float(np.nanmedian(col))


def projection(per_rating, D, *, shape=BIG, workers=(8, 32, 128)):
    """Rows of the 1B projection (module docstring): ``per_rating`` worker core-seconds per
    rating per iteration (measured); per half-step the client broadcasts theta (psi-step) or
    psi (theta-step) to every worker, and each of 4 blocks per worker costs TASK_OVERHEAD."""
    big_r, big_u, big_i = shape
    theta_b, psi_b = big_u * D * 8, big_i * D * 8
    rows = []
    for w in workers:
        compute = per_rating * big_r / w
        bcast = (theta_b + psi_b) * w / BANDWIDTH
        tasks = 2 * 4 * w * TASK_OVERHEAD / w      # 4 blocks per worker, run in parallel
        rows.append({"workers": w, "compute s": compute,
                     "broadcast GB, psi-step (theta)": theta_b * w / 1e9,
                     "broadcast GB, theta-step (psi)": psi_b * w / 1e9,
                     "broadcast s": bcast, "task overhead s": tasks,
                     "s / iteration": compute + bcast + tasks})
    return rows


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1m")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--D", type=int, default=20)
    p.add_argument("--blocks", type=int, default=None,
                   help="blocks per half-step (default: from the estimated cost)")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("Dask LocalCluster vs in process, KM")
    import kmviz
    from kmviz.data import Ratings
    from kmviz.km.estimator import KolmogorovModel
    from kmviz.km.warmup import compile_kernels

    compile_kernels()
    rows, proj_src = [], None
    for label in args.sizes.split(","):
        n_r, n_u, n_i = SHAPES[label]
        users, items, values = movielens_like(n_r, n_u, n_i, args.seed)
        data = Ratings.from_arrays(users, items, values, r_min=1.0, r_max=5.0)
        del users, items, values

        def km():
            return KolmogorovModel(D=args.D, max_iter=args.iters, tol=0.0, random_state=0)

        ref = km().fit(data)
        first_in, it_in = _per_iter(ref.trace_)
        with kmviz.parallel_backend("dask", client=f"local:{args.workers}",
                                    n_blocks=args.blocks) as backend:
            t0 = time.perf_counter()
            got = km().fit(data)
            wall = time.perf_counter() - t0
        first_d, it_d = _per_iter(got.trace_)
        same = bool(np.array_equal(ref.theta_, got.theta_) and np.array_equal(ref.psi_, got.psi_))
        row = {"ratings": label, "in-process s/iter": it_in, f"local:{args.workers} s/iter": it_d,
               "ratio": it_d / it_in, "first in/dask": f"{first_in:.2f}/{first_d:.2f}",
               "same theta, psi": same}
        row["in-process items (build+bqp)"] = _phase(ref.trace_, "build") + _phase(ref.trace_, "bqp")
        row["in-process users (lcqp)"] = _phase(ref.trace_, "lcqp")
        for name in ("items_scatter", "items_compute", "items_gather", "users_scatter",
                     "users_compute", "users_gather"):
            row[name] = _phase(got.trace_, name)
        rows.append(row)
        proj_src = (data.n_users, data.n_items, len(data.values), row, args.workers)
        row["dask fit wall s"] = wall
        del backend
    print(table(rows))

    n_u, n_i, nnz, row, W = proj_src
    core_s = W * (row["items_compute"] + row["users_compute"])
    per_rating = core_s / nnz
    print(f"\nMeasured at {nnz:,} ratings: {core_s:.3g} worker core-seconds per iteration "
          f"= {per_rating * 1e9:.3g} ns per rating (upper bound).\n")
    print("Projection, 1B ratings (6.5M users x 250k items), D = %d:" % args.D)
    print(table(projection(per_rating, args.D)))
    footer(t_start)


if __name__ == "__main__":
    main()
