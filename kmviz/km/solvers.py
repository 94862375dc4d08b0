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

from kmviz._validation import check_random_state
from kmviz.exceptions import InvalidParameterError

from . import _kernels as K
from . import baselines
from ._bqp_common import MAX_ENUM_D, PHASES, BQPResult  # noqa: F401 (MAX_ENUM_D: re-export)
# the names, checks and timing of the solvers live in modules of their own; re-exported here
from ._dual_checks import (  # noqa: F401
    DUAL_METHODS, DUAL_PHASE_PARTS, EVDS, FAST_VARIANTS, LANCZOS_RULES, MAX_ENUM_D_BATCH,
    METHODS, TIME_PARTS, BatchSettings, _check_binary, _check_items, _check_u_prev, _common,
    _dual_options, _enum_error, _method_code, _start_points, batch_settings,
    check_enumerable)
from ._dual_times import (  # noqa: F401
    _cycle_parts, _cycles_per_second, _split_times, _untimed_parts)
from ._dual import dual_matrix, dual_objective, dual_trajectory  # noqa: F401

_DEFAULTS = dict(
    psi_prev=None, u0=None, xi=None, a=1.0, eps=1e-6, max_dual_iter=5000, initial_step=True,
    c_armijo=1e-4, shrink=0.5, nm_window=10, ls_restart=False, lanczos_rule="certified",
    fast_variant="newton",
)
_BATCH_OPTIONS = {"c_armijo", "shrink", "nm_window", "ls_restart", "xi", "lanczos_rule",
                  "fast_variant", "warm_bound", "validate"}


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
        ``xi`` (explicit draws of shape (n_items, n_rand, D+1)), ``warm_bound`` (True:
        warm-started Newton items with exact EVDs bound lambda_max(-A) by Gershgorin
        instead of decomposing -A; False keeps that EVD, the same iterates, one EVD more),
        ``validate`` (True: check S finite, symmetric, v and psi_prev; False: trust them, as
        the estimator does for the S it builds, exactly symmetric).

    Returns
    -------
    BatchResult
    """
    owner = "solve_bqp_batch"
    unknown = set(options) - _BATCH_OPTIONS
    if unknown:
        raise InvalidParameterError(f"{owner} got unknown option(s) {sorted(unknown)}.")
    cfg = batch_settings(owner, method=method, evd=evd, gamma=gamma, n_rand=n_rand, a=a,
                         eps=eps, max_dual_iter=max_dual_iter, initial_step=initial_step,
                         **{k: val for k, val in options.items() if k not in ("xi", "validate")})
    if options.get("validate", True):
        S, v, D = _check_items(S, v, owner, batch=True)
        psi_prev = _check_binary(psi_prev, (S.shape[0], D), owner, "psi_prev")
    else:
        # trusted inputs (finite, S symmetric bit for bit, psi binary); only the layout is
        # checked. The full checks and the symmetrization pass over S about eight times,
        # single-threaded (~200 MB at 25M ratings, D = 20)
        S, v, psi_prev = (np.ascontiguousarray(x, dtype=np.float64) for x in (S, v, psi_prev))
        D = S.shape[-1]
        if S.ndim != 3 or S.shape[1:] != (D, D) or v.shape != S.shape[:2] or \
                psi_prev.shape != v.shape:
            raise ValueError(f"{owner}: S {S.shape}, v {v.shape} and psi_prev "
                             f"{psi_prev.shape} must be (n_items, D, D), (n_items, D) and "
                             f"(n_items, D).")
    check_enumerable(method, D)
    n_items, n = S.shape[0], D + 1
    if cfg.opts is not None:
        u_prev = _check_u_prev(u_prev, n_items, n, owner)
    xi = None
    if cfg.draws:
        xi = options.get("xi")
        if xi is None:
            xi = check_random_state(rng).standard_normal((n_items, cfg.n_rand, n))
        else:
            xi = np.asarray(xi, dtype=np.float64)
            if xi.shape != (n_items, cfg.n_rand, n):
                raise ValueError(f"{owner}: xi must have shape {(n_items, cfg.n_rand, n)}; "
                                 f"got shape {xi.shape}.")
        xi = np.ascontiguousarray(xi)
    return _solve_bqp_batch_core(S, v, psi_prev, u_prev, cfg, xi)


def _solve_bqp_batch_core(S, v, psi_prev, u_prev, cfg, xi) -> BatchResult:
    """:func:`solve_bqp_batch` on checked inputs, without any check: the BCD loop's call.

    S (n_items, D, D), v (n_items, D) and psi_prev (n_items, D) are C-contiguous float64 (S
    symmetric, psi_prev binary); u_prev is None or (n_items, D + 1); ``cfg`` a
    :class:`BatchSettings` (:func:`batch_settings`, exact enumeration within its limit);
    xi the draws (n_items, cfg.n_rand, D + 1), C-contiguous, or None when ``cfg.draws`` is
    false.
    """
    n_items, D = v.shape
    n = D + 1
    nan = np.full(n_items, np.nan)
    method = cfg.method
    if method in ("exact", "bnb"):
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

    if method in ("sdr", "bfgs"):
        fn = baselines.sdr_bqp if method == "sdr" else baselines.bfgs_bqp
        kw = {} if method == "sdr" else {"gamma": cfg.gamma, "u0": None}
        out = []
        for i in range(n_items):   # what solve_bqp does for one item, without its checks
            t0 = time.perf_counter()
            res = fn(S[i], v[i], xi=xi[i], psi_prev=psi_prev[i], **kw)
            res.info["time_s"] = time.perf_counter() - t0
            out.append(res)
        t_tot = sum(r.info.get("time_s", 0.0) for r in out)
        return BatchResult(
            np.array([r.psi for r in out]), np.array([r.u for r in out]),
            np.array([r.objective for r in out]), np.array([r.n_iter for r in out]),
            np.zeros((n_items, 4), np.int64), np.array([r.n_evd for r in out]),
            nan.copy(), nan.copy(), np.array([r.improved for r in out]),
            np.array([r.converged for r in out]),
            _untimed_parts(t_tot, evd=math.nan))

    u, t_first = _start_points(u_prev, n_items, n, cfg.gamma)
    psi, obj, improved, phase, st_d, st_r, times = _run_dual_and_randomize(
        S, v, psi_prev, True, u, t_first, cfg.opts, xi)
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


def empty_result(D) -> BatchResult:
    """A :class:`BatchResult` of no items (a block without known items), with the dtypes
    of a solved batch."""
    i8, f8 = np.zeros(0, np.int64), np.zeros(0)
    return BatchResult(np.zeros((0, D)), np.zeros((0, D + 1)), f8, i8, np.zeros((0, 4), np.int64),
                       i8.copy(), f8.copy(), f8.copy(), np.zeros(0, np.bool_),
                       np.zeros(0, np.bool_), {})


def join_results(parts) -> BatchResult:
    """One :class:`BatchResult` from the results of consecutive item chunks or blocks (rows
    concatenated, times summed); empty parts are dropped."""
    parts = [r for r in parts if r.psi.shape[0] > 0] or list(parts[:1])
    if len(parts) == 1:
        return parts[0]
    fields = {key: np.concatenate([getattr(r, key) for r in parts]) for key in (
        "psi", "u", "objective", "n_iter", "phase_counts", "n_evd", "lanczos_m",
        "lanczos_beta", "improved", "converged")}
    times = {}
    for r in parts:
        for key, sec in (r.times or {}).items():
            times[key] = times.get(key, 0.0) + float(sec)
    return BatchResult(**fields, times=times)


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
