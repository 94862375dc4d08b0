"""One-class MF on sparse users, every method tuned on a sparse validation split (issue 10).

The 90/10 split of bench/ocmf/ocmf_ml100k.py leaves very few users with <= 5 training positives
(7 with a test positive on ML-100K: one hit moves their p@5 by ~3 points). Here 10% of the
users are made sparse on purpose (kmviz.ocmf.splits.sparse_user_split, seed s): each keeps
5 random positives (r >= 4) for training, the rest of its positives are its test set; every
other user keeps all its positives. Validation: the same split of the training part among
the other users (seed s + 1). Items are ranked over all items, leaving out the user's
training positives; p@5 over the sparse users. The whole protocol (split, validation split,
tuning of every method, refit, test) runs for the seeds --seed .. --seed + --seeds - 1; a
sparse group is about 94 users (ML-100K) or 61 (latest-small), so one split's p@5 moves by
several points between seeds: the summary gives each method's mean, OCMF's paired
difference to it with its standard error and the seeds OCMF wins
(bench/_ocmf_protocol.py).

Methods, each tuned on the validation split (same k, --threads threads, random_state s):
- OCMF (+ features, + graph), by coordinate search (bench/_ocmf_protocol.py) over the loss
  (LR-wSQ, or SQ-wSQ with a_bar = 0: the weighted MF implicit's ALS solves, "WRMF"), the
  feature style (bench/_ocmf_protocol.style_inputs: "none", plain one-class MF; "bias", the
  user bias column alone, a learned item popularity term; "item binned", item features
  only; and ocmf_ml100k.feature_inputs's styles on both sides where there are user
  features: "plain", "binned", "binned+bias" = binned plus the bias column), the
  10-NN co-interaction graph's weight log2(lambda_w lambda_g) in {none, -3, 0}, log2 rho in
  {-7, -5, -3, -2, -1, 0}, log2 lambda in {1, ..., 5} (ALS's optimum reg 30, alpha 3 is
  rho = 2^-1.6, lambda = 2^3.3 in WRMF's terms); start LR-wSQ, binned+bias, -3, -3, 3;
  each point scored at its best of 15 outer iterations;
- implicit ALS (reg {1, 3, 10, 30, 100} x alpha {0.3, 1, 3, 10, 30}, 15 iterations) and BPR
  (lr {0.01, 0.05, 0.1} x reg {0.001, 0.01, 0.1}, 100 iterations): the grids of
  ocmf_ml100k.py;
- LightFM WARP without and with features (an identity column per user / item beside the
  "plain" features, LightFM's hybrid recipe): learning rate {0.02, 0.05} at alpha 0, then
  alpha 1e-5 at the better rate; epochs 1, 2, 3, then every 5 up to 50 (stopping 15 epochs
  after the best);
- popularity.

    python bench/ocmf/ocmf_sparse.py [--k 64] [--threads 2] [--ml100k DIR] [--seed 0] [--seeds 1]
                                [--datasets ml100k,movielens-small]
"""

from __future__ import annotations

import time

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _threads_env import pin_threads

THREADS = pin_threads("2")  # before numpy: the libraries read it once, when they load

from _common import parser  # noqa: E402
from _peers import ALS_GRID, BPR_GRID  # noqa: E402
from _ocmf_protocol import (  # noqa: E402
    OURS,
    als_tuned,
    bpr_tuned,
    lightfm_inputs,
    lightfm_tuned,
    ocmf_tuned,
    popularity_p5,
    run_protocol,
)
from _peers import STYLES, feature_inputs, implicit_available, lightfm_available  # noqa: E402

METHODS = (OURS, "implicit ALS", "implicit BPR", "LightFM WARP", "LightFM WARP + features",
           "popularity")


def one_seed(pos, label, seed, k, threads, quick):
    """The protocol on one split: a row of test p@5 per method and a row of settings."""
    from kmviz.ocmf.splits import sparse_user_split

    train, test, mask = sparse_user_split(pos, 0.1, 5, random_state=seed)
    sub, val, _ = sparse_user_split(train, 0.1, 5, random_state=seed + 1)
    r = {"data": label, "seed": seed, "sparse users": f"{int(mask.sum())} (test "
                                                       f"{test.n_ratings:,})"}
    settings = {}
    t0 = time.perf_counter()
    sides = "both" if pos.user_features is not None else "item"
    styles = ("none", "bias", "item binned", *STYLES) if sides == "both" else \
        ("none", "bias", *STYLES)
    axes = {"loss": ("LR-wSQ", "WRMF"), "style": styles, "graph": (None, -3, 0),
            "rho": (-7, -5, -3, -2, -1, 0), "lam": (1, 2, 3, 4, 5)}
    if quick:
        axes = {"loss": ("LR-wSQ", "WRMF"), "style": ("binned+bias",), "graph": (-3,),
                "rho": (-3,), "lam": (2, 3)}
    start = {"loss": "LR-wSQ", "style": "binned+bias", "graph": -3, "rho": -3, "lam": 3}
    r[OURS], settings[OURS] = ocmf_tuned(pos, sub, val, train, test, sides=sides, axes=axes,
                                         start=start, k=k, seed=seed,
                                         graph_kind="cointeraction")
    print(f"  seed {seed} {label}: OCMF {r[OURS]:.2f} ({time.perf_counter() - t0:.0f} s)",
          flush=True)
    if implicit_available():
        als = ALS_GRID[::6] if quick else ALS_GRID
        bpr = BPR_GRID[::4] if quick else BPR_GRID
        r["implicit ALS"], settings["ALS"] = als_tuned(sub, val, train, test, k, threads,
                                                       seed, als)
        r["implicit BPR"], settings["BPR"] = bpr_tuned(sub, val, train, test, k, threads,
                                                       seed, bpr)
        print(f"  seed {seed} {label}: implicit ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    if lightfm_available():
        plain = feature_inputs(pos, sides, "plain")
        lrs, alphas = ((0.05,), (0.0,)) if quick else ((0.02, 0.05), (0.0, 1e-5))
        epochs = 10 if quick else 50
        for lab, feats in (("LightFM WARP", {}), ("LightFM WARP + features", plain)):
            inputs = lightfm_inputs(feats.get("user_features"), feats.get("item_features"),
                                    "all")
            r[lab], settings[lab] = lightfm_tuned(sub, val, train, test, k, threads, seed,
                                                  {lab: inputs}, lrs, alphas, epochs)
        print(f"  seed {seed} {label}: LightFM ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    r["popularity"] = popularity_p5(train, test)
    return r, {"data": label, "seed": seed, **settings}


def main():
    run_protocol(parser(__doc__.splitlines()[0]), default_threads=THREADS,
                 title="One-class MF on sparse users, each method tuned on a sparse "
                       "validation split",
                 heading="test p@5 (percent) of the sparse users (5 training positives "
                         "each), each method tuned on a sparse validation split",
                 methods=METHODS, group_cols=["data"],
                 tasks=lambda pos, label, seed, k, threads, quick: [
                     one_seed(pos, label, seed, k, threads, quick)])


if __name__ == "__main__":
    main()
