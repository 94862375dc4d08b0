"""Stable implications (kmviz.km.stable_implications): the one default chosen on validation
splits of both datasets, then judged on held-out data against pairwise rules, and on planted
KM data against one fit.

Data: MovieLens 100K (--ml100k, read at run time, never stored) and the built-in
latest-small; random 80/20 outer splits (seeds --seed, --seed + 1, ...); liked = rating >= 4;
only items with >= 20 training ratings, for KM and rules alike. Held-out figures pool the
top k pairs (kmviz.rules.pooled_heldout_lift: observed / expected held-out likes, 95%
interval resampling users); "judged" = pairs with >= 3 held-out ratings of i among j's fans.

1. ``--section select``: on the training part of outer splits --seed, --seed + 1
   (--val-splits), split 80/20 again; the refits (B = 20, D = 8, KM on the ratings, half
   subsamples; --select-configs for others) run on the inner 80%, and every candidate
   ranking (``candidates``: the previous default; rows with >= 3 / 5 / 8 out-of-bag ratings
   of i among j's fans per refit first, with or without the stable tier, by the
   distinct-user or the pooled lower bound of the out-of-bag lift) is judged on the inner
   20% (top 100). Kept: the highest worse-of-the-two-datasets mean lift among those with
   mean confidence >= 0.6 and >= 50 of 100 judged on both.
2. ``--section test``: the default on every outer split: top 50 / 100 / 500 of KM's default
   ranking, of the same with co-support >= 20 (the rules' minimum), of the stability order,
   of the previous default, and of the rules (co-support >= 20, confidence >= 0.5, ranked by
   lift); upper bounds: the judged pairs of KM's table and of the rules ranked by their
   held-out lift itself (an oracle); the time of the B refits.
3. ``--section planted``: make_planted_km (2,000 users, 60 items, D = 8), a share of
   entries dropped and of values flipped; five single fits on all users (seeded seed + 1 +
   k: the generator's own seed would start KM at the planted theta) against the refits'
   stability order and default ranking, each cut at every single fit's count (precision /
   recall of the planted implications), and the pairs held in every refit.

4. ``--section cost``: where the refits run. B = --refits refits of D = 8 on all of
   MovieLens 100K (items with >= 20 ratings), the same random_state, in one run: in process
   one after the other (each refit on every Numba thread), in process on one thread per
   Numba thread (the default, kmviz.km._refits.REFIT_THREADS), and on a Dask LocalCluster
   of --workers worker processes (``parallel_backend("dask", client="local:N")``, one task
   per refit, the ratings scattered once), twice (new workers load the compiled kernels
   from Numba's cache on their first task; --dask-first runs them before the in-process
   ones, against a load that grows); the cluster's start is timed apart. Each
   stable_implications table is checked equal to the first; the load average before and
   after each.

    python bench/miner/implications_stability.py [--section select|test|planted|cost|all]
                                           [--splits 3] [--refits 20] [--quick]
                                           [--workers 2] [--dask-first]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import (footer, header, load_avg, load_ml100k, noisy_planted_km, parser,
                     section_seed, table)

LIKED = 4.0
MIN_RATINGS = 20
MIN_SUPPORT = 20
KS = (50, 100, 500)
N_SINGLE = 5  # seeds of the single fits on planted data


def summary(train, test, df, k, seed):
    from kmviz.rules import pooled_heldout_lift

    top = df.head(k)
    s = pooled_heldout_lift(train, test, top["antecedent"], top["consequent"], liked=LIKED,
                            n_boot=1000, random_state=seed)
    judged = int((top["heldout_n"].to_numpy() >= 3).sum()) if "heldout_n" in top else 0
    return {"k": k, "pairs": s["pairs"], "judged": judged,
            "median co-support": float(np.median(top["co_support"])) if len(top) else np.nan,
            "held-out n": s["heldout_n"], "conf": s["confidence"], "lift": s["lift"],
            "lift 95% CI": (f"{s['lift_lo']:.2f}-{s['lift_hi']:.2f}"
                            if np.isfinite(s["lift_lo"]) else "-")}


def refits_for(train, keep, train_on, resampling, B, seed, D=8):
    from kmviz.km.stability import _settings, map_refits, refit_supports

    settings = _settings(train, LIKED, train_on, {"D": D})
    seeds = np.random.SeedSequence(seed).generate_state(B)
    tasks = [{"seed": int(s), "resampling": resampling, "fraction": 0.5,
              "settings": settings} for s in seeds]
    t0, c0 = time.perf_counter(), time.process_time()
    out = map_refits(refit_supports, tasks, shared=train)
    refits_for.cpu = time.process_time() - c0
    return out, time.perf_counter() - t0


def table_of(train, test, keep, refits, share, train_on="ratings"):
    from kmviz.km import stable_implications

    return stable_implications(train, liked=LIKED, validation=test, items=keep, refits=refits,
                               stable_share=share, train_on=train_on)


def _pooled_bound(km):
    """The out-of-bag lift's lower bound on the counts summed over the holding refits (as if
    every refit's out-of-bag users were new ones: too narrow, a candidate)."""
    from kmviz.rules import _ratio, wilson_interval

    nh = km["n_held"].to_numpy(float)
    co, n = km["oob_co_support"].to_numpy() * nh, km["oob_n"].to_numpy() * nh
    lo, _ = wilson_interval(co, n)
    return np.nan_to_num(_ratio(lo, _ratio(co, n * km["oob_lift"].to_numpy())), nan=-np.inf)


def candidates(km, share):
    """The rankings compared on validation: the previous default, and rows with >= m
    out-of-bag ratings per refit first (with or without the stable tier), by the
    distinct-user bound (the table's oob_lift_lo) or the pooled one."""
    out = {"previous default (stable >= 0.25, per-refit bound)": _previous_default(km, share)}
    st = km["stability"].to_numpy() >= share - 1e-12
    n = km["oob_n"].fillna(0).to_numpy()
    bounds = {"distinct-user bound": km["oob_lift_lo"].fillna(-np.inf).to_numpy(),
              "pooled bound": _pooled_bound(km)}
    for m in (3, 5, 8):
        for tier in (False, True):
            for bname, key in bounds.items():
                first = (n >= m) & st if tier else n >= m
                label = f"oob_n >= {m}{' & stable' if tier else ''} first, {bname}"
                out[label] = km.iloc[np.lexsort((-km["co_support"].to_numpy(), -key, ~first))]
    return out


def select(data, seeds, B, configs=None):
    """Section 1: on the inner 80/20 of each outer split's training part, every candidate
    ranking of the same refits; kept: the highest worse-of-the-two-datasets mean lift among
    those with mean confidence >= 0.6 and >= 50 of 100 judged on both."""
    from kmviz.km.stability import DEFAULTS

    rows = []
    configs = configs or [("ratings", "subsample")]
    for seed in seeds:
        for name, ratings in data:
            train, _ = ratings.split(0.2, random_state=seed)
            inner, val = train.split(0.2, random_state=seed + 1)
            keep = inner.item_counts() >= MIN_RATINGS
            for train_on, how in configs:
                refits, t = refits_for(inner, keep, train_on, how, B, seed)
                print(f"- {name}, split {seed}: {train_on}/{how}: {B} refits {t:.0f} s; "
                      f"load {load_avg()}", flush=True)
                km = table_of(inner, val, keep, refits, DEFAULTS["stable_share"], train_on)
                for label, df in candidates(km, DEFAULTS["stable_share"]).items():
                    rows.append({"data": name, "split": seed, "train on": train_on,
                                 "resampling": how, "ranking": label,
                                 **summary(inner, val, df, 100, seed)})
    agg = {}
    for r in rows:
        agg.setdefault((r["train on"], r["resampling"], r["ranking"], r["data"]), []).append(r)
    mean = {k: {f: float(np.mean([r[f] for r in rs])) for f in ("lift", "conf", "judged")}
            for k, rs in agg.items()}
    names = sorted({k[3] for k in mean})
    by = {}
    for (tr, how, rk, d), v in mean.items():
        by.setdefault((tr, how, rk), {})[d] = v
    ok = {c: min(v["lift"] for v in ds.values()) for c, ds in by.items()
          if len(ds) == len(names) and all(v["conf"] >= 0.6 and v["judged"] >= 50
                                           for v in ds.values())}
    chosen = max(ok, key=ok.get) if ok else None
    out = [{"train on": c[0], "resampling": c[1], "ranking": c[2],
            **{f"{d}: {f}": ds.get(d, {}).get(f) for d in names
               for f in ("lift", "conf", "judged")},
            "worse lift": min(v["lift"] for v in ds.values()),
            "chosen": "<-" if c == chosen else ""} for c, ds in by.items()]
    out.sort(key=lambda r: -r["worse lift"])
    print(f"\n## 1. Validation (inner 80/20 of the training part of splits {list(seeds)}; "
          f"B = {B}, D = 8; top 100, mean over the splits)\n")
    print(table(out, floatfmt="{:.3f}"))
    print(f"Chosen: {chosen}\n")
    return chosen


def _oracle(df):
    """Upper bound: the judged pairs (>= 3 held-out ratings of i among j's fans) ranked by
    their held-out lift itself (selected on the held-out noise, so optimistic)."""
    j = df[df["heldout_n"].to_numpy() >= 3]
    return j.iloc[np.argsort(-j["heldout_lift"].to_numpy(), kind="stable")]


def _previous_default(km, share):
    """The ranking before this change: stable (>= share) first, then the lower bound of the
    mean per-refit out-of-bag counts (recomputed here from the table's columns)."""
    from kmviz.rules import _ratio, wilson_interval

    lo, _ = wilson_interval(km["oob_co_support"].to_numpy(), km["oob_n"].to_numpy())
    base = _ratio(km["oob_co_support"].to_numpy(),
                  km["oob_n"].to_numpy() * km["oob_lift"].to_numpy())
    key = np.nan_to_num(_ratio(lo, base), nan=-np.inf)
    order = np.lexsort((-km["co_support"].to_numpy(), -km["stability"].to_numpy(), -key,
                        km["stability"].to_numpy() < share - 1e-12))
    return km.iloc[order]


def test(data, seeds, B, config=None):
    from kmviz.km.stability import DEFAULTS, stability_order
    from kmviz.rules import pairwise_rules

    train_on, how, share = DEFAULTS["train_on"], DEFAULTS["resampling"], DEFAULTS["stable_share"]
    if config:
        train_on, how = config.split(",")
    rows, cost = [], []
    for name, ratings in data:
        for seed in seeds:
            train, test_ = ratings.split(0.2, random_state=seed)
            keep = train.item_counts() >= MIN_RATINGS
            refits, t = refits_for(train, keep, train_on, how, B, seed, DEFAULTS["D"])
            cost.append({"data": name, "split": seed, "B": B, "D": DEFAULTS["D"],
                         "refits, wall (s)": t, "refits, CPU of this process (s)":
                         refits_for.cpu, "median refit, wall (s)":
                         float(np.median([r["seconds"] for r in refits])),
                         "load": load_avg()})
            print(f"- {name}, split {seed}: {B} refits {t:.0f} s; load {load_avg()}",
                  flush=True)
            rules = pairwise_rules(train, liked=LIKED, min_support=MIN_SUPPORT,
                                   min_confidence=0.5, validation=test_, items=keep)
            km = table_of(train, test_, keep, refits, share, train_on)
            variants = [("KM stable, default ranking", km),
                        (f"KM stable, default ranking, co-support >= {MIN_SUPPORT}",
                         km[km["co_support"] >= MIN_SUPPORT]),
                        ("KM stable, stability order", stability_order(km)),
                        ("KM, previous default (stable >= 0.25, then per-refit bound)",
                         _previous_default(km, share))]
            oracles = [("oracle: KM's judged pairs by held-out lift", _oracle(km)),
                       ("oracle: the rules' judged pairs by held-out lift", _oracle(rules))]
            new = [{"data": name, "split": seed, "method": label,
                    **summary(train, test_, df, k, seed)}
                   for label, df in variants + [("rules (lift)", rules)] + oracles
                   for k in KS]
            rows += new
            print(table(new, ["data", "split", "method", "k", "pairs", "judged",
                              "median co-support", "held-out n", "conf", "lift",
                              "lift 95% CI"], floatfmt="{:.3f}"), flush=True)
    print(f"\n## 2. Held-out part of each outer split (train on {train_on}, {how}, B = {B}, "
          f"D = {DEFAULTS['D']}, rows with >= {DEFAULTS['min_oob_n']} out-of-bag ratings "
          "ranked first by the out-of-bag lift's lower bound)\n")
    print(table(rows, ["data", "split", "method", "k", "pairs", "judged", "median co-support",
                       "held-out n", "conf", "lift", "lift 95% CI"], floatfmt="{:.3f}"),
          flush=True)
    agg = {}
    for r in rows:
        agg.setdefault((r["data"], r["method"], r["k"]), []).append(r)
    mean_rows = [{"data": d, "method": m, "k": k, "splits": len(rs),
                  "mean conf": float(np.mean([r["conf"] for r in rs])),
                  "mean lift": float(np.mean([r["lift"] for r in rs])),
                  "min lift": float(np.min([r["lift"] for r in rs])),
                  "mean judged": float(np.mean([r["judged"] for r in rs]))}
                 for (d, m, k), rs in agg.items()]
    print("\n### Mean over the outer splits\n")
    print(table(mean_rows, floatfmt="{:.3f}"))
    print("\n### Cost of the refits (wall time under the shared box's load; CPU time of this "
          "process, all its threads, is what they would take alone with one core)\n")
    print(table(cost, floatfmt="{:.1f}"))


PLANTED = ((0.5, 0.0), (0.0, 0.05), (0.5, 0.05), (0.9, 0.05), (0.5, 0.2))  # (drop, flip)


def planted(seed, B, quick):
    """Section 3. The single fits are seeded ``seed + 1 + k``: KM seeded with the generator's
    own seed draws its initial theta from the same stream as make_planted_km, i.e. starts at
    the planted theta, and recovers every implication for that reason alone."""
    from kmviz.km import KolmogorovModel, stable_implications
    from kmviz.km.mining import km_claims
    from kmviz.km.stability import stability_order
    from kmviz.rules import recovery_scores

    rows = []
    n_users = 1000 if quick else 2000
    for drop, flip in PLANTED:
        noisy, truth = noisy_planted_km(n_users, drop, flip, seed=seed, section="planted")
        true = truth.implications
        st_ = stable_implications(noisy, n_refits=B, D=8,
                                  random_state=section_seed(seed, "planted", "refits"),
                                  items=np.ones(noisy.n_items, bool))
        by_stab = stability_order(st_)[["antecedent", "consequent"]].to_numpy()
        default = st_[["antecedent", "consequent"]].to_numpy()
        wrong = np.flatnonzero(~_in(by_stab, true))
        row = {"drop": f"{drop:.0%}", "flip": f"{flip:.0%}", "true pairs": len(true),
               "stability order: first false at rank": int(wrong[0]) + 1 if wrong.size
               else "-"}
        ones = []
        for k in range(N_SINGLE):  # one fit on all users, seeds other than the generator's
            m = KolmogorovModel(D=8, random_state=seed + 1 + k)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit(noisy)
            one = km_claims(m, noisy)
            s1, s2, s3 = (recovery_scores(x, true) for x in
                          (one, by_stab[:len(one)], default[:len(one)]))
            ones.append((s1["found"], s1["precision"], s1["recall"], s2["precision"],
                         s2["recall"], s3["precision"], s3["recall"]))
        o = np.array(ones, dtype=float)
        row.update({"one fit: found (mean)": o[:, 0].mean(),
                    "one fit P (mean)": o[:, 1].mean(), "one fit R (mean)": o[:, 2].mean(),
                    "stability order, same count: P (mean)": o[:, 3].mean(),
                    "P (min)": o[:, 3].min(), "R (mean)": o[:, 4].mean(),
                    "default ranking, same count: P (mean)": o[:, 5].mean(),
                    "R (mean) ": o[:, 6].mean()})
        full = st_[st_["stability"] >= 1.0 - 1e-12][["antecedent", "consequent"]].to_numpy()
        s = recovery_scores(full, true)
        row.update({"stability 1.0: found": s["found"], "stability 1.0: P": s["precision"]})
        rows.append(row)
        print(f"- planted drop {drop:.0%} flip {flip:.0%} done; load {load_avg()}",
              flush=True)
    print(f"\n## 3. Planted KM ({n_users} users, 60 items, D = 8, B = {B}): the true "
          f"implications found by one fit on all users ({N_SINGLE} seeds, none the "
          "generator's) and by the refits' stability order (stability, then the out-of-bag "
          "lift's lower bound) and default ranking, each cut at every single fit's count\n")
    print(table(rows, floatfmt="{:.3f}"))


def _workers_cpu(backend) -> float:
    """CPU seconds the Dask workers' processes used so far (0 without a backend)."""
    if backend is None:
        return 0.0
    return float(sum(backend.client.run(time.process_time).values()))


def cost(ratings, seed, B, workers, dask_first=False):
    """Section 4: the same stable_implications in process (serial, threads) and on a Dask
    LocalCluster of ``workers`` processes."""
    import pandas as pd

    import kmviz
    from kmviz.km import _refits, stable_implications

    keep = ratings.item_counts() >= MIN_RATINGS
    rows, ref = [], None

    def run(label, backend=None, **extra):
        nonlocal ref
        load0 = load_avg()
        w0 = _workers_cpu(backend)
        t0, c0 = time.perf_counter(), time.process_time()
        df = stable_implications(ratings, liked=LIKED, n_refits=B, random_state=seed,
                                 items=keep, D=8)
        wall = time.perf_counter() - t0
        if backend is not None:
            extra["CPU of the workers (s)"] = _workers_cpu(backend) - w0
        same = "-" if ref is None else "yes" if _same(ref, df) else "NO"
        ref = df if ref is None else ref
        rows.append({"where": label, "B": B, "D": 8, "wall (s)": wall,
                     "CPU of this process (s)": time.process_time() - c0,
                     "median refit (s)": float(np.median(df.attrs["seconds"])),
                     "within 60 s": "yes" if wall <= 60 else "no",
                     "table equal to the first": same, "load before": load0,
                     "load after": load_avg(), **extra})
        print(f"- {label}: {wall:.1f} s; load {load_avg()}", flush=True)

    def _same(a, b):
        try:
            pd.testing.assert_frame_equal(a, b)
            return bool(np.array_equal(a.attrs["held"], b.attrs["held"]))
        except AssertionError:
            return False

    from kmviz.km.warmup import compile_kernels

    def in_process():
        old = _refits.REFIT_THREADS
        try:
            _refits.REFIT_THREADS = 1
            run("in process, one refit at a time (Numba threads: all)")
            _refits.REFIT_THREADS = None
            run(f"in process, {_refits.refit_threads(B)} refits at once (1 Numba thread "
                "each)")
        finally:
            _refits.REFIT_THREADS = old

    compile_kernels()
    if not dask_first:
        in_process()
    t0 = time.perf_counter()
    with kmviz.parallel_backend("dask", client=f"local:{workers}") as backend:
        start = time.perf_counter() - t0
        backend.warm("km", compile_kernels)
        run(f"Dask LocalCluster, {workers} worker processes x 1 thread (new workers: "
            "each loads the kernels)", backend, **{"cluster start (s)": start})
        run("the same cluster again (workers warm)", backend)
    if dask_first:
        in_process()
    print(f"\n## 4. Where the refits run: B = {B} refits of D = 8 on MovieLens 100K "
          f"({ratings.n_ratings:,} ratings, {int(keep.sum()):,} items with >= {MIN_RATINGS} "
          f"ratings), random_state {seed}, one run\n")
    print(table(rows, floatfmt="{:.1f}"))


def _in(pairs, truth):
    t = {(int(a), int(b)) for a, b in np.asarray(truth).reshape(-1, 2)}
    return np.array([(int(a), int(b)) in t for a, b in pairs], bool)


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--section", default="all",
                    choices=["select", "test", "planted", "cost", "all"])
    ap.add_argument("--workers", type=int, default=2, help="Dask workers for --section cost")
    ap.add_argument("--dask-first", action="store_true",
                    help="--section cost: the cluster's runs before the in-process ones")
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--refits", type=int, default=20)
    ap.add_argument("--val-splits", type=int, default=2,
                    help="outer splits whose training parts give validation splits")
    ap.add_argument("--no-ml100k", action="store_true")
    ap.add_argument("--no-latest", action="store_true", help="leave out latest-small")
    ap.add_argument("--select-configs", default=None,
                    help="train_on,resampling;... for --section select (default: "
                         "ratings,subsample)")
    ap.add_argument("--config", default=None, help="train_on,resampling for --section test "
                    "(default: kmviz.km.stability.DEFAULTS)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("Stable KM implications: the default, held-out evidence, rules, planted truth")
    from kmviz.data import load

    data = []
    if args.section == "cost":
        r = load_ml100k(args.ml100k)
        if r is not None:
            cost(r, args.seed, args.refits, args.workers, args.dask_first)
        footer(t_start)
        return
    if args.section != "planted":
        if not args.no_ml100k:
            r = load_ml100k(args.ml100k)
            if r is not None:
                data.append(("MovieLens 100K", r))
        if not args.no_latest:
            data.append(("MovieLens latest-small", load("movielens-small")))
    if args.section in ("select", "all"):
        configs = ([tuple(c.split(",")) for c in args.select_configs.split(";")]
                   if args.select_configs else None)
        select(data, [args.seed + k for k in range(args.val_splits)], args.refits, configs)
    if args.section in ("test", "all"):
        test(data, [args.seed + k for k in range(args.splits)], args.refits, args.config)
    if args.section in ("planted", "all"):
        planted(args.seed, args.refits, args.quick)
    footer(t_start)


if __name__ == "__main__":
    main()
