"""The catalogue's measured settings, measured again: each suggestion on the app's split.

For every built-in dataset with settings suggested for a model family
(``kmviz.data.catalogue``, the Train page's "Use these settings"), load it with the
suggestion's loader options, make the app's default split (random 70 / 10 / 20, seed 0),
fit the suggested settings and print the validation and test error, CG/outer iterations
and time, beside a baseline: RMSE and the training mean for the rating models, p@5 (percent;
kmviz.metrics: hits / 5, training positives never ranked) and the popularity ranking for
one-class MF. ``--with-defaults`` also fits the family's defaults
(slow on MovieLens, whose default item kernel is dense).

    python bench/data/suggested_settings.py [--with-defaults]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table


def ranking_scores(model, train, val, test) -> dict:
    """Validation / test p@5 (percent) of a one-class model, and popularity's test p@5 with
    the model's positive threshold."""
    from kmviz import metrics
    from kmviz.ocmf import popularity_scores

    thr = model.threshold
    tr, te = (train, test) if thr is None else (train.binarize(thr), test.binarize(thr))
    ranked = metrics.rank_items(popularity_scores(tr), 5, exclude=tr.csr)
    rel = [set() for _ in range(tr.n_users)]
    for u, i in zip(np.asarray(te.users), np.asarray(te.items)):
        rel[int(u)].add(int(i))
    return {"validation p@5": 100 * model.evaluate(val)["precision_at_5"],
            "test p@5": 100 * model.evaluate(test)["precision_at_5"],
            "popularity's test p@5": 100 * metrics.precision_at_k(ranked, rel, 5)}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--with-defaults", action="store_true",
                   help="also fit each family's defaults on the same split")
    args = p.parse_args()
    from kmviz import families
    from kmviz.data import list_datasets
    from kmviz.data.splits import make_split
    from kmviz.exceptions import ConvergenceWarning

    t_start = time.perf_counter()
    header("The catalogue's suggested settings on the app's default split")
    rows = []
    for entry in list_datasets():
        for family, suggestion in families.dataset_suggestions(entry.name).items():
            ratings = entry.load(**suggestion.options)
            split = make_split(ratings)
            train, val, test = split.train, split.validation, split.test
            mean = float(train.values.mean())
            fam = families.get(family)
            # the Train page's defaults: the family's rule (a positive threshold, ...) with
            # the measured settings on top
            found = fam.dataset_defaults(ratings, entry.name, suggestion.options).params
            cells = [("suggested", found)]
            if args.with_defaults:
                # a positive threshold says what the data are, not how to fit them: the
                # defaults keep it
                keep = {k: v for k, v in found.items() if k == "threshold" and v is not None}
                cells.append(("defaults" + (" (same threshold)" if keep else ""), keep))
            for which, params in cells:
                t0, c0 = time.perf_counter(), time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model = fam.make(params).fit(train)
                row = {"dataset": entry.name, "family": family, "settings": which,
                       "iterations": model.trace_.n_iter,
                       "wall s": time.perf_counter() - t0, "CPU s": time.process_time() - c0}
                if not str(type(model).score_metric).startswith("-"):  # a ranking
                    row.update(ranking_scores(model, train, val, test))
                else:
                    row.update({
                        "validation RMSE": float(model.evaluate(val)["rmse"]),
                        "test RMSE": float(model.evaluate(test)["rmse"]),
                        "mean's test RMSE": float(np.sqrt(np.mean((mean - test.values) ** 2)))})
                rows.append(row)
                print(f"  done: {entry.name} / {family} / {which}", flush=True)
    print()
    print(table(rows))
    footer(t_start)


if __name__ == "__main__":
    main()
