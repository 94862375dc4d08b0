"""Names and input checks of the BQP solvers (:mod:`kmviz.km.solvers`): the dual kernels'
variant codes, the EVD modes and the timed parts, the checks of S, v, psi and the numeric
settings, and :class:`BatchSettings`, the settings of a batch checked once so that a fit's
BCD loop can call the unchecked core (``solvers._solve_bqp_batch_core``) every iteration.
The methods themselves are listed once, in ``_bqp_methods.BQP_METHODS``.

A module below ``_bqp_methods``, ``solvers`` and ``_dual`` (the diagnostics).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kmviz._validation import check_number
from kmviz.exceptions import InvalidParameterError

from . import _kernels as K

DUAL_METHODS = {"gd": K.GD, "enhanced": K.ENHANCED, "fast": K.FAST}
EVDS = {"exact": K.EVD_EXACT, "lanczos": K.EVD_LANCZOS}
DUAL_PHASE_PARTS = ("dual_1a", "dual_1b", "dual_2a", "dual_2b")
#: Keys of ``BatchResult.times`` besides their sum "dual" (see the module docstring).
TIME_PARTS = (*DUAL_PHASE_PARTS, "evd", "lanczos", "randomization")
MAX_ENUM_D_BATCH = 16

LANCZOS_RULES = {"certified": K.LZ_CERTIFIED, "paper": K.LZ_PAPER}
FAST_VARIANTS = ("newton", "bb")


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


def _dual_options(owner, a, eps, max_dual_iter, c_armijo, shrink, nm_window):
    a = check_number(owner, "a", a, low=0, closed="neither")
    eps = check_number(owner, "eps", eps, low=0, closed="neither")
    max_dual_iter = check_number(owner, "max_dual_iter", max_dual_iter, kind=int, low=1)
    c_armijo = check_number(owner, "c_armijo", c_armijo, low=0, high=1, closed="neither")
    shrink = check_number(owner, "shrink", shrink, low=0, high=1, closed="neither")
    nm_window = check_number(owner, "nm_window", nm_window, kind=int, low=1)
    return a, eps, max_dual_iter, c_armijo, shrink, nm_window


def _check_u_prev(u_prev, n_items, n, owner):
    """u_prev as float64 of shape (n_items, n), or None."""
    if u_prev is None:
        return None
    u_prev = np.asarray(u_prev, dtype=np.float64)
    if u_prev.shape != (n_items, n):
        raise ValueError(f"{owner}: u_prev must have shape {(n_items, n)}; got shape "
                         f"{u_prev.shape}.")
    return u_prev


def _start_points(u_prev, n_items, n, gamma):
    """Cold start u0 = 1 (paper); warm rows from u_prev where finite (its shape checked by
    :func:`_check_u_prev`). Returns (u, t_first)."""
    u = np.ones((n_items, n))
    t_first = np.ones(n_items)
    if u_prev is not None:
        u_prev = np.asarray(u_prev, dtype=np.float64)
        ok = np.all(np.isfinite(u_prev), axis=1)
        u[ok] = u_prev[ok]
        # warm start: near the optimum the dual curvature is ~gamma, so a first trial step of
        # 1/gamma avoids ~log2(gamma) backtracking EVDs
        t_first[ok] = 1.0 / gamma
    return u, t_first



@dataclass(frozen=True)
class BatchSettings:
    """The settings of :func:`kmviz.km.solvers.solve_bqp_batch`, checked once.

    Built by :func:`kmviz.km.solvers.batch_settings` (the public entry builds one per call, a
    fit one per fit); the unchecked core ``solvers._solve_bqp_batch_core`` trusts it.
    ``solver`` is the method's object, looked up once in ``BQP_METHODS``; ``opts`` holds the
    kernels' ``DualOptions`` for the dual methods ("gd", "enhanced", "fast") and is None for
    the others; ``draws`` says whether the method takes Gaussian draws xi.
    """

    method: str
    evd: str
    gamma: float
    n_rand: int
    a: float
    eps: float
    opts: K.DualOptions | None = None
    solver: Any = None

    @property
    def draws(self) -> bool:
        """Whether the method takes Gaussian draws xi (the caller draws them)."""
        return self.solver.draws
