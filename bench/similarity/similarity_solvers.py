"""The seven similarity-learning solvers on MovieLens 100K with MLP towers (the paper's
ordering, Yuan et al. KDD 2021, Sec. 6.1 / Figure 2).

Every solver fits the same model (MLP towers over one-hot ids and the side features: user
age, gender, occupation; item genres and year) from the same starting theta on the same
80 / 10 / 10 split (r >= 4 positives), for at most ``--budget`` seconds of optimization each
(the validation ranking is not counted). L* is the lowest objective of these runs and of a
longer Gauss-Newton reference run (``--reference`` s, default 3 x budget); the
table gives the time each needed to get within 1e-3 (and 1e-2) of it, relative to
Gauss-Newton's, and its best validation MAP@5 (eq. 52).

omega and lambda default to the paper's ml1m setting (Table 3: 2^-4, 2^2), the data set
closest to ML-100K in density; ``--side-features none`` gives towers over the one-hot ids
alone. ``--curvature`` adds the Gauss-Newton curvature along each parameter block's part of
the gradient, g_b^T G g_b / g_b^T g_b, after 5 Newton iterations: a spread of orders of
magnitude between blocks is what CG at xi = 0.1 has to resolve and what GD-diag's AdaGrad
scaling removes by itself; its last column is the same quotient after the Jacobi scaling
of ``--solvers ...,newton-pcg`` (``D^-1/2 G D^-1/2``, D = diag(G)).

``newton-pcg`` is Gauss-Newton with ``preconditioner="diag"``: CG preconditioned by the
diagonal of G (kmviz/similarity/solvers/_precondition.py); it is not one of the paper's
seven, so the solver list names it explicitly. Measured (--budget 180 --reference 300
--solvers newton,newton-pcg,gd-diag, load 5-9 on 2 cores): it reaches 1e-1 of L* 3.8x
sooner than plain Newton (8.1 s against 31.0 s) but then settles about 2% above plain
Newton's 180-s objective (28518 after 300 s against 27934); from a second seed too. So
the L* reference run is plain Newton by default.

Target (issue 21): Gauss-Newton first, by at least 2x over the next. 1e-3 of L* takes a
well converged L*: with the 64,64 towers (k = 32) neither Newton nor GD-diag reached it in
600 s against a 900 s reference run. With 32,32 towers and k = 16 (``--budget 240
--reference 480 --solvers newton,gd-diag --hidden 32,32 --k 16``, load 1.0, 1416 s),
Newton's last objective was 4.8e-5 above L*: Newton reached 1e-3 at 129.6 s, 1e-2 at
87.4 s and 1e-1 at 2.3 s; GD-diag reached 1e-1 at 16.1 s and ended at 2.4e-2 after 240 s;
best validation MAP@5 0.1843 against 0.1828. Run:

    python bench/similarity/similarity_solvers.py --budget 30      # all seven, 30 s each (~6 min)
    python bench/similarity/similarity_solvers.py --quick          # 3 solvers, small towers, 15 s each
    python bench/similarity/similarity_solvers.py --budget 180 --reference 300 \
        --solvers newton,newton-pcg,gd-diag                 # preconditioned Newton (~15 min)
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, load_ml100k, parser, table


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=60.0, help="seconds per solver")
    p.add_argument("--reference", type=float, default=None,
                   help="seconds of the Gauss-Newton run that sets L* (default 3 x budget)")
    p.add_argument("--hidden", default="64,64", help="MLP hidden sizes (paper: 256,256)")
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--omega", type=float, default=0.0625,
                   help="omega (default: the paper's ml1m setting 2^-4, Table 3)")
    p.add_argument("--lambda-theta", type=float, default=4.0,
                   help="lambda (default: the paper's ml1m setting 2^2, Table 3)")
    p.add_argument("--side-features", choices=("both", "user", "item", "none"),
                   default="both",
                   help="tower inputs beside the one-hot ids (none: ids only)")
    p.add_argument("--solvers", default="newton,gd,gd-diag,sogram,sampling,sogram-diag,"
                                        "sampling-diag",
                   help="comma-separated; newton-pcg: Newton with preconditioner='diag'")
    p.add_argument("--reference-solver", choices=("newton", "newton-pcg"),
                   default="newton",
                   help="the solver of the L* run (newton-pcg settles higher, see below)")
    p.add_argument("--curvature", action="store_true",
                   help="also print the Gauss-Newton curvature per parameter block")
    args = p.parse_args()
    if args.quick:
        args.budget, args.hidden = min(args.budget, 15.0), "16"
        args.solvers = "newton,gd,gd-diag"
    t0 = time.perf_counter()
    header("Similarity learning: the seven solvers on ML-100K with MLP towers")
    ratings = load_ml100k(args.ml100k)
    if ratings is None:
        return
    from kmviz.data import make_split
    from kmviz.similarity.optimizers import compare_solvers, time_to_reach

    split = make_split(ratings, val_size=0.1, test_size=0.1, by="random", seed=args.seed)
    params = dict(k=args.k, user_tower=f"mlp:{args.hidden}", item_tower=f"mlp:{args.hidden}",
                  side_features=args.side_features, threshold=4.0, omega=args.omega,
                  lambda_theta=args.lambda_theta, max_iter=100_000, tol=0.0,
                  random_state=args.seed)
    print(f"data: {ratings.n_users} users x {ratings.n_items} items, "
          f"{int((np.asarray(split.train.values) >= 4).sum()):,} training positives (r >= 4); "
          f"towers mlp:{args.hidden} -> k = {args.k} (ELU) over ids + side features "
          f"{args.side_features!r}, omega = {args.omega:g}, "
          f"lambda = {args.lambda_theta:g}, {args.budget:g} s per solver\n")
    # compile every kernel first (a tiny fit per solver) so no solver pays for Numba
    tiny = make_split(ratings, val_size=0.1, test_size=0.1, by="random", seed=1)
    solvers = args.solvers.split(",")
    ref_solver = args.reference_solver
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_solvers(compare_solvers, tiny.train, tiny.validation, solvers,
                    {**params, "max_iter": 1})
        result = run_solvers(compare_solvers, split.train, split.validation, solvers, params,
                             time_limit=args.budget)
        # L*: a longer Gauss-Newton run from the same start (the paper's L* is a well
        # converged objective); the lowest objective any run reached
        ref_budget = args.reference or 3 * args.budget
        ref = run_solvers(compare_solvers, split.train, None, [ref_solver], params,
                          time_limit=ref_budget)
    from kmviz.similarity import relative_objective_difference

    frame = result.frame
    best = min(result.best_objective, ref.best_objective)
    # L* is only a fixed target when the run that set it had stopped improving: when it is
    # the last row of a budgeted run, the times to 1e-3 measure against a moving target
    setter = frame.loc[frame["objective"].idxmin()]
    last_of_setter = frame[frame["solver"] == setter["solver"]]["iteration"].max()
    moving = bool(result.best_objective < ref.best_objective
                  and setter["iteration"] == last_of_setter)
    frame["relative_objective_difference"] = relative_objective_difference(
        frame["objective"], best=best)
    result.best_objective = best
    t3 = time_to_reach(frame, 1e-3).set_index("solver")
    t2 = time_to_reach(frame, 1e-2).set_index("solver")
    t1 = time_to_reach(frame, 1e-1).set_index("solver")
    base = float(t3.loc["newton", "time_to_0.001_s"]) if "newton" in t3.index else np.nan
    rows = []
    for solver in t3.index:
        tt = float(t3.loc[solver, "time_to_0.001_s"])
        rows.append({"solver": solver, "time to 1e-3 (s)": tt,
                     "x Newton": tt / base if np.isfinite(tt) and np.isfinite(base) else np.nan,
                     "time to 1e-2 (s)": float(t2.loc[solver, "time_to_0.01_s"]),
                     "time to 1e-1 (s)": float(t1.loc[solver, "time_to_0.1_s"]),
                     "final rel. diff": float(frame.loc[frame["solver"] == solver,
                                                        "relative_objective_difference"].iloc[-1]),
                     "best val MAP@5": float(t3.loc[solver, "best_validation_map_at_5"]),
                     "iterations": int(t3.loc[solver, "iterations"]),
                     "time run (s)": float(t3.loc[solver, "time_s"])})
    print(table(rows))
    print(f"\nL* = {best:.8g}: the lowest objective of these runs and of a {ref_budget:g} s "
          f"{ref_solver} reference run from the same start ({ref.best_objective:.8g}); '-' = "
          f"not reached within {args.budget:g} s.\n")
    if moving:
        print(f"NOTE: L* was set by {setter['solver']}'s last iteration within the budget, "
              "below the reference run: it is not a converged objective (lengthen "
              "--budget or --reference).\n")
    for solver, note in result.notes.items():
        print(f"- {solver}: {note}")
    for label in ("1e-3", "1e-2", "1e-1"):
        col = f"time to {label} (s)"
        reached = sorted((r[col], r["solver"]) for r in rows if np.isfinite(r[col]))
        if not reached:
            print(f"\nto {label}: no solver within {args.budget:g} s.")
            continue
        first = reached[0]
        ahead = (f"{reached[1][0] / first[0]:.1f}x ahead of {reached[1][1]}"
                 if len(reached) > 1 else "the only one")
        others = [r for r in reached if not r[1].startswith("newton")]
        verdict = "" if label != "1e-3" else (
            " (target: Gauss-Newton first by >= 2x over the next other solver: " +
            ("no verdict: L* is the last objective of a run still decreasing)" if moving else
             "PASS)" if first[1].startswith("newton") and (not others or
                                                           others[0][0] >= 2 * first[0])
             else "MISS)"))
        print(f"\nto {label}: {first[1]} first, {ahead}{verdict}.")
    if args.curvature:
        print("\n## Gauss-Newton curvature per parameter block after 5 Newton iterations\n")
        print(table(block_curvature(split.train, params)))
        print("\ncurvature: g_b^T G g_b / g_b^T g_b; scaled: the same for D^-1/2 G D^-1/2 "
              "and the scaled gradient D^-1/2 g, D = diag(G) (newton-pcg's preconditioner)")
    footer(t0)


def run_solvers(compare_solvers, train, validation, solvers, params, **kw):
    """:func:`compare_solvers` over ``solvers``, where ``newton-pcg`` is Newton with
    ``preconditioner="diag"`` (its own fit, rows relabelled); one Comparison."""
    import pandas as pd

    plain = [s for s in solvers if s != "newton-pcg"]
    parts = []
    if plain:
        parts.append(compare_solvers(train, validation, plain, params, **kw))
    if "newton-pcg" in solvers:
        pcg = compare_solvers(train, validation, ["newton"],
                              {**params, "preconditioner": "diag"}, **kw)
        pcg.frame["solver"] = "newton-pcg"
        pcg.frame["label"] = "Gauss-Newton + Jacobi PCG"
        pcg.notes = {"newton-pcg": note for note in pcg.notes.values()}
        parts.append(pcg)
    out = parts[0]
    if len(parts) > 1:
        out.frame = pd.concat([p.frame for p in parts], ignore_index=True)
        out.notes = {**parts[0].notes, **parts[1].notes}
        out.best_objective = min(p.best_objective for p in parts)
    return out


def block_curvature(train, params, iters=5):
    """Per block of theta (each tower's first-layer id rows and feature rows, every other
    weight matrix and bias): its size, the norm of its part g_b of the gradient and the
    Rayleigh quotient g_b^T G g_b / g_b^T g_b of the Gauss-Newton matrix G."""
    from kmviz.similarity import SimilarityLearning

    class Kept(SimilarityLearning):
        def _fit_start(self, data, prm, **kw):
            self.kept_ = super()._fit_start(data, prm, **kw)
            return self.kept_

    model = Kept(**{**params, "solver": "newton", "max_iter": iters})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(train)
    from kmviz.similarity.solvers._precondition import gauss_newton_diagonal

    problem, ev = model.kept_.problem, model.kept_.solver.evaluation
    g = problem.gradient(ev)
    root = np.sqrt(gauss_newton_diagonal(problem, ev))
    rows = []
    for side, tower, off, X in (("user", problem.fu, 0, problem.U),
                                ("item", problem.fv, problem.Du, problem.V)):
        for layer, ((a, b), (w0, w1, b1)) in enumerate(zip(tower.shapes, tower.offsets)):
            parts = [(f"W{layer + 1}", w0, w1)]
            if layer == 0:
                ids = _id_columns(X)
                parts = [(f"W1 id rows ({ids})", w0, w0 + ids * b),
                         (f"W1 feature rows ({a - ids})", w0 + ids * b, w1)]
            parts.append((f"b{layer + 1}", w1, b1))
            for name, lo, hi in parts:
                d = np.zeros_like(g)
                d[off + lo:off + hi] = g[off + lo:off + hi]
                nn = float(d @ d)
                curv = float(d @ problem.gnvp(ev, d)) / nn if nn > 0 else np.nan
                e = d / root                     # D^-1/2 g_b; quotient of D^-1/2 G D^-1/2
                ee = float(e @ e)
                scaled = float(e @ (problem.gnvp(ev, e / root) * (1.0 / root))) / ee \
                    if ee > 0 else np.nan
                rows.append({"block": f"{side} {name}", "size": hi - lo,
                             "|g_b|": np.sqrt(nn), "curvature": curv, "scaled": scaled})
    return rows


def _id_columns(X):
    """The one-hot id columns at the front of a tower input ``[ids | features]``: the
    leading columns with a single 1 each."""
    import scipy.sparse as sp

    X = sp.csc_matrix(X)
    nnz = np.diff(X.indptr)
    j = 0
    while j < X.shape[1] and nnz[j] == 1 and X.data[X.indptr[j]] == 1.0:
        j += 1
    return j


if __name__ == "__main__":
    main()
