"""The state a similarity-learning fit works on (the template's ``_state``): what
:meth:`~kmviz.similarity.SimilarityLearning._fit_start` builds and every step of the shared
loop (:class:`kmviz._base.IterativeEstimator`) advances."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._state import FitStateBase
from ..pairs import ObservedPairs


@dataclass
class FitState(FitStateBase):
    """One fit of :class:`~kmviz.similarity.SimilarityLearning` (``method``: the ``solver=``
    name, the key of :data:`kmviz.similarity.solvers.REGISTRY`; ``events``: the set-up's
    notes, written to the trace by the first step).

    Attributes
    ----------
    problem : AllPairsProblem or DistAllPairsProblem
        L, its gradient and Gauss-Newton products over all m x n pairs.
    theta : ndarray
        The initial variables (the solver starts from them).
    settings : Settings
        What the solvers read (:class:`kmviz.similarity.solvers.Settings`).
    solver_state : object
        The solver module's own state (what its ``start`` returned).
    m, n : int
        Users and items.
    pairs : ObservedPairs
        The positives trained on.
    previous : float
        The objective of the last iteration (the relative decrease's reference).
    """

    problem: object = None
    theta: np.ndarray | None = None
    settings: object = None
    solver_state: object = None
    m: int = 0
    n: int = 0
    pairs: ObservedPairs | None = None
    previous: float = math.nan

    @property
    def solver(self):
        """The older name of :attr:`solver_state` (read by
        bench/similarity/similarity_solvers.py)."""
        return self.solver_state
