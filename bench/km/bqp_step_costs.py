"""Where the "fast" BQP step's time goes at D = 20, and why its arithmetic cannot change
without moving KM's trajectory (issue 36).

Data: a KM fit (``KolmogorovModel(D=--D, max_iter=--iters, tol=0)``, package defaults) on
``--size`` (``_shapes.movielens_like``, or ``ml100k`` from ``--ml100k``). From its fitted
theta, S_i and v_i of every known item are rebuilt in NumPy, and C(u*) = -A - diag(u*)
at each item's dual solution ``dual_u_`` (the inputs of the next BCD iteration's BQP).

Table 1, per-call CPU cost (thread time, best of 5, one thread) of the kernels one Newton
step of ``kernels.newton_solve_item`` calls at n = D + 1, on those C(u*): ``sym_eig`` (the
EVD of every trial point), ``_newton_matrix`` (the generalized Hessian, n <= SMALL_N loops),
``cholesky_solve`` (the Newton system), and ``randomize_from_pairs`` (Alg. 3, 50 samples,
once per item). Multiply by the Newton steps / EVDs per item that ``km_vs_als.py`` prints
(1M, D = 20, BCD iteration 3: 6.8 steps, 8.6 EVDs) for the BQP step's seconds per item.

Table 2, the sensitivity that keeps every change to this arithmetic out (issue 36): items
whose randomized psi changes when u* moves by a relative 1e-14 (rounding-level, what a
reordered sum or another FMA contraction gives), with the factor the kernels use today
(L = V_+ sqrt(gamma Lambda_+), the eigenbasis LAPACK returns) and with the symmetric square
root R = V_+ sqrt(gamma Lambda_+) V_+^T (X*^(1/2), the same sample distribution, independent
of the basis of a repeated eigenvalue); "zero rows" counts the items among them whose S_i has
an all-zero row (every rater has theta_a = 0), where C(u*) has a repeated eigenvalue.

Measured (2026-12-02, 2 shared cores, load 0.6-0.8): 1M-shaped, 3,706 items: sym_eig 13.8 us,
_newton_matrix 9.3 us, cholesky_solve 1.0 us, randomization 10.1 us per call, so one Newton
step is ~25 us and the step's ~7 steps / ~8.6 EVDs per item ~0.2 ms, ~0.8 s per BCD
iteration on one core (the 3,706 dense solves are the iteration; ALS's whole iteration is
~0.2-0.26 CPU s). 17 of 3,706 items changed psi under the 1e-14 move with today's factor, 0
with X*^(1/2). ML-100K, 1,682 items: 220 changed with today's factor (211 of them with a zero
row; 281 items have one), 42 with X*^(1/2) (all with a zero row). Writing the Hessian's
loops over the lower triangle only (same products, same order; 9.3 -> 5.3 us per call,
1M BQP CPU 0.92 -> 0.74 s) moved u* by ~1e-14, psi on 29 ML-100K items at BCD iteration
2 and the ML-100K objective by up to 2e-3 by iteration 6 (LLVM vectorizes and
contracts the new loops differently), so it was left out; with X*^(1/2) it left every
iterate the same bits, but X*^(1/2) itself moves the trajectory (1M: -1.4e-3 at iteration
1, +2.8e-4 at 6), not lower at every iteration, so it was left out too.

    python bench/km/bqp_step_costs.py [--size 1m] [--D 20] [--iters 2]
    python bench/km/bqp_step_costs.py --size ml100k
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: shared _modules
from _common import footer, header, parser, table  # noqa: E402
from _shapes import sized_ratings  # noqa: E402

from kmviz.km import _kernels as K  # noqa: E402
from kmviz.km._kernels import eigen as E  # noqa: E402
from kmviz.km._kernels import newton_hessian as KH  # noqa: E402

GAMMA = 100.0
N_RAND = 50


@njit
def _loop_eig(Cs, W, VV):
    e = np.empty(Cs.shape[1])
    for i in range(Cs.shape[0]):
        E.sym_eig(Cs[i], W[i], VV[i], e)


@njit
def _loop_hessian(Cs, W, VV, Ms):
    n = Cs.shape[1]
    P, T = np.empty((n, n)), np.empty((n, n))
    for i in range(Cs.shape[0]):
        KH._newton_matrix(Cs[i], GAMMA, W[i], VV[i], n, K.SIDE_ALL, Ms[i], P, T)


@njit
def _loop_cholesky(Ms, G, X):
    n = Ms.shape[1]
    L = np.empty((n, n))
    for i in range(Ms.shape[0]):
        E.cholesky_solve(Ms[i], G[i], X[i], L)


@njit
def _loop_randomize(S, v, W, VV, K_pos, xi, out_psi):
    prev = np.zeros(S.shape[1])
    for i in range(S.shape[0]):
        K.randomize_from_pairs(S[i], v[i], W[i], VV[i], K_pos[i], GAMMA, xi[i], prev, False,
                               out_psi[i])


def _best_thread_time(fn, *args, reps=5):
    fn(*args)
    best = np.inf
    for _ in range(reps):
        t0 = time.thread_time()
        fn(*args)
        best = min(best, time.thread_time() - t0)
    return best


def item_problems(ratings, model):
    """S_i, v_i (rebuilt from the fitted theta) and u* of the known items, and C(u*)."""
    theta = model.theta_
    users, items = np.asarray(ratings.users), np.asarray(ratings.items)
    p = model._targets(np.asarray(ratings.values, dtype=np.float64))
    known = np.flatnonzero(np.all(np.isfinite(model.dual_u_), axis=1))
    D = theta.shape[1]
    order = np.argsort(items, kind="stable")
    bounds = np.searchsorted(items[order], np.arange(model.psi_.shape[0] + 1))
    S, v = np.empty((known.size, D, D)), np.empty((known.size, D))
    for r, i in enumerate(known):
        sel = order[bounds[i]:bounds[i + 1]]
        T = theta[users[sel]]
        S[r], v[r] = T.T @ T, T.T @ p[sel]
    u = np.ascontiguousarray(model.dual_u_[known])
    C = np.empty((known.size, D + 1, D + 1))
    for r in range(known.size):
        A = np.empty((D + 1, D + 1))
        K.homogenize(S[r], v[r], A)
        C[r] = -A - np.diag(u[r])
    return S, v, u, C


def sample_psi(S, v, C, xi, symmetric_root):
    """Alg. 3's best psi per item from numpy's EVD of C: the eigenbasis factor or X*^(1/2)."""
    n_items, n = C.shape[0], C.shape[1]
    W, VV = np.zeros((n_items, n)), np.zeros((n_items, n, n))
    k_pos = np.zeros(n_items, dtype=np.int64)
    for r in range(n_items):
        lam, V = np.linalg.eigh(C[r])
        keep = lam > 0
        if symmetric_root:
            R = (V[:, keep] * np.sqrt(lam[keep])) @ V[:, keep].T
            W[r], VV[r], k_pos[r] = 1.0, R, n
        else:
            k_pos[r] = keep.sum()
            W[r, :k_pos[r]], VV[r, :, :k_pos[r]] = lam[keep], V[:, keep]
    psi = np.empty(v.shape)
    _loop_randomize(S, v, W, VV, k_pos, xi, psi)
    return psi


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--size", default="1m", help="100k, 1m, 10m (generated) or ml100k")
    ap.add_argument("--D", type=int, default=20)
    ap.add_argument("--iters", type=int, default=2, help="BCD iterations of the fit")
    args = ap.parse_args()
    t_start = time.perf_counter()
    header("The fast BQP step at D = %d: per-call costs and rounding sensitivity" % args.D)
    import warnings

    from kmviz.km import KolmogorovModel

    ratings = sized_ratings(args.size, args.seed, args.ml100k)
    if ratings is None:
        return
    model = KolmogorovModel(D=args.D, max_iter=args.iters, tol=0.0, random_state=args.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(ratings)
    S, v, u, C = item_problems(ratings, model)
    n_items, n = C.shape[0], C.shape[1]
    print(f"{args.size}: {n_items:,} known items, n = D + 1 = {n}, C(u*) after "
          f"{args.iters} BCD iterations\n")

    W, VV, Ms = np.empty((n_items, n)), np.empty((n_items, n, n)), np.empty((n_items, n, n))
    t_eig = _best_thread_time(_loop_eig, C, W, VV)
    t_hess = _best_thread_time(_loop_hessian, C, W, VV, Ms)
    Ms += 1e-3 * GAMMA * np.eye(n)  # the Newton system's mu at ||g|| >= 1e-3
    G, X = np.ones((n_items, n)), np.empty((n_items, n))
    t_chol = _best_thread_time(_loop_cholesky, Ms, G, X)
    rng = np.random.default_rng(args.seed)
    xi = rng.standard_normal((n_items, N_RAND, n))
    k_pos = (W > 0).sum(axis=1)
    Wp, Vp = np.zeros_like(W), np.zeros_like(VV)
    for r in range(n_items):
        keep = W[r] > 0
        Wp[r, :k_pos[r]], Vp[r, :, :k_pos[r]] = W[r, keep], VV[r][:, keep]
    psi = np.empty((n_items, n - 1))
    t_rand = _best_thread_time(_loop_randomize, S, v, Wp, Vp, k_pos, xi, psi)
    rows = [{"kernel": name, "us / call": 1e6 * t / n_items, "calls": when}
            for name, t, when in (
                ("sym_eig (EVD of C(u))", t_eig, "every trial point"),
                ("_newton_matrix", t_hess, "every Newton step"),
                ("cholesky_solve", t_chol, "every Newton step"),
                (f"randomize_from_pairs ({N_RAND} samples)", t_rand, "once per item"))]
    rp = np.bincount(k_pos, minlength=n)
    print("## 1. Per-call CPU cost, one thread (best of 5 over all items)\n")
    print(table(rows, floatfmt="{:.3g}"))
    print(f"\npositive eigenvalues of C(u*) per item: median {int(np.median(k_pos))}, "
          f"distribution {rp.tolist()}")

    zero_rows = np.any(np.all(S == 0.0, axis=2), axis=1)
    sens = []
    for name, sym in (("eigenbasis factor V_+ sqrt(gamma Lambda_+) (today)", False),
                      ("symmetric root X*^(1/2)", True)):
        a = sample_psi(S, v, C, xi, sym)
        Cp = C - np.einsum("ij,jk->ijk", 1e-14 * u, np.eye(n))   # u* (1 + 1e-14)
        b = sample_psi(S, v, Cp, xi, sym)
        moved = np.any(a != b, axis=1)
        sens.append({"factor": name, "items with psi changed": int(moved.sum()),
                     "of them with a zero row in S_i": int((moved & zero_rows).sum()),
                     "items with a zero row": int(zero_rows.sum()), "items": n_items})
    print("\n## 2. Items whose psi changes when u* moves by a relative 1e-14\n")
    print(table(sens))
    footer(t_start)


if __name__ == "__main__":
    main()
