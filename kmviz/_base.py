"""The estimator contract (get_params / set_params / clone / repr) without scikit-learn.

kmviz estimators store their ``__init__`` arguments verbatim as attributes of the same name,
so the parameters can be read back from the signature. This keeps scikit-learn (and its
import time) out of the dependencies while keeping its conventions.
"""

from __future__ import annotations

import copy
import inspect


class BaseEstimator:
    """Mixin giving ``get_params``, ``set_params`` and a readable ``repr``."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments as a dict (``deep`` is accepted for compatibility)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor arguments by name; unknown names raise ValueError."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for {type(self).__name__}. "
                    f"Valid parameters: {sorted(valid)}."
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default
                    for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if not (k in defaults and _same(defaults[k], v))]
        return f"{type(self).__name__}({', '.join(changed)})"


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return a is b


def clone(estimator):
    """A new unfitted estimator with the same parameters (deep-copied)."""
    params = {k: copy.deepcopy(v) for k, v in estimator.get_params().items()}
    return type(estimator)(**params)


class IterativeEstimator(BaseEstimator):
    """The outer loop shared by every kmviz estimator.

    The loop owns what every family would otherwise copy: parameter validation from the
    declared ``_parameter_constraints``, the :class:`~kmviz.trace.Trace` and its per-iteration
    timing, the callback and stop, ``tol``, the non-finite check, the validation metrics of
    each iteration and the :class:`~kmviz.exceptions.ConvergenceWarning`. A family supplies:

    ``_fit_start(data, params, *, validation, **inputs) -> state``
        Check the data, set up the work arrays (any object).
    ``_fit_step(state, trace, iteration) -> dict``
        One outer iteration, timing its named phases with ``trace.phase(name)``; returns the
        row's values, at least ``objective``.
    ``_fit_publish(state, n_iter, trace)``
        Set the fitted attributes (``..._``) from the state; called before validation metrics
        are computed and once at the end.

    A closed-form method declares no ``max_iter`` and is one step. ``evaluate(ratings)``
    returns the family's metrics on held-out data (``{"nrmse": ...}``); the loop adds them to
    each row as ``validation_<metric>`` (``_trace_metrics`` may narrow them to cheap ones).
    """

    #: name -> :class:`kmviz._params.Param`; the single declaration of options and bounds.
    _parameter_constraints: dict = {}
    #: True when the outer iterations can never raise the objective (a rise is logged).
    _monotone_objective = False
    #: Appended to the NumericalError message: what the user can change.
    _numerical_hint = "check the data for extreme values."
    _RISE_RTOL = 1e-9

    # -- to be supplied by a family ---------------------------------------------------------
    def _fit_start(self, data, params, *, validation=None, **inputs):  # pragma: no cover
        raise NotImplementedError

    def _fit_step(self, state, trace, iteration):  # pragma: no cover
        raise NotImplementedError

    def _fit_publish(self, state, n_iter, trace):  # pragma: no cover
        raise NotImplementedError

    def _solver_name(self, params) -> str:
        return type(self).__name__

    def _n_iterations(self, params, state) -> int:
        """How many outer iterations at most: ``max_iter``, or 1 for a closed-form method
        (a family whose count comes from its data, e.g. one per batch, overrides this)."""
        return int(params.get("max_iter", 1) or 1)

    def _iteration_budget(self, params, state) -> str | None:
        """The parameter that caps the outer iterations as a convergence budget (reaching it
        without meeting ``tol`` warns), or None: a closed-form method, or a count that is a
        pass over the data (one step per batch)."""
        return "max_iter" if "max_iter" in type(self)._parameter_constraints else None

    def planned_iterations(self, data=None) -> int:
        """How many outer iterations a fit with the current settings makes at most (for
        progress bars): ``max_iter``, or 1. A family whose count depends on other settings
        or on the data (``data``, when known) overrides this."""
        return int(getattr(self, "max_iter", 1) or 1)

    def _fit_context(self, params):
        import contextlib

        return contextlib.nullcontext()

    def _trace_metrics(self, validation) -> dict:
        return self.evaluate(validation)

    # -- shared ---------------------------------------------------------------------------
    def _validate_params(self) -> dict:
        from ._params import validate_params

        return validate_params(self)

    def _check_params(self) -> dict:  # the name the pages and older code use
        return self._validate_params()

    def fit(self, data, *, callback=None, validation=None, **inputs):
        """Fit on ``data``; see the family's docstring for ``inputs``.

        ``callback(row)`` is called after every outer iteration with the trace row (a dict of
        scalars). Returning False or raising StopIteration ends the fit cleanly: the model
        learned so far is kept, ``trace_.stop_reason == "callback"`` and the trace holds the
        event "stopped by the user". ``validation`` (held-out data in the same index space)
        adds ``validation_<metric>`` to every row.
        """
        import math
        import warnings

        from ._params import json_safe
        from .exceptions import ConvergenceWarning, NumericalError
        from .trace import Trace

        params = self._validate_params()
        state = self._fit_start(data, params, validation=validation, **inputs)
        trace = Trace(solver=self._solver_name(params), params=json_safe(self.get_params()))
        self.trace_ = trace
        max_iter = int(self._n_iterations(params, state))
        # a family without a declared tol never stops early (its objective may rise, e.g.
        # when it is measured on fresh data each iteration)
        tol = params.get("tol") if "tol" in type(self)._parameter_constraints else None
        prev = math.inf
        stop = "max_iter"
        with self._fit_context(params):
            for it in range(1, max_iter + 1):
                values = dict(self._fit_step(state, trace, it))
                obj = float(values.get("objective", math.nan))
                if not math.isfinite(obj):
                    trace.stop_reason = "numerical_error"
                    trace.event("error", f"objective is {obj} at iteration {it}")
                    self._fit_publish(state, trace.n_iter, trace)
                    raise NumericalError(
                        f"{type(self).__name__}.fit: the objective is {obj} at iteration "
                        f"{it}; {self._numerical_hint}")
                if self._monotone_objective:
                    rise = max(0.0, obj - prev) if math.isfinite(prev) else 0.0
                    if rise > self._RISE_RTOL * max(abs(prev), 1.0):
                        trace.event("warning", f"objective rose by {rise:.3g} at iteration "
                                    f"{it}", increase=rise)
                    values["objective_increase"] = rise
                if validation is not None:
                    self._fit_publish(state, it, trace)
                    for name, value in self._trace_metrics(validation).items():
                        values[f"validation_{name}"] = value
                row = trace.record(**values)
                decrease = (prev - obj) / max(abs(prev), 1e-300) if math.isfinite(prev) \
                    else math.inf
                prev = obj
                if callback is not None:
                    try:
                        keep_going = callback(row)
                    except StopIteration:
                        keep_going = False
                    if keep_going is False:
                        stop = "callback"
                        trace.event("stop", "stopped by the user")
                        break
                if tol is not None and decrease < tol:
                    stop = "converged"
                    break
        trace.stop_reason = stop
        self._fit_publish(state, trace.n_iter, trace)
        budget = self._iteration_budget(params, state)
        if stop == "max_iter" and tol is not None and tol > 0 and budget:
            warnings.warn(
                f"Maximum number of iterations {max_iter} reached; increase {budget} or tol.",
                ConvergenceWarning, stacklevel=2)
        return self

    def _check_fitted(self, attribute="trace_"):
        from .exceptions import NotFittedError

        if not hasattr(self, attribute):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                f"appropriate arguments before using this estimator.")
