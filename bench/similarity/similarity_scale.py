"""Similarity learning at scale: time per Gauss-Newton iteration and peak memory with MLP
towers at 100K, 1M and 10M observed pairs (MovieLens shapes), next to the naive all-pairs cost.

The pairs are synthetic (item popularity and user activity heavy-tailed, as in MovieLens;
8 Gaussian features per user and item): the cost of an iteration depends on |O|, m, n, k
and the towers, not on the values. Each size runs in its own process (its peak resident
memory is that fit's). The naive cost is what forming the m x n scores, the per-pair loss
and the gradient (one O(mn k) pass, as :mod:`kmviz.similarity._reference` does) would take,
measured at 943 x 1682 and scaled by m n; a Gauss-Newton iteration needs (2 + #CG) such
passes. Target (issue 21): cost linear in m + n and |O|; an MLP fit on 10M pairs under 4 GB.

    python bench/similarity/similarity_scale.py                     # 100k, 1m, 10m; 3 iterations each
    python bench/similarity/similarity_scale.py --sizes 100k,1m     # smaller
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import numpy as np

from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table

SHAPES = {"100k": (943, 1682, 100_000), "1m": (6040, 3706, 1_000_000),
          "10m": (69878, 10677, 10_000_000)}


def _pairs(m, n, nnz, rng):
    """``nnz`` distinct (user, item) pairs, heavy-tailed on both sides."""
    pu = rng.lognormal(0.0, 1.0, m)
    pu /= pu.sum()
    pi = 1.0 / (np.arange(n) + 10.0) ** 0.9
    pi = rng.permutation(pi / pi.sum())
    keys = np.zeros(0, dtype=np.int64)
    while keys.size < nnz:
        draw = int(1.3 * (nnz - keys.size)) + 1000
        u = rng.choice(m, draw, p=pu)
        i = rng.choice(n, draw, p=pi)
        keys = np.unique(np.concatenate([keys, u.astype(np.int64) * n + i]))
    keys = rng.choice(keys, nnz, replace=False)
    return keys // n, keys % n


def child(size, iters, hidden, k, seed):
    import warnings

    from kmviz.data import Ratings
    from kmviz.similarity import SimilarityLearning

    m, n, nnz = SHAPES[size]
    rng = np.random.default_rng(seed)
    u, i = _pairs(m, n, nnz, rng)
    data = Ratings.from_arrays(u, i, np.ones(nnz), user_ids=np.arange(m),
                               item_ids=np.arange(n), implicit=True)
    Fu, Fv = rng.standard_normal((m, 8)), rng.standard_normal((n, 8))
    del u, i
    model = SimilarityLearning(k=k, user_tower=f"mlp:{hidden}", item_tower=f"mlp:{hidden}",
                               max_iter=iters, tol=0.0, random_state=seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data, user_features=Fu, item_features=Fv)
    total = time.perf_counter() - start
    rows = model.trace_.rows
    walls = np.diff([0.0] + [r["wall_s"] for r in rows])
    later = slice(1, None) if len(rows) > 1 else slice(None)   # the first one compiles
    n_cg = [r["n_cg"] for r in rows][later]
    cg = [r["cg_seconds"] / max(r["n_cg"], 1) for r in rows][later]
    out = {"size": size, "m": m, "n": n, "pairs": nnz, "params": int(model.theta_.size),
           "fit_s": total, "iter_s": float(np.mean(walls[later])),
           "first_iter_s": float(walls[0]), "n_cg": float(np.mean(n_cg)),
           "gnvp_s": float(np.mean(cg)),
           "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
    print(json.dumps(out))


def naive_pass_seconds(k, repeats=3):
    """Seconds per entry of one dense all-pairs pass (scores, loss terms, gradient)."""
    from kmviz.similarity import _reference as R

    m, n = 943, 1682
    rng = np.random.default_rng(0)
    P, Q = rng.standard_normal((m, k)) * 0.1, rng.standard_normal((n, k)) * 0.1
    obs = rng.random((m, n)) < 0.05
    Y = np.where(obs, 1.0, 0.0)
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        S = P @ Q.T
        _, first, _ = R.entry_terms(S, obs, Y, "logistic", 0.25, np.ones(m), np.ones(n),
                                    -np.ones((m, n)))
        _ = first @ Q, first.T @ P
        best = min(best, time.perf_counter() - t)
    return best / (m * n)


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100k,1m,10m")
    p.add_argument("--iters", type=int, default=3, help="Gauss-Newton iterations per size")
    p.add_argument("--hidden", default="64", help="MLP hidden sizes of both towers")
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--timeout", type=float, default=1800, help="seconds per size at most")
    p.add_argument("--child", help=argparse_hidden())
    args = p.parse_args()
    if args.child:
        return child(args.child, args.iters, args.hidden, args.k, args.seed)
    t0 = time.perf_counter()
    header("Similarity learning: Gauss-Newton iteration time and memory against |O|")
    per_entry = naive_pass_seconds(args.k)
    print(f"towers mlp:{args.hidden} -> k = {args.k} on [ids | 8 features] for users and "
          f"items; {args.iters} Gauss-Newton iteration(s) per size (means over the "
          f"iterations after the first); naive dense pass {per_entry * 1e9:.2f} ns per (i, j) pair "
          f"(measured at 943 x 1682, k = {args.k})\n")
    rows = []
    for size in args.sizes.split(","):
        cmd = [sys.executable, __file__, "--child", size, "--iters", str(args.iters),
               "--hidden", args.hidden, "--k", str(args.k), "--seed", str(args.seed)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            rows.append({"size": size, "note": f"over {args.timeout:g} s"})
            continue
        if out.returncode != 0:
            rows.append({"size": size, "note": out.stderr.strip().splitlines()[-1][:120]})
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        naive_pass = per_entry * r["m"] * r["n"]
        r["naive_pass_s"] = naive_pass
        r["naive_iter_s"] = naive_pass * (2 + r["n_cg"])
        r["naive / fast"] = r["naive_iter_s"] / r["iter_s"]
        rows.append(r)
    print(table(rows, ["size", "m", "n", "pairs", "params", "iter_s", "first_iter_s", "n_cg",
                       "gnvp_s", "naive_pass_s", "naive_iter_s", "naive / fast",
                       "peak_rss_gb", "note"]))
    ok = [r for r in rows if "iter_s" in r]
    if len(ok) >= 2:
        a, b = ok[0], ok[-1]
        print(f"\n{b['size']} / {a['size']}: pairs x{b['pairs'] / a['pairs']:.0f}, m + n "
              f"x{(b['m'] + b['n']) / (a['m'] + a['n']):.1f}, time per iteration "
              f"x{b['iter_s'] / a['iter_s']:.1f}, per Gauss-Newton product "
              f"x{b['gnvp_s'] / a['gnvp_s']:.1f}; m n x{b['m'] * b['n'] / (a['m'] * a['n']):.0f}.")
    footer(t0)


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
