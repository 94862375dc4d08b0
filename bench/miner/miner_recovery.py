"""Recovery of planted relations by the relation miner's default path, against peers.

Data: :func:`kmviz.data.planted_relations.make_planted_relations` (1-5 stars, popularity
skew, user bias, partial observation, planted pairwise rules, a chain, conjunctive rules
whose halves do not hold, popular distractors), several seeds and sizes from 300 x 60 to
5,000 x 500. The truth is the planted implications (pairs, chains' closure, conjunctions).

For each file and method: the first N rows (N = the number of true implications) of its
ranking, scored by recall (true ones among them / N) and precision (true ones / rows
given, at most N), and whether every planted conjunctive rule is among them.

- ``default``: :func:`kmviz.km.relations.mine_relations` (the path the CLI and app take),
  with its wall time, the growth of the process's peak resident set, the path's own memory
  estimate (checked before it starts) and how it chose its settings; ``--trace-memory``
  adds tracemalloc's peak (and slows the calls, so the times are not the path's then).
- ``stable_implications``: today's stability table at its defaults (the baseline).
- ``rules by lift`` / ``rules by confidence``: :func:`kmviz.rules.pairwise_rules`
  (co-support >= 3, confidence >= 0.5).
- ``apriori (mlxtend)``: mlxtend's ``apriori`` on the users x items frame of likes
  (itemsets up to 3 items, min support 3 users and 1 % of them) and ``association_rules`` by confidence,
  one consequent per rule (multi-item antecedents allowed), at equal count.

The last table holds each size's worst recall and precision over the seeds, the
conjunctions found and the default path's slowest call against the 60 s target.

    python bench/miner/miner_recovery.py [--quick] [--methods default,stable,lift,confidence,apriori]
                                   [--seeds 0,1,2] [--sizes 300x60,1000x100,5000x500]
                                   [--trace-memory] [--no-warmup]
"""

from __future__ import annotations

import resource
import time
import tracemalloc

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, parser, table

SIZES = ((300, 60), (600, 80), (1000, 100), (2000, 200), (5000, 500))


def keys_of(df, max_rows):
    out = []
    for a, c in zip(df["antecedent"].head(max_rows), df["consequent"].head(max_rows)):
        a = tuple(sorted(int(x) for x in (a if isinstance(a, (tuple, list, np.ndarray))
                                            else (a,))))
        out.append((a, int(c)))
    return out


def score(found, truth):
    t = truth.keys()
    hit = sum(k in t for k in found)
    conj = {(tuple(sorted(ab)), c) for ab, c in truth.conjunctive}
    return {"recall": hit / len(t) if t else np.nan,
            "precision": hit / len(found) if found else np.nan,
            "conj_found": f"{len(conj & set(found))}/{len(conj)}"}


def run_default(ratings, seed):
    from kmviz.km.relations import mine_relations

    df = mine_relations(ratings, random_state=seed)
    return df, df.attrs.get("chosen", {}).get("summary", "")


def run_stable(ratings, seed):
    from kmviz.km.stability import stable_implications

    return stable_implications(ratings, random_state=seed), ""


def run_rules(ratings, seed, by):
    from kmviz.rules import pairwise_rules

    return pairwise_rules(ratings, min_support=3, min_confidence=0.5, rank_by=by), ""


def run_apriori(ratings, seed):
    import pandas as pd
    from mlxtend.frequent_patterns import apriori, association_rules

    from kmviz.rules import LikeCounts

    c = LikeCounts.of(ratings)
    onehot = pd.DataFrame(c.L.toarray() > 0)  # users x items: small at these sizes
    onehot.columns = [str(k) for k in range(ratings.n_items)]
    # at least 3 users and 1 % of them: lower supports explode the 3-itemsets on 500 items
    freq = apriori(onehot, min_support=max(3, 0.01 * ratings.n_users) / ratings.n_users,
                   use_colnames=True, max_len=3, low_memory=True)
    rules = association_rules(freq, metric="confidence", min_threshold=0.5)
    rules = rules[rules["consequents"].map(len) == 1]
    rules = rules.sort_values(["confidence", "lift", "support"], ascending=False)
    import pandas as pd  # noqa: F811

    return pd.DataFrame({
        "antecedent": [tuple(sorted(int(x) for x in a)) for a in rules["antecedents"]],
        "consequent": [int(next(iter(c))) for c in rules["consequents"]]}), ""


METHODS = {
    "default": ("default (mine_relations)", run_default),
    "stable": ("stable_implications (today's default)", run_stable),
    "lift": ("pairwise rules by lift", lambda r, s: run_rules(r, s, "lift")),
    "confidence": ("pairwise rules by confidence", lambda r, s: run_rules(r, s, "confidence")),
    "apriori": ("apriori (mlxtend), by confidence", run_apriori),
}


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


#: The default path's time target on a 5,000 x 500 file (issue 32), on this 2-core box.
COST_TARGET_S = 60.0


def by_size(rows) -> list[dict]:
    """One row per size and method: the worst recall and precision over the seeds, the
    conjunctions found, the slowest call, the largest RSS growth and memory estimate."""
    out = {}
    for r in rows:
        size = r["file"].split(" ")[0]
        out.setdefault((size, r["method"]), []).append(r)
    summary = []
    for (size, method), rs in out.items():
        found = [tuple(int(x) for x in r["conj_found"].split("/")) for r in rs]
        secs = max(r["seconds"] for r in rs)
        est = [r["estimate_MB"] for r in rs if r["estimate_MB"]]
        summary.append({
            "size": size, "method": method, "files": len(rs),
            "min recall": min(r["recall"] for r in rs),
            "min precision": min(r["precision"] for r in rs),
            "conjunctions found": f"{sum(f for f, _ in found)}/{sum(t for _, t in found)}",
            "max seconds": secs,
            "within cost target": ("yes" if secs <= COST_TARGET_S else "no")
            if method.startswith("default") else "-",
            "max rss_growth_MB": max(r["rss_growth_MB"] for r in rs),
            "max estimate_MB": max(est) if est else None})
    return summary


def main():
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--methods", default="default,stable,lift,confidence,apriori")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--sizes", default=",".join(f"{a}x{b}" for a, b in SIZES))
    p.add_argument("--no-warmup", action="store_true",
                   help="time the first file with the process's first call (imports, Numba "
                        "caches) in it")
    p.add_argument("--trace-memory", action="store_true",
                   help="tracemalloc's peak of each call (slows Python allocations: the "
                        "times are then not the path's)")
    args = p.parse_args()
    from kmviz.data.planted_relations import make_planted_relations

    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.quick:
        sizes, seeds = sizes[:1], seeds[:1]
    methods = args.methods.split(",")
    t_start = time.perf_counter()
    header("Recovery of planted relations: the default relation miner against peers")
    if not args.no_warmup:
        # the first call of a process loads the Numba caches and the libraries: timed apart,
        # so that the first file's row is the path's own cost
        t0 = time.perf_counter()
        warm, _ = make_planted_relations(200, 40, random_state=0)
        for m in methods:
            METHODS[m][1](warm, 0)
        print(f"warm-up (imports, Numba caches; 200 x 40, every method): "
              f"{time.perf_counter() - t0:.1f} s, peak RSS {peak_rss_mb():.0f} MB\n")
    rows = []
    for n_users, n_items in sizes:
        for seed in seeds:
            ratings, truth = make_planted_relations(n_users, n_items, random_state=seed)
            N = truth.n_true
            for m in methods:
                label, fn = METHODS[m]
                if args.trace_memory:
                    tracemalloc.start()
                rss0 = peak_rss_mb()
                t0 = time.perf_counter()
                df, how = fn(ratings, seed)
                secs = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1] / 2**20 if args.trace_memory \
                    else float("nan")
                tracemalloc.stop()
                row = {"file": f"{n_users}x{n_items} s{seed}", "ratings": ratings.n_ratings,
                       "method": label, "N": N, "rows": len(df),
                       **score(keys_of(df, N), truth), "seconds": secs,
                       "peak_MB (traced)": peak,
                       "rss_growth_MB": max(0.0, peak_rss_mb() - rss0),
                       "estimate_MB": df.attrs.get("memory_estimate", 0) / 2**20 or None,
                       "load": load_avg()}
                rows.append(row)
                print(table([row]), flush=True)
                if how:
                    print(f"chosen: {how}\n", flush=True)
    print("## All files\n")
    print(table(rows))
    print("\n## Targets by size and method (recall >= 0.9 and precision >= 0.8 on every file, "
          f"every conjunction found; the default path within {COST_TARGET_S:.0f} s)\n")
    print(table(by_size(rows)))
    footer(t_start)


if __name__ == "__main__":
    main()
