"""The catalogue's measured settings, measured again: each suggestion on the app's split.

For every built-in dataset with settings suggested for a model family
(``kmviz.data.catalogue``, the Train page's "Use these settings"), load it with the
suggestion's loader options, make the app's default split (random 70 / 10 / 20, seed 0),
fit the suggested settings and print the validation and test RMSE, CG/outer iterations
and time, beside the training mean. ``--with-defaults`` also fits the family's defaults
(slow on MovieLens, whose default item kernel is dense).

    python bench/suggested_settings.py [--with-defaults]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from _common import footer, header, parser, table


def rmse(pred, part) -> float:
    return float(np.sqrt(np.mean((pred - part.values) ** 2)))


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
        for family, suggestion in entry.suggested.items():
            split = make_split(entry.load(**suggestion.options))
            train, val, test = split.train, split.validation, split.test
            mean = float(train.values.mean())
            cells = [("suggested", suggestion.params)]
            if args.with_defaults:
                cells.append(("defaults", {}))
            for which, params in cells:
                t0, c0 = time.perf_counter(), time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model = families.get(family).make(params).fit(train)
                rows.append({
                    "dataset": entry.name, "family": family, "settings": which,
                    "iterations": model.trace_.n_iter,
                    "wall s": time.perf_counter() - t0, "CPU s": time.process_time() - c0,
                    "validation RMSE": rmse(model.predict(val.users, val.items), val),
                    "test RMSE": rmse(model.predict(test.users, test.items), test),
                    "mean's test RMSE": float(np.sqrt(np.mean((mean - test.values) ** 2)))})
                print(f"  done: {entry.name} / {family} / {which}", flush=True)
    print()
    print(table(rows))
    footer(t_start)


if __name__ == "__main__":
    main()
