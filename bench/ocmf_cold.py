"""One-class MF on cold items and cold users, every method tuned for the cold task (issue 10).

bench/ocmf_ml100k.py ranks cold users and items with the settings tuned on warm validation
positives. Here each method is tuned on a cold split of its own: from the training part,
10% of the items (users) are made cold again and hold the validation positives, so the
settings are chosen for ranking entities without any positive, as they will be used.

Protocol: r >= 4 positive; 10% of the items (users) with every positive moved to test
(kmviz.ocmf.cold_item_split / cold_user_split, seed --seed); validation: the same split of
the training part (seed --seed + 1). Cold items are ranked among the cold items only (each
user's top 5 of the new items; p@5 over users with a test positive); cold users over all
items. Methods: OCMF LR-wSQ with the side features of the cold side and no identity
column for entities without positives (item_identity / user_identity = "known"; grid
log2 rho in {-11, -9, -7, -5} x log2 lambda in {1, 2, 3, 4}, 15 outer iterations); LightFM
WARP with an identity column per entity beside the features (LightFM's hybrid recipe; grid
learning rate {0.02, 0.05} x alpha {0, 1e-5}, epochs 1, 2, 3, then every 5 up to 50); both
with the feature matrix in either style of ocmf_ml100k.feature_inputs (plain, or binned
age / decades with unit-l2 rows), chosen on the validation split; implicit ALS (reg
10, alpha 1: it has no features, so a cold entity keeps its random start); popularity.
Same k (--k, default 64), one thread each.

    python bench/ocmf_cold.py [--k 64] [--ml100k DIR] [--datasets ml100k,movielens-small]
"""

from __future__ import annotations

import os
import time

for _v in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
from _common import footer, header, load_ml100k, parser, table  # noqa: E402
from ocmf_ml100k import (  # noqa: E402
    als_fit,
    implicit_available,
    implicit_scores,
    lightfm_available,
    lightfm_features,
    lightfm_fit,
    STYLES,
    feature_inputs,
    lightfm_scores,
    ranking,
)


def ocmf_cold(train, val, k, who, cand_val, seed, quick, pos):
    """Best (validation p@5, params, feature style) of OCMF LR-wSQ with the cold side's
    features, over the feature styles of ocmf_ml100k.feature_inputs (plain; binned and
    l2-normalized rows)."""
    from kmviz.ocmf import OneClassMF

    side = {f"{who}_identity": "known"}
    best = (-1.0, None, None)
    rhos = (-9, -5) if quick else (-11, -9, -7, -5)
    lams = (2,) if quick else (1, 2, 3, 4)
    for style in STYLES:
        inputs = feature_inputs(pos, who, style)
        for r in rhos:
            for lam in lams:
                prm = dict(k=k, max_iter=15, rho=2.0 ** r, lambda_w=2.0 ** lam,
                           lambda_h=2.0 ** lam, random_state=seed, **side)
                m = OneClassMF(**prm).fit(train, **inputs)
                v = ranking(m.score_items(np.arange(train.n_users)), train, val,
                            cand_val)["p@5"]
                if v > best[0]:
                    best = (v, prm, style)
    return best


def lightfm_cold(train, val, k, uf, vf, cand_val, quick):
    """Best (validation p@5, (lr, alpha, epochs)) of LightFM WARP with features."""
    best = (-1.0, None)
    for lr in ((0.05,) if quick else (0.02, 0.05)):
        for al in ((0.0,) if quick else (0.0, 1e-5)):
            _, _, hist = _lfm_with_candidates(train, val, k, lr, al, uf, vf, cand_val,
                                                  20 if quick else 50)
            ep, v = max(hist, key=lambda h: h[1])
            if v > best[0]:
                best = (v, (lr, al, ep))
    return best


def _lfm_with_candidates(train, val, k, lr, al, uf, vf, cand, epochs, every=5):
    """lightfm_fit, but validation ranks the candidate (cold) items only."""
    from lightfm import LightFM

    model = LightFM(no_components=k, loss="warp", learning_rate=lr, user_alpha=al,
                    item_alpha=al, random_state=0)
    Y = train.csr.tocoo()
    Y.data[:] = 1.0
    hist = []
    for ep in range(1, epochs + 1):
        model.fit_partial(Y, user_features=uf, item_features=vf, epochs=1, num_threads=1)
        if ep in (1, 2, 3) or ep % every == 0:
            hist.append((ep, ranking(lightfm_scores(model, uf, vf), train, val, cand)["p@5"]))
    return model, None, hist


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--datasets", default="ml100k,movielens-small")
    args = p.parse_args()
    t_start = time.perf_counter()
    header("One-class MF on cold items and cold users, each method tuned for the cold task")
    from kmviz.data import load
    from kmviz.ocmf import OneClassMF, cold_item_split, cold_user_split, popularity_scores

    rows = []
    for name in args.datasets.split(","):
        data = load_ml100k(args.ml100k) if name == "ml100k" else load(name)
        if data is None:
            continue
        label = "ML-100K" if name == "ml100k" else name
        pos = data.binarize(4)
        tasks = [("item", cold_item_split)] + ([("user", cold_user_split)]
                                                if pos.user_features is not None else [])
        for who, split in tasks:
            train, test, mask = split(pos, 0.1, random_state=args.seed)
            sub, val, vmask = split(train, 0.1, random_state=args.seed + 1)
            vmask = vmask & ~mask
            cand_val = vmask if who == "item" else None
            cand_test = mask if who == "item" else None
            r = {"data": label, "cold": f"{who}s ({int(mask.sum())}; test {test.n_ratings:,} "
                                        f"positives)"}
            v, prm, style = ocmf_cold(sub, val, args.k, who, cand_val, args.seed, args.quick,
                                      pos)
            m = OneClassMF(**prm).fit(train, **feature_inputs(pos, who, style))
            r["OCMF LR-wSQ + features"] = ranking(m.score_items(np.arange(train.n_users)),
                                                  train, test, cand_test)["p@5"]
            r["OCMF setting"] = (f"rho=2^{int(np.log2(prm['rho']))} "
                                 f"lambda=2^{int(np.log2(prm['lambda_w']))} {style} "
                                 f"(val {v:.2f})")
            if lightfm_available():
                # the same feature styles as OCMF, chosen on the same validation split
                tried = []
                for lstyle in STYLES:
                    F = feature_inputs(pos, who, lstyle)[f"{who}_features"]
                    uf = lightfm_features(F) if who == "user" else None
                    vf = lightfm_features(F) if who == "item" else None
                    lv, hp = lightfm_cold(sub, val, args.k, uf, vf, cand_val, args.quick)
                    tried.append((lv, hp, lstyle, uf, vf))
                lv, (lr, al, ep), lstyle, uf, vf = max(tried, key=lambda t: t[0])
                lm, _, _ = lightfm_fit(train, args.k, lr, al, ep, 1, uf=uf, vf=vf)
                r["LightFM WARP + features"] = ranking(lightfm_scores(lm, uf, vf), train, test,
                                                       cand_test)["p@5"]
                r["LightFM setting"] = (f"lr={lr:g} alpha={al:g} epochs={ep} {lstyle} "
                                        f"(val {lv:.2f})")
            if implicit_available():
                am, _ = als_fit(train, args.k, 10.0, 1.0, 1)
                r["implicit ALS"] = ranking(implicit_scores(am), train, test, cand_test)["p@5"]
            r["popularity"] = ranking(popularity_scores(train), train, test, cand_test)["p@5"]
            rows.append(r)
            print(f"  done: {label} cold {who}s ({time.perf_counter() - t_start:.0f} s)",
                  flush=True)
    print("\n## Test p@5 (percent) on cold entities, each method tuned on a cold validation "
          "split\n")
    print(table(rows, floatfmt="{:.2f}"))
    footer(t_start)


if __name__ == "__main__":
    main()
