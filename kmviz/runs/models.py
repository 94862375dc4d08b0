"""Fitted models as runs: :func:`save_run` and :func:`open_run` (a model with its split,
the one call of the CLI and the app), :func:`run_metrics`, and single model files
(:func:`save_model_file`, :func:`load_model_file`)."""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._params import json_safe
from ..data.splits import has_split_arrays, split_arrays, split_from_arrays
from ..exceptions import RunStoreError
from ..families import all_families, family_of, get as get_family
from ..trace import Trace
from .files import _check_arrays, _read_npz, _to_json
from .format import RUN_FORMAT, _check_meta_types, _kmviz_version, _now_utc
from .store import Run, RunStore


def run_metrics(model, split) -> dict:
    """The run's metrics in the one vocabulary ``{part}_{metric}``: the family's
    ``evaluate`` on every part of the split, then ``objective`` (last row) and ``n_iter``."""
    out = {}
    for part, ratings in split.parts().items():
        if ratings.n_ratings == 0:
            continue
        for name, value in model.evaluate(ratings).items():
            out[f"{part}_{name}"] = float(value)
    trace = model.trace_
    if trace.rows and trace.rows[-1].get("objective") is not None:
        out["objective"] = float(trace.rows[-1]["objective"])
    out["n_iter"] = int(trace.n_iter)
    return out


def dataset_meta(ratings, split=None, spec: dict | None = None) -> dict:
    """What a run keeps about its data besides the arrays (JSON): name, source,
    fingerprints, sizes, scale, how it was loaded (``spec``) and the user and item names."""
    def as_text(names):
        return None if names is None else [None if x is None else str(x) for x in names]

    spec = {k: v for k, v in (spec or {}).items() if k != "split"}
    meta = {
        "name": str(ratings.name), "source": str(ratings.source),
        "fingerprint": ratings.fingerprint(),
        "n_users": int(ratings.n_users), "n_items": int(ratings.n_items),
        "n_ratings": int(ratings.n_ratings), "r_min": float(ratings.r_min),
        "r_max": float(ratings.r_max), "implicit": bool(ratings.implicit),
        "spec": json.loads(json.dumps(spec, default=str)),
        "item_names": as_text(getattr(ratings, "item_names", None)),
        "user_names": as_text(getattr(ratings, "user_names", None)),
    }
    if split is not None:
        meta["train_fingerprint"] = split.train.fingerprint()
    return meta


def _provenance(writer: str, extra: dict | None = None) -> dict:
    import platform
    import sys

    return {"writer": writer, "kmviz_version": _kmviz_version(),
            "python": platform.python_version(), "argv": list(sys.argv[1:])
            if writer == "cli" else None, **(extra or {})}


def _model_payload(model, split, dataset, spec):
    """(family name, arrays, dataset meta, split meta) of a fitted model and its data."""
    fam = family_of(model)
    arrays = {k: np.asarray(v) for k, v in model._fitted_arrays().items()}
    bad = [k for k in arrays if k.startswith("data_")]
    if bad:
        raise ValueError(f"{type(model).__name__}._fitted_arrays names {bad[0]!r}; the prefix "
                         "'data_' is reserved for the split.")
    split_meta = {}
    if split is not None:
        arrays.update(split_arrays(split))
        split_meta = split.describe()
    whole = dataset if dataset is not None else (split.train if split is not None else None)
    ds = dataset_meta(whole, split, spec) if whole is not None else {"name": "unknown"}
    return fam, arrays, ds, split_meta


def save_run(model, split, *, dataset=None, spec: dict | None = None, label: str | None = None,
             note: str = "", store: "RunStore | None" = None, writer: str = "python",
             metrics: dict | None = None, duration_s: float | None = None,
             owner: str | None = None, tags=None, sweep: dict | None = None) -> str:
    """Save a fitted model with its split as a run; the one call the CLI and the app use.

    Parameters
    ----------
    model : a fitted estimator of a registered family
    split : kmviz.data.Split
        The parts the model was trained and evaluated on (saved as arrays, so every Explore
        view can reopen the run).
    dataset : Ratings, optional
        The whole dataset (name, fingerprint, item names); default: the training part.
    spec : dict, optional
        How the data was loaded (catalogue name and options, upload, path), for re-runs.
    label, note : str
        Display name (default: the family's label from the settings) and free text.
    store : RunStore, optional
        Default: the store at :func:`default_runs_dir`.
    writer : str
        ``"cli"``, ``"app"`` or ``"python"`` (kept as provenance).
    metrics : dict, optional
        Default: :func:`run_metrics` of the model on the split.
    owner : str, optional
        Who may manage the run (see :meth:`RunStore.save`).
    tags, sweep : optional
        Words to filter by, and the sweep the run is a point of (see :meth:`RunStore.save`).

    Returns
    -------
    str
        The run id.
    """
    fam, arrays, ds, split_meta = _model_payload(model, split, dataset, spec)
    params = json_safe(model.get_params())
    if metrics is None:
        metrics = run_metrics(model, split) if split is not None else {
            "n_iter": int(model.trace_.n_iter)}
    store = store if store is not None else RunStore()
    return store.save(fam.name, model.trace_, arrays, dataset=ds, params=params,
                      metrics=metrics, label=label or fam.label(params, ds.get("name", "data")),
                      note=note, split=split_meta, provenance=_provenance(writer),
                      duration_s=duration_s, owner=owner, tags=tags, sweep=sweep)


@dataclass
class OpenedRun:
    """A saved run reopened as a fitted model and its data.

    ``model`` is None and ``problem`` says why when the run cannot give a model (for
    example a kmviz 0.1.0 command-line run, saved without its training data); ``split`` and
    ``dataset`` are None when the run carries no data.
    """

    run: Run
    model: object
    split: object
    dataset: object
    problem: str = ""


def open_run(run_id: str, store: "RunStore | None" = None) -> OpenedRun:
    """Reopen a saved run: the fitted model (its family's estimator) and its split."""
    store = store if store is not None else RunStore()
    run = store.load(run_id)
    return _open(run)


def _open(run) -> OpenedRun:
    split = whole = None
    problem = ""
    if has_split_arrays(run.arrays):
        try:
            whole, split = split_from_arrays(run.arrays, run.dataset, run.meta.get("split"),
                                             what=f"Run {run.run_id}")
        except ValueError as exc:
            problem = str(exc)
    else:
        writer = "kmviz 0.1.0's command line" if run.meta.get("migrated_from") == 1 else \
            "its writer"
        problem = (f"Run {run.label!r} ({run.run_id}) was saved by {writer} without its "
                   "training data, so the views that recompute on the data (one item's "
                   "problem, implications checked against the ratings) cannot be rebuilt; "
                   "its convergence curves and metrics are still shown. Train it again "
                   "(kmviz train ... --save, or the Train page) to get a run that carries "
                   "its split.")
    model = None
    try:
        fam = get_family(run.family)
        cls = fam.estimator_class()
        params = {k: v for k, v in run.params.items() if k in cls._parameter_constraints}
        model = cls._from_fitted_arrays(run.arrays, params, run.trace,
                                        train=None if split is None else split.train)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        # arrays of the wrong shape or kind for the family: say which arrays there are
        shapes = ", ".join(f"{k} {a.dtype} {tuple(a.shape)}" for k, a in run.arrays.items()
                           if not k.startswith("data_"))
        if not problem or not isinstance(exc, (ValueError, KeyError)):
            problem = (f"Run {run.run_id}: its model cannot be rebuilt from its arrays "
                       f"({type(exc).__name__}: {exc}); it holds {shapes or 'no arrays'}.")
    return OpenedRun(run=run, model=model, split=split, dataset=whole, problem=problem)


#: Largest model file :func:`load_model_file` reads (its members are checked before reading).
_MODEL_FILE_MAX_BYTES = 2 * 1024 ** 3


def save_model_file(path, model, *, split=None, dataset=None, spec=None) -> Path:
    """One fitted model in one file, in the run format: a zip holding ``meta.json``,
    ``trace.json`` and ``arrays.npz`` (the members of a run folder). Written atomically."""
    fam, arrays, ds, split_meta = _model_payload(model, split, dataset, spec)
    path = Path(path)
    meta = {
        "format": RUN_FORMAT, "kind": "kmviz model", "family": fam.name,
        "run_id": path.stem or "model", "label": fam.label(json_safe(model.get_params()),
                                                          ds.get("name", "data")),
        "note": "", "dataset": ds, "split": split_meta,
        "params": json_safe(model.get_params()),
        "metrics": run_metrics(model, split) if split is not None else {},
        "created": _now_utc().isoformat(timespec="milliseconds"),
        "status": model.trace_.stop_reason, "n_iter": model.trace_.n_iter,
        "duration_s": None, "provenance": _provenance("python"),
        "arrays": {k: {"shape": list(a.shape), "dtype": a.dtype.str}
                   for k, a in arrays.items()},
    }
    buf = io.BytesIO()
    np.savez(buf, **_check_arrays(arrays))
    members = {"meta.json": _to_json("meta", meta).encode("utf-8"),
               "trace.json": model.trace_.to_json().encode("utf-8"),
               "arrays.npz": buf.getvalue()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(out.getvalue())
    os.replace(tmp, path)
    return path


def load_model_file(path):
    """``(model, split)`` from :func:`save_model_file` (split None when none was saved).

    Also reads the model files of older kmviz versions, through the family that wrote them
    (its estimator's ``_open_legacy_model_file(path)``, which returns the model or None).
    Nothing is unpickled; a file that is neither raises :class:`RunStoreError` saying why.
    """
    path = Path(path)
    if not path.exists():
        raise RunStoreError(f"{path}: no such model file.")
    if not zipfile.is_zipfile(path):
        raise RunStoreError(f"{path}: not a kmviz model file (not a zip archive).")
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if sum(i.file_size for i in zf.infolist()) > _MODEL_FILE_MAX_BYTES:
                raise RunStoreError(f"{path}: the archive unpacks to more than "
                                    f"{_MODEL_FILE_MAX_BYTES // 1024 ** 3} GB; not reading it.")
            if {"meta.json", "trace.json", "arrays.npz"} <= names:
                meta = json.loads(zf.read("meta.json").decode("utf-8"))
                trace = Trace.from_json(zf.read("trace.json").decode("utf-8"))
                arrays = _read_npz(io.BytesIO(zf.read("arrays.npz")), path.stem,
                                   _MODEL_FILE_MAX_BYTES, owner=str(path),
                                   fix="Fix: save the model again (kmviz.runs.save_model_file).")
            else:
                return _open_older_model_file(path), None
    except (zipfile.BadZipFile, OSError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, RunStoreError):
            raise
        raise RunStoreError(f"{path}: not a readable kmviz model file ({exc}).") from None
    fix = "Fix: save the model again (kmviz.runs.save_model_file)."
    if not isinstance(meta, dict):
        raise RunStoreError(f"{path}: meta.json does not hold a JSON object. {fix}")
    _check_meta_types(meta, path.stem, owner=str(path), fix=fix)
    problem = _declared_arrays_problem(meta, arrays)
    if problem:
        raise RunStoreError(f"{path}: {problem}. {fix}")
    fmt = meta.get("format") if isinstance(meta, dict) else None
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 2:
        raise RunStoreError(f"{path}: meta.json has no valid format version ({fmt!r}).")
    if fmt > RUN_FORMAT:
        raise RunStoreError(f"{path}: written by a newer kmviz (format {fmt}; this version "
                            f"reads up to {RUN_FORMAT}). Upgrade kmviz to read it.")
    meta.setdefault("run_id", path.stem)
    for key in ("family", "params", "dataset", "metrics", "status", "created", "label"):
        meta.setdefault(key, {} if key in ("params", "dataset", "metrics") else "")
    opened = _open(Run(meta=meta, trace=trace, arrays=arrays))
    if opened.model is None:
        raise RunStoreError(f"{path}: {opened.problem}")
    if opened.split is not None:
        _check_predicts(opened, path, fix)
    return opened.model, opened.split


def _check_predicts(opened, path, fix: str) -> None:
    """The rebuilt model evaluates on its own training ratings (arrays of the wrong shape
    for the family surface here, as RunStoreError listing the arrays, not later on a
    page)."""
    train = opened.split.train
    try:
        opened.model.evaluate(train)  # every family's evaluate reads its fitted arrays
    except (IndexError, ValueError, TypeError, AttributeError) as exc:
        shapes = ", ".join(f"{k} {a.dtype} {tuple(a.shape)}"
                           for k, a in opened.run.arrays.items() if not k.startswith("data_"))
        raise RunStoreError(
            f"{path}: its arrays do not make a {opened.run.family} model of its "
            f"{train.n_users} users and {train.n_items} items ({type(exc).__name__}: {exc}); "
            f"it holds {shapes}. {fix}") from None


def _declared_arrays_problem(meta: dict, arrays: dict) -> str:
    """What differs between the arrays meta.json declares and those stored ("" if none)."""
    declared = meta.get("arrays")
    if not declared:
        return ""
    for key, spec in declared.items():
        if not (isinstance(spec, dict) and isinstance(spec.get("shape"), list)
                and isinstance(spec.get("dtype"), str)):
            return f"meta.json's 'arrays'.{key!r} is not {{'shape': [...], 'dtype': '...'}}"
        if key not in arrays:
            return f"arrays.npz lacks {key!r}, which meta.json declares"
        a = arrays[key]
        if list(a.shape) != spec["shape"] or a.dtype.str != spec["dtype"]:
            return (f"array {key!r} is {a.dtype.str} {list(a.shape)} but meta.json declares "
                    f"{spec['dtype']} {spec['shape']}")
    return ""


def _open_older_model_file(path):
    """The fitted model in a model file of an older kmviz, which its family reads: each
    registered family's estimator may offer ``_open_legacy_model_file(path)``, returning the
    model, or None when the file is not one of its own."""
    for fam in all_families():
        hook = getattr(fam.estimator_class(), "_open_legacy_model_file", None)
        if hook is not None:
            model = hook(path)
            if model is not None:
                return model
    raise RunStoreError(f"{path}: not a kmviz model file (it holds neither the run format's "
                        "meta.json, trace.json and arrays.npz nor an older kmviz's model).")
