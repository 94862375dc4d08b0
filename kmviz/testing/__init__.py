"""The contract every model family meets, as public functions (like scikit-learn's
``check_estimator``).

::

    from kmviz import families
    from kmviz.testing import check_family

    check_family(families.get("toy"))   # raises AssertionError naming the failed check

Each check fits the family's estimator on its small contract dataset
(``Family.contract_data``) with its quick settings (``Family.quick_params``): parameters
(get/set/clone, numpydoc Parameters against the declarations, validation from the declared
constraints), the shared outer loop (callback stop, trace, validation columns, tol and
ConvergenceWarning, non-finite objective), determinism, ``score`` against ``evaluate`` and the
run format (save_run/open_run, model files, metric names ``{part}_{metric}``).

The family must be registered (in :mod:`kmviz.families` or through the ``kmviz.families``
entry point): saved runs are reopened through the registry. Nothing here needs pytest;
kmviz's own tests run every check of every registered family as one test each
(:func:`family_checks`, ``tests/test_family_contract.py``).
"""

from __future__ import annotations

import contextlib
import math
import re
import tempfile
import warnings
from functools import cached_property
from pathlib import Path

import numpy as np

__all__ = ["CHECKS", "FamilyChecker", "check_family", "family_checks"]


# ------------------------------------------------------------------------------ helpers
@contextlib.contextmanager
def _raises(exc_type, match: str | None = None):
    """Assert that the block raises ``exc_type`` whose message matches ``match``; yields a
    one-item list that holds the exception afterwards."""
    caught = []
    try:
        yield caught
    except exc_type as exc:
        if match is not None and not re.search(match, str(exc)):
            raise AssertionError(f"{type(exc).__name__} message {str(exc)!r} does not match "
                                 f"{match!r}") from exc
        caught.append(exc)
    else:
        raise AssertionError(f"{exc_type.__name__} not raised")


@contextlib.contextmanager
def _warns(category, match: str):
    """Assert that the block warns ``category`` with a message matching ``match``."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
    if not any(issubclass(w.category, category) and re.search(match, str(w.message))
               for w in seen):
        raise AssertionError(f"no {category.__name__} matching {match!r}; got "
                             f"{[str(w.message) for w in seen]}")


def _close(a, b, rel=1e-12, abs_=1e-15) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=abs_)


def _public_fitted_attributes(model) -> list[str]:
    return [k for k in vars(model) if k.endswith("_") and not k.startswith("_")]


def _assert_arrays_equal(a: dict, b: dict):
    assert set(a) == set(b), (sorted(a), sorted(b))
    for name in a:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def _assert_same_trace(a, b):
    """Same rows (NaN equal to NaN, as JSON keeps it), events and stop reason."""
    import pandas as pd

    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert a.events == b.events
    assert a.stop_reason == b.stop_reason and a.solver == b.solver


def _assert_same_ratings(a, b):
    assert (a.n_users, a.n_items) == (b.n_users, b.n_items)
    assert (a.r_min, a.r_max) == (b.r_min, b.r_max)
    np.testing.assert_array_equal(np.asarray(a.users), np.asarray(b.users))
    np.testing.assert_array_equal(np.asarray(a.items), np.asarray(b.items))
    np.testing.assert_array_equal(np.asarray(a.values), np.asarray(b.values))


def _assert_same_split(a, b):
    from ..data.splits import SPLIT_PARTS

    for part in SPLIT_PARTS:
        pa, pb = getattr(a, part), getattr(b, part)
        assert (pa is None) == (pb is None), part
        if pa is not None:
            _assert_same_ratings(pa, pb)
    assert a.settings() == b.settings()


def bad_values(param) -> list:
    """Values the declaration ``param`` (a :class:`kmviz._params.Param`) must refuse."""
    from .._params import RANDOM_STATE

    if param.kind == RANDOM_STATE:
        return ["seed", 1.5, -1]
    if param.kind is bool:
        return ["yes", 1, None] if not param.none_ok else ["yes", 1]
    if param.kind is str or param.options:
        return ["__not_an_option__", 1.5]
    out = ["abc", math.nan]
    if param.low is not None:
        out.append(param.kind(param.low - 1))
        if param.closed in ("right", "neither"):
            out.append(param.kind(param.low))
    if param.high is not None:
        out.append(param.kind(param.high + 1))
        if param.closed in ("left", "neither"):
            out.append(param.kind(param.high))
    if param.kind is int:
        out.append(1.5)
    if not param.none_ok:
        out.append(None)
    return out


class FamilyChecker:
    """What the checks of one family share: its contract data and one fitted model, made on
    first use and kept (fitting once for the read-only checks)."""

    def __init__(self, family):
        self.family = family

    @cached_property
    def data(self):
        """``(whole dataset, split)`` of the family's contract data."""
        from ..data import load
        from ..data.splits import make_split

        spec = dict(self.family.contract_data)
        source = spec.pop("source")
        whole = load(source, **spec)
        split = make_split(whole, val_size=0.1, test_size=0.2, seed=0)
        assert split.train.n_ratings and split.validation.n_ratings and split.test.n_ratings
        return whole, split

    @property
    def split(self):
        return self.data[1]

    def make(self, params: dict | None = None):
        return self.family.make({**self.family.quick_params, **(params or {})})

    def fit(self, params=None, **fit_kwargs):
        """A model with the quick settings (updated by ``params``) fitted on the training
        part, ConvergenceWarnings silenced; checks that fit returns the model."""
        from ..exceptions import ConvergenceWarning

        model = self.make(params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out = model.fit(self.split.train, **fit_kwargs)
        assert out is model, "fit must return self"
        return model

    @cached_property
    def fitted(self):
        """One model fitted with validation, shared by the read-only checks."""
        return self.fit(validation=self.split.validation)


# ------------------------------------------------------------------------------ parameters
def check_registry_entry_is_complete(c: FamilyChecker):
    from .. import families

    fam = c.family
    cls = fam.estimator_class()
    assert fam.quick_params and fam.contract_data.get("source")
    assert set(fam.quick_params) <= set(cls._parameter_constraints)
    for method in ("evaluate", "_fitted_arrays", "_from_fitted_arrays", "_fit_start",
                   "_fit_step", "_fit_publish"):
        assert callable(getattr(cls, method, None)), method
    assert families.get(fam.name) is fam, f"family {fam.name!r} is not the registered one"


def check_docstring_documents_every_parameter(c: FamilyChecker):
    from .._params import docstring_mismatches

    assert docstring_mismatches(c.family.estimator_class()) == []


def check_get_params_set_params(c: FamilyChecker):
    fam = c.family
    model = fam.make(fam.quick_params)
    params = model.get_params()
    # every constructor argument is declared, so everything is validated at fit
    assert set(params) == set(type(model)._parameter_constraints)
    for name, value in fam.quick_params.items():
        assert params[name] == value, name
    assert model.set_params(**params) is model
    assert model.get_params() == params
    with _raises(ValueError, match="no_such_parameter"):
        model.set_params(no_such_parameter=1)
    assert model.get_params() == params
    assert repr(model).startswith(type(model).__name__ + "(")


def check_clone_gives_equal_params_and_an_unfitted_model(c: FamilyChecker):
    from .._base import clone
    from ..exceptions import NotFittedError

    fitted = c.fitted
    for source in (c.family.make(c.family.quick_params), fitted):
        copy = clone(source)
        assert type(copy) is type(source) and copy is not source
        assert copy.get_params() == source.get_params()
        assert _public_fitted_attributes(copy) == []
        with _raises(NotFittedError):
            copy.evaluate(c.split.test)
    assert _public_fitted_attributes(fitted)  # the clone did not touch the original


def check_unknown_parameter_in_make_is_refused(c: FamilyChecker):
    from ..exceptions import InvalidParameterError

    fam = c.family
    cls = fam.estimator_class()
    with _raises(InvalidParameterError,
                 match=rf"{cls.__name__} has no parameter 'no_such_parameter'") as info:
        fam.make({**fam.quick_params, "no_such_parameter": 1})
    for name in cls._parameter_constraints:  # the message lists the valid names
        assert name in str(info[0]), name


def check_every_declared_parameter_is_validated_with_the_template(c: FamilyChecker):
    from ..exceptions import InvalidParameterError

    fam = c.family
    cls = fam.estimator_class()
    checked = 0
    for name, param in cls._parameter_constraints.items():
        template = re.escape(f"The '{name}' parameter of {cls.__name__} must be")
        used = {k: v[0] for k, v in param.when.items()}  # settings under which it is read
        for bad in bad_values(param):
            model = fam.make({**fam.quick_params, **used, name: bad})
            with _raises(InvalidParameterError, match=template):
                model.fit(c.split.train)
            assert _public_fitted_attributes(model) == [], (name, bad)
            checked += 1
    assert checked >= len(cls._parameter_constraints)


# ------------------------------------------------------------------------------ the loop
def check_fit_returns_self_and_the_trace_counts_iterations(c: FamilyChecker):
    fitted = c.fitted
    trace = fitted.trace_
    assert fitted.n_iter_ == trace.n_iter == len(trace.rows) >= 1
    assert [r["iteration"] for r in trace.rows] == list(range(1, trace.n_iter + 1))
    assert all(math.isfinite(r["objective"]) for r in trace.rows)
    assert all("wall_s" in r for r in trace.rows)
    assert trace.stop_reason in ("max_iter", "converged")


def check_validation_adds_validation_columns_to_every_row(c: FamilyChecker):
    fitted, split = c.fitted, c.split
    final = fitted.evaluate(split.validation)
    columns = {k for k in fitted.trace_.rows[-1] if k.startswith("validation_")}
    assert columns, "no validation_<metric> column"
    # the loop may narrow the per-iteration metrics to cheap ones, never invent others
    assert columns <= {f"validation_{k}" for k in final}
    for row in fitted.trace_.rows:
        assert {k for k in row if k.startswith("validation_")} == columns
        assert all(math.isfinite(row[col]) for col in columns)
    for column in columns:  # the last row is the final model's metric
        assert _close(fitted.trace_.rows[-1][column], final[column[len("validation_"):]]), \
            column
    # without validation, no such column
    plain = c.fit()
    assert not any(k.startswith("validation_") for r in plain.trace_.rows for k in r)


def _check_stopped_cleanly(model, split):
    from ..runs import run_metrics

    trace = model.trace_
    assert model.n_iter_ == 1 == trace.n_iter == len(trace.rows)
    assert trace.stop_reason == "callback"
    assert any(e["message"] == "stopped by the user" for e in trace.events)
    metrics = model.evaluate(split.test)
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert run_metrics(model, split)["n_iter"] == 1


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
        assert model.fit(split.train, callback=callback, validation=split.validation) is model
    assert seen == [1]
    _check_stopped_cleanly(model, split)


def check_callback_raising_stopiteration_stops_cleanly(c: FamilyChecker):
    from ..exceptions import ConvergenceWarning

    def callback(row):
        raise StopIteration

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = c.make()
        assert model.fit(c.split.train, callback=callback) is model
    _check_stopped_cleanly(model, c.split)


def check_callback_returning_none_keeps_going(c: FamilyChecker):
    rows = []
    model = c.fit(callback=rows.append, validation=c.split.validation)
    assert len(rows) == model.n_iter_ == c.fitted.n_iter_
    assert model.trace_.stop_reason != "callback"


def check_same_random_state_gives_identical_fits(c: FamilyChecker):
    a = c.fit()
    b = c.fit()
    np.testing.assert_array_equal(a.trace_.column("objective"), b.trace_.column("objective"))
    _assert_arrays_equal(a._fitted_arrays(), b._fitted_arrays())


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
    try:
        model = c.make()
        with _raises(NumericalError, match=rf"{cls.__name__}\.fit: the objective is nan"):
            model.fit(c.split.train)
    finally:
        if had_own:
            cls._fit_step = step
        else:
            del cls._fit_step
    assert model.trace_.stop_reason == "numerical_error"
    assert any(e["kind"] == "error" for e in model.trace_.events)


def check_convergence_warning_when_the_iteration_budget_is_reached(c: FamilyChecker):
    from ..exceptions import ConvergenceWarning

    fam = c.family
    constraints = fam.estimator_class()._parameter_constraints
    budget = fam.cli_aliases.get("iters", "max_iter")  # what `kmviz train --iters` sets
    assert budget in constraints, f"no {budget!r} parameter (cli_aliases['iters'])"
    # one iteration cannot meet any tolerance (no decrease is measured yet)
    params = {**fam.quick_params, budget: 1}
    if "tol" in constraints:
        params["tol"] = 1e-3
    model = fam.make(params)
    with _warns(ConvergenceWarning, match=f"Maximum number of iterations 1 reached; "
                                          f"increase {budget} or tol"):
        model.fit(c.split.train)
    assert model.trace_.stop_reason == "max_iter"
    if "tol" in constraints:  # tol = 0 asks for no convergence check: no warning
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            fam.make({**params, "tol": 0.0}).fit(c.split.train)


def check_score_is_the_signed_score_metric(c: FamilyChecker):
    """``score(data)`` is ``evaluate(data)[score_metric]``, negated for an error
    (``"-nrmse"``): higher is better for every family. Skipped (passes) when the estimator
    declares no ``score_metric``."""
    fitted = c.fitted
    name = type(fitted).score_metric
    if not name:
        return
    metric = name.lstrip("-")
    for part in (c.split.test, c.split.validation):
        metrics = fitted.evaluate(part)
        assert metric in metrics, f"score_metric {name!r} is not a metric of evaluate()"
        expected = -metrics[metric] if name.startswith("-") else metrics[metric]
        assert _close(fitted.score(part), expected), (fitted.score(part), expected)


# ------------------------------------------------------------------------------ run format
def check_run_metrics_are_named_part_metric(c: FamilyChecker):
    from ..data.splits import SPLIT_PARTS
    from ..runs import run_metrics

    fitted, split = c.fitted, c.split
    metrics = run_metrics(fitted, split)
    assert metrics["n_iter"] == fitted.n_iter_
    assert metrics["objective"] == fitted.trace_.rows[-1]["objective"]
    parts = {}
    for key, value in metrics.items():
        if key in ("objective", "n_iter"):
            continue
        part, _, metric = key.partition("_")
        assert part in SPLIT_PARTS and metric, key
        parts.setdefault(part, set()).add(metric)
        assert value == fitted.evaluate(getattr(split, part))[metric], key
    assert set(parts) == set(SPLIT_PARTS)
    for part, names in parts.items():
        assert names == set(fitted.evaluate(getattr(split, part))), part


def check_save_run_open_run_round_trip(c: FamilyChecker):
    from ..runs import RunStore, open_run, run_metrics, save_run

    fam, fitted = c.family, c.fitted
    whole, split = c.data
    with tempfile.TemporaryDirectory(prefix="kmviz-check-") as tmp:
        store = RunStore(Path(tmp) / "store")
        run_id = save_run(fitted, split, dataset=whole, spec=dict(fam.contract_data),
                          label="contract", note="a note", store=store, writer="python")
        opened = open_run(run_id, store)
        assert opened.problem == "", opened.problem
        assert opened.run.family == fam.name and opened.run.label == "contract"
        assert opened.run.meta["note"] == "a note"
        assert opened.run.metrics == run_metrics(fitted, split)
        model = opened.model
        assert type(model) is type(fitted)
        assert model.get_params() == fitted.get_params()
        _assert_arrays_equal(model._fitted_arrays(), fitted._fitted_arrays())
        assert model.evaluate(split.test) == fitted.evaluate(split.test)
        _assert_same_trace(model.trace_, fitted.trace_)
        _assert_same_split(opened.split, split)
        assert model.evaluate(opened.split.test) == fitted.evaluate(split.test)
        assert (opened.dataset.n_users, opened.dataset.n_items) == (whole.n_users,
                                                                    whole.n_items)
        assert opened.dataset.n_ratings == whole.n_ratings
        row = store.list().iloc[0]
        assert row["run_id"] == run_id and row["note"] == "a note"


def _check_model_file_round_trip(c: FamilyChecker, with_split: bool):
    from ..runs import load_model_file, save_model_file

    fitted = c.fitted
    whole, split = c.data
    with tempfile.TemporaryDirectory(prefix="kmviz-check-") as tmp:
        path = Path(tmp) / "model.kmviz"
        out = save_model_file(path, fitted, split=split if with_split else None,
                              dataset=whole if with_split else None)
        assert out == path and path.exists()
        assert not path.with_name(path.name + ".tmp").exists()
        model, loaded_split = load_model_file(path)
    assert type(model) is type(fitted)
    assert model.get_params() == fitted.get_params()
    _assert_arrays_equal(model._fitted_arrays(), fitted._fitted_arrays())
    assert model.evaluate(split.test) == fitted.evaluate(split.test)
    _assert_same_trace(model.trace_, fitted.trace_)
    if with_split:
        _assert_same_split(loaded_split, split)
    else:
        assert loaded_split is None


def check_model_file_round_trip_with_split(c: FamilyChecker):
    _check_model_file_round_trip(c, with_split=True)


def check_model_file_round_trip_arrays_only(c: FamilyChecker):
    _check_model_file_round_trip(c, with_split=False)


#: Every check, by name (the function's name without ``check_``), in the order they run.
def check_work_is_bounded_before_the_fit_starts(c: FamilyChecker):
    """Every numeric setting has an upper bound; the family estimates a fit's memory from the
    settings and the data (``_memory_estimate``), and a fit over the per-fit limit is refused
    with :class:`~kmviz._memory.FitTooLargeError` before ``_fit_start`` allocates anything."""
    from .._memory import FitTooLargeError, memory_limit

    cls = c.family.estimator_class()
    unbounded = [name for name, spec in cls._parameter_constraints.items()
                 if spec.kind in (int, float) and spec.high is None]
    assert not unbounded, f"{cls.__name__}: numeric settings without an upper bound " \
                          f"(declare high=): {unbounded}"
    model = c.make()
    parts = model._memory_estimate(model._validate_params(), c.split.train)
    assert parts is not None, f"{cls.__name__} gives no _memory_estimate(params, data)"
    total = sum(parts.values()) if isinstance(parts, dict) else parts
    assert total > 0, f"{cls.__name__}._memory_estimate gives {parts!r}"
    started = []
    original = model._fit_start
    model._fit_start = lambda *a, **k: started.append(1) or original(*a, **k)
    with memory_limit(1), _raises(FitTooLargeError, match=r"per-fit limit.*Fix:"):
        model.fit(c.split.train)
    assert not started, "_fit_start ran although the fit was over the memory limit"


CHECKS = {name[len("check_"):]: func for name, func in list(globals().items())
          if name.startswith("check_") and callable(func)}


def family_checks(family) -> list[tuple[str, object]]:
    """``(name, run)`` of every check of ``family``; ``run()`` raises AssertionError (or the
    estimator's own error) when the check fails. The checks share one
    :class:`FamilyChecker` (its data and fitted model are made once)."""
    checker = FamilyChecker(family)
    return [(name, (lambda func=func: func(checker))) for name, func in CHECKS.items()]


def check_family(family) -> None:
    """Run every contract check on ``family`` (a :class:`kmviz.families.Family`, registered).

    Raises
    ------
    AssertionError
        At the first check that fails, naming it (the original error is its cause).
    """
    for name, run in family_checks(family):
        try:
            run()
        except Exception as exc:
            raise AssertionError(f"kmviz.testing: family {family.name!r} fails the check "
                                 f"{name!r}: {type(exc).__name__}: {exc}") from exc
