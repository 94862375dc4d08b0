"""The fit state every family's ``_state`` extends: what one fit needs while it runs.

:class:`kmviz._base.IterativeEstimator` hands the object that ``_fit_start`` returns to
every step and to the publishing of the fitted attributes; everything a fit changes while
it runs lives there, never on the estimator. Each family subclasses :class:`FitStateBase`
with its own fields (its data, its work arrays); a solver (:mod:`kmviz.solver`) may add the
arrays of its method as further attributes in its ``start``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FitStateBase"]


@dataclass
class FitStateBase:
    """What every family's fit state holds.

    Attributes
    ----------
    prm : dict
        The validated parameters of the fit (:meth:`IterativeEstimator._validate_params`).
    method : str
        The key of the family's solver registry (``REGISTRY[method]``) that runs the fit;
        empty for a family with one method.
    rng : numpy.random.Generator or None
        The fit's random generator, made once from ``random_state``.
    tol : float or None
        The tolerance of the method's own stopping rule, when it has one.
    owner : str
        The estimator's class name, for the messages of errors raised during the fit.
    events : list of (kind, message)
        Notes of the set-up (a kernel chosen, a feature filled in) for the trace, written by
        :meth:`flush` before the first row.
    pending : dict
        Seconds spent in named set-up phases before the first row (an inverse, an
        eigendecomposition), added to the first row's phase times by :meth:`flush`.
    """

    prm: dict
    method: str = ""
    rng: np.random.Generator | None = None
    tol: float | None = None
    owner: str = ""
    events: list = field(default_factory=list)
    pending: dict = field(default_factory=dict)

    def note(self, message: str, kind: str = "info") -> None:
        """Keep a set-up note for the trace (:meth:`flush` writes it)."""
        self.events.append((kind, message))

    def flush(self, trace) -> None:
        """Write the pending phase times and notes to ``trace`` and forget them."""
        for name, seconds in self.pending.items():
            trace.add_time(name, seconds)
        for kind, message in self.events:
            trace.event(kind, message)
        self.pending, self.events = {}, []
