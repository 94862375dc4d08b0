"""One-class MF settings for the app's MovieLens latest-small, chosen on the app's own split.

The catalogue suggests settings per dataset and family (the Train page's "Use these
settings"). This bench chooses the one-class MF suggestion the way a user of the app would
meet it: the built-in MovieLens latest-small, the app's default split (random 70 / 10 / 20
of the ratings, seed 0), ratings >= 4 as the positives (``threshold=4``), the app's k (32)
and 15 outer iterations. A grid of a_bar (the paper's -1, or 0) x rho x lambda is fitted
on the training part and scored by p@5 on the validation part; at the best point the
genres-and-year item features (``side_features="item"``) and the co-interaction user
graph are tried on top, each kept only if validation p@5 rises. The table gives the
validation and test p@5 / nDCG@5 of the choice, of the family's defaults with the same
threshold, and of the popularity ranking (kmviz.metrics conventions: hits / 5, training
positives never ranked, users with a held-out positive).

    python bench/ocmf/ocmf_suggested.py [--quick]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table


def scores(model, val, test):
    v, t = model.evaluate(val), model.evaluate(test)
    return {"val p@5": 100 * v["precision_at_5"], "test p@5": 100 * t["precision_at_5"],
            "test nDCG@5": 100 * t["ndcg_at_5"]}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args()
    from kmviz import metrics
    from kmviz.data import get_dataset
    from kmviz.data.splits import make_split
    from kmviz.ocmf import OneClassMF, popularity_scores

    t_start = time.perf_counter()
    header("One-class MF settings for the app's MovieLens latest-small")
    split = make_split(get_dataset("movielens-small").load())
    train, val, test = split.train, split.validation, split.test
    base = {"threshold": 4.0, "max_iter": 15, "random_state": 0}
    print(f"app split: train {train.n_ratings:,} / validation {val.n_ratings:,} / test "
          f"{test.n_ratings:,} ratings; positives r >= 4\n")

    def fit(params):
        t0 = time.process_time()
        model = OneClassMF(**{**base, **params}).fit(train)
        return model, time.process_time() - t0

    abars = (-1.0, 0.0)
    rhos = (-5, -3) if args.quick else (-9, -7, -5, -3)
    lams = (1, 2) if args.quick else (-2, -1, 0, 1, 2)
    rows, best = [], (-1.0, None)
    for a in abars:
        for r in rhos:
            for lam in lams:
                prm = {"a_bar": a, "rho": 2.0 ** r, "lambda_w": 2.0 ** lam,
                       "lambda_h": 2.0 ** lam}
                model, cpu = fit(prm)
                v = 100 * model.evaluate(val)["precision_at_5"]
                rows.append({"a_bar": a, "log2 rho": r, "log2 lambda": lam, "val p@5": v,
                             "CPU s": cpu})
                if v > best[0]:
                    best = (v, prm)
        print(f"  done: a_bar = {a:g} ({time.perf_counter() - t_start:.0f} s)", flush=True)
    print("\n## Validation p@5 (percent) over the grid\n")
    print(table(rows, floatfmt="{:.2f}"))

    chosen = dict(best[1])
    for extra in ({"side_features": "item"}, {"graph": "cointeraction", "lambda_g": 2.0 ** -3}):
        model, _ = fit({**chosen, **extra})
        v = 100 * model.evaluate(val)["precision_at_5"]
        print(f"  {extra}: validation p@5 {v:.2f} (best so far {best[0]:.2f})", flush=True)
        if v > best[0]:
            best = (v, {**chosen, **extra})
            chosen = dict(best[1])

    final = []
    model, cpu = fit(chosen)
    final.append({"settings": "chosen: " + ", ".join(f"{k}={v:g}" if isinstance(v, float)
                                                      else f"{k}={v}"
                                                      for k, v in chosen.items()),
                  **scores(model, val, test), "CPU s": cpu})
    model, cpu = fit({})
    final.append({"settings": "the family's defaults (threshold 4)",
                  **scores(model, val, test), "CPU s": cpu})
    tr, va, te = train.binarize(4), val.binarize(4), test.binarize(4)
    pop = popularity_scores(tr)
    row = {"settings": "popularity (training positives per item)"}
    for name, part in (("val", va), ("test", te)):
        ranked = metrics.rank_items(pop, 5, exclude=tr.csr)
        rel = [set() for _ in range(tr.n_users)]
        for u, i in zip(np.asarray(part.users), np.asarray(part.items)):
            rel[int(u)].add(int(i))
        row[f"{name} p@5"] = 100 * metrics.precision_at_k(ranked, rel, 5)
        if name == "test":
            row["test nDCG@5"] = 100 * metrics.ndcg_at_k(ranked, rel, 5)
    final.append(row)
    print("\n## The choice against the defaults and popularity (percent)\n")
    print(table(final, floatfmt="{:.2f}"))
    footer(t_start)


if __name__ == "__main__":
    main()
