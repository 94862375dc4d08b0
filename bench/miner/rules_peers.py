"""mlxtend's FP-growth + association_rules as a peer of kmviz.rules.pairwise_rules on the same
likes: time, peak memory under a memory budget, and the held-out quality of the top rules.

Data as in bench/miner/implications_vs_rules.py: MovieLens 100K (--ml100k) and latest-small (built
in), 80/20 random split (--seed), liked = rating >= 4, only items with >= 20 training ratings.
The transactions are the users' training likes.

Each cell runs in a fresh interpreter (multiprocessing "spawn") whose address space is capped
with ``resource.setrlimit(RLIMIT_AS, --limit-gb)``: an allocation beyond it raises
MemoryError, reported as "budget hit" with what had finished (a wall-time --budget ends the
cell too). Peak memory is the child's peak resident set (VmHWM), which includes the
interpreter, the data and the split (~0.2 GB, the "baseline" row).

- kmviz: ``pairwise_rules(train, liked=4, min_support=m, min_confidence=0.5, items=...)``:
  rules j => i between two items from the sparse co-occurrence of likes, ranked by its
  default (supported, non-hub, then lift).
- mlxtend: ``fpgrowth(onehot, min_support=m / n_users)`` on the users x items boolean frame
  of likes (mlxtend's input format; 943 x 879 on ML-100K, 671 x 1,036 on latest-small, so
  the frame itself is small), then
  ``association_rules(..., metric="confidence", min_threshold=0.5)``. Its rules have
  itemsets on both sides; the comparison keeps the 1 => 1 rules and counts the longer ones.
  They are ranked by lift (mlxtend's classic order), ties by support.

The two confidences differ: mlxtend's is supp(j, i) / supp(j) over all users (an unrated
item counts as not liked); kmviz's divides by j's fans who rated i. Both rule sets are
judged by the same held-out statistics (kmviz.rules.pooled_heldout_lift: among users who like
j in training and whose rating of i is held out, the share who like i, and observed /
expected held-out likes with i's held-out base rate; 95% bootstrap interval over users).

    python bench/miner/rules_peers.py [--quick] [--supports 20,10,5,3] [--limit-gb 6]
                                [--budget S] [--no-ml100k] [--no-small]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, parser, run_cell, status_kb, table

LIKED = 4.0
MIN_RATINGS = 20
MIN_CONFIDENCE = 0.5
TOP = 500


def load_split(name, ml100k, seed):
    from kmviz.data import load

    ratings = load(ml100k) if name == "MovieLens 100K" else load("movielens-small")
    train, test = ratings.split(0.2, random_state=seed)
    keep = train.item_counts() >= MIN_RATINGS
    return train, test, keep


def peer_cell(emit, method, name, ml100k, seed, min_support):
    """One method at one minimum co-support, in the capped child: the top rules' pairs,
    counts, times and peak memory."""
    import pandas as pd

    from kmviz.rules import LikeCounts, pairwise_rules

    train, test, keep = load_split(name, ml100k, seed)
    base_gb = status_kb("VmHWM") / 2**20
    out = {"baseline_gb": base_gb}
    if method == "baseline":
        return out
    if method == "kmviz":
        t0 = time.perf_counter()
        df = pairwise_rules(train, liked=LIKED, min_support=min_support,
                            min_confidence=MIN_CONFIDENCE, items=keep)
        out.update(seconds=time.perf_counter() - t0, rules=len(df), single=len(df), longer=0,
                   ante=df["antecedent"].to_numpy()[:TOP], cons=df["consequent"].to_numpy()[:TOP])
    else:
        from mlxtend.frequent_patterns import association_rules, fpgrowth

        cols = np.flatnonzero(keep)
        L = LikeCounts.of(train, LIKED).L[:, cols]
        onehot = pd.DataFrame(L.toarray().astype(bool), columns=cols)
        frac = (min_support - 0.5) / train.n_users  # co-support >= min_support users
        t0 = time.perf_counter()
        fi = fpgrowth(onehot, min_support=frac, use_colnames=True)
        t_fp = time.perf_counter() - t0
        sizes = fi["itemsets"].map(len).to_numpy()
        out.update(t_fpgrowth=t_fp, itemsets=len(fi), max_itemset=int(sizes.max(initial=0)),
                   fp_peak_gb=status_kb("VmHWM") / 2**20)
        emit(dict(out))
        t0 = time.perf_counter()
        ar = association_rules(fi, num_itemsets=train.n_users, metric="confidence",
                               min_threshold=MIN_CONFIDENCE)
        t_ar = time.perf_counter() - t0
        one = (ar["antecedents"].map(len) == 1) & (ar["consequents"].map(len) == 1)
        single = ar[one.to_numpy()]
        single = single.assign(j=[next(iter(a)) for a in single["antecedents"]],
                               i=[next(iter(c)) for c in single["consequents"]])
        single = single.sort_values(["lift", "support", "j", "i"],
                                    ascending=[False, False, True, True])
        out.update(t_rules=t_ar, seconds=t_fp + t_ar, rules=len(ar), single=len(single),
                   longer=int(len(ar) - len(single)),
                   ante=single["j"].to_numpy(np.int64)[:TOP],
                   cons=single["i"].to_numpy(np.int64)[:TOP])
    out["peak_gb"] = status_kb("VmHWM") / 2**20
    return out


def run_capped(fn, *args, budget, limit_gb):
    """``fn(emit, *args)`` in a child under RLIMIT_AS and a wall-time budget:
    (status, value, partial, seconds), status "ok", "timeout", "budget hit (MemoryError)" or
    "error: ..."."""
    res = run_cell(fn, *args, budget=budget, memory_gb=limit_gb)
    status = res.status
    if status == "error":
        status = "budget hit (MemoryError)" if "MemoryError" in res.reason else \
            f"error: {res.reason}"
    return status, res.value, res.partial, res.seconds


def held(train, test, ante, cons, k, seed):
    from kmviz.rules import pooled_heldout_lift

    s = pooled_heldout_lift(train, test, ante[:k], cons[:k], liked=LIKED, n_boot=1000,
                            random_state=seed)
    ok = s["lift"] >= 1.5 and s["confidence"] >= 0.6
    return {"pairs": s["pairs"], "held-out n": s["heldout_n"],
            "held-out conf": s["confidence"], "held-out lift": s["lift"],
            "lift 95% CI": f"{s['lift_lo']:.2f}-{s['lift_hi']:.2f}"
            if np.isfinite(s["lift_lo"]) else "-",
            "lift >= 1.5 & conf >= 0.6": "yes" if ok else "no"}


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--supports", default=None, help="minimum co-supports (default 20,10,5,3)")
    ap.add_argument("--limit-gb", type=float, default=6.0, help="RLIMIT_AS of each cell")
    ap.add_argument("--budget", type=float, default=900.0, help="wall seconds per cell")
    ap.add_argument("--no-ml100k", action="store_true")
    ap.add_argument("--no-small", action="store_true", help="skip MovieLens latest-small")
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("mlxtend FP-growth + association_rules vs kmviz.rules.pairwise_rules")
    supports = [int(x) for x in (args.supports or ("20,10" if args.quick else "20,10,5,3"))
                .split(",")]
    ks = [50, 100] if args.quick else [50, 100, 500]
    names = (([] if args.no_ml100k else ["MovieLens 100K"])
             + ([] if args.no_small else ["MovieLens latest-small"]))
    cost_rows, quality_rows = [], []
    for name in names:
        if name == "MovieLens 100K":
            from pathlib import Path

            if not (Path(args.ml100k) / "u.data").exists():
                print(f"skipped: MovieLens 100K not found at {args.ml100k}")
                continue
        train, test, keep = load_split(name, args.ml100k, args.seed)
        n_like = int((train.values >= LIKED).sum())
        print(f"- {name}: {train.n_users:,} users, {int(keep.sum()):,} items with >= "
              f"{MIN_RATINGS} training ratings, {n_like:,} training likes; load {load_avg()}",
              flush=True)
        st, base, _, _ = run_capped(peer_cell, "baseline", name, args.ml100k, args.seed, 0,
                                    budget=120, limit_gb=args.limit_gb)
        base_gb = base["baseline_gb"] if st == "ok" else np.nan
        top_pairs = {}
        for m in supports:
            for method in ("kmviz", "mlxtend"):
                status, v, partial, secs = run_capped(
                    peer_cell, method, name, args.ml100k, args.seed, m, budget=args.budget,
                    limit_gb=args.limit_gb)
                row = {"data": name, "method": method, "min co-support": m,
                       "min support (share of users)": f"{m / train.n_users:.4f}",
                       "status": status, "cell s": secs, "baseline GB": base_gb}
                if v is None and partial:
                    v = partial[-1]
                if v is not None:
                    row.update({"fpgrowth s": v.get("t_fpgrowth"),
                                "association_rules s": v.get("t_rules"),
                                "total s": v.get("seconds"),
                                "itemsets": v.get("itemsets"),
                                "largest itemset": v.get("max_itemset"),
                                "rules": v.get("rules"), "1 => 1 rules": v.get("single"),
                                "longer rules": v.get("longer"),
                                "peak GB": v.get("peak_gb", v.get("fp_peak_gb"))})
                    if status == "ok":
                        top_pairs[method, m] = (v["ante"], v["cons"])
                cost_rows.append(row)
                print(f"  {method}, co-support >= {m}: {status} in {secs:.1f} s", flush=True)
        for (method, m), (a, c) in top_pairs.items():
            for k in ks:
                quality_rows.append({"data": name, "method": method, "min co-support": m,
                                     "k": k, **held(train, test, a, c, k, args.seed)})
        for m in supports:  # how far the two top-100s agree
            if ("kmviz", m) in top_pairs and ("mlxtend", m) in top_pairs:
                a = {(int(x), int(y)) for x, y in zip(*(v[:100] for v in top_pairs["kmviz", m]))}
                b = {(int(x), int(y)) for x, y in zip(*(v[:100] for v in top_pairs["mlxtend", m]))}
                print(f"  top 100 in common at co-support >= {m}: {len(a & b)}")
    print(f"\n## Time and peak memory (each cell capped at {args.limit_gb:g} GB of address "
          f"space and {args.budget:g} s)\n")
    print(table(cost_rows, ["data", "method", "min co-support", "min support (share of users)",
                            "status", "fpgrowth s", "association_rules s", "total s",
                            "itemsets", "largest itemset", "rules", "1 => 1 rules",
                            "longer rules", "peak GB", "baseline GB", "cell s"],
                floatfmt="{:.3g}"))
    print("\n## Held-out quality of the top k 1 => 1 rules (kmviz: its default ranking; "
          "mlxtend: by lift)\n")
    print(table(quality_rows, floatfmt="{:.3f}"))
    footer(t_start)


if __name__ == "__main__":
    main()
