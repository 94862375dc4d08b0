"""KM's BQP methods as one registry: :data:`BQP_METHODS`, name -> method object (issue #31).

Every method of :func:`kmviz.km.solvers.solve_bqp`, :func:`~kmviz.km.solvers.solve_bqp_batch`
(``method=``) and of ``KolmogorovModel(bqp_solver=...)`` is one object with the members of
:class:`BQPMethod`; this is the one place that lists them. :func:`batch_settings` looks the
method up once, checks its settings and keeps the object on the :class:`BatchSettings`
(``cfg.solver``); the public entries and the fit's BCD loop then call it::

    cfg.solver.solve_batch(S, v, psi_prev, u_prev, cfg, xi)   # -> BatchResult
    cfg.solver.solve(S, v, psi_prev, u0, cfg, xi)             # one item -> BQPResult

The three dual methods ("gd", "enhanced", "fast") are one class: they differ only in the
variant code their settings pass into the shared Numba dual kernels (one compiled body for
all of them). See :mod:`kmviz.km.solvers` for the methods themselves.
"""

from __future__ import annotations

import math
import time
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kmviz._validation import check_number, check_option
from kmviz.solver import SolverProtocolError, check_members

from .._threads import single_blas_thread
from . import _kernels as K
from . import baselines
from ._bqp_common import PHASES, BatchResult, BQPResult
from ._dual_checks import (DUAL_METHODS, EVDS, FAST_VARIANTS, LANCZOS_RULES, MAX_ENUM_D_BATCH,
                           BatchSettings, _dual_options, _enum_error, _start_points)
from ._dual_times import _split_times, _untimed_parts


@runtime_checkable
class BQPMethod(Protocol):
    """One method of the binary QP (4), as the entries and the BCD loop call it.

    ``name``
        Its key in :data:`BQP_METHODS`.
    ``draws``
        Whether it takes the Gaussian draws xi of Alg. 3 (the caller draws them).
    ``batch_max_D``
        The largest D it solves in a batch (exact enumeration), or None.
    ``kernel_options(owner, settings)``
        Check the method's own settings (``settings``: the dict of checked numbers that
        :func:`batch_settings` builds, ``evd``, ``fast_variant``, ``lanczos_rule`` included)
        and return the dual kernels' ``DualOptions``, or None for a method without them.
    ``solve_batch(S, v, psi_prev, u_prev, cfg, xi)``
        A batch on trusted inputs (see ``solvers._solve_bqp_batch_core``) -> BatchResult.
    ``solve(S, v, psi_prev, u0, cfg, xi)``
        One checked item -> BQPResult; ``psi_prev`` None (no incumbent) or (D,), ``u0``
        None or a warm start of the dual (D+1,), ``xi`` (n_rand, D+1) or None.
    """

    name: str
    draws: bool
    batch_max_D: Any

    def kernel_options(self, owner, settings) -> Any: ...

    def solve_batch(self, S, v, psi_prev, u_prev, cfg, xi) -> BatchResult: ...

    def solve(self, S, v, psi_prev, u0, cfg, xi) -> BQPResult: ...


#: member -> its positional arguments (methods) or None (an attribute).
MEMBERS = {"name": None, "draws": None, "batch_max_D": None,
           "kernel_options": ("owner", "settings"),
           "solve_batch": ("S", "v", "psi_prev", "u_prev", "cfg", "xi"),
           "solve": ("S", "v", "psi_prev", "u0", "cfg", "xi")}


def check_bqp_method(method, name="") -> None:
    """:class:`kmviz.solver.SolverProtocolError` naming the member of :class:`BQPMethod`
    that ``method`` lacks or whose arguments do not fit the calls made to it."""
    check_members(method, MEMBERS, f"BQP method {name or method!r}",
                  "kmviz.km.solvers.BQPMethod")


def check_bqp_methods(registry) -> None:
    """:func:`check_bqp_method` on every entry of a registry such as :data:`BQP_METHODS`;
    each entry's ``name`` must be its key."""
    for key, method in registry.items():
        check_bqp_method(method, key)
        if method.name != key:
            raise SolverProtocolError(f"BQP method {key!r} is named {method.name!r}. Fix: "
                                      "register each method under its own name.")


# ----------------------------------------------------------------------------- dual methods
def _run_dual_and_randomize(S, v, psi_prev, has_prev, u, t_first, opts, xi):
    """The dual solves and Alg. 3 of a batch under ``opts`` (``K.DualOptions``); returns the
    fields of ``K.BatchOutputs`` (psi, obj, improved, phase, st_dual, st_rand) and the times.
    The Newton variant of "fast" runs one fused kernel, the others the dual kernel then the
    randomization."""
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


class DualMethod:
    """A dual method of the paper, Sec. III: the dual (14) from u0 (warm: u_prev), then the
    randomization of Alg. 3. ``code`` is its variant in the shared dual kernel."""

    draws = True
    batch_max_D = None

    def __init__(self, name, code):
        self.name, self.code = name, code

    def kernel_code(self, fast_variant) -> int:
        """The variant code the kernels run (``fast_variant`` concerns "fast" alone)."""
        return self.code

    def kernel_options(self, owner, settings):
        o = settings
        check_option(owner, "fast_variant", o["fast_variant"], FAST_VARIANTS)
        check_option(owner, "lanczos_rule", o["lanczos_rule"], tuple(LANCZOS_RULES))
        code = self.kernel_code(o["fast_variant"])
        # the certified Lanczos rule is the Newton kernel's; the others run Alg. 5 with (20)
        rule = LANCZOS_RULES[o["lanczos_rule"]] if code == K.NEWTON else K.LZ_PAPER
        return K.dual_options(o["gamma"], o["eps"], o["max_dual_iter"], code, EVDS[o["evd"]],
                              lz_rule=rule, a=o["a"], initial_step=o["initial_step"],
                              c_armijo=o["c_armijo"], shrink=o["shrink"],
                              nm_window=o["nm_window"], ls_restart=bool(o["ls_restart"]),
                              warm_bound=bool(o["warm_bound"]))

    def solve_batch(self, S, v, psi_prev, u_prev, cfg, xi) -> BatchResult:
        n_items, D = v.shape
        u, t_first = _start_points(u_prev, n_items, D + 1, cfg.gamma)
        psi, obj, improved, phase, st_d, st_r, times = _run_dual_and_randomize(
            S, v, psi_prev, True, u, t_first, cfg.opts, xi)
        return _batch_result(psi, u, obj, improved, phase, st_d, st_r, times)

    def solve(self, S, v, psi_prev, u0, cfg, xi) -> BQPResult:
        D = v.shape[0]
        n = D + 1
        has_prev = psi_prev is not None
        prev = np.array(psi_prev, dtype=np.float64) if has_prev else np.zeros(D)
        u_prev = None if u0 is None else np.asarray(u0, np.float64).reshape(1, n)
        u, t_first = _start_points(u_prev, 1, n, cfg.gamma)
        psi, obj, improved, phase, st_d, st_r, times = _run_dual_and_randomize(
            S[None], v[None], prev[None].copy(), has_prev, u, t_first, cfg.opts,
            np.ascontiguousarray(xi[None]))
        b = _batch_result(psi, u, obj, improved, phase, st_d, st_r, times)
        return BQPResult(
            psi=b.psi[0], objective=float(b.objective[0]), n_iter=int(b.n_iter[0]),
            phase_counts=dict(zip(PHASES, (int(c) for c in b.phase_counts[0]))),
            n_evd=int(b.n_evd[0]), u=b.u[0], lanczos_m_mean=float(b.lanczos_m[0]),
            lanczos_beta_mean=float(b.lanczos_beta[0]), method=self.name,
            improved=bool(b.improved[0]), converged=bool(b.converged[0]),
            h=float(st_d[0, K.ST_H]), info={"times": times})

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class FastMethod(DualMethod):
    """"fast": the semismooth Newton kernel (``fast_variant="newton"``) or the previous
    Barzilai-Borwein gradient variant (``"bb"``) of the same dual."""

    KERNELS = {"newton": K.NEWTON, "bb": K.FAST}

    def kernel_code(self, fast_variant) -> int:
        return self.KERNELS[fast_variant]


# ----------------------------------------------------------------------------- baselines
class _ExactMethod:
    """A method that finds the optimum itself (no dual, no draws); the incumbent is kept
    where it is not strictly beaten."""

    draws = False
    batch_max_D = None

    def kernel_options(self, owner, settings):
        return None

    def solve_batch(self, S, v, psi_prev, u_prev, cfg, xi) -> BatchResult:
        n_items, D = v.shape
        nan = np.full(n_items, np.nan)
        psi, obj = np.empty((n_items, D)), np.empty(n_items)
        t0 = time.perf_counter()
        self._solve_items(S, v, psi_prev, psi, obj)
        t = time.perf_counter() - t0
        prev_obj = np.array([K.bqp_objective(S[i], v[i], psi_prev[i]) for i in range(n_items)])
        improved = obj < prev_obj
        psi[~improved] = psi_prev[~improved]
        obj = np.where(improved, obj, prev_obj)
        return BatchResult(psi, np.full((n_items, D + 1), np.nan), obj,
                           np.zeros(n_items, dtype=np.int64), np.zeros((n_items, 4), np.int64),
                           np.zeros(n_items, dtype=np.int64), nan.copy(), nan.copy(),
                           improved, np.ones(n_items, dtype=np.bool_), _untimed_parts(t))

    def solve(self, S, v, psi_prev, u0, cfg, xi) -> BQPResult:
        t0 = time.perf_counter()
        psi, obj, info = self._solve_one(S, v, psi_prev)
        info["time_s"] = time.perf_counter() - t0
        improved = True
        if psi_prev is not None:
            f_prev = float(K.bqp_objective(S, v, psi_prev))
            if not obj < f_prev:
                psi, obj, improved = np.array(psi_prev, dtype=np.float64), f_prev, False
        return BQPResult(psi, obj, 0, dict.fromkeys(PHASES, 0), 0,
                         np.full(v.shape[0] + 1, np.nan), math.nan, math.nan, self.name,
                         improved=improved, info=info)

    def __repr__(self):
        return f"{type(self).__name__}()"


class EnumerationMethod(_ExactMethod):
    """"exact": all 2^D candidates (D <= MAX_ENUM_D_BATCH in a batch, MAX_ENUM_D alone)."""

    name = "exact"
    batch_max_D = MAX_ENUM_D_BATCH

    def _solve_items(self, S, v, psi_prev, psi, obj):
        K.enumerate_batch(S, v, psi, obj)

    def _solve_one(self, S, v, psi_prev):
        return baselines.exact_bqp(S, v)


class BranchAndBoundMethod(_ExactMethod):
    """"bnb": branch and bound from the incumbent."""

    name = "bnb"

    def _solve_items(self, S, v, psi_prev, psi, obj):
        K.bnb_batch(S, v, psi_prev, psi, obj, np.empty(v.shape[0], dtype=np.int64))

    def _solve_one(self, S, v, psi_prev):
        return baselines.bnb_bqp(S, v, psi0=psi_prev)


class _RandomizedBaseline:
    """A relaxation solved outside the dual kernels, then the randomization, item by item
    (:mod:`kmviz.km.baselines`)."""

    draws = True
    batch_max_D = None

    def kernel_options(self, owner, settings):
        return None

    def solve_batch(self, S, v, psi_prev, u_prev, cfg, xi) -> BatchResult:
        n_items = v.shape[0]
        nan = np.full(n_items, np.nan)
        out = []
        for i in range(n_items):   # what solve does for one item (cold: no u0)
            out.append(self.solve(S[i], v[i], psi_prev[i], None, cfg, xi[i]))
        t_tot = sum(r.info.get("time_s", 0.0) for r in out)
        return BatchResult(
            np.array([r.psi for r in out]), np.array([r.u for r in out]),
            np.array([r.objective for r in out]), np.array([r.n_iter for r in out]),
            np.zeros((n_items, 4), np.int64), np.array([r.n_evd for r in out]),
            nan.copy(), nan.copy(), np.array([r.improved for r in out]),
            np.array([r.converged for r in out]), _untimed_parts(t_tot, evd=math.nan))

    def solve(self, S, v, psi_prev, u0, cfg, xi) -> BQPResult:
        t0 = time.perf_counter()
        res = self._solve_one(S, v, psi_prev, u0, cfg, xi)
        res.info["time_s"] = time.perf_counter() - t0
        return res

    def __repr__(self):
        return f"{type(self).__name__}()"


class SDRMethod(_RandomizedBaseline):
    """"sdr": the SDP relaxation by cvxpy (``kmviz[sdp]``)."""

    name = "sdr"

    def _solve_one(self, S, v, psi_prev, u0, cfg, xi):
        return baselines.sdr_bqp(S, v, xi=xi, psi_prev=psi_prev)


class BFGSMethod(_RandomizedBaseline):
    """"bfgs": scipy's BFGS on the dual (14)."""

    name = "bfgs"

    def _solve_one(self, S, v, psi_prev, u0, cfg, xi):
        return baselines.bfgs_bqp(S, v, xi=xi, psi_prev=psi_prev, gamma=cfg.gamma, u0=u0)


#: method name -> its :class:`BQPMethod`, in the order the docs and the app list them.
BQP_METHODS = {
    "gd": DualMethod("gd", DUAL_METHODS["gd"]),
    "enhanced": DualMethod("enhanced", DUAL_METHODS["enhanced"]),
    "fast": FastMethod("fast", DUAL_METHODS["fast"]),
    "exact": EnumerationMethod(),
    "bnb": BranchAndBoundMethod(),
    "sdr": SDRMethod(),
    "bfgs": BFGSMethod(),
}
METHODS = tuple(BQP_METHODS)


# ----------------------------------------------------------------------------- settings
def _common(owner, method, evd, gamma, n_rand):
    check_option(owner, "method", method, METHODS)
    check_option(owner, "evd", evd, tuple(EVDS))
    gamma = check_number(owner, "gamma", gamma, low=0, closed="neither")
    n_rand = check_number(owner, "n_rand", n_rand, kind=int, low=1)
    return gamma, n_rand


def check_enumerable(method, D):
    """InvalidParameterError for a batch of D beyond what ``method`` solves in a batch
    (exact enumeration: D > MAX_ENUM_D_BATCH)."""
    limit = BQP_METHODS[method].batch_max_D
    if limit is not None and D > limit:
        raise _enum_error(D, limit, batch=True)


def batch_settings(owner, *, method="fast", evd="exact", gamma=100.0, n_rand=50, a=1.0,
                   eps=1e-6, max_dual_iter=5000, initial_step=True, c_armijo=1e-4,
                   shrink=0.5, nm_window=10, ls_restart=False, lanczos_rule="certified",
                   fast_variant="newton", warm_bound=True, D=None) -> BatchSettings:
    """Check the settings of a BQP batch (errors name ``owner`` and the parameter), look the
    method up in :data:`BQP_METHODS` and return them as a :class:`BatchSettings`. With
    ``D``, also refuse a D beyond the method's batch limit (exact enumeration)."""
    gamma, n_rand = _common(owner, method, evd, gamma, n_rand)
    a, eps, max_dual_iter, c_armijo, shrink, nm_window = _dual_options(
        owner, a, eps, max_dual_iter, c_armijo, shrink, nm_window)
    solver = BQP_METHODS[method]
    if D is not None:
        check_enumerable(method, D)
    opts = solver.kernel_options(owner, dict(
        evd=evd, gamma=gamma, eps=eps, max_dual_iter=max_dual_iter, a=a,
        initial_step=initial_step, c_armijo=c_armijo, shrink=shrink, nm_window=nm_window,
        ls_restart=ls_restart, lanczos_rule=lanczos_rule, fast_variant=fast_variant,
        warm_bound=warm_bound))
    return BatchSettings(method, evd, gamma, n_rand, a, eps, opts, solver)
