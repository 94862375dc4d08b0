"""Backtracking (Armijo) line search shared by Newton, GD and GD-diag (41)-(43), Alg. 4.

``L(theta + delta s) <= L(theta) + eta delta s^T grad L(theta)``, trying delta_init,
delta_init / 2, ... The trial that is accepted has been evaluated, so its cache (P, Q and
the Gramians) becomes the cache of the next iteration. If no trial is accepted within the
limit, the step is REJECTED: theta and its cache stay as they were. (Alg. 4 as printed
would apply the last, never evaluated, halved delta and leave a cache that does not match
theta: the pitfall named in the digest, Sec. 3.3.)

A stop request (:func:`kmviz._jobs.stop_requested`) between trials ends the search
unaccepted with ``interrupted`` set: the step is not taken, and the caller does not read it
as "no decrease found".
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..._jobs import stop_requested


@dataclass
class LineSearchResult:
    evaluation: object      # the accepted point's Evaluation (or the old one if rejected)
    delta: float            # the step size taken (0 when rejected)
    trials: int
    accepted: bool
    seconds: float
    interrupted: bool = False   # a stop request ended it before a trial was accepted


def armijo(problem, ev, g, s, delta_init, eta, max_trials) -> LineSearchResult:
    t0 = time.perf_counter()
    slope = float(g @ s)
    delta = float(delta_init)
    if not slope < 0:
        return LineSearchResult(ev, 0.0, 0, False, time.perf_counter() - t0)
    for trial in range(1, int(max_trials) + 1):
        if trial > 1 and stop_requested():
            return LineSearchResult(ev, 0.0, trial - 1, False, time.perf_counter() - t0,
                                    interrupted=True)
        new = problem.evaluate(ev.theta + delta * s)
        if new.f_var <= ev.f_var + eta * delta * slope:
            return LineSearchResult(new, delta, trial, True, time.perf_counter() - t0)
        delta *= 0.5
    return LineSearchResult(ev, 0.0, int(max_trials), False, time.perf_counter() - t0)


def initial_step(previous, iteration, every, cap=None):
    """delta_init of Sec. 6.1.3: the step of the previous iteration, doubled every
    ``every`` iterations so that it cannot stay small (capped at ``cap``)."""
    if previous is None or previous <= 0:
        delta = 1.0
    else:
        delta = previous * (2.0 if every and iteration % every == 0 else 1.0)
    return min(delta, cap) if cap is not None else delta
