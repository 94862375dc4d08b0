"""KM implications against pairwise association rules: held-out confidence and lift of the
top of each ranking on MovieLens, and recovery of planted implications under noise.

Real data (MovieLens 100K from --ml100k, MovieLens latest-small built in; 80/20 random
split; liked = rating >= 4, kmviz's default on both scales). Only items with at
least 20 training ratings take part, for KM and for the rules alike (the app's default on
data of this size). KM: KolmogorovModel(D) with the package defaults, fitted on the training
ratings; its implications as kmviz.km.mine_implications gives them (each group of
equivalent items stated once, implications item pair by item pair) in its default ranking
(supported and non-hub first, by the lower Wilson bound of the confidence minus the base
rate). Variants: one row per pair of groups (merge_groups="pairs"); only rows with
co-support >= the rules' minimum (same minimum support); and KM fitted on the likes
themselves (0/1 values), which aligns the model's events with the liked threshold. Rules:
kmviz.rules.pairwise_rules with co-support >= 20 and confidence >= 0.5, in their default
ranking (lift) and in KM's (score).

Held-out figures pool the pairs: among users who like j in training and whose rating of i
is held out, the share who like i (confidence) and observed / expected held-out likes with
i's held-out base rate (lift); 95% intervals resample users (1000 draws). "mean pair lift"
is the plain mean of the per-pair held-out lifts (noisier and biased upward by pairs with one
or two held-out ratings; shown for comparison with figures computed that way). A block with
liked = rating >= 5 shows what another threshold does.

Planted data: make_planted_km(n_users, 60 items, D = 8, no Gaussian noise), a share of
entries dropped (only 1 - drop observed) and a share of the observed values flipped
(p -> 1 - p). KM fitted at the true D on all observed entries; its claims (every item pair
with nested supports, equivalences both ways) against the true ones; the rules (co-support
>= 3, any confidence) cut at the same count, for two liked thresholds.

Seeds: every section (each dataset, the planted data) and every use inside one (the split,
KM's initialization, the bootstrap intervals; the planted generator, the flips, KM) gets its
own seed, derived from --seed and the section's and the use's names alone
(:func:`section_seed`): a section's figures do not depend on which sections ran before it or
are left out, and no two uses share a random stream. (Before, every use took --seed itself:
on planted data KM was initialized from the generator's own stream, i.e. at the planted
theta, and the flips were the generator's first draws again.)

    python bench/miner/implications_vs_rules.py [--quick] [--sizes 8,16,24] [--no-ml100k]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import (footer, header, load_ml100k, noisy_planted_km, parser, section_seed,
                     table)

MIN_SUPPORT = 20
MIN_CONFIDENCE = 0.5
MIN_RATINGS = 20
LIKED = 4.0


def fit_km(train, D, seed, on_likes=False):
    from kmviz.km import KolmogorovModel

    data = train
    if on_likes:  # the liked indicator as the value: the model's events are the likes
        data = train._replace_entries(train.users, train.items,
                                      (train.values >= LIKED).astype(float), r_min=0.0,
                                      r_max=1.0)
    m = KolmogorovModel(D=D, random_state=seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(data)
    return m, time.perf_counter() - t0


def held(train, test, df, k, seed, liked=LIKED):
    """Held-out statistics of the top ``k`` rows of ``df`` (pooled over their pairs, with a
    bootstrap interval for the lift), and the mean of the rows' own held-out lifts."""
    out = heldout_summary(train, test, df, k, seed, liked)
    top = df.head(k)
    out["mean pair lift"] = float(top["heldout_lift"].mean()) if len(top) else np.nan
    return out


def heldout_summary(train, test, df, k, seed, liked=LIKED):
    """Pooled held-out confidence and lift of the top ``k`` rows of ``df``, with a 95%
    bootstrap interval (1,000 resamples), and whether they meet issue 11's target."""
    from kmviz.rules import pooled_heldout_lift

    top = df.head(k)
    s = pooled_heldout_lift(train, test, top["antecedent"], top["consequent"], liked=liked,
                            n_boot=1000, random_state=seed)
    return {"pairs": s["pairs"], "median co-support": float(np.median(top["co_support"]))
            if len(top) else np.nan, "held-out n": s["heldout_n"],
            "held-out conf": s["confidence"], "held-out lift": s["lift"],
            "lift 95% CI": f"{s['lift_lo']:.2f}-{s['lift_hi']:.2f}"
            if np.isfinite(s["lift_lo"]) else "-",
            "median base rate": float(np.median(top["base_rate"])) if len(top) else np.nan,
            "lift >= 1.5 & conf >= 0.6": "yes" if s["lift"] >= 1.5 and s["confidence"] >= 0.6
            else "no"}


def real_data(name, ratings, sizes, seed, ks):
    from kmviz.km import mine_implications
    from kmviz.rules import pairwise_rules

    args_seed, km_seed = seed, section_seed(seed, name, "km")
    train, test = ratings.split(0.2, random_state=section_seed(seed, name, "split"))
    seed = section_seed(seed, name, "bootstrap")    # the held-out intervals
    keep = train.item_counts() >= MIN_RATINGS
    base = float(np.mean(test.values >= LIKED))
    print(f"\n## {name}: {train.n_ratings:,} training / {test.n_ratings:,} held-out ratings, "
          f"{int(keep.sum()):,} items with >= {MIN_RATINGS} training ratings; liked = rating "
          f">= {LIKED:g} (held-out share liked {base:.2f}); seeds (from --seed): split "
          f"{section_seed(args_seed, name, 'split')}, KM {km_seed}, bootstrap {seed}\n")
    rows, rare_rows, info = [], [], []
    t0 = time.perf_counter()
    rules = pairwise_rules(train, liked=LIKED, min_support=MIN_SUPPORT,
                           min_confidence=MIN_CONFIDENCE, validation=test, items=keep)
    rules_score = pairwise_rules(train, liked=LIKED, min_support=MIN_SUPPORT,
                                 min_confidence=MIN_CONFIDENCE, validation=test, items=keep,
                                 rank_by="score")
    t_rules = time.perf_counter() - t0
    info.append(f"rules: {len(rules):,} (co-support >= {MIN_SUPPORT}, confidence >= "
                f"{MIN_CONFIDENCE}) in {t_rules:.1f} s")
    for k in ks:
        rows.append({"D": "-", "method": "rules, default ranking (lift)", "k": k,
                     **held(train, test, rules, k, seed)})
        rows.append({"D": "-", "method": "rules, KM's ranking (score)", "k": k,
                     **held(train, test, rules_score, k, seed)})
    models = {}
    for D in sizes:
        for on_likes in (False, True):
            model, t_fit = fit_km(train, D, km_seed, on_likes)
            models[D, on_likes] = model
            t0 = time.perf_counter()
            km = mine_implications(model, train, liked=LIKED, validation=test, items=keep)
            t_mine = time.perf_counter() - t0
            pairs_df = mine_implications(model, train, liked=LIKED, validation=test,
                                         items=keep, merge_groups="pairs")
            c = km.attrs["counts"]
            tag = "KM on likes (0/1)" if on_likes else "KM"
            info.append(f"{tag}, D = {D}: fit {t_fit:.1f} s, mine {t_mine:.1f} s; "
                        f"{c['implications']:,} implications, {c['claims']:,} group claims, "
                        f"{c['groups']:,} groups of equivalent items, {c['hubs']:,} hubs; "
                        f"{int((km.co_support >= MIN_SUPPORT).sum()):,} rows with "
                        f"co-support >= {MIN_SUPPORT}")
            variants = [(f"{tag}, default ranking", km)]
            if not on_likes:
                variants += [(f"{tag}, one row per pair of groups", pairs_df),
                             (f"{tag}, co-support >= {MIN_SUPPORT} (the rules' minimum)",
                              km[km.co_support >= MIN_SUPPORT])]
            for label, df in variants:
                for k in ks:
                    rows.append({"D": D, "method": label, "k": k,
                                 **held(train, test, df, k, seed)})
            rare = km[km.co_support < MIN_SUPPORT]
            for label, df in (("top 100 of the default ranking", rare.head(100)),
                              ("all", rare)):
                rare_rows.append({"data": name, "D": D, "model": tag, "which": label,
                                  **held(train, test, df, len(df), seed)})
    # another liked threshold: the literal top of the scale (rating 5), D = 8's model
    top_rows = []
    if (8, False) in models:
        strict = 5.0
        km5 = mine_implications(models[8, False], train, liked=strict, validation=test,
                                items=keep)
        rules5 = pairwise_rules(train, liked=strict, min_support=MIN_SUPPORT,
                                min_confidence=0.0, validation=test, items=keep)
        for k in ks:
            top_rows.append({"D": 8, "method": "KM, default ranking, liked = 5", "k": k,
                             **held(train, test, km5, k, seed, strict)})
            top_rows.append({"D": "-", "method": f"rules (co-support >= {MIN_SUPPORT}, any "
                             "confidence), liked = 5", "k": k,
                             **held(train, test, rules5, k, seed, strict)})
    for r in rows + top_rows:
        ok = r["held-out lift"] >= 1.5 and r["held-out conf"] >= 0.6
        r["lift >= 1.5 & conf >= 0.6"] = "yes" if ok else "no"
    print("\n".join(f"- {x}" for x in info) + "\n")
    cols = ["D", "method", "k", "pairs", "median co-support", "held-out n", "held-out conf",
            "held-out lift", "lift 95% CI", "mean pair lift", "lift >= 1.5 & conf >= 0.6"]
    print(table(rows, cols, floatfmt="{:.3f}"))
    if top_rows:
        print(f"\nThe same with liked = rating >= 5 (held-out share liked "
              f"{float(np.mean(test.values >= 5)):.2f}):\n")
        print(table(top_rows, cols, floatfmt="{:.3f}"))
    return rare_rows


# ----------------------------------------------------------------------------- planted
def planted(seed, n_users, flips, drops, quick):
    from kmviz.km import KolmogorovModel
    from kmviz.km.mining import km_claims
    from kmviz.rules import pairwise_rules, recovery_scores

    rows = []
    for drop in drops:
        for flip in flips:
            noisy, truth = noisy_planted_km(n_users, drop, flip, seed=seed, section="planted",
                                            noise=0.0)
            m = KolmogorovModel(D=8, random_state=section_seed(seed, "planted", "km"),
                                max_iter=10 if quick else 20)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit(noisy)
            claims = km_claims(m, noisy)
            true = truth.implications
            row = {"drop": f"{drop:.0%}", "flip": f"{flip:.0%}", "true pairs": len(true)}
            s = recovery_scores(claims, true)
            row.update({"KM found": s["found"], "KM P": s["precision"], "KM R": s["recall"],
                        "KM F1": s["f1"]})
            for liked in (0.5, 0.75):
                rules = pairwise_rules(noisy, liked=liked, min_support=3, min_confidence=0.0)
                found = rules[["antecedent", "consequent"]].to_numpy()[:len(claims)]
                r = recovery_scores(found, true)
                row.update({f"rules@{liked:g} P": r["precision"], f"rules@{liked:g} R":
                            r["recall"], f"rules@{liked:g} F1": r["f1"]})
            best = max(row["rules@0.5 F1"], row["rules@0.75 F1"])
            row["KM F1 > rules'"] = "yes" if row["KM F1"] > best else "no"
            rows.append(row)
    print(f"\n## Planted KM (n_users = {n_users}, 60 items, D = 8 fitted at D = 8): precision "
          "/ recall / F1 of the true implications (directed item pairs), rules cut at KM's "
          "count, liked = p >= 0.5 and p >= 0.75 (the default on a [0, 1] scale); seeds "
          f"(from --seed): data {section_seed(seed, 'planted', 'data')}, flips "
          f"{section_seed(seed, 'planted', 'flips')}, KM {section_seed(seed, 'planted', 'km')}"
          "\n")
    print(table(rows, floatfmt="{:.2f}"))


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="D values (default 8,16,24; quick 8)")
    ap.add_argument("--no-ml100k", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("KM implications vs pairwise association rules")
    sizes = [int(x) for x in (args.sizes or ("8" if args.quick else "8,16,24")).split(",")]
    ks = [50, 100] if args.quick else [50, 100, 500]
    rare = []
    from kmviz.data import load

    if not args.no_ml100k:
        r = load_ml100k(args.ml100k)
        if r is not None:
            rare += real_data("MovieLens 100K", r, sizes, args.seed, ks)
    rare += real_data("MovieLens latest-small", load("movielens-small"), sizes, args.seed, ks)
    print(f"\n## KM implications on pairs too rarely co-liked for a rule (co-support < "
          f"{MIN_SUPPORT}), held out\n")
    print(table(rare, ["data", "D", "model", "which", "pairs", "median co-support",
                       "held-out n", "held-out conf", "held-out lift", "lift 95% CI"],
                floatfmt="{:.3f}"))
    flips = [0.05, 0.2] if args.quick else [0.05, 0.1, 0.2]
    drops = [0.5, 0.9] if args.quick else [0.5, 0.7, 0.9]
    planted(args.seed, 1000 if args.quick else 2000, flips, drops, args.quick)
    footer(t_start)


if __name__ == "__main__":
    main()
