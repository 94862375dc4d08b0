"""Cached dataset loading for the pages (bounded caches), uploads and splits."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import streamlit as st

from kmviz.data import load
from kmviz.data.catalogue import list_datasets
from kmviz.data.splits import DEFAULT_SPLIT, make_split, split_settings

from .state import StateKeys

#: The dataset a fresh session starts with, so Train works without visiting Data.
DEFAULT_DATASET = "movielens-small"

#: Largest upload the Data page accepts (the server's own limit is in .streamlit/config.toml).
MAX_UPLOAD_MB = 50
#: File types the loaders read (ratings/u.data style text, CSV/TSV, Matrix Market, zip).
UPLOAD_TYPES = ["csv", "tsv", "txt", "dat", "data", "mtx", "zip", "gz"]


def _load(source, **options):
    return load(source, **options)


@st.cache_data(max_entries=8, show_spinner="Loading the dataset ...")
def load_builtin(name: str, options: tuple = ()):
    """A catalogue dataset (``options`` as sorted (key, value) pairs, hashable)."""
    return _load(name, **dict(options))


@st.cache_data(max_entries=4, show_spinner="Reading the uploaded file ...")
def load_uploaded(file_name: str, content: bytes, options: tuple = ()):
    """Write an upload to a temporary file under its own name and load it from there."""
    safe_name = Path(file_name).name or "upload.csv"
    with tempfile.TemporaryDirectory(prefix="kmviz-upload-") as tmp:
        path = Path(tmp) / safe_name
        path.write_bytes(content)
        ratings = _load(str(path), **dict(options))
    # The temporary path means nothing to the user: name the data after the upload.
    ratings.source = f"upload: {safe_name}"
    if ratings.name in ("ratings", path.stem, safe_name, str(path)) or (
            Path(tmp).name in ratings.name):
        ratings.name = safe_name
    return ratings


@st.cache_data(max_entries=4, show_spinner="Reading the file ...")
def _load_path_cached(path: str, mtime: float, options: tuple = ()):
    return _load(path, **dict(options))


def load_path(path: str, options: tuple = ()):
    """A local file, directory or zip; the cache is keyed by the modification time too."""
    path = os.path.expanduser(path.strip())
    if not path:
        raise ValueError("No path given. Type the path of a ratings file, directory or zip.")
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory. Check the path and try again.")
    return _load_path_cached(path, os.path.getmtime(path), options)


def check_upload_size(n_bytes: int, file_name: str) -> None:
    """Refuse uploads above :data:`MAX_UPLOAD_MB` with a message that says what to do."""
    if n_bytes > MAX_UPLOAD_MB * 1024 * 1024:
        raise ValueError(
            f"{file_name} is {n_bytes / 1024 / 1024:.1f} MB; uploads are limited to "
            f"{MAX_UPLOAD_MB} MB. Give its local path instead (Local path tab), or upload a "
            f"zip of it.")


def list_catalogue() -> list:
    """Catalogue entries (objects with .name .title .description .source .licence)."""
    return list(list_datasets())


def entry_defaults(entry) -> dict:
    """The generator parameters of a catalogue entry with their defaults."""
    for attr in ("defaults", "params", "parameters", "options"):
        value = getattr(entry, attr, None)
        if isinstance(value, dict):
            return dict(value)
    return {}


def upload_digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()[:12]



def set_dataset(ratings, spec: dict) -> str | None:
    """Make ``ratings`` the session's dataset, with the remembered (or default) split.

    If that split cannot be made (too few ratings for a held-out part), every rating goes to
    training; the returned sentence says so (None when the split worked).
    """
    current = (st.session_state.get(StateKeys.DATASET_SPEC) or {}).get("split", DEFAULT_SPLIT)
    note = None
    try:
        split = make_split(ratings, **current)
    except ValueError as exc:
        current = {**current, "val_size": 0.0, "test_size": 0.0}
        split = make_split(ratings, **current)
        note = (f"The split could not be made ({exc}); all {ratings.n_ratings:,} ratings are "
                "used for training. Change the split below if the data allows it.")
    st.session_state[StateKeys.DATASET] = ratings
    st.session_state[StateKeys.DATASET_SPEC] = {**spec, "split": dict(current)}
    st.session_state[StateKeys.SPLIT] = split
    return note


def apply_split(params: dict) -> None:
    ratings = st.session_state[StateKeys.DATASET]
    split = make_split(ratings, **params)
    st.session_state[StateKeys.SPLIT] = split
    spec = dict(st.session_state.get(StateKeys.DATASET_SPEC) or {})
    spec["split"] = dict(params)
    st.session_state[StateKeys.DATASET_SPEC] = spec


def catalogue_entry(name: str):
    for entry in list_catalogue():
        if entry.name == name:
            return entry
    raise ValueError(f"No built-in dataset named {name!r}.")


def quick_start(name: str) -> None:
    """Load a catalogue dataset with its default parameters (Home page buttons)."""
    entry = catalogue_entry(name)
    options = entry_defaults(entry)
    ratings = load_builtin(name, tuple(sorted(options.items())))
    set_dataset(ratings, {"kind": "built-in", "source": name, "options": options,
                          "title": getattr(entry, "title", name),
                          "licence": getattr(entry, "licence", ""),
                          "provenance": getattr(entry, "source", "")})


def ensure_dataset():
    """The session's dataset and split; a fresh session gets :data:`DEFAULT_DATASET` (the
    built-in MovieLens latest-small, offline) so Train works at once. None if that fails
    (the page then points to Data)."""
    if st.session_state.get(StateKeys.DATASET) is None:
        try:
            quick_start(DEFAULT_DATASET)
        except ValueError:
            return None, None
        spec = dict(st.session_state[StateKeys.DATASET_SPEC])
        spec["default"] = True
        st.session_state[StateKeys.DATASET_SPEC] = spec
    return st.session_state[StateKeys.DATASET], st.session_state[StateKeys.SPLIT]


def restore_run_data(opened) -> str | None:
    """Make a reopened run's dataset and split the session's data again (for a re-run).

    ``opened`` is a :class:`kmviz.runs.OpenedRun`. A catalogue dataset is reloaded with the
    run's options and split with its settings when that reproduces the saved fingerprints
    (the full catalogue data, side information included); otherwise the split saved with
    the run is used as it is. Returns a sentence saying what was restored, or None if the
    run carries no data.
    """
    run = opened.run
    ds = run.dataset if isinstance(run.dataset, dict) else {}
    spec = dict(ds.get("spec") or {})
    settings = split_settings(run.meta.get("split"))
    catalogue = {e.name for e in list_catalogue()}
    if spec.get("kind") in ("built-in", "cli") and spec.get("source") in catalogue:
        try:
            options = dict(spec.get("options") or {})
            ratings = load_builtin(spec["source"], tuple(sorted(options.items())))
            split = make_split(ratings, **settings)
        except ValueError:
            ratings = split = None
        if split is not None and ratings.fingerprint() == ds.get("fingerprint") and (
                split.train.fingerprint() == ds.get("train_fingerprint")):
            st.session_state[StateKeys.DATASET] = ratings
            st.session_state[StateKeys.DATASET_SPEC] = {
                "kind": "built-in", "source": spec["source"], "options": options,
                "title": spec.get("title") or spec["source"],
                "licence": spec.get("licence", ""), "provenance": spec.get("provenance", ""),
                "split": settings}
            st.session_state[StateKeys.SPLIT] = split
            return (f"Data restored: {spec.get('title') or spec['source']} reloaded from the "
                    f"catalogue with the run's options and split ({settings['by']}, seed "
                    f"{settings['seed']}).")
    if opened.split is None:
        return None
    whole, split = opened.dataset, opened.split
    spec = {"kind": "saved run", "source": run.run_id, "options": {},
            "title": f"{whole.name} (saved with run {run.run_id})",
            "licence": spec.get("licence", "as when the run was trained"),
            "provenance": f"the training data saved with run {run.run_id}", "split": settings}
    st.session_state[StateKeys.DATASET] = whole
    st.session_state[StateKeys.DATASET_SPEC] = spec
    st.session_state[StateKeys.SPLIT] = split
    return (f"Data restored: the split saved with the run ({split.train.n_ratings:,} training "
            "ratings).")
