"""gFM against a Bayesian factorization machine (myfm) on real regression data.

The same design matrix for every method, an 80/20 random split (seed 0):

- Boston housing (``kmviz.data.load("boston")``: 506 tracts, the 13 standardized features
  -> medv; no id blocks, so plain x -> y regression, 404 train / 102 test);
- MovieLens 100K as the classic FM design (one-hot user, one-hot item, the user's age,
  gender and occupation, the item's genres -> rating; 80,000 train / 20,000 test).

Methods: predicting the training mean; gFM one-pass (Algorithm 1, standardized; the default
11 batches and 3 larger ones);
gFM ALS (eq. (3) + ridge l2 = 0.01, 10 passes); myfm's MyFMRegressor (Gibbs sampling of a
Bayesian FM with hierarchical priors, 200 sweeps, the last 150 averaged). Test RMSE and
fitting time (predicting left out); ranks 2 and 8. myfm also on the design with the columns
holding values other than 0/1 (MovieLens: age, year) divided by their std: on raw years its
sampler does not settle at rank 8.

    python bench/gfm/gfm_peers.py [--quick] [--ml100k DIR]

``--quick``: Boston only. myfm is a bench-only peer (``pip install kmviz[bench]``).
"""

from __future__ import annotations

import contextlib
import io
import math
import time
import warnings
from pathlib import Path

import numpy as np

import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table

RANKS = (2, 8)


def _rmse(pred, y) -> float:
    return float(math.sqrt(np.mean((np.asarray(pred) - y) ** 2)))


def datasets(args):
    from kmviz.data import load

    out = [("Boston housing", load("boston"))]
    if not args.quick:
        from kmviz.data.loaders import load_movielens_100k

        path = Path(args.ml100k) / "u.data"
        if path.exists():
            out.append(("MovieLens 100K (FM design)", load_movielens_100k(path)))
        else:
            print(f"(MovieLens 100K not found at {path}; pass --ml100k DIR)\n")
    return out


def rows_for(name, ratings, seed):
    from kmviz.gfm import GeneralizedFM

    train, test = ratings.split(test_size=0.2, random_state=seed)
    # the design gFM's automatic rule picks (ids only when they repeat), shared by all
    probe = GeneralizedFM(1, n_passes=1, random_state=seed).fit(train)
    design = probe.design_
    Xtr, Xte = design.transform(train), design.transform(test)
    y_tr, y_te = Xtr.y, Xte.y
    label = f"{name} ({Xtr.n_samples:,} x {Xtr.n_features:,})"
    rows = [{"data": label, "method": "training mean", "rank": "-",
             "test RMSE": _rmse(np.full_like(y_te, y_tr.mean()), y_te), "fit s": 0.0}]
    for k in RANKS:
        settings = [("als", {})]
        if k == RANKS[0]:  # one-pass: the default 11 batches, and 3 larger ones
            settings = [("onepass", {}), ("onepass", {"n_batches": 3})] + settings
        for solver, extra in settings:
            model = GeneralizedFM(k, solver=solver, random_state=seed, **extra)
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
                warnings.simplefilter("always")
                try:
                    model.fit(train)
                    rmse = _rmse(model.predict(test), y_te)
                except Exception as exc:  # noqa: BLE001 - a diverged fit is a result here
                    rmse = f"failed ({type(exc).__name__})"
            seconds = time.perf_counter() - start
            note = "diverged (warned)" if any("diverging" in str(w.message) for w in caught) \
                else ""
            shown = f"gFM {solver}" + (f", {model.n_batches} batches" if solver == "onepass"
                                       else f", {model.n_passes} passes")
            rows.append({"data": label, "method": shown, "rank": k,
                         "test RMSE": rmse, "fit s": seconds, "note": note})
        rows.append(myfm_row(label, Xtr.X, y_tr, Xte.X, y_te, k, seed))
        scaled = _scale_continuous(Xtr.X, Xte.X)
        if scaled is not None:
            rows.append(myfm_row(label, *scaled[:1], y_tr, scaled[1], y_te, k, seed,
                                 note="non-0/1 columns / their std"))
    return rows


def _scale_continuous(Xtr, Xte):
    """Both matrices with every column holding values other than 0/1 divided by its
    training std (None when there is no such column): myfm's Gibbs sampler does not settle
    on raw years (~1990) and ages."""
    import scipy.sparse as sp

    Xtr, Xte = sp.csr_matrix(Xtr, dtype=float), sp.csr_matrix(Xte, dtype=float)
    cols = np.unique(Xtr.indices[~np.isin(Xtr.data, (0.0, 1.0))])  # CSR: column indices
    if cols.size == 0:
        return None
    scale = np.ones(Xtr.shape[1])
    Xc = Xtr.tocsc()
    for j in cols:
        s = Xc[:, j].toarray().std()
        scale[j] = s if s > 0 else 1.0
    D = sp.diags(1.0 / scale)
    return (Xtr @ D).tocsr(), (Xte @ D).tocsr()


def myfm_row(label, Xtr, y_tr, Xte, y_te, rank, seed, note=""):
    row = {"data": label, "method": "myfm Bayesian FM (Gibbs)", "rank": rank, "note": note}
    try:
        import myfm
    except ImportError:
        row["note"] = "myfm not installed (pip install kmviz[bench])"
        return row
    import scipy.sparse as sp

    Xtr = sp.csr_matrix(Xtr)
    Xte = sp.csr_matrix(Xte)
    fm = myfm.MyFMRegressor(rank=rank, random_seed=seed)
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):  # its progress bar
        fm.fit(Xtr, y_tr, n_iter=200, n_kept_samples=150)
    row["fit s"] = time.perf_counter() - start
    row["test RMSE"] = _rmse(fm.predict(Xte), y_te)
    return row


def main():
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args()
    t_start = time.perf_counter()
    header("gFM (one-pass, ALS) against myfm on real regression data")
    rows = []
    for name, ratings in datasets(args):
        rows += rows_for(name, ratings, args.seed)
    print(table(rows, ["data", "method", "rank", "test RMSE", "fit s", "note"],
                floatfmt="{:.4g}"))
    footer(t_start)


if __name__ == "__main__":
    main()
