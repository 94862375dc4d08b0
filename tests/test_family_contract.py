"""The estimator contract every registered model family must meet.

Each test runs once per entry of :func:`kmviz.families.all_families` on the family's small
contract dataset (``Family.contract_data``) with its quick settings (``Family.quick_params``),
so a new family is checked by adding its registry entry: parameters (get/set/clone and
validation from the declared constraints), the shared outer loop (callback stop, trace,
validation columns, tol and ConvergenceWarning, non-finite objective), determinism, and the
run format (save_run/open_run and model files).
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from kmviz import families
from kmviz._base import Step, clone
from kmviz._params import RANDOM_STATE
from kmviz.data import load
from kmviz.data.splits import SPLIT_PARTS, make_split
from kmviz.exceptions import (
    ConvergenceWarning,
    InvalidParameterError,
    NotFittedError,
    NumericalError,
)
from kmviz.runs import (
    RunStore,
    load_model_file,
    open_run,
    run_metrics,
    save_model_file,
    save_run,
)

FAMILIES = families.all_families()


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module", params=FAMILIES, ids=[f.name for f in FAMILIES])
def fam(request):
    return request.param


@pytest.fixture(scope="module")
def data(fam):
    """``(whole dataset, split)`` of the family's contract data."""
    spec = dict(fam.contract_data)
    source = spec.pop("source")
    whole = load(source, **spec)
    split = make_split(whole, val_size=0.1, test_size=0.2, seed=0)
    assert split.train.n_ratings and split.validation.n_ratings and split.test.n_ratings
    return whole, split


def _fit(fam, split, params=None, **fit_kwargs):
    model = fam.make({**fam.quick_params, **(params or {})})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        out = model.fit(split.train, **fit_kwargs)
    assert out is model
    return model


@pytest.fixture(scope="module")
def fitted(fam, data):
    """One model fitted with validation, shared by the read-only tests."""
    _, split = data
    return _fit(fam, split, validation=split.validation)


def _public_fitted_attributes(model) -> list[str]:
    return [k for k in vars(model) if k.endswith("_") and not k.startswith("_")]


def _assert_arrays_equal(a: dict, b: dict):
    assert set(a) == set(b)
    for name in a:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def _assert_same_trace(a, b):
    """Same rows (NaN equal to NaN, as JSON keeps it), events and stop reason."""
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
    for part in SPLIT_PARTS:
        pa, pb = getattr(a, part), getattr(b, part)
        assert (pa is None) == (pb is None), part
        if pa is not None:
            _assert_same_ratings(pa, pb)
    assert a.settings() == b.settings()


# ------------------------------------------------------------------------------ parameters
def test_registry_entry_is_complete(fam):
    cls = fam.estimator_class()
    assert fam.quick_params and fam.contract_data.get("source")
    assert set(fam.quick_params) <= set(cls._parameter_constraints)
    for method in ("evaluate", "_fitted_arrays", "_from_fitted_arrays", "_fit_start",
                   "_fit_step", "_fit_publish"):
        assert callable(getattr(cls, method, None)), method
    assert families.get(fam.name) is fam


def test_get_params_set_params(fam):
    model = fam.make(fam.quick_params)
    params = model.get_params()
    # every constructor argument is declared, so everything is validated at fit
    assert set(params) == set(type(model)._parameter_constraints)
    for name, value in fam.quick_params.items():
        assert params[name] == value
    assert model.set_params(**params) is model
    assert model.get_params() == params
    with pytest.raises(ValueError, match="no_such_parameter"):
        model.set_params(no_such_parameter=1)
    assert model.get_params() == params
    assert repr(model).startswith(type(model).__name__ + "(")


def test_clone_gives_equal_params_and_an_unfitted_model(fam, data, fitted):
    _, split = data
    for source in (fam.make(fam.quick_params), fitted):
        copy = clone(source)
        assert type(copy) is type(source) and copy is not source
        assert copy.get_params() == source.get_params()
        assert _public_fitted_attributes(copy) == []
        with pytest.raises(NotFittedError):
            copy.evaluate(split.test)
    assert _public_fitted_attributes(fitted)  # the clone did not touch the original


def test_unknown_parameter_in_make_is_refused(fam):
    cls = fam.estimator_class()
    with pytest.raises(InvalidParameterError,
                       match=rf"{cls.__name__} has no parameter 'no_such_parameter'") as info:
        fam.make({**fam.quick_params, "no_such_parameter": 1})
    for name in cls._parameter_constraints:  # the message lists the valid names
        assert name in str(info.value)


def _bad_values(param):
    """Values the declaration ``param`` must refuse."""
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


def test_every_declared_parameter_is_validated_with_the_template(fam, data):
    _, split = data
    cls = fam.estimator_class()
    checked = 0
    for name, param in cls._parameter_constraints.items():
        template = re.escape(f"The '{name}' parameter of {cls.__name__} must be")
        used = {k: v[0] for k, v in param.when.items()}  # settings under which it is read
        for bad in _bad_values(param):
            model = fam.make({**fam.quick_params, **used, name: bad})
            with pytest.raises(InvalidParameterError, match=template):
                model.fit(split.train)
            assert _public_fitted_attributes(model) == [], (name, bad)
            checked += 1
    assert checked >= len(cls._parameter_constraints)


# ------------------------------------------------------------------------------ the loop
def test_fit_returns_self_and_the_trace_counts_iterations(fam, fitted):
    trace = fitted.trace_
    assert fitted.n_iter_ == trace.n_iter == len(trace.rows) >= 1
    assert [r["iteration"] for r in trace.rows] == list(range(1, trace.n_iter + 1))
    assert all(math.isfinite(r["objective"]) for r in trace.rows)
    assert all("wall_s" in r for r in trace.rows)
    assert trace.stop_reason in ("max_iter", "converged")


def test_validation_adds_validation_columns_to_every_row(fam, data, fitted):
    _, split = data
    final = fitted.evaluate(split.validation)
    columns = {k for k in fitted.trace_.rows[-1] if k.startswith("validation_")}
    assert columns, "no validation_<metric> column"
    # the loop may narrow the per-iteration metrics to cheap ones, never invent others
    assert columns <= {f"validation_{k}" for k in final}
    for row in fitted.trace_.rows:
        assert {k for k in row if k.startswith("validation_")} == columns
        assert all(math.isfinite(row[c]) for c in columns)
    for column in columns:  # the last row is the final model's metric
        assert fitted.trace_.rows[-1][column] == pytest.approx(
            final[column[len("validation_"):]], rel=1e-12, abs=1e-15)
    # without validation, no such column
    plain = _fit(fam, split)
    assert not any(k.startswith("validation_") for r in plain.trace_.rows for k in r)


def _check_stopped_cleanly(model, split):
    trace = model.trace_
    assert model.n_iter_ == 1 == trace.n_iter == len(trace.rows)
    assert trace.stop_reason == "callback"
    assert any(e["message"] == "stopped by the user" for e in trace.events)
    metrics = model.evaluate(split.test)
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert run_metrics(model, split)["n_iter"] == 1


def test_callback_returning_false_stops_cleanly(fam, data):
    _, split = data
    seen = []

    def callback(row):
        seen.append(row["iteration"])
        return row["iteration"] < 1

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a user stop is no cap reached
        model = fam.make(fam.quick_params)
        assert model.fit(split.train, callback=callback, validation=split.validation) is model
    assert seen == [1]
    _check_stopped_cleanly(model, split)


def test_callback_raising_stopiteration_stops_cleanly(fam, data):
    _, split = data

    def callback(row):
        raise StopIteration

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = fam.make(fam.quick_params)
        assert model.fit(split.train, callback=callback) is model
    _check_stopped_cleanly(model, split)


def test_callback_returning_none_keeps_going(fam, data, fitted):
    _, split = data
    rows = []
    model = _fit(fam, split, callback=rows.append, validation=split.validation)
    assert len(rows) == model.n_iter_ == fitted.n_iter_
    assert model.trace_.stop_reason != "callback"


def test_same_random_state_gives_identical_fits(fam, data):
    _, split = data
    a = _fit(fam, split)
    b = _fit(fam, split)
    np.testing.assert_array_equal(a.trace_.column("objective"), b.trace_.column("objective"))
    _assert_arrays_equal(a._fitted_arrays(), b._fitted_arrays())


def test_non_finite_objective_raises_numerical_error(fam, data, monkeypatch):
    _, split = data
    cls = fam.estimator_class()
    step = cls._fit_step

    def broken_step(self, state, trace, iteration):
        out = step(self, state, trace, iteration)
        if not isinstance(out, Step):
            out = Step(dict(out))
        return Step({**out.values, "objective": math.nan})

    monkeypatch.setattr(cls, "_fit_step", broken_step)
    model = fam.make(fam.quick_params)
    with pytest.raises(NumericalError, match=rf"{cls.__name__}\.fit: the objective is nan"):
        model.fit(split.train)
    assert model.trace_.stop_reason == "numerical_error"
    assert any(e["kind"] == "error" for e in model.trace_.events)


def test_convergence_warning_when_the_iteration_budget_is_reached(fam, data):
    _, split = data
    constraints = fam.estimator_class()._parameter_constraints
    budget = fam.cli_aliases.get("iters", "max_iter")  # what `kmviz train --iters` sets
    assert budget in constraints
    # one iteration cannot meet any tolerance (no decrease is measured yet)
    params = {**fam.quick_params, budget: 1}
    if "tol" in constraints:
        params["tol"] = 1e-3
    model = fam.make(params)
    with pytest.warns(ConvergenceWarning, match=f"Maximum number of iterations 1 reached; "
                                                f"increase {budget} or tol"):
        model.fit(split.train)
    assert model.trace_.stop_reason == "max_iter"
    if "tol" in constraints:  # tol = 0 asks for no convergence check: no warning
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            fam.make({**params, "tol": 0.0}).fit(split.train)


# ------------------------------------------------------------------------------ run format
def test_run_metrics_are_named_part_metric(fam, data, fitted):
    _, split = data
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
        assert value == fitted.evaluate(getattr(split, part))[metric]
    assert set(parts) == set(SPLIT_PARTS)
    for part, names in parts.items():
        assert names == set(fitted.evaluate(getattr(split, part))), part


def test_save_run_open_run_round_trip(fam, data, fitted, tmp_path):
    whole, split = data
    store = RunStore(tmp_path / "store")
    run_id = save_run(fitted, split, dataset=whole, spec=dict(fam.contract_data),
                      label="contract", note="a note", store=store, writer="python")
    opened = open_run(run_id, store)
    assert opened.problem == ""
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
    assert (opened.dataset.n_users, opened.dataset.n_items) == (whole.n_users, whole.n_items)
    assert opened.dataset.n_ratings == whole.n_ratings
    row = store.list().iloc[0]
    assert row["run_id"] == run_id and row["note"] == "a note"


@pytest.mark.parametrize("with_split", [True, False], ids=["with-split", "arrays-only"])
def test_model_file_round_trip(fam, data, fitted, tmp_path, with_split):
    whole, split = data
    path = tmp_path / "model.kmviz"
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


def test_every_family_names_its_paper(fam):
    assert fam.reference and "*" in fam.reference  # the title in italics
