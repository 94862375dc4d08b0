"""The contract checks of the run format and the bounds on a fit's work
(:mod:`kmviz.testing`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ._checker import FamilyChecker
from ._expect import (ARRAYS_FIX, declaration, expect, raises, same_arrays, same_split,
                      same_trace)
from ._loop import _LOOP_FIX


def check_run_metrics_are_named_part_metric(c: FamilyChecker):
    from ..data.splits import SPLIT_PARTS
    from ..runs import run_metrics

    fitted, split = c.fitted, c.split
    metrics = run_metrics(fitted, split)
    fix = "evaluate(ratings) returns {metric: float} with names without a part prefix."
    expect(metrics["n_iter"] == fitted.n_iter_,
           f"{c.owner}: the run's n_iter {metrics['n_iter']} is not n_iter_ "
           f"{fitted.n_iter_}.", _LOOP_FIX)
    expect(metrics["objective"] == fitted.trace_.rows[-1]["objective"],
           f"{c.owner}: the run's objective is not the last row's.", _LOOP_FIX)
    parts = {}
    for key, value in metrics.items():
        if key in ("objective", "n_iter"):
            continue
        part, _, metric = key.partition("_")
        expect(part in SPLIT_PARTS and metric, f"{c.owner}: run metric {key!r} is not "
                                               f"named {{part}}_{{metric}}.", fix)
        parts.setdefault(part, set()).add(metric)
        again = fitted.evaluate(getattr(split, part))[metric]
        expect(value == again, f"{c.owner}: run metric {key!r} is {value!r}, evaluate() "
                               f"gives {again!r} again.", "evaluate must be deterministic.")
    expect(set(parts) == set(SPLIT_PARTS), f"{c.owner}: run metrics for parts "
                                           f"{sorted(parts)}, expected {list(SPLIT_PARTS)}.",
           fix)
    for part, names in parts.items():
        wanted = set(fitted.evaluate(getattr(split, part)))
        expect(names == wanted, f"{c.owner}: {part} run metrics {sorted(names)}, evaluate() "
                                f"gives {sorted(wanted)}.", fix)


def check_save_run_open_run_round_trip(c: FamilyChecker):
    from ..runs import RunStore, open_run, run_metrics, save_run

    fam, fitted = c.family, c.fitted
    whole, split = c.data
    what = f"{c.owner} saved with save_run and reopened with open_run"
    with tempfile.TemporaryDirectory(prefix="kmviz-check-") as tmp:
        store = RunStore(Path(tmp) / "store")
        run_id = save_run(fitted, split, dataset=whole, spec=dict(fam.contract_data),
                          label="contract", note="a note", store=store, writer="python")
        opened = open_run(run_id, store)
        expect(opened.problem == "", f"{what}: {opened.problem}", ARRAYS_FIX)
        expect(opened.run.family == fam.name and opened.run.label == "contract",
               f"{what}: family {opened.run.family!r} label {opened.run.label!r}, expected "
               f"{fam.name!r} 'contract'.", "register the family under the name it saves.")
        expect(opened.run.meta["note"] == "a note", f"{what}: the note was lost.",
               "keep kmviz.runs' save_run.")
        expect(opened.run.metrics == run_metrics(fitted, split),
               f"{what}: the metrics {opened.run.metrics} differ from the fit's.",
               "evaluate must depend only on the fitted arrays.")
        model = opened.model
        expect(type(model) is type(fitted), f"{what}: the model is a "
                                            f"{type(model).__name__}.", ARRAYS_FIX)
        expect(model.get_params() == fitted.get_params(),
               f"{what}: the parameters are {model.get_params()}.",
               "parameters must be JSON values (numbers, strings, None, lists).")
        same_arrays(fitted._fitted_arrays(), model._fitted_arrays(), what)
        expect(model.evaluate(split.test) == fitted.evaluate(split.test),
               f"{what}: evaluate(test) differs.", ARRAYS_FIX)
        same_trace(fitted.trace_, model.trace_, what)
        same_split(split, opened.split, what)
        expect(model.evaluate(opened.split.test) == fitted.evaluate(split.test),
               f"{what}: evaluate on the reopened test part differs.", ARRAYS_FIX)
        expect((opened.dataset.n_users, opened.dataset.n_items, opened.dataset.n_ratings)
               == (whole.n_users, whole.n_items, whole.n_ratings),
               f"{what}: the dataset is not the one saved.", "keep kmviz.runs' save_run.")
        row = store.list().iloc[0]
        expect(row["run_id"] == run_id and row["note"] == "a note",
               f"{what}: the run store lists {dict(row)}.", "keep kmviz.runs' save_run.")


def _check_model_file_round_trip(c: FamilyChecker, with_split: bool):
    from ..runs import load_model_file, save_model_file

    fitted = c.fitted
    whole, split = c.data
    what = (f"{c.owner} saved with save_model_file({'with' if with_split else 'without'} "
            "split) and loaded with load_model_file")
    with tempfile.TemporaryDirectory(prefix="kmviz-check-") as tmp:
        path = Path(tmp) / "model.kmviz"
        out = save_model_file(path, fitted, split=split if with_split else None,
                              dataset=whole if with_split else None)
        expect(out == path and path.exists(), f"{what}: no file at {path}.",
               "keep kmviz.runs' save_model_file.")
        expect(not path.with_name(path.name + ".tmp").exists(),
               f"{what}: the temporary file is left.", "keep kmviz.runs' save_model_file.")
        model, loaded_split = load_model_file(path)
    expect(type(model) is type(fitted), f"{what}: the model is a {type(model).__name__}.",
           ARRAYS_FIX)
    expect(model.get_params() == fitted.get_params(),
           f"{what}: the parameters are {model.get_params()}.",
           "parameters must be JSON values (numbers, strings, None, lists).")
    same_arrays(fitted._fitted_arrays(), model._fitted_arrays(), what)
    expect(model.evaluate(split.test) == fitted.evaluate(split.test),
           f"{what}: evaluate(test) differs.", ARRAYS_FIX)
    same_trace(fitted.trace_, model.trace_, what)
    if with_split:
        same_split(split, loaded_split, what)
    else:
        expect(loaded_split is None, f"{what}: a split came back from a file without one.",
               "keep kmviz.runs' load_model_file.")


def check_model_file_round_trip_with_split(c: FamilyChecker):
    _check_model_file_round_trip(c, with_split=True)


def check_model_file_round_trip_arrays_only(c: FamilyChecker):
    _check_model_file_round_trip(c, with_split=False)


def check_work_is_bounded_before_the_fit_starts(c: FamilyChecker):
    """Every numeric setting has an upper bound; the family estimates a fit's memory from the
    settings and the data (``_memory_estimate``), and a fit over the per-fit limit is refused
    with :class:`~kmviz._memory.FitTooLargeError` before ``_fit_start`` allocates anything."""
    from .._memory import FitTooLargeError, memory_limit

    cls = c.family.estimator_class()
    unbounded = [name for name, spec in cls._parameter_constraints.items()
                 if spec.kind in (int, float) and spec.high is None]
    expect(not unbounded, f"{cls.__name__}: numeric settings without an upper bound: "
                          + ", ".join(f"{n} ({declaration(cls._parameter_constraints[n])})"
                                      for n in unbounded) + ".",
           "declare high= in each Param (the most a fit can use).")
    model = c.make()
    parts = model._memory_estimate(model._validate_params(), c.split.train)
    expect(parts is not None, f"{cls.__name__} gives no _memory_estimate(params, data).",
           "define _memory_estimate(params, ratings) -> {what: bytes} of the fit's arrays.")
    total = sum(parts.values()) if isinstance(parts, dict) else parts
    expect(total > 0, f"{cls.__name__}._memory_estimate gives {parts!r}.",
           "return the bytes of the fit's arrays, {what: bytes}.")
    started = []
    original = model._fit_start
    model._fit_start = lambda *a, **k: started.append(1) or original(*a, **k)
    with memory_limit(1), raises(FitTooLargeError, match=r"per-fit limit.*Fix:",
                                 what=f"{cls.__name__}.fit under a 1-byte memory limit",
                                 fix="keep IterativeEstimator.fit's memory check (do not "
                                     "override fit)."):
        model.fit(c.split.train)
    expect(not started, f"{cls.__name__}: _fit_start ran although the fit was over the "
                        "memory limit.", "do not allocate before IterativeEstimator.fit's "
                                         "memory check (not in __init__ or a fit override).")
