"""The binary QP (4) of Kolmogorov-model learning: psi = argmin psi^T S psi - 2 psi^T v.

Dual methods (paper Sec. III): the BQP is homogenized (8)-(10), regularized (11) and its dual
(14) minimized by gradient descent; a binary psi is then drawn by randomization (Alg. 3).

- ``"gd"``: Alg. 1, an EVD of C(u) at every gradient and every line-search trial.
- ``"enhanced"``: Alg. 2, EVD elimination (phases I-A, I-B, II-A, II-B); the same line search,
  so it visits exactly the iterates of Alg. 1 (Remark 2) with fewer EVDs.
- ``"fast"``: semismooth Newton on the same dual (14) (``kernels.newton_solve_item``; the
  nearest-correlation method of Qi & Sun), with Alg. 2's EVD elimination, an exact phase-I
  line search from the eigenvalues of -A on cold starts, and the randomization fused into the
  same kernel (the spectrum at u* is reused). Same optimum; MovieLens 100K, D = 8: ~15 EVDs
  per item cold (BB: ~400 mean) and ~5-8 warm (BB: ~35-55). ``fast_variant="bb"`` keeps the
  previous Barzilai-Borwein gradient variant. With ``evd="lanczos"`` the default
  ``lanczos_rule="certified"`` computes only the eigenpairs on the smaller side of 0 (X* is
  near full rank at large D, so usually the few negative ones), certified by Ritz residuals
  and Sylvester inertia, dense for n <= 16; ``lanczos_rule="paper"`` uses Alg. 5 with (20).
  The certified rule gives an item over to the dense EVD when a run has not certified after
  max(16, n/4) steps or after 6 Newton steps on one-sided spectra (``kernels.LZ_CAP_DIV``,
  ``LZ_SWITCH_ITER``): at D = 100 on MovieLens the split of C(u*) at 0 is interior to a dense
  eigenvalue cluster on warm starts (Lanczos needs m ~ n) and the one-sided Hessian costs
  Newton steps, so Lanczos only pays on the first steps of cold starts; warm-started items
  (u_prev given, n > 24) therefore use the dense EVD from the start, and need only the
  eigenvalues of -A. From n = 48 on, the Newton systems are solved matrix-free by PCG
  (``kernels.newton_hessian._newton_pcg``) instead of forming the O(n^2 r_+ r_-) Hessian.
- ``"exact"`` (enumeration, D <= 20), ``"bnb"`` (branch-and-bound), ``"sdr"`` (cvxpy SDP +
  randomization), ``"bfgs"`` (scipy BFGS on the dual + randomization): baselines.

Line search of the dual methods: Armijo constant c = 1e-4, shrink factor 0.5. Algs. 1 and 2
start each backtracking from the previous accepted step (t = 1 at the first iteration;
``ls_restart=True`` restarts from 1 every iteration); the Newton method tries t = 1 first;
``fast_variant="bb"`` starts from the BB1 step s^T s / s^T y. Stop: ||t Delta u|| <= eps. The Sec. IV-A initial step (``initial_step=True``)
is t0 = u0 - lambda_max(-A) + (D+1)/gamma, taken without a line-search test.

Every returned psi is evaluated on the true objective (4), and never worse than the incumbent
``psi_prev`` when one is given.

EVD counts (``n_evd``) include the EVD of -A done once per item, every EVD or Lanczos run at a
gradient or line-search trial point, and the decomposition at u* used by the randomization.
The spectrum at an accepted trial point is reused for the next gradient.

Timing of ``solve_bqp_batch`` (``BatchResult.times``, seconds, non-overlapping): the parallel
kernel calls (dual solve, randomization; one fused call for "fast") are timed with
perf_counter, and their wall time is split by per-item CPU cycle counts
(``llvm.readcyclecounter``) into ``TIME_PARTS``: the dual iterations of each phase of Alg. 2
("dual_1a", "dual_1b", "dual_2a", "dual_2b"; Newton steps go to the phase label they report),
dense EVDs ("evd": eigh of -A, of C(u), and the dense fallback of the certified rule),
Lanczos runs ("lanczos") and the randomization ("randomization", its EVD excluded). Each
part is the kernel wall time times its share of the kernel's cycles, so the parts add up to
the kernels' wall time; ``"dual"`` is the sum of the four phase parts. Where the target has
no cycle counter the shares are unknown: "dual" and "randomization" include their EVDs and
the other parts are NaN. Methods without phases ("exact", "bnb", "sdr", "bfgs") report
their whole time as "dual" with NaN phase parts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from .._threads import single_blas_thread

from kmviz._validation import check_number, check_option, check_random_state
from kmviz.exceptions import InvalidParameterError

from . import kernels as K
from . import baselines
from ._bqp_common import MAX_ENUM_D, PHASES, BQPResult  # noqa: F401 (MAX_ENUM_D: re-export)

METHODS = ("gd", "enhanced", "fast", "exact", "bnb", "sdr", "bfgs")
DUAL_METHODS = {"gd": K.GD, "enhanced": K.ENHANCED, "fast": K.FAST}
EVDS = {"exact": K.EVD_EXACT, "lanczos": K.EVD_LANCZOS}
DUAL_PHASE_PARTS = ("dual_1a", "dual_1b", "dual_2a", "dual_2b")
#: Keys of ``BatchResult.times`` besides their sum "dual" (see the module docstring).
TIME_PARTS = (*DUAL_PHASE_PARTS, "evd", "lanczos", "randomization")
MAX_ENUM_D_BATCH = 16

LANCZOS_RULES = {"certified": K.LZ_CERTIFIED, "paper": K.LZ_PAPER}
FAST_VARIANTS = ("newton", "bb")

_DEFAULTS = dict(
    psi_prev=None, u0=None, xi=None, a=1.0, eps=1e-6, max_dual_iter=5000, initial_step=True,
    c_armijo=1e-4, shrink=0.5, nm_window=10, ls_restart=False, lanczos_rule="certified",
    fast_variant="newton",
)
_BATCH_OPTIONS = {"c_armijo", "shrink", "nm_window", "ls_restart", "xi", "lanczos_rule",
                  "fast_variant"}


@dataclass
class BatchResult:
    """Result of :func:`solve_bqp_batch`; one row per item.

    ``psi`` (n_items, D) float64 0/1; ``u`` (n_items, D+1) dual solutions (NaN for "exact" /
    "bnb"); ``objective``, ``n_iter``, ``n_evd`` (n_items,); ``phase_counts`` (n_items, 4)
    int64 in the order I-A, I-B, II-A, II-B; ``lanczos_m`` / ``lanczos_beta`` (n_items,)
    per-item means (NaN when exact); ``improved`` (n_items,) bool; ``converged`` (n_items,)
    bool; ``times``: seconds of ``TIME_PARTS`` and of "dual", the sum of the four phase parts
    (see the module docstring).
    """

    psi: np.ndarray
    u: np.ndarray
    objective: np.ndarray
    n_iter: np.ndarray
    phase_counts: np.ndarray
    n_evd: np.ndarray
    lanczos_m: np.ndarray
    lanczos_beta: np.ndarray
    improved: np.ndarray
    converged: np.ndarray
    times: dict


# ----------------------------------------------------------------------------- helpers

_CYCLES_PER_S = None


def _cycles_per_second():
    """Calibrate the cycle counter against perf_counter once (0 if there is none)."""
    global _CYCLES_PER_S
    if _CYCLES_PER_S is None:
        c0 = int(K.read_cycle_counter())
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.02:
            pass
        c1 = int(K.read_cycle_counter())
        t1 = time.perf_counter()
        _CYCLES_PER_S = (c1 - c0) / (t1 - t0) if c1 > c0 else 0.0
    return _CYCLES_PER_S


def _check_items(S, v, owner, *, batch):
    S = np.asarray(S, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    want = 3 if batch else 2
    shape_txt = "(n_items, D, D)" if batch else "(D, D)"
    if S.ndim != want or S.shape[-1] != S.shape[-2] or S.shape[-1] < 1:
        raise ValueError(f"{owner}: S must have shape {shape_txt} with D >= 1; got shape "
                         f"{S.shape}.")
    D = S.shape[-1]
    if v.shape != S.shape[:-1]:
        raise ValueError(f"{owner}: v must have shape {S.shape[:-1]} to match S {S.shape}; got "
                         f"shape {v.shape}.")
    if not np.all(np.isfinite(S)):
        raise ValueError(f"{owner}: S contains NaN or infinite values; the BQP needs finite "
                         f"statistics S_i = sum_u theta_u theta_u^T.")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{owner}: v contains NaN or infinite values.")
    scale = max(1.0, float(np.abs(S).max()) if S.size else 1.0)
    asym = float(np.abs(S - np.swapaxes(S, -1, -2)).max())
    if asym > 1e-8 * scale:
        raise ValueError(f"{owner}: S must be symmetric; max |S - S^T| = {asym:.3g}.")
    S = 0.5 * (S + np.swapaxes(S, -1, -2))
    if not batch:
        lmin = float(np.linalg.eigvalsh(S)[0])
        if lmin < -1e-8 * scale:
            raise ValueError(f"{owner}: S must be positive semidefinite (a sum of theta "
                             f"theta^T); its smallest eigenvalue is {lmin:.3g}.")
    return np.ascontiguousarray(S), np.ascontiguousarray(v), D


def _check_binary(psi, shape, owner, name):
    psi = np.asarray(psi, dtype=np.float64)
    if psi.shape != shape:
        raise ValueError(f"{owner}: {name} must have shape {shape}; got shape {psi.shape}.")
    if not np.all((psi == 0.0) | (psi == 1.0)):
        raise ValueError(f"{owner}: {name} must contain only 0 and 1.")
    return np.ascontiguousarray(psi)


def _enum_error(D, limit, batch=False):
    where = " in a batch" if batch else ""
    return InvalidParameterError(
        f"D={D} is too large for exact enumeration{where} (2^{D} candidates); use "
        f"method='bnb' or a dual method.") if D > limit else None


def _common(owner, method, evd, gamma, n_rand):
    check_option(owner, "method", method, METHODS)
    check_option(owner, "evd", evd, tuple(EVDS))
    gamma = check_number(owner, "gamma", gamma, low=0, closed="neither")
    n_rand = check_number(owner, "n_rand", n_rand, kind=int, low=1)
    return gamma, n_rand


def _method_code(owner, method, fast_variant, lanczos_rule):
    """Kernel code of a dual method and the Lanczos rule it uses.

    "fast" is the semismooth Newton kernel (``fast_variant="newton"``, default) or the
    previous BB gradient variant (``"bb"``). The certified Lanczos rule is implemented for
    the Newton kernel; "gd", "enhanced" and the BB variant always run Alg. 5 with the
    threshold (20) as the paper writes it.
    """
    check_option(owner, "fast_variant", fast_variant, FAST_VARIANTS)
    check_option(owner, "lanczos_rule", lanczos_rule, tuple(LANCZOS_RULES))
    code = DUAL_METHODS[method]
    if method == "fast" and fast_variant == "newton":
        code = K.NEWTON
    rule = LANCZOS_RULES[lanczos_rule] if code == K.NEWTON else K.LZ_PAPER
    return code, rule


def _dual_options(owner, a, eps, max_dual_iter, c_armijo, shrink, nm_window):
    a = check_number(owner, "a", a, low=0, closed="neither")
    eps = check_number(owner, "eps", eps, low=0, closed="neither")
    max_dual_iter = check_number(owner, "max_dual_iter", max_dual_iter, kind=int, low=1)
    c_armijo = check_number(owner, "c_armijo", c_armijo, low=0, high=1, closed="neither")
    shrink = check_number(owner, "shrink", shrink, low=0, high=1, closed="neither")
    nm_window = check_number(owner, "nm_window", nm_window, kind=int, low=1)
    return a, eps, max_dual_iter, c_armijo, shrink, nm_window


def _start_points(u_prev, n_items, n, gamma):
    """Cold start u0 = 1 (paper); warm rows from u_prev where finite. Returns (u, t_first)."""
    u = np.ones((n_items, n))
    t_first = np.ones(n_items)
    if u_prev is not None:
        u_prev = np.asarray(u_prev, dtype=np.float64)
        if u_prev.shape != (n_items, n):
            raise ValueError(f"solve_bqp_batch: u_prev must have shape {(n_items, n)}; got "
                             f"shape {u_prev.shape}.")
        ok = np.all(np.isfinite(u_prev), axis=1)
        u[ok] = u_prev[ok]
        # warm start: near the optimum the dual curvature is ~gamma, so a first trial step of
        # 1/gamma avoids ~log2(gamma) backtracking EVDs
        t_first[ok] = 1.0 / gamma
    return u, t_first


def dual_matrix(S, v, u):
    """C(u) = -A - diag(u) of Lemma 1 for the BQP (S, v) (e.g. at an item's u*)."""
    S, v, D = _check_items(S, v, "dual_matrix", batch=False)
    u = np.asarray(u, dtype=np.float64)
    if u.shape != (D + 1,):
        raise ValueError(f"dual_matrix: u must have shape {(D + 1,)}; got shape {u.shape}.")
    A = np.empty((D + 1, D + 1))
    K.homogenize(S, v, A)
    return -A - np.diag(u)


def dual_objective(S, v, u, gamma=100.0):
    """h_gamma(u) of (14) and its gradient (13), by a full EVD."""
    S, v, D = _check_items(S, v, "dual_objective", batch=False)
    gamma = check_number("dual_objective", "gamma", gamma, low=0, closed="neither")
    u = np.ascontiguousarray(u, dtype=np.float64)
    g = np.empty(D + 1)
    h = K.dual_value_grad(S, v, u, gamma, g)
    return float(h), g


# ----------------------------------------------------------------------------- batch


def _run_dual_and_randomize(S, v, psi_prev, has_prev, u, t_first, opts, xi):
    """The dual solves and Alg. 3 of a batch under ``opts`` (``K.DualOptions``); returns the
    fields of ``K.BatchOutputs`` (psi, obj, improved, phase, st_dual, st_rand) and the times."""
    out = K.BatchOutputs.empty(*v.shape)
    if opts.method == K.NEWTON:
        with single_blas_thread():
            t0 = time.perf_counter()
            K.newton_randomize_batch(S, v, u, opts, xi, psi_prev, has_prev, *out)
            t_all = time.perf_counter() - t0
        # one fused kernel: its wall time is split over the cycles of both stats tables
        times = _split_times([(t_all, out.st_dual, out.st_rand)])
        return (*out, times)
    with single_blas_thread():
        t0 = time.perf_counter()
        K.dual_solve_batch(S, v, u, t_first, opts, out.phase, out.st_dual)
        t1 = time.perf_counter()
        c0 = time.perf_counter()
        K.randomize_batch(S, v, u, opts, xi, psi_prev, has_prev, out.psi, out.obj,
                          out.improved, out.st_rand)
        t_rand = time.perf_counter() - c0
    times = _split_times([(t1 - t0, out.st_dual, None), (t_rand, None, out.st_rand)])
    return (*out, times)


def _cycle_parts(st_dual, st_rand):
    """Cycles per ``TIME_PARTS`` key summed over items (negative rounding clipped to 0)."""
    cyc = dict.fromkeys(TIME_PARTS, 0.0)
    for st in (st_dual, st_rand):
        if st is not None:
            cyc["evd"] += float(st[:, K.ST_EVD_CYC].sum())
            cyc["lanczos"] += float(st[:, K.ST_LZ_CYC].sum())
    if st_dual is not None:
        for p, key in enumerate(DUAL_PHASE_PARTS):
            cyc[key] = float(st_dual[:, K.ST_PH_CYC + p].sum())
    if st_rand is not None:
        cyc["randomization"] = float((st_rand[:, K.ST_ALL_CYC] - st_rand[:, K.ST_EVD_CYC]
                                      - st_rand[:, K.ST_LZ_CYC]).sum())
    return {key: max(c, 0.0) for key, c in cyc.items()}


def _split_times(calls):
    """Seconds per ``TIME_PARTS`` key from kernel calls ``(wall_s, st_dual, st_rand)``.

    Each call's wall time is divided in proportion to the cycles its items spent in each
    part; the cycles are summed over both threads, so the shares (not the raw cycle counts)
    carry over to wall time.
    """
    if _cycles_per_second() <= 0.0:
        times = dict.fromkeys(TIME_PARTS, math.nan)
        times["randomization"] = sum(t for t, sd, sr in calls if sd is None)
        times["dual"] = sum(t for t, sd, sr in calls if sd is not None)
        return times
    times = dict.fromkeys(TIME_PARTS, 0.0)
    for wall, st_dual, st_rand in calls:
        cyc = _cycle_parts(st_dual, st_rand)
        total = sum(cyc.values())
        if total <= 0.0:
            times["dual_1a" if st_dual is not None else "randomization"] += wall
            continue
        for key, c in cyc.items():
            times[key] += wall * c / total
    times["dual"] = sum(times[key] for key in DUAL_PHASE_PARTS)
    return times


def _untimed_parts(total, evd=0.0):
    """``times`` of a method without Alg. 2's phases: all of it is "dual"."""
    times = dict.fromkeys(TIME_PARTS, math.nan)
    times.update(dual=total, evd=evd, lanczos=evd, randomization=0.0)
    return times


def solve_bqp_batch(S, v, psi_prev, u_prev=None, *, method="fast", evd="exact", gamma=100.0,
                    n_rand=50, a=1.0, eps=1e-6, max_dual_iter=5000, initial_step=True,
                    rng=None, **options) -> BatchResult:
    """Solve the BQP (4) of many items in parallel (the estimator's psi update).

    Parameters
    ----------
    S : array of shape (n_items, D, D)
        S_i = sum_u theta_u theta_u^T.
    v : array of shape (n_items, D)
        v_i = sum_u theta_u p_ui.
    psi_prev : array of shape (n_items, D), 0/1
        Incumbents; a returned psi_i is never worse than psi_prev_i.
    u_prev : array of shape (n_items, D+1), optional
        Warm starts for the dual (rows with NaN start cold at u0 = 1).
    method : {"gd", "enhanced", "fast", "exact", "bnb", "sdr", "bfgs"}, default="fast"
    evd : {"exact", "lanczos"}, default="exact"
        EVD of C(u) in phase II-B: a full EVD or Alg. 5 with threshold (20).
    gamma : float, default=100.0
        Regularization gamma of (11).
    n_rand : int, default=50
        Randomization samples I_rand of Alg. 3.
    a : float, default=1.0
        Control parameter of the Lanczos threshold (20).
    eps : float, default=1e-6
        Dual stopping tolerance on ||t Delta u||.
    max_dual_iter : int, default=5000
    initial_step : bool, default=True
        Sec. IV-A initial step from a cold start.
    rng : numpy Generator, int or None
        Source of the Gaussian draws xi (n_items, n_rand, D+1), drawn in Python.
    **options
        ``c_armijo`` (1e-4), ``shrink`` (0.5), ``nm_window`` (10), ``ls_restart`` (False),
        ``xi`` (explicit draws of shape (n_items, n_rand, D+1)).

    Returns
    -------
    BatchResult
    """
    owner = "solve_bqp_batch"
    gamma, n_rand = _common(owner, method, evd, gamma, n_rand)
    unknown = set(options) - _BATCH_OPTIONS
    if unknown:
        raise InvalidParameterError(f"{owner} got unknown option(s) {sorted(unknown)}.")
    S, v, D = _check_items(S, v, owner, batch=True)
    n_items = S.shape[0]
    n = D + 1
    psi_prev = _check_binary(psi_prev, (n_items, D), owner, "psi_prev")
    a, eps, max_dual_iter, c_armijo, shrink, nm_window = _dual_options(
        owner, a, eps, max_dual_iter, options.get("c_armijo", 1e-4),
        options.get("shrink", 0.5), options.get("nm_window", 10))
    ls_restart = bool(options.get("ls_restart", False))
    nan = np.full(n_items, np.nan)

    if method in ("exact", "bnb"):
        if method == "exact" and D > MAX_ENUM_D_BATCH:
            raise _enum_error(D, MAX_ENUM_D_BATCH, batch=True)
        psi = np.empty((n_items, D))
        obj = np.empty(n_items)
        t0 = time.perf_counter()
        if method == "exact":
            K.enumerate_batch(S, v, psi, obj)
        else:
            K.bnb_batch(S, v, psi_prev, psi, obj, np.empty(n_items, dtype=np.int64))
        t = time.perf_counter() - t0
        prev_obj = np.array([K.bqp_objective(S[i], v[i], psi_prev[i]) for i in range(n_items)])
        improved = obj < prev_obj
        psi[~improved] = psi_prev[~improved]
        obj = np.where(improved, obj, prev_obj)
        return BatchResult(psi, np.full((n_items, n), np.nan), obj,
                           np.zeros(n_items, dtype=np.int64), np.zeros((n_items, 4), np.int64),
                           np.zeros(n_items, dtype=np.int64), nan.copy(), nan.copy(),
                           improved, np.ones(n_items, dtype=np.bool_),
                           _untimed_parts(t))

    xi = options.get("xi")
    if xi is None:
        gen = check_random_state(rng)
        xi = gen.standard_normal((n_items, n_rand, n))
    else:
        xi = np.asarray(xi, dtype=np.float64)
        if xi.shape != (n_items, n_rand, n):
            raise ValueError(f"{owner}: xi must have shape {(n_items, n_rand, n)}; got shape "
                             f"{xi.shape}.")
    xi = np.ascontiguousarray(xi)

    if method in ("sdr", "bfgs"):
        out = [solve_bqp(S[i], v[i], method=method, evd=evd, gamma=gamma, n_rand=n_rand,
                         psi_prev=psi_prev[i], xi=xi[i], a=a, eps=eps)
               for i in range(n_items)]
        t_tot = sum(r.info.get("time_s", 0.0) for r in out)
        return BatchResult(
            np.array([r.psi for r in out]), np.array([r.u for r in out]),
            np.array([r.objective for r in out]), np.array([r.n_iter for r in out]),
            np.zeros((n_items, 4), np.int64), np.array([r.n_evd for r in out]),
            nan.copy(), nan.copy(), np.array([r.improved for r in out]),
            np.array([r.converged for r in out]),
            _untimed_parts(t_tot, evd=math.nan))

    u, t_first = _start_points(u_prev, n_items, n, gamma)
    code, lz_rule = _method_code(owner, method, options.get("fast_variant", "newton"),
                                 options.get("lanczos_rule", "certified"))
    opts = K.dual_options(gamma, eps, max_dual_iter, code, EVDS[evd], lz_rule=lz_rule, a=a,
                          initial_step=initial_step, c_armijo=c_armijo, shrink=shrink,
                          nm_window=nm_window, ls_restart=ls_restart)
    psi, obj, improved, phase, st_d, st_r, times = _run_dual_and_randomize(
        S, v, psi_prev, True, u, t_first, opts, xi)
    return _batch_result(psi, u, obj, improved, phase, st_d, st_r, times)


def _batch_result(psi, u, obj, improved, phase, st_d, st_r, times):
    lz_n = st_d[:, K.ST_LZ_N] + st_r[:, K.ST_LZ_N]
    with np.errstate(invalid="ignore", divide="ignore"):
        lz_m = np.where(lz_n > 0, (st_d[:, K.ST_LZ_M] + st_r[:, K.ST_LZ_M]) / lz_n, np.nan)
        lz_b = np.where(lz_n > 0, (st_d[:, K.ST_LZ_BETA] + st_r[:, K.ST_LZ_BETA]) / lz_n,
                        np.nan)
    return BatchResult(
        psi=psi, u=u, objective=obj, n_iter=st_d[:, K.ST_N_ITER].astype(np.int64),
        phase_counts=phase, n_evd=(st_d[:, K.ST_N_EVD] + st_r[:, K.ST_N_EVD]).astype(np.int64),
        lanczos_m=lz_m, lanczos_beta=lz_b, improved=improved,
        converged=st_d[:, K.ST_STATUS] == 1, times=times)


# ----------------------------------------------------------------------------- one item


def solve_bqp(S, v, *, method="enhanced", evd="exact", gamma=100.0, n_rand=50,
              random_state=None, **options) -> BQPResult:
    """Solve one item's binary QP (4): minimize psi^T S psi - 2 psi^T v over psi in {0,1}^D.

    Parameters
    ----------
    S : array of shape (D, D)
        Symmetric PSD matrix S_i = sum_u theta_u theta_u^T.
    v : array of shape (D,)
        v_i = sum_u theta_u p_ui.
    method : {"gd", "enhanced", "fast", "exact", "bnb", "sdr", "bfgs"}, default="enhanced"
        See the module docstring.
    evd : {"exact", "lanczos"}, default="exact"
        EVD used in phase II-B of the dual methods (Alg. 5 with threshold (20) for "lanczos").
    gamma : float, default=100.0
        Regularization gamma of (11) (dual methods, "bfgs").
    n_rand : int, default=50
        Randomization samples I_rand of Alg. 3.
    random_state : None, int or numpy Generator
        Source of the draws xi ~ N(0, I_{D+1}).
    **options
        ``psi_prev`` (incumbent, never worsened), ``u0`` (warm start, default ones),
        ``xi`` (explicit draws (n_rand, D+1)), ``a`` (1.0, threshold (20)), ``eps`` (1e-6),
        ``max_dual_iter`` (5000), ``initial_step`` (True), ``c_armijo`` (1e-4), ``shrink``
        (0.5), ``nm_window`` (10), ``ls_restart`` (False).

    Returns
    -------
    BQPResult

    Raises
    ------
    InvalidParameterError
        For a bad setting, e.g. "The 'gamma' parameter of solve_bqp must be a float in
        (0, inf). Got -1.0 instead."
    ValueError
        For S or v of the wrong shape, non-finite, non-symmetric or non-PSD S.

    References
    ----------
    Algs. 1, 2, 3; eqs. (8)-(14); Sec. IV-A.
    """
    owner = "solve_bqp"
    gamma, n_rand = _common(owner, method, evd, gamma, n_rand)
    unknown = set(options) - set(_DEFAULTS)
    if unknown:
        raise InvalidParameterError(
            f"solve_bqp got unknown option(s) {sorted(unknown)}; valid options are "
            f"{sorted(_DEFAULTS)}.")
    opt = dict(_DEFAULTS, **options)
    S, v, D = _check_items(S, v, owner, batch=False)
    n = D + 1
    a, eps, max_dual_iter, c_armijo, shrink, nm_window = _dual_options(
        owner, opt["a"], opt["eps"], opt["max_dual_iter"], opt["c_armijo"], opt["shrink"],
        opt["nm_window"])
    has_prev = opt["psi_prev"] is not None
    psi_prev = (_check_binary(opt["psi_prev"], (D,), owner, "psi_prev") if has_prev
                else np.zeros(D))
    no_phase = dict.fromkeys(PHASES, 0)

    if method in ("exact", "bnb"):
        t0 = time.perf_counter()
        if method == "exact":
            psi, obj, info = baselines.exact_bqp(S, v)
        else:
            psi, obj, info = baselines.bnb_bqp(S, v, psi0=psi_prev if has_prev else None)
        info["time_s"] = time.perf_counter() - t0
        improved = True
        if has_prev:
            f_prev = float(K.bqp_objective(S, v, psi_prev))
            if not obj < f_prev:
                psi, obj, improved = psi_prev.copy(), f_prev, False
        return BQPResult(psi, obj, 0, no_phase, 0, np.full(n, np.nan), math.nan, math.nan,
                         method, improved=improved, info=info)

    xi = opt["xi"]
    if xi is None:
        xi = check_random_state(random_state).standard_normal((n_rand, n))
    else:
        xi = np.asarray(xi, dtype=np.float64)
        if xi.shape != (n_rand, n):
            raise ValueError(f"solve_bqp: xi must have shape {(n_rand, n)}; got shape "
                             f"{xi.shape}.")

    if method in ("sdr", "bfgs"):
        t0 = time.perf_counter()
        fn = baselines.sdr_bqp if method == "sdr" else baselines.bfgs_bqp
        kw = {} if method == "sdr" else {"gamma": gamma, "u0": opt["u0"]}
        res = fn(S, v, xi=xi, psi_prev=psi_prev if has_prev else None, **kw)
        res.info["time_s"] = time.perf_counter() - t0
        return res

    u_prev = None if opt["u0"] is None else np.asarray(opt["u0"], np.float64).reshape(1, n)
    u, t_first = _start_points(u_prev, 1, n, gamma)
    code, lz_rule = _method_code(owner, method, opt["fast_variant"], opt["lanczos_rule"])
    opts = K.dual_options(gamma, eps, max_dual_iter, code, EVDS[evd], lz_rule=lz_rule, a=a,
                          initial_step=opt["initial_step"], c_armijo=c_armijo, shrink=shrink,
                          nm_window=nm_window, ls_restart=opt["ls_restart"])
    psi, obj, improved, phase, st_d, st_r, times = _run_dual_and_randomize(
        S[None], v[None], psi_prev[None].copy(), has_prev, u, t_first, opts,
        np.ascontiguousarray(xi[None]))
    b = _batch_result(psi, u, obj, improved, phase, st_d, st_r, times)
    return BQPResult(
        psi=b.psi[0], objective=float(b.objective[0]), n_iter=int(b.n_iter[0]),
        phase_counts=dict(zip(PHASES, (int(c) for c in b.phase_counts[0]))),
        n_evd=int(b.n_evd[0]), u=b.u[0], lanczos_m_mean=float(b.lanczos_m[0]),
        lanczos_beta_mean=float(b.lanczos_beta[0]), method=method,
        improved=bool(b.improved[0]), converged=bool(b.converged[0]),
        h=float(st_d[0, K.ST_H]), info={"times": times})


# ----------------------------------------------------------------------------- diagnostics


def dual_trajectory(S, v, method="enhanced", gamma=100.0, *, evd="exact", initial_step=False,
                    u0=None, eps=1e-6, max_iter=5000, a=1.0, c_armijo=1e-4, shrink=0.5,
                    nm_window=10, ls_restart=False):
    """Per-iteration record of one dual solve (paper Figs. 1-2).

    Returns a dict of arrays over the iterates u_0..u_N: ``iteration``, ``u`` (N+1, D+1),
    ``u_norm``, ``h`` (h_gamma(u_i)), ``gap`` (h(u_i) - h(u*)), ``phase`` (labels "I-A" ...
    of Alg. 2 at u_i), ``step`` (accepted t_i; NaN at the last iterate), ``n_evd``
    (cumulative EVDs before step i, the one of -A included), plus ``h_star``, ``u_star`` and
    ``converged``. u* comes from a long tight run (fast method, eps = 1e-12, from the
    trajectory's last iterate); h(u*) is taken as the minimum of that run and the recorded
    values, so gaps are >= 0.
    """
    owner = "dual_trajectory"
    check_option(owner, "method", method, tuple(DUAL_METHODS))
    check_option(owner, "evd", evd, tuple(EVDS))
    gamma = check_number(owner, "gamma", gamma, low=0, closed="neither")
    a, eps, max_iter, c_armijo, shrink, nm_window = _dual_options(
        owner, a, eps, max_iter, c_armijo, shrink, nm_window)
    S, v, D = _check_items(S, v, owner, batch=False)
    n = D + 1
    u = np.ones(n) if u0 is None else np.array(u0, dtype=np.float64).reshape(n)
    t_first = 1.0 if u0 is None or np.all(u == u[0]) else 1.0 / gamma
    traj = K.Trajectory.allocate(max_iter, n)
    phase = np.zeros(4, dtype=np.int64)
    stats = np.zeros(K.N_STATS)
    opts = K.dual_options(gamma, eps, max_iter, DUAL_METHODS[method], EVDS[evd], a=a,
                          initial_step=initial_step, c_armijo=c_armijo, shrink=shrink,
                          nm_window=nm_window, ls_restart=ls_restart)
    # u*: a long tight run of the BB variant from the trajectory's last iterate
    opts_star = K.dual_options(gamma, 1e-12, 100000, K.FAST, K.EVD_EXACT, a=1.0,
                               initial_step=False, c_armijo=1e-4, shrink=0.5, nm_window=10,
                               ls_restart=False)
    with single_blas_thread():
        n_iter = int(K.dual_solve_item(S, v, u, t_first, opts, phase, stats, traj))
        u_star = u.copy()
        st2 = np.zeros(K.N_STATS)
        K.dual_solve_item(S, v, u_star, 1.0 / gamma, opts_star, np.zeros(4, np.int64), st2,
                          K.Trajectory.skip())
    traj_h, traj_u, traj_step, traj_phase, traj_nevd = traj
    N = n_iter + 1
    h = traj_h[:N]
    h_star = min(float(st2[K.ST_H]), float(np.min(h)))
    return {
        "iteration": np.arange(N),
        "u": traj_u[:N],
        "u_norm": np.linalg.norm(traj_u[:N], axis=1),
        "h": h,
        "gap": h - h_star,
        "phase": np.array([PHASES[p] for p in traj_phase[:N]]),
        "step": traj_step[:N],
        "n_evd": traj_nevd[:N].astype(np.int64),
        "h_star": h_star,
        "u_star": u_star,
        "converged": bool(stats[K.ST_STATUS] == 1),
    }
