"""gFM's ALS against myfm: seconds per sweep and seconds to the same training loss, on the
same factorization-machine rows at the same rank, in one run.

Rows: MovieLens 100K in the FM design gFM picks for ratings (one-hot user, one-hot item,
the user's age, gender and occupation, the item's genres and year; 80,000 train / 20,000
test rows, split seed 0), *scaled*: the columns holding values other than 0/1 (age, year)
divided by their training std, since myfm's sampler does not settle on raw years at rank 8
(bench/gfm/gfm_peers.py); and *raw* (what ``GeneralizedFM`` fits) for kmviz alone.

Methods, every one from its own random start at the same rank k:

- kmviz ALS, coordinate halves (``kmviz.gfm.als.coordinate_pass``, today's solver: exact
  coordinate minimization with the residual kept, O(nnz k) per sweep, at most
  ``INNER_MAX_ITER`` sweeps of (w, U) then of (w, V) per pass); the same with full sweeps
  over (w, U, V) (``halves=False``); and LSQR halves (``lsqr_pass``, the solver before);
- myfm's ``MyFMRegressor`` (Gibbs sampling: each sweep draws every coordinate from its
  conditional, an O(nnz k) coordinate pass with noise, plus hyper-parameter draws; the
  last 3/4 of the samples averaged for prediction);
- myfm's ``VariationalFMRegressor`` (mean-field variational Bayes: a deterministic
  coordinate pass on the means). myfm has no ALS mode; these two are its solvers.

The problems are not identical. gFM's model is ``b + w^T x + x^T M x`` with
``M = (U V^T + V U^T)/2`` (two factors, squares x_j^2 included) and a fixed ridge l2 on
``1/(2N)`` times the squared error (default 0.01); myfm's FM is
``b + w^T x + sum_{j<l} <v_j, v_l> x_j x_l`` (one factor, no squares) with Gaussian priors
whose precisions it learns. Its MAP objective ``alpha/2 ||r||^2 + lambda_V/2 ||V||^2`` is
gFM's with ``l2 = lambda_V / (alpha N)``: the bench reads alpha and lambda_V from myfm's
last Gibbs sweep and also runs kmviz at that ridge ("matched"), the closest to the same
regularization. The common yardstick is the *training RMSE*: in each table the target is
the largest of its methods' best training RMSEs plus 0.2% (a loss all of them reach), each
method's seconds are to its first sweep (pass) at or below it; "/ myfm Gibbs" divides by
the seconds of myfm's Gibbs sampler (averaged). The matched table leaves out the Gibbs
sampler's single samples, whose noise keeps their training RMSE high. myfm's training
RMSE is that of its current sample (Gibbs), of the average of its samples after the first
quarter of the sweeps (Gibbs, averaged: what its ``predict`` returns), or of its means
(VB), computed in its callback, whose time is left out of its seconds; kmviz's comes
from the residual its pass keeps, inside its time.
"s per sweep": kmviz's sweeps are over w and one factor (halves) or both (full); myfm's
over w and its one factor. Test RMSE: kmviz's last pass, myfm's prediction.

    python bench/gfm/gfm_als.py [--quick] [--rank K] [--passes P] [--ml100k DIR]

``--quick``: rank 2, 6 kmviz passes, 40 myfm sweeps, the scaled rows only. Without it a
last table compares kmviz today with before on the raw rows (where myfm does not settle).
myfm is a bench-only peer (``pip install kmviz[bench]``).
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
from gfm_peers import _scale_continuous

L2 = 0.01
#: The target is this fraction above the largest best training RMSE, so that the method
#: setting it is not timed to its own asymptote (its last pass).
SLACK = 0.002


def _rmse(pred, y) -> float:
    return float(math.sqrt(np.mean((np.asarray(pred) - y) ** 2)))


def fm_rows(path, seed):
    """(train X, y, test X, y) of MovieLens 100K in gFM's FM design."""
    from kmviz.data.loaders import load_movielens_100k
    from kmviz.gfm import GeneralizedFM

    ratings = load_movielens_100k(path)
    train, test = ratings.split(test_size=0.2, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = GeneralizedFM(1, n_passes=1, random_state=seed).fit(train).design_
    tr, te = design.transform(train), design.transform(test)
    return tr.X.tocsr(), tr.y, te.X.tocsr(), te.y


def _timer(out):
    """A ``timer(name)`` context that adds each phase's seconds to ``out[name]``."""
    @contextlib.contextmanager
    def phase(name):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            out[name] = out.get(name, 0.0) + time.perf_counter() - t0
    return phase


def kmviz_curve(X, y, Xte, yte, rank, passes, seed, which, l2=L2, phases=None):
    """Per pass: (seconds so far, training RMSE, sweeps); and the last pass's test RMSE.
    ``which``: "coordinate" (halves, the default), "full" (full sweeps) or "lsqr";
    ``phases`` (a dict) gets each timed phase's seconds summed over the passes."""
    phases = {} if phases is None else phases
    from kmviz.gfm import als

    st = als.start(X, y, rank, standardize=False, fit_intercept=True, rng=seed)
    curve, t = [], 0.0
    for _ in range(passes):
        t0 = time.perf_counter()
        if which == "lsqr":
            info = als.lsqr_pass(st, X, y, l2=l2, timer=_timer(phases))
        else:
            info = als.coordinate_pass(st, X, y, l2=l2, halves=which == "coordinate",
                                       timer=_timer(phases))
        t += time.perf_counter() - t0
        curve.append((t, info["rmse"], info["n_inner"]))
    return curve, float(np.sqrt(np.mean(als.residual(st, Xte, yte) ** 2)))


def myfm_curve(X, y, Xte, yte, rank, sweeps, seed, kind, hyper_out=None, mean_out=None):
    """Per sweep: (seconds so far without the callback's own time, training RMSE, 1).

    Gibbs: appends each sweep's (alpha, mean lambda_V) to ``hyper_out``, and to
    ``mean_out`` the curve of the averaged prediction (the posterior mean its ``predict``
    gives: the samples after the first quarter of the sweeps, averaged so far)."""
    import myfm

    curve, spent = [], [0.0]
    t_start = [None]
    burn = sweeps - max(1, (3 * sweeps) // 4)
    acc = [np.zeros(len(y)), 0]

    def callback(i, fm, hyper, history):
        t0 = time.perf_counter()
        elapsed = t0 - t_start[0] - spent[0]
        pred = fm.predict_score(X, [])
        curve.append((elapsed, _rmse(pred, y), 1))
        if hyper_out is not None:
            hyper_out.append((float(hyper.alpha), float(np.mean(hyper.lambda_V))))
        if mean_out is not None:
            if i >= burn:
                acc[0] += pred
                acc[1] += 1
            mean_out.append((elapsed, _rmse(acc[0] / acc[1], y) if acc[1] else math.inf, 1))
        spent[0] += time.perf_counter() - t0
        return False, None

    if kind == "gibbs":
        model = myfm.MyFMRegressor(rank=rank, random_seed=seed)
        kw = dict(n_iter=sweeps, n_kept_samples=max(1, (3 * sweeps) // 4))
    else:
        model = myfm.VariationalFMRegressor(rank=rank, random_seed=seed)
        kw = dict(n_iter=sweeps)
    t_start[0] = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):  # its progress bar
        model.fit(X, y, callback=callback, **kw)
    return curve, _rmse(model.predict(Xte), yte)


def seconds_to(curve, target):
    for t, rmse, _ in curve:
        if rmse <= target:
            return t
    return math.nan


def matched_l2(hyper_row, n_rows) -> float:
    """The ridge of eq. (3)'s ``1/(2N)`` scaling equal to myfm's learned factor prior:
    its MAP objective ``alpha/2 ||r||^2 + lambda_V/2 ||V||^2`` divided by ``alpha N``."""
    alpha, lam_v = hyper_row
    return float(lam_v / (alpha * n_rows))


def summarize(curves, names):
    """Rows of the table; ``names`` decides which methods set the target."""
    best = {n: min(r for _, r, _ in c) for n, (c, _) in curves.items()}
    target = (1 + SLACK) * max(best[n] for n in names if n in best)
    rows = []
    for name, (curve, test_rmse) in curves.items():
        if name not in names:
            continue
        total_t = curve[-1][0]
        sweeps = sum(s for _, _, s in curve)
        rows.append({"method": name, "passes": len(curve), "sweeps": sweeps,
                     "s per sweep": total_t / max(sweeps, 1),
                     "s per pass": total_t / len(curve), "best train RMSE": best[name],
                     "s to target": seconds_to(curve, target), "total s": total_t,
                     "test RMSE": test_rmse})
    gibbs = [r["s to target"] for r in rows if r["method"] == PEER]
    for r in rows:
        r["/ myfm Gibbs"] = r["s to target"] / gibbs[0] if gibbs and gibbs[0] > 0 \
            else math.nan
    return rows, target


#: The peer of the ratio column: myfm's Gibbs sampler, its averaged prediction.
PEER = "myfm Gibbs, averaged samples"
COLUMNS = ["method", "passes", "sweeps", "s per sweep", "s per pass", "best train RMSE",
           "s to target", "/ myfm Gibbs", "total s", "test RMSE"]


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, default=None, help="k (default 8; 2 with --quick)")
    p.add_argument("--passes", type=int, default=None, help="kmviz passes (default 12)")
    p.add_argument("--sweeps", type=int, default=None, help="myfm sweeps (default 200)")
    args = p.parse_args()
    k = args.rank or (2 if args.quick else 8)
    passes = args.passes or (6 if args.quick else 12)
    sweeps = args.sweeps or (40 if args.quick else 200)
    s = args.seed
    path = Path(args.ml100k) / "u.data"
    t_start = time.perf_counter()
    header("gFM ALS against myfm: seconds to the same training loss, same rows and rank")
    if not path.exists():
        print(f"skipped: MovieLens 100K not found at {path} (pass --ml100k DIR)")
        return
    Xtr, ytr, Xte, yte = fm_rows(path, s)
    A, B = _scale_continuous(Xtr, Xte)
    N = A.shape[0]
    print(f"rank k = {k}; kmviz ridge l2 = {L2} (the default) unless matched; "
          f"{passes} kmviz passes (LSQR: {max(2, passes // 2)}), {sweeps} myfm sweeps\n")
    curves, hyper = {}, []
    try:
        mean_curve = []
        curves["myfm Gibbs (MyFMRegressor)"] = myfm_curve(A, ytr, B, yte, k, sweeps, s,
                                                          "gibbs", hyper, mean_curve)
        curves["myfm Gibbs, averaged samples"] = (
            mean_curve, curves["myfm Gibbs (MyFMRegressor)"][1])
        curves["myfm variational (VariationalFMRegressor)"] = myfm_curve(
            A, ytr, B, yte, k, max(10, sweeps // 4), s, "vb")
    except ImportError:
        print("(myfm not installed: pip install kmviz[bench])\n")
    l2m = matched_l2(hyper[-1], N) if hyper else L2
    kmviz_runs = [
        ("kmviz ALS, coordinate halves", "coordinate", L2, passes),
        ("kmviz ALS, full coordinate sweeps", "full", L2, passes),
        ("kmviz ALS, LSQR halves (before)", "lsqr", L2, max(2, passes // 2)),
        (f"kmviz ALS, coordinate halves, l2 = {l2m:.2g} (myfm's)", "coordinate", l2m, passes),
    ]
    phase_rows = []
    for name, which, l2, n in kmviz_runs:
        spent = {}
        curves[name] = kmviz_curve(A, ytr, B, yte, k, n, s, which, l2, spent)
        total = curves[name][0][-1][0]
        phase_rows.append({"method": name, "s per pass": total / n,
                           **{f"{ph} s/pass": v / n for ph, v in spent.items()}})
    label = f"scaled rows ({A.shape[0]:,} x {A.shape[1]:,}, nnz {A.nnz:,})"
    myfm_names = [n for n in curves if n.startswith("myfm")]
    groups = [("same rows and rank, kmviz's default ridge: every method",
               list(curves)),
              ("same rows and rank, kmviz's ridge matched to myfm's learned prior",
               [n for n in myfm_names if n != "myfm Gibbs (MyFMRegressor)"]
              + [kmviz_runs[-1][0]])]
    for title, names in groups:
        rows, target = summarize(curves, names)
        print(f"## {label}, {title}: target training RMSE {target:.5f} "
              f"(the largest of their best + {SLACK:.1%})\n")
        print(table(rows, COLUMNS, floatfmt="{:.4g}"))
    print("## The phases of one kmviz pass (seconds per pass, scaled rows): caches = the\n"
          "residual and the projections Z U, Z V built once per pass (CSC of Z included);\n"
          "solve_U / solve_V = the sweeps of each half (LSQR: its iterations); sweep = the\n"
          "full sweeps; objective = the loss from the kept residual (LSQR: recomputed)\n")
    print(table(phase_rows, floatfmt="{:.4g}"))
    if not args.quick:  # what GeneralizedFM fits by default; myfm does not settle on it
        label = f"raw rows ({Xtr.shape[0]:,} x {Xtr.shape[1]:,}, nnz {Xtr.nnz:,})"
        raw = {name: kmviz_curve(Xtr, ytr, Xte, yte, k, n, s, which, l2)
               for name, which, l2, n in kmviz_runs[:3]}
        rows, target = summarize(raw, list(raw))
        print(f"## {label}, kmviz today against before: target training RMSE "
              f"{target:.5f}\n")
        print(table(rows, [c for c in COLUMNS if c != "/ myfm Gibbs"], floatfmt="{:.4g}"))
    footer(t_start)


if __name__ == "__main__":
    main()
