"""Table V of the KM paper: test NRMSE of the KM on MovieLens 100K (80/20, seeded) for
D in {4, 8, 16, 24}, with p = r / r_max (probability="max", as the paper), regularizers
chosen on a validation split; next to it a bias baseline and the error in stars under both
normalizations. Also on the built-in MovieLens latest-small.

Protocol (per dataset): a seeded 80/20 train/test split; 12.5% of train (10% of all) held
out as validation. Each (lambda_theta, mu_psi) of the grid is fitted on the other 87.5% of
train and scored by validation NRMSE; the pick is refitted on the whole 80% train and
evaluated once on test. The bias baseline (r ~ global mean + b_u + b_i, ridge-regularized,
alternating exact updates) gets the same protocol for its regularization.

Metrics on test: NRMSE/r_max = RMSE(p, p_hat) with p = r/r_max (the paper's KM/NNM form; /5
on ML100K); RMSE in stars; NRMSE/(r_max - r_min) = RMSE in stars / (r_max - r_min) (the
paper's MF/SVD++ form; /4 on ML100K, /4.5 on latest-small whose scale is [0.5, 5]).
KM predictions are p_hat * r_max stars, not clipped (as the paper); the bias baseline is clipped
to [1, 5].

    python bench/km/table5_nrmse.py [--quick] [--full] [--budget S]
"""

from __future__ import annotations

import time

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_ml100k, parser, run_cell, table

PAPER_KM = {4: 0.1978, 8: 0.1963, 16: 0.1946, 24: 0.1891}
PAPER_PICK = {4: "(10, 0)", 8: "(30, 0)", 16: "(40, 0)", 24: "(60, 0)"}
PAPER_MF = {4: 0.2292, 8: 0.2287, 16: None, 24: 0.2269}
LAMBDAS = (0.0, 10.0, 30.0, 60.0)
MUS = (0.0, 1.0)


def grid_for(D, quick, full):
    if full:
        return [(l, m) for l in LAMBDAS for m in MUS]
    if quick:
        return [(0.0, 0.0), (10.0, 0.0)] if D == 8 else [(10.0, 0.0)]
    if D <= 8:
        return [(l, m) for l in LAMBDAS for m in MUS]
    if D <= 16:
        return [(l, 0.0) for l in LAMBDAS]
    return [(10.0, 0.0), (60.0, 0.0)]


def km_cell(emit, train, evals, D, lam, mu, max_iter, seed):
    """Fit a KM and return its NRMSE (p = r/5) on each ratings set in ``evals`` plus
    predictions in stars for the last one (child process)."""
    import warnings

    from kmviz.km import KolmogorovModel

    t0 = time.perf_counter()
    m = KolmogorovModel(D=D, lambda_theta=lam, mu_psi=mu, probability="max",
                        max_iter=max_iter, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(train)
    last = evals[-1]
    return {"nrmse": [m.nrmse(e) for e in evals],
            "stars": m.predict_ratings(last.users, last.items),
            "n_iter": m.n_iter_, "seconds": time.perf_counter() - t0}


def bias_fit(train, reg, sweeps=15):
    mu = float(np.mean(train.values))
    u, i, r = np.asarray(train.users), np.asarray(train.items), np.asarray(train.values)
    bu = np.zeros(train.n_users)
    bi = np.zeros(train.n_items)
    cu = np.bincount(u, minlength=train.n_users)
    ci = np.bincount(i, minlength=train.n_items)
    for _ in range(sweeps):
        bi = np.bincount(i, weights=r - mu - bu[u], minlength=train.n_items) / (ci + reg)
        bu = np.bincount(u, weights=r - mu - bi[i], minlength=train.n_users) / (cu + reg)
    return mu, bu, bi


def bias_predict(model, ratings):
    mu, bu, bi = model
    pred = mu + bu[np.asarray(ratings.users)] + bi[np.asarray(ratings.items)]
    return np.clip(pred, ratings.r_min, ratings.r_max)


def run_dataset(name, ratings, Ds, args):
    from kmviz.metrics import nrmse_probability, nrmse_ratings, rmse

    train, test = ratings.split(0.2, random_state=args.seed)
    fit_part, val = train.split(0.125, random_state=args.seed + 1)
    r_min, r_max = float(ratings.r_min), float(ratings.r_max)
    print(f"### {name}: {ratings.n_users} users x {ratings.n_items} items; train "
          f"{train.n_ratings} (of which validation {val.n_ratings}), test {test.n_ratings} "
          f"ratings; scale [{r_min:g}, {r_max:g}]\n")

    # bias baseline
    regs = (1.0, 3.0, 10.0, 25.0)
    val_err = {g: rmse(val.values, bias_predict(bias_fit(fit_part, g), val)) for g in regs}
    g_best = min(val_err, key=val_err.get)
    b_pred = bias_predict(bias_fit(train, g_best), test)
    b_stars = rmse(test.values, b_pred)

    sel_rows, rows = [], []
    for D in Ds:
        grid = grid_for(D, args.quick, args.full)
        scores = {}
        for lam, mu in grid:
            c = run_cell(km_cell, fit_part, [val], D, lam, mu, args.sel_iter, args.seed,
                         budget=args.budget)
            scores[lam, mu] = c.value["nrmse"][0] if c.ok else None
            sel_rows.append({"dataset": name, "D": D, "lambda_theta": lam, "mu_psi": mu,
                             "val NRMSE (p=r/5)": (f"{c.value['nrmse'][0]:.4f}" if c.ok
                                                   else f"- ({c.reason})"),
                             "BCD it.": c.value["n_iter"] if c.ok else "-",
                             "fit s": f"{c.seconds:.0f}"})
        ok = {k: s for k, s in scores.items() if s is not None}
        if not ok:
            rows.append({"D": D, "KM test NRMSE/r_max": "- (every grid fit over budget)"})
            continue
        lam, mu = min(ok, key=ok.get)
        c = run_cell(km_cell, train, [test], D, lam, mu, args.final_iter, args.seed,
                     budget=args.budget * 1.5)
        if not c.ok:
            rows.append({"D": D, "pick (lambda, mu)": f"({lam:g}, {mu:g})",
                         "KM test NRMSE/r_max": f"- ({c.reason})"})
            continue
        stars = np.asarray(c.value["stars"])
        km_stars = rmse(test.values, stars)
        km_clip = rmse(test.values, np.clip(stars, r_min, r_max))
        p_true = np.asarray(test.values) / r_max
        rows.append({
            "D": D,
            "pick (lambda, mu)": f"({lam:g}, {mu:g})",
            "KM test NRMSE/r_max": f"{nrmse_probability(p_true, np.clip(stars / r_max, 0, 1)):.4f}",
            "paper KM": f"{PAPER_KM[D]:.4f} {PAPER_PICK[D]}" if name == "ML100K" else "-",
            "KM RMSE stars": f"{km_stars:.3f}",
            "KM RMSE stars, clipped to [1,5]": f"{km_clip:.3f}",
            "KM NRMSE/(r_max-r_min)": f"{nrmse_ratings(test.values, stars, r_min, r_max):.4f}",
            "bias RMSE stars": f"{b_stars:.3f}",
            "bias NRMSE/r_max": f"{b_stars / r_max:.4f}",
            "bias NRMSE/(r_max-r_min)": f"{nrmse_ratings(test.values, b_pred, r_min, r_max):.4f}",
            "paper MF NRMSE/4 (stars)": (f"{PAPER_MF[D]:.4f} ({PAPER_MF[D] * 4:.3f})"
                                         if name == "ML100K" and PAPER_MF[D] else "-"),
            "BCD it.": c.value["n_iter"],
        })
    print("Validation grid (KM fitted on train minus validation):\n")
    print(table(sel_rows))
    print(f"Test (KM refitted on the whole train part with the pick; bias baseline reg = "
          f"{g_best:g} picked on validation from {regs}, val RMSE "
          + ", ".join(f"{g:g}: {e:.4f}" for g, e in val_err.items()) + "):\n")
    print(table(rows))
    return rows, b_stars


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="full lambda x mu grid at every D "
                    "(about 3x the default run time)")
    ap.add_argument("--budget", type=float, default=None, help="seconds per fit (default 180;"
                    " --quick 40)")
    ap.add_argument("--sel-iter", type=int, default=None, help="BCD iterations of a grid fit "
                    "(default 6)")
    ap.add_argument("--final-iter", type=int, default=None, help="BCD iterations of the final "
                    "fit (default 10)")
    args = ap.parse_args()
    args.budget = args.budget or (40.0 if args.quick else 180.0)
    args.sel_iter = args.sel_iter or (2 if args.quick else 6)
    args.final_iter = args.final_iter or (3 if args.quick else 10)
    t_start = time.perf_counter()
    header("Table V: test NRMSE of the KM (p = r / r_max) vs a bias baseline, both "
           "normalizations")
    ds = (8,) if args.quick else (4, 8, 16, 24)
    print(f"KM: bqp_solver='fast' (default), gamma=100, probability='max', tol=1e-4, "
          f"{args.sel_iter} BCD iterations max per grid fit and {args.final_iter} for the "
          f"final fit; seed {args.seed}. Grid: lambda_theta x mu_psi = "
          f"{'full ' if args.full else ''}"
          f"{'{0,10,30,60} x {0,1} at D <= 8, {0,10,30,60} x {0} at D = 16, {10,60} x {0} at D = 24' if not (args.full or args.quick) else ''}"
          f"{'{0,10} x {0}' if args.quick and not args.full else ''}"
          f"{'{0,10,30,60} x {0,1}' if args.full else ''}"
          f" (the default grid is trimmed at large D to fit the run in ~10 min; --full runs "
          f"the whole grid). Budget {args.budget:.0f} s per fit.\n")
    from kmviz.data import load

    r = load_ml100k(args.ml100k)
    res = {}
    if r is not None:
        res["ML100K"] = run_dataset("ML100K", r, ds, args)
    small_ds = (4,) if args.quick else (8, 16)
    res["latest-small"] = run_dataset("MovieLens latest-small (built in)",
                                      load("movielens-small"), small_ds, args)

    print("### Reading\n")
    print("The paper reports KM as RMSE/5 (on p = r/5) but MF/SVD++ as RMSE/4; a star error "
          "of x is 0.2x under the first and 0.25x under the second, so the paper's KM 0.1963 "
          "is 0.98 stars and its MF 0.2287 is 0.91 stars: on one scale the paper's own MF "
          "beats its KM at D = 8. Our numbers, on one scale each:")
    for name, (rows, b_stars) in res.items():
        for row in rows:
            if "KM RMSE stars" not in row:
                continue
            km = float(row["KM RMSE stars"])
            verdict = ("better than" if km < b_stars - 0.005 else
                       "worse than" if km > b_stars + 0.005 else "about equal to")
            print(f"- {name}, D = {row['D']}: KM {km:.3f} stars vs bias baseline "
                  f"{b_stars:.3f} stars: KM is {verdict} the bias baseline "
                  f"(NRMSE/(r_max-r_min): {row['KM NRMSE/(r_max-r_min)']} vs {row['bias NRMSE/(r_max-r_min)']}).")
    print("\nOnly same-normalization comparisons are meaningful; a KM NRMSE/5 next to an MF "
          "NRMSE/4 flatters the KM by 20%.")
    footer(t_start)


if __name__ == "__main__":
    main()
