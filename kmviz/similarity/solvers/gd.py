"""Gradient descent with backtracking (Sec. 4.1) and GD-diag (AdaGrad scaling, Sec. 4.2.2).

GD: ``s = -grad L`` (41). GD-diag: ``M <- M + grad L^2`` (elementwise, M a D-vector
starting at 0) and ``s = -(mu + M)^{-1/2} grad L`` (51). Both take the step by the
backtracking line search of :mod:`._line_search`, starting from the previous step doubled
every 5 iterations (Sec. 6.1.3; no cap: GD's natural step size is not 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._base import Step
from ._line_search import armijo, initial_step
from .newton import _objective_values


@dataclass
class GDState:
    settings: object
    evaluation: object
    iteration: int = 0
    delta: float | None = None
    accumulator: np.ndarray | None = None     # AdaGrad's diag(M) (GD-diag)


def start(problem, theta, settings, rng, name=""):
    st = GDState(settings, problem.evaluate(theta))
    if settings.diag:
        st.accumulator = np.zeros(problem.n_params)
    return st


def direction(g, st):
    if st.accumulator is None:
        return -g
    st.accumulator += g * g
    return -g / np.sqrt(st.settings.mu + st.accumulator)


def step(problem, st) -> Step:
    cfg = st.settings
    st.iteration += 1
    ev = st.evaluation
    g = problem.gradient(ev)
    s = direction(g, st)
    delta0 = initial_step(st.delta, st.iteration, cfg.warm_start_every)
    ls = armijo(problem, ev, g, s, delta0, cfg.eta, cfg.max_line_search)
    values = {"grad_norm": float(np.linalg.norm(g)), "n_line_search": ls.trials,
              "step_size": ls.delta, "line_search_seconds": ls.seconds}
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


def publish(st):
    return st.evaluation.theta
