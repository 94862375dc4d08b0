"""Which ranking of KM's implications holds up on held-out data (chosen on a validation
split), what D and the liked threshold do to it, and which strong rules KM misses at each D.

Data as in bench/miner/implications_vs_rules.py: MovieLens 100K (--ml100k) and latest-small, 80/20
random split (--seed), liked = rating >= 4, only items with >= 20 training ratings, KM with
the package defaults (``KolmogorovModel(D, random_state=seed)``), implications from
``kmviz.km.mine_implications`` (one row per group of equivalent items, implications item pair
by item pair). Held-out statistics pool the top k pairs (``kmviz.rules.pooled_heldout_lift``).

1. Choosing the ranking without looking at the held-out part: the training part is split
   again 80/20 (seed + 1); KM (D = 8) is fitted on the inner 80% and every candidate ranking
   is scored on the inner 20% (top-100 pooled validation lift and confidence). The candidate
   kept is the one with the highest validation lift on the worse of the two datasets among
   those with validation confidence >= 0.6 on both. Candidates (each documented in
   kmviz.rules.rank_pairs; supported and non-hub rows first in all of them):
   ``score`` (lower Wilson bound of the confidence minus the base rate, the default so far),
   ``lift_lo`` (that lower bound divided by the base rate: a cautious lift), ``lift``,
   ``confidence``, ``score`` with hubs at 5% instead of 20% of the items, and ``score`` on
   rows with co-support >= 20 (the rules' minimum).
2. The test table: every candidate on the held-out part for KM fitted on the whole training
   part at D in --sizes, and for the chosen one, liked = rating >= 5 and KM trained on the
   likes themselves (``KolmogorovModel(threshold=4)``).
3. Strong rules KM misses: the top 100 pairwise rules (``kmviz.rules.pairwise_rules``,
   co-support >= 20, confidence >= 0.5, default ranking) and the share KM implies
   (``kmviz.km.mining.missed_rules``) at D = 8, 16, 24, 32, with the refit-free bounds on the
   D that would state them (``order_dimension``).

4. (``--selection``) The model chosen per dataset on the same validation split: KM on the
   ratings or KM on the likes (``threshold=4``), D = 8, each with ``score`` or ``lift_lo``;
   the pair with the highest validation lift among those with validation confidence >= 0.6
   is refitted on the whole training part and judged on the held-out part; with the share
   of the top 100 rules each model implies.

    python bench/miner/implications_ranking.py [--quick] [--sizes 8,16,24] [--no-ml100k]
                                         [--selection]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_avg, load_ml100k, parser, table
from implications_vs_rules import heldout_summary

LIKED = 4.0
MIN_RATINGS = 20
MIN_SUPPORT = 20
K = 100
#: name -> (rank_by, hub_share, min co-support)
CANDIDATES = {
    "score (default so far)": ("score", 0.2, 0),
    "lift_lo": ("lift_lo", 0.2, 0),
    "lift": ("lift", 0.2, 0),
    "confidence": ("confidence", 0.2, 0),
    "score, hubs at 5%": ("score", 0.05, 0),
    f"score, co-support >= {MIN_SUPPORT}": ("score", 0.2, MIN_SUPPORT),
}


def fit(train, D, seed, threshold=None):
    from kmviz.km import KolmogorovModel

    kw = {} if threshold is None else {"threshold": threshold}
    m = KolmogorovModel(D=D, random_state=seed, **kw)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(train)
    return m, time.perf_counter() - t0


def ranked(model, train, held, keep, cand, liked=LIKED):
    from kmviz.km import mine_implications

    by, hub, min_co = CANDIDATES[cand]
    df = mine_implications(model, train, liked=liked, validation=held, items=keep,
                           rank_by=by, hub_share=hub)
    return df[df["co_support"] >= min_co] if min_co else df


def pooled(train, held, df, k, seed, liked=LIKED):
    names = {"held-out conf": "conf", "held-out lift": "lift"}
    return {names.get(key, key): value
            for key, value in heldout_summary(train, held, df, k, seed, liked).items()}


def selection(data, seed):
    """Section 4: per dataset, KM on ratings or on likes, score or lift_lo, chosen on the
    validation split; the choice refitted on the training part and judged held out."""
    from kmviz.km.mining import missed_rules
    from kmviz.rules import pairwise_rules

    val_rows, test_rows = [], []
    models = {"KM on ratings": None, "KM on likes (threshold=4)": LIKED}
    rankings = ("score (default so far)", "lift_lo")
    for name, ratings in data:
        train, test = ratings.split(0.2, random_state=seed)
        inner, val = train.split(0.2, random_state=seed + 1)
        keep = train.item_counts() >= MIN_RATINGS
        keep_in = inner.item_counts() >= MIN_RATINGS
        rules = pairwise_rules(train, liked=LIKED, min_support=MIN_SUPPORT, min_confidence=0.5,
                               items=keep)
        best, best_lift = None, -np.inf
        for label, thr in models.items():
            m, t = fit(inner, 8, seed, threshold=thr)
            print(f"- {name}: {label}, validation fit {t:.0f} s; load {load_avg()}", flush=True)
            for cand in rankings:
                r = pooled(inner, val, ranked(m, inner, val, keep_in, cand), K, seed)
                val_rows.append({"data": name, "model": label, "ranking": cand, **r})
                if r["conf"] >= 0.6 and r["lift"] > best_lift:
                    best, best_lift = (label, cand), r["lift"]
        for label, thr in models.items():
            m, t = fit(train, 8, seed, threshold=thr)
            miss = missed_rules(m, rules, strong=K)
            for cand in rankings:
                r = pooled(train, test, ranked(m, train, test, keep, cand), K, seed)
                test_rows.append({"data": name, "model": label, "ranking": cand,
                                  "chosen on validation": "<-" if best == (label, cand) else "",
                                  **r, "top-100 rules implied": miss.attrs["held"]})
    print(f"\n## 4a. Validation split (KM at D = 8 on the inner 80%; top {K})\n")
    print(table(val_rows, ["data", "model", "ranking", "pairs", "median co-support",
                           "held-out n", "conf", "lift", "lift 95% CI", "median base rate"],
                floatfmt="{:.3f}"))
    print(f"\n## 4b. Held-out part (KM at D = 8 on the whole training part; top {K}); the "
          "row chosen on validation marked\n")
    print(table(test_rows, ["data", "model", "ranking", "chosen on validation", "pairs",
                            "median co-support", "held-out n", "conf", "lift", "lift 95% CI",
                            "lift >= 1.5 & conf >= 0.6", "top-100 rules implied"],
                floatfmt="{:.3f}"))


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="D values of the test table (default 8,16,24)")
    ap.add_argument("--miss-sizes", default=None, help="D values of the missed-rules table "
                    "(default 8,16,24,32)")
    ap.add_argument("--no-ml100k", action="store_true")
    ap.add_argument("--selection", action="store_true",
                    help="only section 4: the model and ranking chosen per dataset")
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("KM implications: ranking chosen on validation, D, liked, and the rules KM misses")
    sizes = [int(x) for x in (args.sizes or ("8" if args.quick else "8,16,24")).split(",")]
    miss_sizes = [int(x) for x in (args.miss_sizes or ("8,16" if args.quick else "8,16,24,32"))
                  .split(",")]
    from kmviz.data import load

    data = []
    if not args.no_ml100k:
        r = load_ml100k(args.ml100k)
        if r is not None:
            data.append(("MovieLens 100K", r))
    data.append(("MovieLens latest-small", load("movielens-small")))
    if args.selection:
        selection(data, args.seed)
        footer(t_start)
        return
    splits = {}
    val_rows, info = [], []
    for name, ratings in data:
        train, test = ratings.split(0.2, random_state=args.seed)
        inner, val = train.split(0.2, random_state=args.seed + 1)
        keep = train.item_counts() >= MIN_RATINGS
        keep_in = inner.item_counts() >= MIN_RATINGS
        splits[name] = (train, test, keep)
        m, t = fit(inner, 8, args.seed)
        info.append(f"{name}: validation fit (D = 8, inner 80%) {t:.0f} s; load {load_avg()}")
        for cand in CANDIDATES:
            df = ranked(m, inner, val, keep_in, cand)
            val_rows.append({"data": name, "ranking": cand, **pooled(inner, val, df, K,
                                                                    args.seed)})
        print(f"- {info[-1]}", flush=True)
    # the choice: best worst-case validation lift among candidates with conf >= 0.6 on both
    by_cand = {}
    for r in val_rows:
        by_cand.setdefault(r["ranking"], []).append(r)
    ok = {c: min(r["lift"] for r in rs) for c, rs in by_cand.items()
          if all(r["conf"] >= 0.6 for r in rs)}
    chosen = max(ok, key=ok.get) if ok else max(
        by_cand, key=lambda c: min(r["lift"] for r in by_cand[c]))
    for r in val_rows:
        r["chosen"] = "<-" if r["ranking"] == chosen else ""
    print(f"\n## 1. Rankings on the validation split (training part split 80/20 again; KM at "
          f"D = 8 on the inner 80%; top {K})\n")
    print(table(val_rows, ["data", "ranking", "pairs", "median co-support", "held-out n",
                           "conf", "lift", "lift 95% CI", "median base rate", "chosen"],
                floatfmt="{:.3f}"))
    print(f"Chosen: **{chosen}** (validation conf >= 0.6 on both datasets: "
          f"{', '.join(sorted(ok)) or 'none'})\n")

    test_rows, miss_rows = [], []
    for name, _ in data:
        train, test, keep = splits[name]
        models = {}
        for D in sorted(set(sizes) | set(miss_sizes)):
            models[D], t = fit(train, D, args.seed)
            print(f"- {name}: D = {D} fit {t:.0f} s; load {load_avg()}", flush=True)
        for D in sizes:
            for cand in CANDIDATES:
                df = ranked(models[D], train, test, keep, cand)
                test_rows.append({"data": name, "D": D, "model": "KM on ratings",
                                  "ranking": cand, "liked": f">= {LIKED:g}",
                                  **pooled(train, test, df, K, args.seed)})
        df = ranked(models[8] if 8 in models else models[sizes[0]], train, test, keep, chosen,
                    liked=5.0)
        test_rows.append({"data": name, "D": 8, "model": "KM on ratings", "ranking": chosen,
                          "liked": ">= 5", **pooled(train, test, df, K, args.seed, liked=5.0)})
        m_likes, t = fit(train, 8, args.seed, threshold=LIKED)
        for cand in ("score (default so far)", chosen):
            df = ranked(m_likes, train, test, keep, cand)
            test_rows.append({"data": name, "D": 8, "model": "KM on likes (threshold=4)",
                              "ranking": cand, "liked": f">= {LIKED:g}",
                              **pooled(train, test, df, K, args.seed)})
        # 3. the strong rules KM misses, by D
        from kmviz.km.mining import missed_rules
        from kmviz.rules import pairwise_rules

        rules = pairwise_rules(train, liked=LIKED, min_support=MIN_SUPPORT, min_confidence=0.5,
                               items=keep)
        for D in miss_sizes:
            miss = missed_rules(models[D], rules, strong=K)
            a = miss.attrs
            dim = a["dimension"]
            miss_rows.append({"data": name, "D": D, "strong rules": a["strong"],
                              "held by KM": a["held"], "share held": a["held"] / a["strong"],
                              "median outside events (missed)":
                              float(miss["outside_events"].median()) if len(miss) else np.nan,
                              "median model P(i | j) (missed)":
                              float(miss["model_confidence"].median()) if len(miss) else np.nan,
                              "rule items": dim["items"], "classes": dim["classes"],
                              "longest chain": dim["chain"], "width": dim["width"],
                              "D needed, lower": dim["d_lower"],
                              "D needed, upper": dim["d_upper"]})
    print(f"\n## 2. Top {K} on the held-out part (KM fitted on the whole training part)\n")
    print(table(test_rows, ["data", "D", "model", "ranking", "liked", "pairs",
                            "median co-support", "held-out n", "conf", "lift", "lift 95% CI",
                            "median base rate", "lift >= 1.5 & conf >= 0.6"],
                floatfmt="{:.3f}"))
    print(f"\n## 3. The top {K} pairwise rules (co-support >= {MIN_SUPPORT}, confidence >= 0.5,"
          " default ranking): the share KM implies, by D, and the refit-free bounds on the D "
          "that states them as nested supports (kmviz.km.mining.order_dimension)\n")
    print(table(miss_rows, floatfmt="{:.3g}"))
    footer(t_start)


if __name__ == "__main__":
    main()
