"""The run format: the version of ``meta.json``, reading and checking it, and the migration
of the formats older versions wrote (kmviz 0.1.0's metric names and params)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

from ..exceptions import RunStoreError
from .files import _DAMAGED_FIX, _read_json_bytes


#: Version of the on-disk layout of one run (meta.json "format"). Bump it when the layout
#: changes, and teach :func:`_migrate_meta` to read the older one.
#: 1: kmviz 0.1.0 (the CLI and the app wrote different params and metric names).
#: 2: one format for every writer: estimator params only, the split under "split", metrics
#:    named ``{part}_{metric}``, a note, provenance.
RUN_FORMAT = 2


def _now_utc() -> datetime:
    return datetime.now(timezone.utc)


def _read_meta(folder: Path, run_id: str) -> dict:
    """Read meta.json and check that this version understands its format and types."""
    raw = _read_json_bytes(folder / "meta.json", run_id)
    try:
        meta = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise RunStoreError(f"Run {run_id!r}: meta.json is malformed (nested too deeply). "
                            f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunStoreError(f"Run {run_id!r}: meta.json is malformed ({exc}). "
                            f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
    if not isinstance(meta, dict):
        raise RunStoreError(f"Run {run_id!r}: meta.json does not hold a JSON object.")
    _check_meta_types(meta, run_id)
    fmt = meta.get("format")
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        raise RunStoreError(
            f"Run {run_id!r}: meta.json has no valid 'format' version ({fmt!r}); it was not "
            "written by kmviz's run store."
        )
    if fmt > RUN_FORMAT:
        raise RunStoreError(
            f"Run {run_id!r} was saved by a newer kmviz (run format {fmt}; this version reads "
            f"formats 1 to {RUN_FORMAT}). Upgrade kmviz to load it."
        )
    if fmt < 1:
        raise RunStoreError(f"Run {run_id!r} has an unknown run format {fmt}.")
    if fmt == 1:
        meta = _migrate_meta(meta)
    missing = [k for k in ("run_id", "family", "label", "dataset", "params", "metrics",
                           "created", "status") if k not in meta]
    if missing:
        raise RunStoreError(f"Run {run_id!r}: meta.json lacks {', '.join(missing)}.")
    meta.setdefault("duration_s", None)
    meta.setdefault("n_iter", None)
    meta.setdefault("note", "")
    meta.setdefault("split", {})
    meta.setdefault("provenance", {})
    if isinstance(meta.get("duration_s"), float) and math.isnan(meta["duration_s"]):
        meta["duration_s"] = None
    _check_meta_types(meta, run_id)
    return meta


_META_OBJECTS = ("params", "metrics", "dataset", "split", "provenance", "arrays", "sweep")
_META_TEXTS = ("run_id", "family", "label", "created", "status", "note")


def _check_meta_types(meta: dict, run_id: str, *, owner: str | None = None,
                      fix: str | None = None) -> None:
    """Refuse a meta.json whose fields have the wrong JSON types (which would otherwise
    surface as TypeError or AttributeError wherever the run is shown). ``owner`` and
    ``fix`` word the error for a file that is not a stored run (a model file)."""
    owner = f"Run {run_id!r}" if owner is None else owner
    fix = _DAMAGED_FIX.replace("ID", run_id) if fix is None else fix
    def wrong(key, want):
        value = meta[key]
        kind = "null" if value is None else type(value).__name__
        return RunStoreError(f"{owner}: meta.json's {key!r} is a {kind}; expected "
                             f"{want}. {fix}")

    for key in _META_OBJECTS:
        if key in meta and meta[key] is not None and not isinstance(meta[key], dict):
            raise wrong(key, "a JSON object")
    for key in _META_TEXTS:
        if key in meta and not isinstance(meta[key], str):
            raise wrong(key, "a string")
    tags = meta.get("tags")
    if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str)
                                                                for t in tags)):
        raise wrong("tags", "a list of strings")
    for key in ("duration_s", "n_iter"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise wrong(key, "a number or null")
    dataset = meta.get("dataset")
    if isinstance(dataset, dict):
        for key in ("n_users", "n_items", "n_ratings"):
            value = dataset.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise RunStoreError(
                    f"Run {run_id!r}: meta.json's dataset {key!r} is {value!r}; expected a "
                    f"whole number. {_DAMAGED_FIX.replace('ID', run_id)}")


def _kmviz_version() -> str:
    from .. import __version__

    return __version__


#: Metric names of kmviz 0.1.0 -> ``{part}_{metric}``. The CLI wrote ``val_nrmse``,
#: ``train_rmse`` (the probability-scale RMSE on the training ratings, i.e. the training
#: NRMSE) and ``objective``; the app wrote ``final_train_rmse`` and ``final_objective``.
_V1_METRICS = {
    "val_nrmse": "validation_nrmse",
    "val_rmse_ratings": "validation_rmse",
    "val_nrmse_ratings": "validation_nrmse_ratings",
    "final_train_rmse": "train_nrmse",
    "train_rmse": "train_nrmse",
    "final_objective": "objective",
}


def _migrate_metrics(metrics: dict) -> dict:
    out = {}
    for k, v in metrics.items():
        new = _V1_METRICS.get(k, k)
        if new not in metrics or new == k:
            out.setdefault(new, v)
    return out


def _split_out_of_params(params: dict) -> tuple[dict, dict]:
    """0.1.0 runs mixed bookkeeping into params: ``family``, ``fingerprint`` and ``split``
    (the app: counts and settings; the CLI: test_size and seed of a two-way split)."""
    params = dict(params)
    params.pop("family", None)
    params.pop("fingerprint", None)
    split = params.pop("split", None) or {}
    if "val_size" not in split and "test_size" in split:  # the CLI's train/validation split
        split = {"val_size": float(split["test_size"]), "test_size": 0.0, "by": "random",
                 "seed": int(split.get("seed", 0))}
    return params, split


def _migrate_meta(meta: dict) -> dict:
    """A format-1 meta.json (kmviz 0.1.0) in the current layout."""
    meta = dict(meta)
    params, split = _split_out_of_params(meta.get("params") or {})
    meta["params"] = params
    meta["split"] = split
    meta["metrics"] = _migrate_metrics(meta.get("metrics") or {})
    meta.setdefault("provenance", {"writer": "kmviz 0.1.0"})
    meta["migrated_from"] = 1
    meta["format"] = RUN_FORMAT
    return meta
