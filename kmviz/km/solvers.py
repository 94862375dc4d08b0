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

Each method is one object of :data:`BQP_METHODS` (name -> :class:`BQPMethod`, in
:mod:`kmviz.km._bqp_methods`), the one list of the methods: :func:`batch_settings` looks it
up once and keeps it on the settings (``cfg.solver``), and :func:`solve_bqp`,
:func:`solve_bqp_batch` and the fit's BCD loop call its ``solve`` / ``solve_batch``.

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

import numpy as np

from kmviz._validation import check_random_state
from kmviz.exceptions import InvalidParameterError

from ._bqp_common import (  # noqa: F401 (MAX_ENUM_D: re-export)
    MAX_ENUM_D, PHASES, BatchResult, BQPResult)
# the methods (one registry), their names, checks and timing live in modules of their own;
# re-exported here
from ._bqp_methods import (  # noqa: F401
    BQP_METHODS, METHODS, BQPMethod, _batch_result, _common, _run_dual_and_randomize,
    batch_settings, check_bqp_method, check_bqp_methods, check_enumerable)
from ._dual_checks import (  # noqa: F401
    DUAL_METHODS, DUAL_PHASE_PARTS, EVDS, FAST_VARIANTS, LANCZOS_RULES, MAX_ENUM_D_BATCH,
    TIME_PARTS, BatchSettings, _check_binary, _check_items, _check_u_prev, _dual_options,
    _enum_error, _start_points)
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


# ----------------------------------------------------------------------------- batch


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
    return cfg.solver.solve_batch(S, v, psi_prev, u_prev, cfg, xi)


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
    _common(owner, method, evd, gamma, n_rand)
    unknown = set(options) - set(_DEFAULTS)
    if unknown:
        raise InvalidParameterError(
            f"solve_bqp got unknown option(s) {sorted(unknown)}; valid options are "
            f"{sorted(_DEFAULTS)}.")
    opt = dict(_DEFAULTS, **options)
    S, v, D = _check_items(S, v, owner, batch=False)
    n = D + 1
    cfg = batch_settings(owner, method=method, evd=evd, gamma=gamma, n_rand=n_rand,
                         **{k: opt[k] for k in (
                             "a", "eps", "max_dual_iter", "initial_step", "c_armijo",
                             "shrink", "nm_window", "ls_restart", "lanczos_rule",
                             "fast_variant")})
    psi_prev = opt["psi_prev"]
    if psi_prev is not None:
        psi_prev = _check_binary(psi_prev, (D,), owner, "psi_prev")
    xi = None
    if cfg.draws:
        xi = opt["xi"]
        if xi is None:
            xi = check_random_state(random_state).standard_normal((cfg.n_rand, n))
        else:
            xi = np.asarray(xi, dtype=np.float64)
            if xi.shape != (cfg.n_rand, n):
                raise ValueError(f"solve_bqp: xi must have shape {(cfg.n_rand, n)}; got "
                                 f"shape {xi.shape}.")
    return cfg.solver.solve(S, v, psi_prev, opt["u0"], cfg, xi)
