"""One-class MF on cold items and cold users, every method tuned for the cold task (issue 10).

bench/ocmf/ocmf_ml100k.py ranks cold users and items with the settings tuned on warm validation
positives. Here each method is tuned on a cold split of its own: from the training part,
10% of the items (users) are made cold again and hold the validation positives, so the
settings are chosen for ranking entities without any positive, as they will be used.

Protocol: r >= 4 positive; 10% of the items (users) with every positive moved to test
(kmviz.ocmf.cold_item_split / cold_user_split, seed s); validation: the same split of the
training part (seed s + 1). Cold items are ranked among the cold items only (each user's
top 5 of the new items; p@5 over users with a test positive); cold users over all items;
exact ties broken at random. The whole protocol (splits, tuning of every method, refit,
test) runs for the seeds --seed .. --seed + --seeds - 1, and the summary gives each
method's mean, OCMF's paired difference to it with its standard error and the seeds OCMF
wins (bench/_ocmf_protocol.py): one cold split's p@5 moves by points between seeds.

Methods (same k, --k, default 64; --threads threads, default 1; random_state s):
- OCMF LR-wSQ with the cold side's features, by coordinate search (bench/_ocmf_protocol.py)
  over the feature style of ocmf_ml100k.feature_inputs ("plain", "binned": age buckets /
  decades with unit-l2 rows, "binned+bias": binned plus the user bias column, every user
  sharing one vector w_0, so w_0^T h_j is a learned item popularity term -- for a cold item
  with item_identity "known", a popularity prior by features); the cold side's identity
  columns ("known": entities with training positives have one, a cold one is its features
  alone; "none": features only for everyone); the graph weight log2(lambda_w lambda_g) in
  {none, -3, 0} (cold items: the 10-NN co-interaction graph; cold users: the 10-NN graph
  on the user features, which links a cold user to warm ones); log2 rho in
  {-11, -9, -7, -5}, log2 lambda in {1, 2, 3, 4}; start binned+bias, known, none, -9, 2;
  each point scored at its best of 15 outer iterations;
- LightFM WARP with the cold side's features ("plain" or "binned") and identity columns
  for every entity (LightFM's hybrid recipe) or for the known ones only (as OCMF's
  "known"): each of the four x learning rate {0.02, 0.05} at alpha 0, then alpha 1e-5 at
  the best; epochs 1, 2, 3, then every 5 up to 50 (stopping 15 epochs after the best);
  LightFM's per-feature biases are its own popularity prior by features;
- implicit ALS (reg 10, alpha 1): without features a cold entity gets a zero factor, so
  it ranks cold items at random and cold users by nothing (ties broken at random);
- popularity (cold items have no training positives: a random order among them).

    python bench/ocmf/ocmf_cold.py [--k 64] [--threads 1] [--ml100k DIR] [--seed 0] [--seeds 1]
                              [--datasets ml100k,movielens-small]
"""

from __future__ import annotations

import time

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _threads_env import pin_threads

THREADS = pin_threads("1")  # before numpy: the libraries read it once, when they load

from _common import parser  # noqa: E402
from _ocmf_protocol import (  # noqa: E402
    OURS,
    _factors,
    lightfm_inputs,
    lightfm_tuned,
    ocmf_tuned,
    p_at_5,
    popularity_p5,
    run_protocol,
)
from _peers import STYLES, als_fit, feature_inputs, implicit_available, lightfm_available  # noqa: E402

METHODS = (OURS, "LightFM WARP + features", "implicit ALS", "popularity")


def one_task(pos, label, who, seed, k, threads, quick):
    """Cold ``who`` ("item" or "user") on one split: a row of test p@5 and of settings."""
    from kmviz.ocmf import cold_item_split, cold_user_split

    split = cold_item_split if who == "item" else cold_user_split
    train, test, mask = split(pos, 0.1, random_state=seed)
    sub, val, vmask = split(train, 0.1, random_state=seed + 1)
    vmask = vmask & ~mask
    cand_val = vmask if who == "item" else None
    cand_test = mask if who == "item" else None
    cold = f"{who}s"
    r = {"data": label, "cold": cold, "seed": seed,
         "test": f"{int(mask.sum())} {cold}, {test.n_ratings:,} positives"}
    settings = {"data": label, "cold": cold, "seed": seed}
    t0 = time.perf_counter()
    axes = {"style": STYLES, "identity": ("known", "none"), "graph": (None, -3, 0),
            "rho": (-11, -9, -7, -5), "lam": (1, 2, 3, 4)}
    if quick:
        axes = {"style": ("binned", "binned+bias"), "identity": ("known",), "graph": (None,),
                "rho": (-9,), "lam": (2, 3)}
    start = {"style": "binned+bias", "identity": "known", "graph": None, "rho": -9, "lam": 2}
    r[OURS], settings[OURS] = ocmf_tuned(
        pos, sub, val, train, test, sides=who, axes=axes, start=start, k=k, seed=seed,
        graph_kind="cointeraction" if who == "item" else "features", identity_side=who,
        cand_val=cand_val, cand_test=cand_test)
    print(f"  seed {seed} {label} cold {cold}: OCMF {r[OURS]:.2f} "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    if lightfm_available():
        variants = {}
        for style in ("plain", "binned"):
            F = feature_inputs(pos, who, style)[f"{who}_features"]
            for ident in ("all", "known"):
                variants[f"{style} identity={ident}"] = lightfm_inputs(
                    F if who == "user" else None, F if who == "item" else None, ident)
        lrs, alphas = ((0.05,), (0.0,)) if quick else ((0.02, 0.05), (0.0, 1e-5))
        lab = "LightFM WARP + features"
        r[lab], settings[lab] = lightfm_tuned(sub, val, train, test, k, threads, seed,
                                              variants, lrs, alphas, 10 if quick else 50,
                                              cand_val, cand_test)
        print(f"  seed {seed} {label} cold {cold}: LightFM {r[lab]:.2f} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    if implicit_available():
        am, _ = als_fit(train, k, 10.0, 1.0, threads, seed=seed)
        r["implicit ALS"] = p_at_5(_factors(am.user_factors, am.item_factors), train, test,
                                   cand_test)
    r["popularity"] = popularity_p5(train, test, cand_test)
    return r, settings


def main():
    def tasks(pos, label, seed, k, threads, quick):
        for who in ("item", "user") if pos.user_features is not None else ("item",):
            yield one_task(pos, label, who, seed, k, threads, quick)

    run_protocol(parser(__doc__.splitlines()[0]), default_threads=THREADS,
                 title="One-class MF on cold items and cold users, each method tuned for "
                       "the cold task",
                 heading="test p@5 (percent) on cold entities, each method tuned on a cold "
                         "validation split",
                 methods=METHODS, group_cols=["data", "cold"], tasks=tasks)


if __name__ == "__main__":
    main()
