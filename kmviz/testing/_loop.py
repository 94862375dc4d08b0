"""The contract checks of the shared outer loop (:mod:`kmviz.testing`)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ._checker import FamilyChecker
from ._expect import ContractError, close, expect, raises, same_arrays, warns


_LOOP_FIX = ("let the shared loop (kmviz._base.IterativeEstimator.fit) write the trace: "
             "_fit_step returns a Step of the row's values, _fit_publish keeps "
             "self.trace_ = trace and self.n_iter_ = n_iter.")


def check_fit_returns_self_and_the_trace_counts_iterations(c: FamilyChecker):
    fitted = c.fitted
    owner = c.owner
    trace = fitted.trace_
    expect(fitted.n_iter_ == trace.n_iter == len(trace.rows) >= 1,
           f"{owner}: n_iter_ is {fitted.n_iter_}, the trace counts {trace.n_iter} "
           f"iterations in {len(trace.rows)} rows (all must be equal, at least 1).", _LOOP_FIX)
    iterations = [r.get("iteration") for r in trace.rows]
    expect(iterations == list(range(1, trace.n_iter + 1)),
           f"{owner}: the trace's iteration column is {iterations}, expected 1..n.",
           _LOOP_FIX)
    bad = [r["iteration"] for r in trace.rows if not math.isfinite(r.get("objective", math.nan))]
    expect(not bad, f"{owner}: the objective is missing or not finite in iterations {bad}.",
           "return a finite 'objective' in every Step.")
    expect(all("wall_s" in r for r in trace.rows),
           f"{owner}: trace rows without 'wall_s'.", _LOOP_FIX)
    expect(trace.stop_reason in ("max_iter", "converged"),
           f"{owner}: a fit that ran to its end stopped with {trace.stop_reason!r}, expected "
           "'max_iter' or 'converged'.", _LOOP_FIX)


def check_validation_adds_validation_columns_to_every_row(c: FamilyChecker):
    fitted, split = c.fitted, c.split
    owner = c.owner
    final = fitted.evaluate(split.validation)
    columns = {k for k in fitted.trace_.rows[-1] if k.startswith("validation_")}
    fix = ("pass fit's validation= on to the shared loop (IterativeEstimator.fit), which "
           "adds validation_<metric> from evaluate() to every row.")
    expect(columns, f"{owner}.fit(train, validation=...) wrote no validation_<metric> "
                    "column.", fix)
    # the loop may narrow the per-iteration metrics to cheap ones, never invent others
    extra = sorted(columns - {f"validation_{k}" for k in final})
    expect(not extra, f"{owner}: validation columns {extra} are no metric of evaluate() "
                      f"({sorted(final)}).", fix)
    for row in fitted.trace_.rows:
        have = {k for k in row if k.startswith("validation_")}
        expect(have == columns, f"{owner}: iteration {row['iteration']} has validation "
                                f"columns {sorted(have)}, the last {sorted(columns)}.", fix)
        bad = [col for col in columns if not math.isfinite(row[col])]
        expect(not bad, f"{owner}: iteration {row['iteration']} has non-finite {bad}.",
               "evaluate() must give finite metrics on any fitted state.")
    for column in columns:  # the last row is the final model's metric
        metric = column[len("validation_"):]
        expect(close(fitted.trace_.rows[-1][column], final[metric]),
               f"{owner}: the last row's {column} is {fitted.trace_.rows[-1][column]!r} but "
               f"evaluate(validation) of the fitted model gives {final[metric]!r}.",
               "publish the state the last row was measured on (_fit_publish).")
    plain = c.fit()
    extra = sorted({k for r in plain.trace_.rows for k in r if k.startswith("validation_")})
    expect(not extra, f"{owner}.fit(train) without validation wrote {extra}.", fix)


def _check_stopped_cleanly(c: FamilyChecker, model, how: str):
    from ..runs import run_metrics

    owner, split = c.owner, c.split
    trace = model.trace_
    fix = ("let the shared loop call the callback after each step (do not catch "
           "StopIteration or ignore its result in the family's code).")
    expect(model.n_iter_ == 1 == trace.n_iter == len(trace.rows),
           f"{owner}: a callback that {how} after iteration 1 left n_iter_={model.n_iter_}, "
           f"{len(trace.rows)} trace rows (expected 1).", fix)
    expect(trace.stop_reason == "callback",
           f"{owner}: a callback stop ended with stop_reason {trace.stop_reason!r}, expected "
           "'callback'.", fix)
    expect(any(e["message"] == "stopped by the user" for e in trace.events),
           f"{owner}: a callback stop left no 'stopped by the user' event.", fix)
    metrics = model.evaluate(split.test)
    expect(metrics and all(math.isfinite(v) for v in metrics.values()),
           f"{owner}: after a callback stop evaluate(test) gives {metrics}.",
           "publish what was learned so far when the fit is stopped.")
    expect(run_metrics(model, split)["n_iter"] == 1,
           f"{owner}: after a callback stop the run's n_iter is not 1.", _LOOP_FIX)


def check_callback_returning_false_stops_cleanly(c: FamilyChecker):
    from ..exceptions import ConvergenceWarning

    split = c.split
    seen = []

    def callback(row):
        seen.append(row["iteration"])
        return row["iteration"] < 1

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a user stop is no cap reached
        model = c.make()
        out = model.fit(split.train, callback=callback, validation=split.validation)
    expect(out is model, f"{c.owner}.fit returned {type(out).__name__}, not the model.",
           "return self.")
    expect(seen == [1], f"{c.owner}: a callback returning False at iteration 1 was called "
                        f"at iterations {seen}.", "stop at the first False (the shared loop "
                                                   "does).")
    _check_stopped_cleanly(c, model, "returned False")


def check_callback_raising_stopiteration_stops_cleanly(c: FamilyChecker):
    from ..exceptions import ConvergenceWarning

    def callback(row):
        raise StopIteration

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = c.make()
        out = model.fit(c.split.train, callback=callback)
    expect(out is model, f"{c.owner}.fit returned {type(out).__name__}, not the model.",
           "return self.")
    _check_stopped_cleanly(c, model, "raised StopIteration")


def check_callback_returning_none_keeps_going(c: FamilyChecker):
    rows = []
    model = c.fit(callback=rows.append, validation=c.split.validation)
    expect(len(rows) == model.n_iter_ == c.fitted.n_iter_,
           f"{c.owner}: a callback returning None was called {len(rows)} times; the fit "
           f"ran {model.n_iter_} iterations, one without a callback {c.fitted.n_iter_}.",
           "only False (or StopIteration) stops a fit; call the callback once per row.")
    expect(model.trace_.stop_reason != "callback",
           f"{c.owner}: a callback returning None stopped the fit.",
           "only False (or StopIteration) stops a fit.")


def check_same_random_state_gives_identical_fits(c: FamilyChecker):
    a = c.fit()
    b = c.fit()
    fix = ("draw every random number from np.random.default_rng(params['random_state']) "
           "made in _fit_start (no global seeds, no unordered parallel sums).")
    oa, ob = a.trace_.column("objective"), b.trace_.column("objective")
    expect(np.array_equal(oa, ob), f"{c.owner}: two fits with random_state="
           f"{c.family.quick_params.get('random_state')!r} give objectives {list(oa)} and "
           f"{list(ob)}.", fix)
    same_arrays(a._fitted_arrays(), b._fitted_arrays(), f"{c.owner}: a second fit with the "
                                                       "same random_state")


def check_non_finite_objective_raises_numerical_error(c: FamilyChecker):
    from .._base import Step
    from ..exceptions import NumericalError

    cls = c.family.estimator_class()
    had_own = "_fit_step" in vars(cls)
    step = cls._fit_step

    def broken_step(self, state, trace, iteration):
        out = step(self, state, trace, iteration)
        if not isinstance(out, Step):
            out = Step(dict(out))
        return Step({**out.values, "objective": math.nan})

    cls._fit_step = broken_step
    fix = "let the shared loop check the objective (do not override fit around it)."
    try:
        model = c.make()
        with raises(NumericalError, match=rf"{cls.__name__}\.fit: the objective is nan",
                    what=f"{cls.__name__}.fit with a step whose objective is nan", fix=fix):
            model.fit(c.split.train)
    finally:
        if had_own:
            cls._fit_step = step
        else:
            del cls._fit_step
    expect(model.trace_.stop_reason == "numerical_error",
           f"{cls.__name__}: a nan objective ended with stop_reason "
           f"{model.trace_.stop_reason!r}, expected 'numerical_error'.", fix)
    expect(any(e["kind"] == "error" for e in model.trace_.events),
           f"{cls.__name__}: a nan objective left no error event in the trace.", fix)


def check_convergence_warning_when_the_iteration_budget_is_reached(c: FamilyChecker):
    from ..exceptions import ConvergenceWarning

    fam = c.family
    owner = c.owner
    constraints = fam.estimator_class()._parameter_constraints
    budget = fam.cli_aliases.get("iters", "max_iter")  # what `kmviz train --iters` sets
    expect(budget in constraints, f"{owner} has no {budget!r} parameter (the iteration "
                                  "budget).", "name it max_iter, or set Family.cli_aliases"
                                              "['iters'] to the parameter that is.")
    # one iteration cannot meet any tolerance (no decrease is measured yet)
    params = {**fam.quick_params, budget: 1}
    if "tol" in constraints:
        params["tol"] = 1e-3
    model = fam.make(params)
    fix = (f"let the shared loop warn when {budget} is reached (it reads the budget from "
           "_max_iterations / max_iter); do not silence ConvergenceWarning in the family.")
    with warns(ConvergenceWarning, match=f"Maximum number of iterations 1 reached; "
                                         f"increase {budget} or tol",
               what=f"{owner}({budget}=1).fit(train)", fix=fix):
        model.fit(c.split.train)
    expect(model.trace_.stop_reason == "max_iter",
           f"{owner}({budget}=1): stop_reason {model.trace_.stop_reason!r}, expected "
           "'max_iter'.", fix)
    if "tol" in constraints:  # tol = 0 asks for no convergence check: no warning
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                fam.make({**params, "tol": 0.0}).fit(c.split.train)
        except ConvergenceWarning as exc:
            raise ContractError(f"{owner}({budget}=1, tol=0).fit warned {exc}; tol=0 asks "
                                "for no convergence check. Fix: warn only when tol > 0.") \
                from None


def check_score_is_the_signed_score_metric(c: FamilyChecker):
    """``score(data)`` is ``evaluate(data)[score_metric]``, negated for an error
    (``"-nrmse"``): higher is better for every family. Skipped (passes) when the estimator
    declares no ``score_metric``."""
    fitted = c.fitted
    name = type(fitted).score_metric
    if not name:
        return
    metric = name.lstrip("-")
    for part, which in ((c.split.test, "test"), (c.split.validation, "validation")):
        metrics = fitted.evaluate(part)
        expect(metric in metrics, f"{c.owner}.score_metric {name!r} is no metric of "
                                  f"evaluate() ({sorted(metrics)}).",
               "set score_metric to one of them ('-name' for an error).")
        expected = -metrics[metric] if name.startswith("-") else metrics[metric]
        expect(close(fitted.score(part), expected),
               f"{c.owner}.score({which}) is {fitted.score(part)!r}, expected "
               f"{expected!r} (evaluate()[{metric!r}]{', negated' if name[0] == '-' else ''}).",
               "do not override score; kmviz._base's reads score_metric.")
