"""A search beyond the grid: Optuna's TPE sampler choosing each point of a sweep from the
validation metric of the points before it (``pip install "kmviz[search]"``).

:func:`plan_search` takes the same ``grid`` as :func:`kmviz.sweep.plan_sweep`, read as ranges:
a numeric setting between the smallest and the largest value given (on a log scale when both
are positive and span more than two decades; whole numbers for an integer setting), an
enumerated one among the values given; a setting given one value is fixed at it. The plan it
returns is an ordinary :class:`kmviz.sweep.SweepPlan` (``mode="tpe"``) whose points are filled
in one at a time by its ``sampler`` while :func:`kmviz.sweep.run_sweep` fits them, so every
point is a saved run like a grid point, in the fit queue like any fit, and Stop keeps the
points done. The sampler minimizes the family's first validation metric (an error such as
``validation_nrmse``) or maximizes it (a precision or MAP), as its name says.
"""

from __future__ import annotations

import numpy as np

from .exceptions import InvalidParameterError
from .sweep import MAX_POINTS, SweepPlan, _distinct, new_sweep_id

#: Suffixes of the metrics that are errors (smaller is better); any other is maximized.
ERROR_SUFFIXES = ("rmse", "nrmse", "nmse", "mse", "mae", "loss")


def objective_metric(family) -> tuple[str, str]:
    """The metric a search of ``family`` optimizes and its direction ("minimize" or
    "maximize"): the first validation metric the family declares."""
    for name in family.metrics:
        if name.startswith("validation_"):
            return name, ("minimize" if name.endswith(ERROR_SUFFIXES) else "maximize")
    raise InvalidParameterError(f"{family.title} declares no validation metric, so a search "
                                "has nothing to optimize; use a grid (without --tpe).")


def _import_optuna():
    try:
        import optuna
    except ImportError as exc:  # an extra, not a dependency
        raise InvalidParameterError('a TPE search needs Optuna: pip install "kmviz[search]" '
                                    "(or use a grid, or --random N).") from exc
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _distribution(optuna, spec, values):
    nums = [v for v in values if isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, bool)]
    if spec.options or len(nums) != len(values):
        return optuna.distributions.CategoricalDistribution(list(values))
    lo, hi = min(nums), max(nums)
    log = lo > 0 and hi / lo > 100.0
    if spec.kind is int or all(float(v).is_integer() and isinstance(v, (int, np.integer))
                               for v in nums):
        return optuna.distributions.IntDistribution(int(lo), int(hi), log=log)
    return optuna.distributions.FloatDistribution(float(lo), float(hi), log=log)


class TPESampler:
    """Ask-and-tell over Optuna's TPE: :meth:`ask` gives the varied settings of the next
    point, :meth:`tell` takes its metrics (a point without the metric counts as failed)."""

    def __init__(self, family, ranges: dict, *, seed: int = 0):
        optuna = _import_optuna()
        cls = family.estimator_class()
        self._cls, self._constraints = cls, cls._parameter_constraints
        self.metric, self.direction = objective_metric(family)
        self._dists = {n: _distribution(optuna, self._constraints[n], v)
                       for n, v in ranges.items()}
        self._study = optuna.create_study(direction=self.direction,
                                          sampler=optuna.samplers.TPESampler(seed=int(seed)))
        self._trial = None
        self._state = optuna.trial.TrialState

    def ask(self) -> dict:
        self._trial = self._study.ask(self._dists)
        return {n: self._constraints[n].check(self._cls.__name__, n, v)
                for n, v in self._trial.params.items()}

    def tell(self, metrics: dict) -> None:
        value = metrics.get(self.metric)
        if value is None or not np.isfinite(value):
            self._study.tell(self._trial, state=self._state.FAIL)
        else:
            self._study.tell(self._trial, float(value))
        self._trial = None

    def best(self) -> dict | None:
        """The best point so far: its varied settings and metric value, or None."""
        try:
            t = self._study.best_trial
        except ValueError:
            return None
        return {**t.params, self.metric: t.value}


def plan_search(family, grid: dict, *, base: dict | None = None, trials: int = 20,
                seed: int = 0, max_points: int = MAX_POINTS) -> SweepPlan:
    """A TPE search of ``family`` over the ranges of ``grid`` (see the module docstring):
    ``trials`` points, each chosen after the ones before it were fitted."""
    from .sweep import plan_sweep

    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or \
            not 1 <= trials <= max_points:
        raise InvalidParameterError(f"trials must be a whole number from 1 to {max_points}; "
                                    f"got {trials!r}.")
    checked = plan_sweep(family, grid, base=base, seeds=1, random=1, seed=seed)
    cls = family.estimator_class()
    constraints = cls._parameter_constraints
    ranges, fixed = {}, dict(base or {})
    for name, values in grid.items():
        values = _distinct([constraints[name].check(cls.__name__, name, v)
                            for v in (values if isinstance(values, (list, tuple))
                                      else [values])])
        if len(values) == 1:
            fixed[name] = values[0]
        else:
            ranges[name] = values
    if not ranges:
        raise InvalidParameterError("a search needs a setting with two or more values to "
                                    "search between (for example --grid D=4,32).")
    first = checked.points[0]
    point = {**first, **fixed}
    for name in ranges:
        point.pop(name, None)
    sampler = TPESampler(family, ranges, seed=seed)
    return SweepPlan(family=family.name, sweep_id=new_sweep_id(), varied=list(grid),
                     points=[dict(point) for _ in range(int(trials))], seeds=1, mode="tpe",
                     sampler=sampler)
