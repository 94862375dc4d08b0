"""Measured settings of the built-in sets, chosen on validation parts only (never on a test part).

``bench/data/defaults_table.py`` fits every family on every catalogue dataset with the Train
page's defaults. Where the family's own defaults did not beat the baseline (or only just,
as KM on MovieLens latest-small), the catalogue holds settings measured on that set
(``Family.suggestions``); this bench is how they were measured, and measures them again.

For each (dataset, family) below, every point of a small grid (the family's defaults first)
is fitted on the training part of three repeats and scored on their VALIDATION parts:

* generated sets (km-toy, planted-km, planted-lowrank, planted-relations, planted-towers): the catalogue's data (seed 0) and
  the same generator with seeds 1 and 2, each with the app's default split (random
  70 / 10 / 20, split seed 0);
* real sets (Gapminder, MovieLens latest-small, Boston): the catalogue's data with split
  seeds 1, 2 and 3, so the bench table's split (seed 0) and its test part are never looked at.

The score of a point is its mean ratio to the baseline on those validation parts (RMSE /
the training mean's RMSE for the value families, lower is better; p@5 / popularity's p@5
for the one-class families, higher is better, both as in ``bench/data/defaults_table.py``). The
chosen point is the best mean; the table shows every point and marks the choice, which the
catalogue holds as the family's measured settings for the set.

    python bench/data/small_set_settings.py [--cells km-toy/km planted-km/ocmf ...]
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
from defaults_table import popularity_p5

#: Linear towers over ids and the data's side features (similarity learning).
_TOWERS = {side: {"user_tower": "linear" if side == "both" else "identity",
                  "item_tower": "linear", "side_features": side} for side in ("item", "both")}
#: (dataset, family) -> {parameter: values} (``inputs``: several parameters at once). The
#: first value of each is the family's default (or its rule's), so the grid's first point
#: is what the Train page had before.
GRIDS = {
    ("km-toy", "km"): {"D": [8, 2], "lambda_theta": [0.0, 1.0, 10.0, 100.0]},
    ("km-toy", "kmc"): {"mu": [3.0, 30.0, 300.0, 3000.0]},
    ("km-toy", "gfm"): {"l2": [0.01, 1.0, 10.0, 100.0]},
    ("planted-lowrank", "km"): {"D": [8, 4, 16], "lambda_theta": [0.0, 1.0, 3.0, 10.0]},
    # D = 16 with lambda_theta = 100 fitted in 50 s at load 12 (validation RMSE 0.961): too
    # close to the Train page's 60 s, so D stays 8 here
    ("movielens-small", "km"): {"lambda_theta": [0.0, 1.0, 10.0, 100.0, 300.0, 1000.0]},
    ("planted-km", "ocmf"): {"a_bar": [-1.0, 0.0], "rho": [0.125, 0.0625, 0.03125],
                             "lambda_w": [4.0, 1.0, 0.25]},  # lambda_h stays 4
    ("planted-km", "similarity"): {"imputed": [-1.0, 0.0], "omega": [0.25, 0.125],
                                   "lambda_theta": [8.0, 2.0]},
    ("planted-lowrank", "ocmf"): {"inputs": [{}, {"side_features": "both"},
                                             {"side_features": "both", "user_identity": "none"}],
                                  "a_bar": [-1.0, 0.0]},
    ("planted-lowrank", "similarity"): {"inputs": [{}, _TOWERS["both"],
                                                   {**_TOWERS["both"], "user_ids": "none"}],
                                        "imputed": [-1.0, 0.0]},
    ("planted-towers", "similarity"): {
        "inputs": [{}, _TOWERS["both"], {**_TOWERS["both"], "user_tower": "mlp:64",
                                        "item_tower": "mlp:64"}],
        "imputed": [-1.0, 0.0], "omega": [0.25, 0.0625]},
    ("planted-towers", "ocmf"): {"side_features": ["none", "item", "both"],
                                 "a_bar": [-1.0, 0.0], "rho": [0.125, 0.03125]},
    ("planted-relations", "ocmf"): {"a_bar": [-1.0, 0.0], "rho": [0.125, 0.0625, 0.03125],
                                    "lambda_w": [4.0, 1.0, 0.25]},
    ("gapminder", "ocmf"): {"side_features": ["none", "item", "both"], "a_bar": [-1.0, 0.0],
                            "rho": [0.125, 0.0625, 0.25]},
    ("gapminder", "similarity"): {"inputs": [{}, _TOWERS["item"]],
                                  "imputed": [-1.0, 0.0], "omega": [0.25, 0.5]},
    # the gFM lesson's set: 10 ALS passes stop before the ALS tolerance is met
    ("boston", "gfm"): {"n_passes": [10, 50, 300], "l2": [0.01, 1.0, 10.0]},
    # the app's default data: 10 ALS passes stop before the ALS tolerance is met there too
    ("movielens-small", "gfm"): {"n_passes": [10, 50, 300], "l2": [0.01, 1.0, 10.0]},
}
GENERATED = {"km-toy", "planted-km", "planted-lowrank", "planted-relations",
             "planted-towers"}


def _expand(point: dict) -> dict:
    """A grid point as estimator parameters (``inputs`` holds several at once)."""
    params = dict(point)
    params.update(params.pop("inputs", {}))
    return params


def repeats(dataset: str):
    """The three (data, split) pairs a grid is scored on (see the docstring)."""
    from kmviz.data import get_dataset
    from kmviz.data.splits import make_split

    entry = get_dataset(dataset)
    if dataset in GENERATED:
        data = [entry.load(random_state=seed) for seed in (0, 1, 2)]
        return [(ratings, make_split(ratings)) for ratings in data]
    ratings = entry.load()
    return [(ratings, make_split(ratings, seed=seed)) for seed in (1, 2, 3)]


def baseline(split, ranking: bool, threshold) -> float:
    """Popularity's validation p@5, or the training mean's validation RMSE."""
    if ranking:
        return popularity_p5(split.train, split.validation, threshold)
    mean = float(np.mean(split.train.values))
    return float(np.sqrt(np.mean((np.asarray(split.validation.values) - mean) ** 2)))


def grid_rows(dataset: str, family_name: str) -> list[dict]:
    """Every grid point of the cell with its validation score; the best one marked."""
    from kmviz import families

    family = families.get(family_name)
    splits = repeats(dataset)
    ranking = family_name in ("ocmf", "similarity")
    grid = GRIDS[(dataset, family_name)]
    rows = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        ratios, seconds = [], 0.0
        for ratings, split in splits:
            # the family's rule on the data (as the Train page), not the measured settings
            start = dict(family.dataset_defaults(ratings).params)
            start.update(_expand(point), random_state=0)
            model = family.make(start)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(split.train, validation=split.validation)
            seconds += time.perf_counter() - t0
            got = model.evaluate(split.validation)["precision_at_5" if ranking else "rmse"]
            ratios.append(got / baseline(split, ranking, start.get("threshold")))
        rows.append({"dataset": dataset, "family": family_name,
                     "point": ", ".join(f"{k}={v}" for k, v in _expand(point).items()),
                     "ratios": " ".join(f"{r:.3f}" for r in ratios),
                     "mean ratio": float(np.mean(ratios)), "fit s": seconds / len(splits),
                     "params": _expand(point)})
    scores = [r["mean ratio"] for r in rows]
    best = int(np.argmax(scores) if ranking else np.argmin(scores))
    rows[best]["chosen"] = "chosen"
    return rows


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--cells", nargs="*", default=[f"{d}/{f}" for d, f in GRIDS])
    args = p.parse_args()
    t_start = time.perf_counter()
    header("Measured settings of the built-in sets, chosen on validation")
    rows = []
    for cell in args.cells:
        dataset, family_name = cell.split("/")
        rows += grid_rows(dataset, family_name)
        chosen = next(r for r in rows[::-1] if r.get("chosen"))
        print(f"  {cell}: chosen {chosen['point']} (mean ratio {chosen['mean ratio']:.3f})",
              flush=True)
    print()
    print(table(rows, ["dataset", "family", "point", "ratios", "mean ratio", "fit s",
                       "chosen"]))
    footer(t_start)


if __name__ == "__main__":
    main()
