"""Kernel MC on Gapminder: the estimator's defaults against settings tuned on validation.

The app's default split of the built-in ``gapminder`` data set (life expectancy of 185
countries x 57 years, random 70 / 10 / 20 split, seed 0), its region graph on countries and
its graph of neighbouring years. KKMCEX is fitted over a grid of graph kernel, eta, mu and
centering; each cell is scored on the validation part only, and the best one is then
scored once on the test part, beside the estimator's defaults (the thesis's diffusion
kernel, eta = 1, values as given) and two baselines: the training mean, and each country's
own training mean. The chosen cell is what the catalogue suggests for this data set
(``kmviz.data.catalogue``, entry ``gapminder``; the Train page offers it).

    python bench/kmc/kmc_gapminder.py [--quick]
"""

from __future__ import annotations

import itertools
import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table


def rmse(model, part) -> float:
    pred = model.predict(part.users, part.items)
    return float(np.sqrt(np.mean((pred - part.values) ** 2)))


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    from kmviz.data import load
    from kmviz.data.splits import make_split
    from kmviz.exceptions import ConvergenceWarning
    from kmviz.kmc import KernelMatrixCompletion

    t_start = time.perf_counter()
    header("Kernel MC on Gapminder life expectancy: defaults vs settings tuned on validation")
    ratings = load("gapminder")
    split = make_split(ratings)
    train, val, test = split.train, split.validation, split.test
    print(f"{ratings.n_users} countries x {ratings.n_items} years; train {train.n_ratings}, "
          f"validation {val.n_ratings}, test {test.n_ratings} values.\n")

    kernels = ["diffusion", "regularized_laplacian"]
    etas = [1.0, 3.0] if args.quick else [0.3, 1.0, 3.0, 10.0]
    mus = [1e-2] if args.quick else [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    rows = []
    for kernel, eta, mu, center in itertools.product(kernels, etas, mus, [False, True]):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = KernelMatrixCompletion(graph_kernel=kernel, eta=eta, mu=mu, center=center,
                                           max_iter=500).fit(train)
        rows.append({"graph kernel": kernel, "eta": eta, "mu": mu, "center": center,
                     "CG iterations": model.n_iter_, "seconds": time.perf_counter() - t0,
                     "validation RMSE": rmse(model, val), "_model": model})
    rows.sort(key=lambda r: r["validation RMSE"])
    cols = ["graph kernel", "eta", "mu", "center", "CG iterations", "seconds",
            "validation RMSE"]
    print("## The grid, best first (validation RMSE, years)\n")
    print(table(rows, cols))

    best = rows[0]
    default = KernelMatrixCompletion().fit(train)
    mean = float(train.values.mean())
    sums = np.bincount(train.users, train.values, minlength=train.n_users)
    counts = np.bincount(train.users, minlength=train.n_users)
    row_mean = np.where(counts > 0, sums / np.maximum(counts, 1), mean)
    summary = [
        {"predictor": "KKMCEX, estimator defaults (diffusion, eta 1, mu 0.01, as given)",
         "validation RMSE": rmse(default, val), "test RMSE": rmse(default, test)},
        {"predictor": f"KKMCEX, tuned ({best['graph kernel']}, eta {best['eta']:g}, "
                      f"mu {best['mu']:g}, center {best['center']})",
         "validation RMSE": best["validation RMSE"], "test RMSE": rmse(best["_model"], test)},
        {"predictor": "each country's training mean",
         "validation RMSE": float(np.sqrt(np.mean((row_mean[val.users] - val.values) ** 2))),
         "test RMSE": float(np.sqrt(np.mean((row_mean[test.users] - test.values) ** 2)))},
        {"predictor": "the training mean",
         "validation RMSE": float(np.sqrt(np.mean((mean - val.values) ** 2))),
         "test RMSE": float(np.sqrt(np.mean((mean - test.values) ** 2)))},
    ]
    print("## Test RMSE (years) of the tuned cell, the defaults and two baselines\n")
    print(table(summary, ["predictor", "validation RMSE", "test RMSE"]))
    footer(t_start)


if __name__ == "__main__":
    main()
