"""What fitting similarity learning on a Dask cluster costs: a LocalCluster of N worker
processes against the in-process fit (Numba threads), SimilarityLearning (Gauss-Newton + CG,
the default) on synthetic one-class data.

Data: ``kmviz.similarity.synthetic.make_planted_towers`` (planted two-tower structure;
``--users`` x ``--items`` per million pairs at density 0.05, so 20,000 x 1,000 at 1M) or,
with ``--source movielens`` (needed at 10M: the planted generator draws a dense users x
items matrix), ``km_scaling.movielens_like`` (MovieLens shapes, every rating a positive).
Both fits use ``SimilarityLearning(k=--k, max_iter=--iters, tol=0, random_state=0)`` with
``--user-tower`` / ``--item-tower`` and must end with the same theta (the largest
difference is printed). "s / iteration" is the median wall time of iterations 2..
(iteration 1 also holds the cluster's one-off scatter of the pairs); "first" is
iteration 1's. "blocks" counts the user blocks and the item blocks. The distributed phases
are the trace's ``pairs_scatter`` (the broadcast of P and Q, and a Gauss-Newton product's
W and H, once per call), ``pairs_compute`` (until every task of a call ended) and
``pairs_gather``; "calls / iter" counts the cluster calls (function values, gradients and
Gauss-Newton products, those of the solver's start included).

    python bench/dask/dask_similarity.py [--sizes 1m,10m] [--workers 2] [--iters 3] [--k 32]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, parser, per_iteration, table, trace_median

PLANTED = {"100k": (2_000, 1_000), "1m": (20_000, 1_000), "10m": (100_000, 2_000)}


def _data(label, source, seed):
    if source == "movielens":
        from _shapes import SHAPES, movielens_like

        from kmviz.data import Ratings

        n_r, n_u, n_i = SHAPES[label]
        users, items, values = movielens_like(n_r, n_u, n_i, seed)
        return Ratings.from_arrays(users, items, np.ones(users.size), implicit=True)
    from kmviz.similarity.synthetic import make_planted_towers

    m, n = PLANTED[label]
    data, _ = make_planted_towers(m, n, 8, density=0.05, random_state=seed)
    return data


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1m")
    p.add_argument("--source", choices=("planted", "movielens"), default="planted")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--user-tower", default="identity")
    p.add_argument("--item-tower", default="identity")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("Dask LocalCluster vs in process, similarity learning")
    import kmviz
    from kmviz.similarity import SimilarityLearning, _dist
    from kmviz.similarity.warmup import compile_kernels

    compile_kernels()
    sides = "both" if "identity" not in (args.user_tower + args.item_tower) else "none"
    rows = []
    for label in args.sizes.split(","):
        data = _data(label, args.source, args.seed)
        n_pairs = len(data.values)

        def model():
            return SimilarityLearning(k=args.k, max_iter=args.iters, tol=0, random_state=0,
                                      user_tower=args.user_tower, item_tower=args.item_tower,
                                      side_features=sides)

        load0 = load_avg()
        ref = model().fit(data)
        first_in, it_in = per_iteration(ref.trace_)
        calls = []
        init0 = _dist.DistAllPairsProblem.__init__

        def init(self, *a, **kw):
            init0(self, *a, **kw)
            calls.append(self)

        _dist.DistAllPairsProblem.__init__ = init
        try:
            with kmviz.parallel_backend("dask", client=f"local:{args.workers}"):
                t0 = time.perf_counter()
                got = model().fit(data)
                wall = time.perf_counter() - t0
        finally:
            _dist.DistAllPairsProblem.__init__ = init0
        first_d, it_d = per_iteration(got.trace_)
        prob = calls[-1]
        row = {"pairs": f"{n_pairs:,}",
               "blocks": f"{len(prob.user_ranges)} + {len(prob.item_ranges)}",
               "in-process s/iter": it_in, f"local:{args.workers} s/iter": it_d,
               "ratio": it_d / it_in, "first in/dask": f"{first_in:.2f}/{first_d:.2f}",
               "max |theta diff|": float(np.abs(ref.theta_ - got.theta_).max()),
               "max rel objective diff": float(np.max(np.abs(
                   ref.trace_.column("objective") - got.trace_.column("objective"))
                   / np.abs(ref.trace_.column("objective")))),
               "load before/after": f"{load0} / {load_avg()}"}
        for ph in _dist.PHASES + ("observed_pairs",):
            row[f"{ph} s"] = trace_median(got.trace_, f"t_{ph}_s")
        row["in-process observed_pairs s"] = trace_median(ref.trace_, "t_observed_pairs_s")
        row["calls / iter (with the start)"] = prob.cluster_timer.get("pairs_calls", 0) / got.trace_.n_iter
        row["dask fit wall s"] = wall
        rows.append(row)
        del data, ref, got, prob, calls
    print(table(rows))
    footer(t_start)


if __name__ == "__main__":
    main()
