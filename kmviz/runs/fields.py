"""The fields a run is saved with, checked and flattened: the family's name, the dataset's
description, tags, and the scalar columns of the listing."""

from __future__ import annotations

import json

import numpy as np

from ..families import family_of
from .files import _RUN_ID

#: Most tags a run carries, and their longest.
MAX_TAGS, MAX_TAG_CHARS = 20, 40


def check_tags(tags) -> list:
    """A run's tags as a list of short, distinct words (ValueError saying what is wrong)."""
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    out = []
    for tag in tags:
        if not isinstance(tag, str):
            raise ValueError(f"a tag must be text; got {type(tag).__name__}.")
        tag = " ".join(tag.split())
        if not tag or "," in tag or len(tag) > MAX_TAG_CHARS:
            raise ValueError(f"tag {tag!r} is not allowed: a tag is 1 to {MAX_TAG_CHARS} "
                             "characters without commas.")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValueError(f"a run has at most {MAX_TAGS} tags; got {len(out)}.")
    return out


def _loads_list(text) -> list:
    try:
        value = json.loads(text) if text else []
    except (TypeError, json.JSONDecodeError):
        return []
    return value if isinstance(value, list) else []


def _family_name(model) -> str:
    """The family's name: given as a string, or the registered family of an estimator
    (:func:`kmviz.families.family_of`)."""
    family = model if isinstance(model, str) else family_of(model).name
    if not family or not _RUN_ID.match(family):
        raise ValueError("model family must be a short name (letters, digits, '_', '.' or '-', "
                         f"as a registered family's name); got {family!r}.")
    return family


def _dataset_meta(dataset) -> dict:
    """Name, fingerprint and sizes of a Ratings; or just a name for a string."""
    if isinstance(dataset, str):
        return {"name": dataset, "fingerprint": None}
    if isinstance(dataset, dict):
        if "name" not in dataset:
            raise ValueError("dataset given as a dict needs a 'name' key.")
        return {"fingerprint": None, **dataset}
    if hasattr(dataset, "fingerprint") and hasattr(dataset, "name"):
        meta = {"name": str(dataset.name), "fingerprint": dataset.fingerprint()}
        for key in ("source", "n_users", "n_items", "n_ratings", "r_min", "r_max", "implicit"):
            if hasattr(dataset, key):
                value = getattr(dataset, key)
                meta[key] = value.item() if isinstance(value, np.generic) else value
        return meta
    raise ValueError(
        f"dataset must be a Ratings, a name or a dict with 'name'; got {type(dataset).__name__}."
    )


def _flatten(prefix: str, value, out: dict) -> None:
    """Scalars of a (nested) dict as ``a.b`` columns; lists and arrays are skipped."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif value is None or isinstance(value, (bool, int, float, str)):
        out[prefix] = value
