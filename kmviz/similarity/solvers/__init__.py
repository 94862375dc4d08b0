"""The seven optimizers of the extreme-similarity paper (Sec. 4, 6.1.3, App. A), one module each.

:data:`REGISTRY` (``solver=`` name -> :class:`ModuleSolver`) holds them as
:class:`kmviz.solver.Solver` objects, the protocol every multi-solver family follows: the
estimator calls ``start(state, rng)``, ``step(state, trace, iteration)`` and
``publish(state)`` on its fit state (:class:`kmviz.similarity._state.FitState`). Each
wraps a module whose three functions are the unchecked cores over the module's own state:

- ``start(problem, theta, settings, rng) -> state``: the first evaluation and the solver's
  own set-up (a step size, AdaGrad's accumulator, SOGram's running Gramians);
- ``step(problem, state) -> kmviz._base.Step``: one outer iteration, its trace row values
  and whether the solver's own criterion ended the fit;
- ``publish(state) -> theta``: the current variables.

:func:`solver_module` maps the ``solver=`` names of
:class:`~kmviz.similarity.SimilarityLearning` to a module; ``start`` gets the name and
sets up the variant (``-diag``: AdaGrad scaling, ``Settings.diag``).
"""

from __future__ import annotations

from dataclasses import dataclass

SOLVERS = ("newton", "gd", "gd-diag", "sogram", "sampling", "sogram-diag", "sampling-diag")
SOLVER_LABELS = {
    "newton": "Gauss-Newton + CG (Alg. 3-4)",
    "gd": "gradient descent + line search",
    "gd-diag": "GD-diag (AdaGrad scaling) + line search",
    "sogram": "SOGram (stochastic, online Gramians)",
    "sampling": "Sampling (stochastic, U x V blocks)",
    "sogram-diag": "SOGram-diag (AdaGrad scaling)",
    "sampling-diag": "Sampling-diag (AdaGrad scaling)",
}
#: Newton's CG preconditioners (:mod:`._precondition`).
PRECONDITIONERS = ("none", "diag")
PRECONDITIONER_LABELS = {"none": "none (the paper's CG)",
                         "diag": "diagonal of the Gauss-Newton matrix (Jacobi)"}
#: Solvers whose accepted steps never raise the objective (they line-search on it).
MONOTONE = ("newton", "gd", "gd-diag")


@dataclass(frozen=True)
class Settings:
    """What the solvers read (the estimator's parameters, by the paper's names)."""

    eta: float = 1e-4            # Armijo constant (43)
    max_line_search: int = 30    # backtracking trials per iteration at most
    warm_start_every: int = 5    # delta_init doubles every this many iterations (6.1.3)
    max_cg: int = 30             # CG steps per Newton iteration at most
    xi: float = 0.1              # CG stops at ||r|| <= xi ||grad L||
    mu: float = 1e-8             # AdaGrad's mu (51)
    rho: float = 0.01            # SOGram / Sampling sampling ratio
    alpha: float = 0.1           # SOGram's averaging weight (64)
    learning_rate: float | None = None   # fixed delta of the stochastic solvers
    diag: bool = False
    preconditioner: str = "none"  # Newton's CG: "none" or "diag" (Jacobi, ._precondition)


class ModuleSolver:
    """A solver module as a :class:`kmviz.solver.Solver` over the fit state: ``start`` runs
    the module's ``start`` on ``state.problem`` from ``state.theta`` with
    ``state.settings`` and keeps what it returns as ``state.solver_state``; ``step`` and
    ``publish`` pass that on (``publish`` gives ``{"theta": ...}``)."""

    def __init__(self, name):
        self.key = name

    @property
    def module(self):
        return solver_module(self.key)

    def start(self, state, rng) -> None:
        state.solver_state = self.module.start(state.problem, state.theta, state.settings,
                                               rng, name=self.key)

    def step(self, state, trace, iteration):
        return self.module.step(state.problem, state.solver_state)

    def publish(self, state) -> dict:
        return {"theta": self.module.publish(state.solver_state)}

    def name(self, state) -> str:
        return f"similarity.{self.key}"

    def __repr__(self):
        return f"ModuleSolver({self.key!r})"


def solver_module(name):
    """The module of a solver name; ``module.start(..., name=name)`` picks the variant."""
    from . import gd, newton, stochastic

    if name == "newton":
        return newton
    if name in ("gd", "gd-diag"):
        return gd
    if name in ("sogram", "sampling", "sogram-diag", "sampling-diag"):
        return stochastic
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}.")


#: ``solver=`` name -> its :class:`kmviz.solver.Solver`.
REGISTRY = {name: ModuleSolver(name) for name in SOLVERS}
