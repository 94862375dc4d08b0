"""The Train page's defaults on every built-in dataset: every family x every catalogue set.

For each catalogue dataset (loaded with its default options, as the Data page does) and each
registered family, take the settings the Train form starts from
(``Family.dataset_defaults``: the family's rule, then the settings measured on that set),
make the app's default split (random 70 / 10 / 20, seed 0), fit on the training part with
the validation part watched (as the app does), and print the fit's wall time and its test
metric beside a baseline: RMSE against the training mean for the families that predict
values, p@5 (kmviz.metrics: hits / 5, training positives never ranked) against the
popularity ranking (same positive threshold) for the one-class ones (``score_metric`` is
a ranking metric). A cell passes when the fit takes at most 60 s and beats its baseline.
A family that cannot use a dataset says so (its rule's message) and has no fit.

km-toy is the Kolmogorov-model paper's D1: values p ~ U[0, 1] drawn independently for every
pair, pure noise, where the training mean is the best predictor there is; its value cells
pass when they stay within 5 % of the mean (the row says so). Its one-class cells cannot
beat popularity either, and provably so: the values are independent and the split is
uniformly random, so given everything a model sees (the training positives) a user's
other items are exchangeable, and whatever the ranking, the number of test positives in a
user's top 5 follows one hypergeometric law (K test positives among the N items that are
not training positives, 5 drawn). Popularity is one draw from that law, the model another;
the cell passes when the model's p@5 is not more than two standard deviations below the
law's mean ("chance", given in the row's note).

    python bench/data/defaults_table.py [--datasets km-toy planted-km ...] [--families kmc ...]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table

#: Seconds a fit with the Train page's defaults may take on this box.
TIME_LIMIT_S = 60.0
#: Datasets whose values are independent noise: a cell passes within this ratio of the mean.
NOISE_DATASETS = {"km-toy": 1.05}


def popularity_p5(train, test, threshold) -> float:
    """Test p@5 of the popularity ranking (items by training positives), as the one-class
    models are scored: training positives are never ranked."""
    from kmviz import metrics

    tr, te = (train, test) if threshold is None else (train.binarize(threshold),
                                                      test.binarize(threshold))
    counts = np.bincount(np.asarray(tr.items), minlength=tr.n_items).astype(np.float64)
    scores = np.broadcast_to(counts, (tr.n_users, tr.n_items))
    ranked = metrics.rank_items(scores, 5, exclude=tr.csr)
    relevant = [set() for _ in range(tr.n_users)]
    for u, i in zip(np.asarray(te.users), np.asarray(te.items)):
        relevant[int(u)].add(int(i))
    return float(metrics.precision_at_k(ranked, relevant, 5))


def chance_p5(train, test, threshold) -> tuple[float, float]:
    """Mean and standard deviation of the test p@5 of a ranking that cannot tell a user's
    items apart beyond the training positives: per user with K test positives among the N
    items that are not training positives, the hits in the top 5 are hypergeometric
    (N, K, n = min(5, N)); p@5 averages hits / 5 over those users (kmviz.metrics)."""
    tr, te = (train, test) if threshold is None else (train.binarize(threshold),
                                                      test.binarize(threshold))
    n_items = tr.n_items
    seen = np.bincount(np.asarray(tr.users), minlength=tr.n_users)
    k = np.bincount(np.asarray(te.users), minlength=tr.n_users)
    users = k > 0
    big_n, k = (n_items - seen[users]).astype(np.float64), k[users].astype(np.float64)
    n = np.minimum(5.0, big_n)
    share = k / big_n
    var = n * share * (1 - share) * np.where(big_n > 1, (big_n - n) / np.maximum(big_n - 1, 1),
                                             0.0)
    return float(np.mean(n * share) / 5), float(np.sqrt(var.sum()) / (5 * users.sum()))


def cell(family_name: str, dataset: str) -> dict:
    """One cell: the Train page's defaults of ``family_name`` on ``dataset``, fitted and
    scored against the baseline."""
    from kmviz import families
    from kmviz.data import load
    from kmviz.data.splits import make_split

    family = families.get(family_name)
    ratings = load(dataset)
    row = {"dataset": dataset, "family": family_name}
    try:
        found = family.dataset_defaults(ratings, dataset)
    except ValueError as exc:
        row.update(note=f"cannot use: {exc}", passed=None)
        return row
    params = dict(found.params)
    if params.get("random_state") is None and "random_state" in family.constraints():
        params["random_state"] = 0  # as the Train form does: the same seed, the same cell
    changed = {k: v for k, v in params.items() if family.default_params().get(k) != v}
    row["defaults"] = ", ".join(f"{k}={v}" for k, v in changed.items()) or "(estimator's)"
    split = make_split(ratings)
    model = family.make(params)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(split.train, validation=split.validation)
    row["fit s"] = time.perf_counter() - t0
    row["iterations"] = model.trace_.n_iter
    row["warnings"] = len(caught)
    ranking = not str(type(model).score_metric).startswith("-")
    if ranking:
        row["metric"] = "test p@5"
        row["model"] = float(model.evaluate(split.test)["precision_at_5"])
        row["baseline"] = popularity_p5(split.train, split.test, getattr(model, "threshold",
                                                                        None))
        row["baseline is"] = "popularity"
        better = row["model"] > row["baseline"]
        if dataset in NOISE_DATASETS:
            mean, sd = chance_p5(split.train, split.test, getattr(model, "threshold", None))
            better = row["model"] >= mean - 2 * sd
            row["note"] = (f"noise: every ranking draws p@5 from one law, chance {mean:.3f} "
                           f"± {sd:.3f}; pass above {mean - 2 * sd:.3f}")
    else:
        mean = float(np.mean(split.train.values))
        row["metric"] = "test RMSE"
        row["model"] = float(model.evaluate(split.test)["rmse"])
        row["baseline"] = float(np.sqrt(np.mean((np.asarray(split.test.values) - mean) ** 2)))
        row["baseline is"] = "training mean"
        slack = NOISE_DATASETS.get(dataset, 1.0)
        better = row["model"] < slack * row["baseline"]
        if dataset in NOISE_DATASETS:
            row["note"] = f"noise: pass within {slack - 1:.0%} of the mean"
    row["passed"] = bool(better and row["fit s"] <= TIME_LIMIT_S)
    return row


def main() -> None:
    from kmviz import families
    from kmviz.data import list_datasets

    p = parser(__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="*", default=[e.name for e in list_datasets()])
    p.add_argument("--families", nargs="*", default=families.names())
    args = p.parse_args()
    t_start = time.perf_counter()
    header("The Train page's defaults on every built-in dataset")
    rows = []
    for dataset in args.datasets:
        for name in args.families:
            try:
                row = cell(name, dataset)
            except Exception as exc:  # noqa: BLE001 - a failed cell is a row, not the end
                row = {"dataset": dataset, "family": name, "passed": False,
                       "note": f"failed: {type(exc).__name__}: {exc}"[:200]}
            rows.append(row)
            print(f"  done: {dataset} / {name}: "
                  f"{'pass' if row.get('passed') else row.get('note', 'FAIL')}", flush=True)
    print()
    print(table(rows, ["dataset", "family", "fit s", "iterations", "metric", "model",
                       "baseline", "baseline is", "passed", "warnings", "defaults", "note"]))
    failed = [r for r in rows if r.get("passed") is False]
    print(f"{len(rows) - len(failed)} of {len(rows)} cells pass or cannot use the dataset; "
          f"failing: {', '.join(r['dataset'] + '/' + r['family'] for r in failed) or 'none'}")
    footer(t_start)


if __name__ == "__main__":
    main()
