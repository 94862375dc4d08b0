"""The estimator contract (get_params / set_params / clone / repr) without scikit-learn.

kmviz estimators store their ``__init__`` arguments verbatim as attributes of the same name,
so the parameters can be read back from the signature. This keeps scikit-learn (and its
import time) out of the dependencies while keeping its conventions.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass


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


@dataclass(frozen=True)
class Step:
    """What one outer iteration tells the loop.

    ``values`` are the trace row's values (at least ``objective``). ``converged`` says that
    the family's own stopping criterion is met (a CG residual below its tolerance, a
    proximal-gradient schedule finished): the loop records the row and ends the fit with
    ``stop_reason == "converged"`` and ``reason`` (one line in the family's words, such as
    "CG relative residual 3.2e-07 <= tol 1e-06") as the trace's ``stop_message``.
    """

    values: dict
    converged: bool = False
    reason: str = ""


@dataclass(frozen=True)
class LoopPolicy:
    """How the shared loop runs one fit, decided by the family once the fit has started
    (:meth:`IterativeEstimator._loop_policy`).

    Attributes
    ----------
    max_iter : int
        Outer iterations at most (1 for a closed-form method, one per batch for a pass).
    tol : float or None
        Stop when the objective's relative decrease falls below ``tol``; None or 0: the loop
        never stops on the objective (the family decides through :class:`Step`). At 0 a fit
        at a fixed point would otherwise stop on a rounding-noise rise of 1e-16.
    budget : str or None
        The parameter that caps the iterations as a convergence budget: reaching it warns
        (:class:`~kmviz.exceptions.ConvergenceWarning`: the stopping rule was not met).
        None: running out of iterations is the normal end (a closed form, a data pass, a
        fit without a stopping rule).
    monotone : bool
        The iterations can never raise the objective: a rise is logged as a warning event
        and every row gets ``objective_increase``.
    end_message : str
        The trace's ``stop_message`` when the iterations run out (default: says the budget
        was used up).
    """

    max_iter: int = 1
    tol: float | None = None
    budget: str | None = None
    monotone: bool = False
    end_message: str = ""


class IterativeEstimator(BaseEstimator):
    """The outer loop shared by every kmviz estimator.

    The loop owns what every family would otherwise copy: parameter validation from the
    declared ``_parameter_constraints``, the :class:`~kmviz.trace.Trace` and its per-iteration
    timing, the callback and stop, ``tol``, the non-finite check, the validation metrics of
    each iteration and the :class:`~kmviz.exceptions.ConvergenceWarning`. A family supplies:

    ``_fit_start(data, params, *, validation, **inputs) -> state``
        Check the data, set up the work arrays. Everything a fit needs while it runs lives
        in this state object, never on ``self``.
    ``_fit_step(state, trace, iteration) -> Step``
        One outer iteration, timing its named phases with ``trace.phase(name)``; returns a
        :class:`Step` (the row's values, and whether the family's own criterion is met). A
        plain dict is read as ``Step(values)``.
    ``_fit_publish(state, n_iter, trace)``
        Set the fitted attributes (``..._``) from the state; called before validation metrics
        are computed and once at the end.
    ``_loop_policy(params, state) -> LoopPolicy``
        Optional: how many iterations, which ``tol``, whether the objective is monotone.
        The default reads ``max_iter`` and ``tol`` when the family declares them.
    ``_solver_name(params, state)``, ``_trace_metrics(state, validation)``
        Optional: the trace's solver name; the validation metrics of a row.
    ``_fit_finish(state, trace, validation)``
        Optional: checks after the last row (a fit no better than the mean ...), adding
        events and warnings.

    A closed-form method declares no ``max_iter`` and is one step. ``evaluate(ratings)``
    returns the family's metrics on held-out data (``{"nrmse": ...}``); the loop adds them to
    each row as ``validation_<metric>`` (``_trace_metrics`` may narrow them to cheap ones).
    """

    #: name -> :class:`kmviz._params.Param`; the single declaration of options and bounds.
    _parameter_constraints: dict = {}
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

    def _memory_estimate(self, params, data, **inputs):
        """``{"what": bytes}`` a fit with ``params`` on ``data`` needs, estimated before
        ``_fit_start`` allocates (:mod:`kmviz._memory`); None: the family gives no estimate."""
        return None

    def _fit_finish(self, state, trace, validation) -> None:
        """Checks after the fit (events, warnings); nothing by default."""

    def _solver_name(self, params, state) -> str:
        """The trace's dotted solver name (``"km.fast"``), from the settings and the fit's
        state (a choice made from the data, such as "auto", is resolved there)."""
        return type(self).__name__

    def _loop_policy(self, params, state) -> LoopPolicy:
        """The default policy: ``max_iter`` iterations (1 without it), stopping on the
        relative decrease of the objective below ``tol`` when the family declares ``tol``,
        with ``max_iter`` as the convergence budget."""
        declared = type(self)._parameter_constraints
        tol = params.get("tol") if "tol" in declared else None
        return LoopPolicy(
            max_iter=int(params.get("max_iter", 1) or 1), tol=tol,
            budget="max_iter" if "max_iter" in declared and tol is not None and tol > 0
            else None)

    def planned_iterations(self, data=None) -> int:
        """How many outer iterations a fit with the current settings makes at most (for
        progress bars): ``max_iter``, or 1. A family whose count depends on other settings
        or on the data (``data``, when known) overrides this."""
        return int(getattr(self, "max_iter", 1) or 1)

    def _fit_context(self, params):
        import contextlib

        return contextlib.nullcontext()

    def _trace_metrics(self, state, validation) -> dict:
        """The validation metrics of one row (the state may hold ``validation`` already
        converted by ``_fit_start``); :meth:`evaluate` by default."""
        return self.evaluate(validation)

    def score(self, data) -> float:
        """Higher is better, the same for every family: the negative of the family's
        headline error on ``data`` (``-NRMSE``, ``-RMSE`` ...) or its headline ranking
        metric (precision@5). :attr:`score_metric` names it."""
        self._check_fitted()
        name = type(self).score_metric
        if not name:
            raise NotImplementedError(f"{type(self).__name__} declares no score_metric.")
        negate = name.startswith("-")
        value = float(self.evaluate(data)[name.lstrip("-")])
        return -value if negate else value

    #: The metric of :meth:`evaluate` that :meth:`score` returns: ``"-nrmse"`` (an error,
    #: negated so that higher is better) or ``"precision_at_5"`` (a ranking metric).
    score_metric: str = ""

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
        adds ``validation_<metric>`` to every row. ``trace_.stop_message`` says in words why
        the fit ended. Inside :func:`kmviz.history.recording`, the fitted arrays of every
        iteration are kept (within a budget) in that history, also set as ``history_``.
        """
        import math
        import warnings

        from ._params import json_safe
        from .exceptions import ConvergenceWarning, NumericalError
        from .trace import Trace

        from ._memory import check_fit_memory

        from .history import active_history

        params = self._validate_params()
        check_fit_memory(self, params, data, inputs)  # refuses before anything is allocated
        history = active_history()  # kmviz.history.recording(...): keep every iteration's arrays
        self.__dict__.pop("history_", None)
        state = self._fit_start(data, params, validation=validation, **inputs)
        trace = Trace(solver=self._solver_name(params, state), params=json_safe(self.get_params()))
        self.trace_ = trace
        policy = self._loop_policy(params, state)
        tol = policy.tol
        prev = math.inf
        stop, message = "max_iter", ""
        with self._fit_context(params):
            for it in range(1, int(policy.max_iter) + 1):
                step = self._fit_step(state, trace, it)
                if not isinstance(step, Step):
                    step = Step(dict(step))
                values = dict(step.values)
                obj = float(values.get("objective", math.nan))
                if not math.isfinite(obj):
                    trace.stop_reason = "numerical_error"
                    trace.stop_message = f"the objective is {obj} at iteration {it}"
                    trace.event("error", trace.stop_message)
                    self._fit_publish(state, trace.n_iter, trace)
                    raise NumericalError(
                        f"{type(self).__name__}.fit: the objective is {obj} at iteration "
                        f"{it}; {self._numerical_hint}")
                if policy.monotone:
                    rise = max(0.0, obj - prev) if math.isfinite(prev) else 0.0
                    if rise > self._RISE_RTOL * max(abs(prev), 1.0):
                        trace.event("warning", f"objective rose by {rise:.3g} at iteration "
                                    f"{it}", increase=rise)
                    values["objective_increase"] = rise
                if validation is not None:
                    self._fit_publish(state, it, trace)
                    for name, value in self._trace_metrics(state, validation).items():
                        values[f"validation_{name}"] = value
                row = trace.record(**values)
                if history is not None:  # published after the row: as the fit's end does
                    self._fit_publish(state, it, trace)
                    history.record(it, self)
                    self.history_ = history
                decrease = (prev - obj) / max(abs(prev), 1e-300) if math.isfinite(prev) \
                    else math.inf
                prev = obj
                if callback is not None:
                    try:
                        keep_going = callback(row)
                    except StopIteration:
                        keep_going = False
                    if keep_going is False:
                        stop, message = "callback", "stopped by the user"
                        trace.event("stop", message)
                        break
                if step.converged:
                    stop = "converged"
                    message = step.reason or "the method's stopping criterion is met"
                    break
                if tol and decrease < tol:   # tol = 0 (or None): run the whole budget
                    stop = "converged"
                    message = (f"the objective's relative decrease {decrease:.3g} is below "
                               f"tol {tol:g}")
                    break
        if stop == "max_iter":
            message = policy.end_message or (
                f"{policy.budget}={policy.max_iter} reached" if policy.budget
                else f"all {trace.n_iter} iteration(s) done")
        trace.stop_reason, trace.stop_message = stop, message
        if stop == "converged":
            trace.event("info", f"converged: {message}")
        self._fit_publish(state, trace.n_iter, trace)
        if stop == "max_iter" and policy.budget:
            # fix_<param>: the change the app offers as one click
            trace.event("warning", f"stopped at {policy.budget}={policy.max_iter} before the "
                        "stopping criterion was met; raise it (or the tolerance) to let the "
                        "fit converge", **{f"fix_{policy.budget}": 2 * int(policy.max_iter)})
            warnings.warn(
                f"Maximum number of iterations {policy.max_iter} reached; increase "
                f"{policy.budget} or tol.", ConvergenceWarning, stacklevel=2)
        self._fit_finish(state, trace, validation)
        return self

    # ------------------------------------------------------------------ persistence
    def save(self, path, *, split=None, dataset=None):
        """Write the fitted model to one file in the run format (a zip of ``meta.json``,
        ``trace.json``, ``arrays.npz``; nothing pickled): :func:`kmviz.runs.save_model_file`.

        Pass the ``split`` (or at least the training ratings as ``dataset``) to keep the
        training data with the model, so :meth:`load` can rebuild everything; without it
        the file holds the learned arrays, the scale and the parameters only. Returns the
        path written.
        """
        from .runs import save_model_file

        return save_model_file(path, self, split=split, dataset=dataset)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save` (or an older kmviz's model file, through
        the family's ``_open_legacy_model_file``); RunStoreError if the file holds another
        family's model or is not a model file."""
        from .exceptions import RunStoreError
        from .runs import load_model_file

        model, _split = load_model_file(path)
        if not isinstance(model, cls):
            raise RunStoreError(f"{path}: holds a {type(model).__name__}, not a "
                                f"{cls.__name__}; open it with {type(model).__name__}.load or "
                                "kmviz.runs.load_model_file.")
        return model

    def _check_fitted(self, attribute="trace_"):
        from .exceptions import NotFittedError

        if not hasattr(self, attribute):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                f"appropriate arguments before using this estimator.")
