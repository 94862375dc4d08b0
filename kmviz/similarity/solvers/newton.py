"""Gauss-Newton with CG and backtracking ("Newton" in the paper): Alg. 3 and 4.

Each iteration solves ``G s = -grad L(theta)`` (49) inexactly by CG (Alg. 3; stop at
``||r|| <= xi ||grad L||`` or ``max_cg`` steps), with G only through Gauss-Newton products
(:meth:`~kmviz.similarity.allpairs.AllPairsProblem.gnvp`, which reuse the cache of theta:
P, Q, the Gramians, the c_ij and the towers' activations). A backtracking line search
starting from the previous step (doubled every 5 iterations, at most 1: Sec. 6.1.3) then
takes the step; if it fails, the step is rejected and the fit ends
(:mod:`._line_search`).

``preconditioner="diag"`` (``Settings.preconditioner``) runs CG preconditioned by the
diagonal of G, recomputed once per outer iteration at theta (:mod:`._precondition`): the
Gauss-Newton curvature differs by orders of magnitude between an MLP's shared weights and
its one-hot id rows, a spread plain CG at xi = 0.1 must resolve step by step.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..._base import Step
from ..._jobs import stop_requested
from ._line_search import armijo, initial_step
from . import PRECONDITIONERS
from ._precondition import gauss_newton_diagonal


@dataclass
class NewtonState:
    settings: object
    evaluation: object
    iteration: int = 0
    delta: float | None = None
    grad_norm0: float = math.nan
    rng: object = None
    extra: dict = field(default_factory=dict)


def conjugate_gradient(problem, ev, g, xi, max_cg, inverse_diagonal=None):
    """Alg. 3, preconditioned by ``M^-1 = diag(inverse_diagonal)`` when given (Jacobi PCG):
    (s, #CG, final relative residual ||r|| / ||g||). Either way it stops at
    ``||r|| <= xi ||g||`` (the paper's criterion, on the unpreconditioned residual) or
    after ``max_cg`` steps, or after any step once a stop is requested
    (:func:`kmviz._jobs.stop_requested`: the direction so far is still a descent one)."""
    r = -g
    z = r if inverse_diagonal is None else inverse_diagonal * r
    d = z.copy()
    s = np.zeros_like(g)
    rz = float(r @ z)
    gamma0 = float(r @ r)
    gamma = gamma0
    if gamma0 == 0.0:
        return s, 0, 0.0
    n_cg = 0
    while n_cg < max_cg:
        if n_cg and stop_requested():
            break
        n_cg += 1
        Gd = problem.gnvp(ev, d)
        curvature = float(d @ Gd)
        if curvature <= 0:            # G is PD in exact arithmetic; guard rounding
            break
        t = rz / curvature
        s += t * d
        r -= t * Gd
        gamma = float(r @ r)
        if math.sqrt(gamma) <= xi * math.sqrt(gamma0):
            break
        z = r if inverse_diagonal is None else inverse_diagonal * r
        rz_new = float(r @ z)
        d = z + (rz_new / rz) * d
        rz = rz_new
    return s, n_cg, math.sqrt(gamma / gamma0)


def start(problem, theta, settings, rng, name=""):
    if settings.preconditioner not in PRECONDITIONERS:
        raise ValueError(f"unknown preconditioner {settings.preconditioner!r}; choose one of "
                         f"{', '.join(PRECONDITIONERS)}.")
    return NewtonState(settings, problem.evaluate(theta), rng=rng)


def step(problem, st) -> Step:
    cfg = st.settings
    st.iteration += 1
    ev = st.evaluation
    g = problem.gradient(ev)
    gnorm = float(np.linalg.norm(g))
    if st.iteration == 1:
        st.grad_norm0 = gnorm
    t0 = time.perf_counter()
    inverse = None
    if cfg.preconditioner == "diag":
        inverse = 1.0 / gauss_newton_diagonal(problem, ev, st.rng)
    precondition_seconds = time.perf_counter() - t0
    s, n_cg, ratio = conjugate_gradient(problem, ev, g, cfg.xi, cfg.max_cg, inverse)
    cg_seconds = time.perf_counter() - t0 - precondition_seconds
    delta0 = initial_step(st.delta, st.iteration, cfg.warm_start_every, cap=1.0)
    ls = armijo(problem, ev, g, s, delta0, cfg.eta, cfg.max_line_search)
    values = {"grad_norm": gnorm, "n_cg": n_cg, "cg_residual_ratio": ratio,
              "n_line_search": ls.trials, "step_size": ls.delta,
              "cg_seconds": cg_seconds, "line_search_seconds": ls.seconds}
    if inverse is not None:
        values["precondition_seconds"] = precondition_seconds
    if not ls.accepted:
        values.update(_objective_values(problem, ev))
        if ls.interrupted:   # stopped mid-search: theta unchanged, the loop's stop ends it
            return Step(values)
        return Step(values, converged=True,
                    reason=f"the line search found no decrease in {ls.trials} trial(s); the "
                           "step is rejected (theta and its cache unchanged)")
    st.evaluation, st.delta = ls.evaluation, ls.delta
    values.update(_objective_values(problem, ls.evaluation))
    return Step(values)


def _objective_values(problem, ev):
    """The objective and its split L = L+ + (omega L-) + regularizer, for a trace row."""
    objective = problem.objective(ev)
    return {"objective": objective, "l_plus": ev.l_plus,
            "l_minus": objective - ev.l_plus - ev.reg, "regularizer": ev.reg}


def publish(st):
    return st.evaluation.theta
