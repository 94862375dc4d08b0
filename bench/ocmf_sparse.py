"""One-class MF on sparse users, every method tuned on a sparse validation split (issue 10).

The 90/10 split of bench/ocmf_ml100k.py leaves very few users with <= 5 training positives
(7 with a test positive on ML-100K: one hit moves their p@5 by ~3 points). Here 10% of the
users are made sparse on purpose (kmviz.ocmf.splits.sparse_user_split, seed --seed): each
keeps 5 random positives (r >= 4) for training, the rest of its positives are its test set;
every other user keeps all its positives. Validation: the same split of the training part
among the other users (seed --seed + 1). Items are ranked over all items, leaving out the
user's training positives; p@5 over the sparse users.

Methods, each tuned on the validation split (same k, --threads threads):
- OCMF LR-wSQ + features + graph (10-NN co-interaction graph, log2(lambda_w lambda_g) = -3;
  the features of ocmf_ml100k.feature_inputs on both sides where there are user features,
  style "binned"); grid log2 rho in {-5, -3} x log2 lambda in {1, 2, 3}, the best of 15
  outer iterations;
- implicit ALS (reg {10, 30, 100} x alpha {1, 3, 10}) and BPR (lr {0.01, 0.05} x reg
  {0.01, 0.1}, 100 iterations);
- LightFM WARP without and with features (an identity column per user / item beside them;
  learning rate {0.02, 0.05}, alpha 0, epochs every 5 up to 50);
- popularity.

    python bench/ocmf_sparse.py [--k 64] [--threads 2] [--ml100k DIR]
                                [--datasets ml100k,movielens-small]
"""

from __future__ import annotations

import os
import sys
import time

THREADS = "2"
for _i, _a in enumerate(sys.argv):
    if _a == "--threads" and _i + 1 < len(sys.argv):
        THREADS = sys.argv[_i + 1]
for _v in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, THREADS)

import numpy as np  # noqa: E402
from _common import footer, header, load_ml100k, parser, table  # noqa: E402
from ocmf_ml100k import (  # noqa: E402
    als_fit,
    bpr_fit,
    feature_inputs,
    implicit_available,
    implicit_scores,
    lightfm_available,
    lightfm_features,
    lightfm_fit,
    lightfm_scores,
    ranking,
)


def _best(tried):
    return max(tried, key=lambda t: t[0])


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--threads", default=THREADS)
    p.add_argument("--datasets", default="ml100k,movielens-small")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("One-class MF on sparse users, each method tuned on a sparse validation split")
    import numba

    from kmviz.data import load
    from kmviz.ocmf import OneClassMF, popularity_scores
    from kmviz.ocmf.splits import sparse_user_split

    threads = int(args.threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    k = args.k
    rows = []
    for name in args.datasets.split(","):
        data = load_ml100k(args.ml100k) if name == "ml100k" else load(name)
        if data is None:
            continue
        label = "ML-100K" if name == "ml100k" else name
        pos = data.binarize(4)
        train, test, mask = sparse_user_split(pos, 0.1, 5, random_state=args.seed)
        sub, val, _ = sparse_user_split(train, 0.1, 5, random_state=args.seed + 1)
        r = {"data": label, "sparse users": f"{int(mask.sum())} (test {test.n_ratings:,})"}
        settings = {}

        # OCMF LR-wSQ + features + graph
        sides = "both" if pos.user_features is not None else "item"
        inputs = feature_inputs(pos, sides, "binned")
        tried = []
        for lr2 in (-5, -3):
            for ll2 in (1, 2, 3):
                lam = 2.0 ** ll2
                prm = dict(k=k, max_iter=15, rho=2.0 ** lr2, lambda_w=lam, lambda_h=lam,
                           lambda_g=2.0 ** -3 / lam, graph="cointeraction",
                           random_state=args.seed)
                m = OneClassMF(**prm).fit(sub, validation=val, **inputs)
                p5 = m.trace_.column("validation_precision_at_5")
                it = int(np.nanargmax(p5))
                tried.append((float(p5[it]) * 100, {**prm, "max_iter": it + 1}))
        v, prm = _best(tried)
        m = OneClassMF(**prm).fit(train, **inputs)
        r["OCMF LR-wSQ + features + graph"] = ranking(
            m.score_items(np.arange(train.n_users)), train, test)["p@5"]
        settings["OCMF"] = (f"rho=2^{int(np.log2(prm['rho']))} "
                            f"lambda=2^{int(np.log2(prm['lambda_w']))} iters={prm['max_iter']} "
                            f"features={sides} binned (val {v:.2f})")
        print(f"  done: {label} OCMF ({time.perf_counter() - t_start:.0f} s)", flush=True)

        if implicit_available():
            tried = []
            for reg in (10.0, 30.0, 100.0):
                for alpha in (1.0, 3.0, 10.0):
                    am, _ = als_fit(sub, k, reg, alpha, threads)
                    tried.append((ranking(implicit_scores(am), sub, val)["p@5"], (reg, alpha)))
            v, (reg, alpha) = _best(tried)
            am, _ = als_fit(train, k, reg, alpha, threads)
            r["implicit ALS"] = ranking(implicit_scores(am), train, test)["p@5"]
            settings["ALS"] = f"reg={reg:g} alpha={alpha:g} (val {v:.2f})"
            tried = []
            for lr in (0.01, 0.05):
                for reg in (0.01, 0.1):
                    bm, _ = bpr_fit(sub, k, lr, reg, threads)
                    tried.append((ranking(implicit_scores(bm), sub, val)["p@5"], (lr, reg)))
            v, (lr, reg) = _best(tried)
            bm, _ = bpr_fit(train, k, lr, reg, threads)
            r["implicit BPR"] = ranking(implicit_scores(bm), train, test)["p@5"]
            settings["BPR"] = f"lr={lr:g} reg={reg:g} (val {v:.2f})"
            print(f"  done: {label} implicit ({time.perf_counter() - t_start:.0f} s)",
                  flush=True)

        if lightfm_available():
            plain = feature_inputs(pos, sides, "plain")
            for lab, feats in (("LightFM WARP", {}), ("LightFM WARP + features", plain)):
                uf = lightfm_features(feats.get("user_features"))
                vf = lightfm_features(feats.get("item_features"))
                tried = []
                for lr in (0.02, 0.05):
                    _, _, hist = lightfm_fit(sub, k, lr, 0.0, 50, threads, uf=uf, vf=vf,
                                             val=val)
                    ep, v = max(hist, key=lambda h: h[1])
                    tried.append((v, (lr, ep)))
                v, (lr, ep) = _best(tried)
                lm, _, _ = lightfm_fit(train, k, lr, 0.0, ep, threads, uf=uf, vf=vf)
                r[lab] = ranking(lightfm_scores(lm, uf, vf), train, test)["p@5"]
                settings[lab] = f"lr={lr:g} epochs={ep} (val {v:.2f})"
            print(f"  done: {label} LightFM ({time.perf_counter() - t_start:.0f} s)",
                  flush=True)
        r["popularity"] = ranking(popularity_scores(train), train, test)["p@5"]
        r["settings"] = "; ".join(f"{a}: {b}" for a, b in settings.items())
        rows.append(r)
    print("\n## Test p@5 (percent) of the sparse users (5 training positives each), each "
          "method tuned on a sparse validation split\n")
    print(table(rows, floatfmt="{:.2f}"))
    footer(t_start)


if __name__ == "__main__":
    main()
