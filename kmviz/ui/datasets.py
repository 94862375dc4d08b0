"""Dataset loading for the pages (one shared copy of each dataset), uploads and splits."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import time
from pathlib import Path

import streamlit as st

from kmviz.data import load, suggested_settings
from kmviz.data.catalogue import list_datasets
from kmviz.data.loaders.checks import EXPANSION_FACTOR
from kmviz.data.splits import DEFAULT_SPLIT, make_split, split_settings
from kmviz.exceptions import DataError

from .datacache import SharedDatasets
from .dataformats import format_options
from .errors import describe_exception, is_streamlit_control
from .forms import generator_options, reading_options
from .memory import release_memory
from .state import StateKeys
from .text import md_escape, size_phrase

#: The dataset a fresh session starts with, so Train works without visiting Data.
DEFAULT_DATASET = "movielens-small"

#: Largest upload in MB: the default of the server option ``server.maxUploadSize`` (set in
#: .streamlit/config.toml), which the upload widget enforces and :func:`upload_limit_mb` reads,
#: so the widget, its label and the page's own check say one number.
MAX_UPLOAD_MB = 50
#: Directories whose files Local path may read, separated by os.pathsep (``kmviz app
#: --data-dir DIR`` sets it); with none, Local path is not offered.
DATA_DIRS_ENV = "KMVIZ_DATA_DIRS"
#: File types the loaders read (ratings/u.data style text, CSV/TSV, Matrix Market, zip).
UPLOAD_TYPES = ["csv", "tsv", "txt", "dat", "data", "mtx", "zip", "gz", "basket"]


def _load(source, **options):
    return load(source, **options)


#: The server's loaded datasets: one object per dataset, shared by every session that loads
#: it (a Ratings is immutable), never a copy per session (:mod:`kmviz.ui.datacache`).
DATASETS = SharedDatasets()

# The cached loaders show no spinner of their own: the Data page calls them in its Load
# buttons' callback, where any element sent to the page is a point at which Streamlit stops
# the callback for a rerun request that came in meanwhile (a click on another page), and the
# load would be lost; the script-run callers below wrap them in a spinner instead.
LOADING = "Loading the dataset ..."


def load_builtin(name: str, options: tuple = ()):
    """A catalogue dataset (``options`` as sorted (key, value) pairs, hashable), shared
    with the other sessions that loaded the same one."""
    return DATASETS.get(("built-in", name, tuple(options)),
                        lambda: _load(name, **dict(options)))


def _upload_file_name(file_name: str) -> str:
    """A name to store an upload under: its last path part, never '.', '..' or hidden, and
    short enough for any file system (the suffix, which picks the loader, is kept)."""
    name = re.split(r"[\\/]", str(file_name))[-1].strip().lstrip(".")
    if not name:
        return "upload.csv"
    stem, dot, suffix = name.rpartition(".")
    if not dot or len(suffix) > 10:
        stem, suffix = name, ""
    return (stem[:80] or "upload") + ("." + suffix if suffix else "")


_TEMP_DIR = re.compile(r"(?:[A-Za-z]:)?[^\s'\"]*kmviz-(?:upload|zip|gz)-[^\\/\s'\"]*[\\/]")


def _upload_message(text, tmp: str, path: Path, shown: str):
    """``text`` with the server's temporary path replaced by the upload's own name."""
    if text is None:
        return None
    text = str(text).replace(str(path), shown).replace(tmp + os.sep, "").replace(tmp, shown)
    return _TEMP_DIR.sub("", text)


def _upload_error(exc: ValueError, tmp: str, path: Path, shown: str) -> ValueError:
    """The same error (same class where it can be rebuilt) naming the upload, not the server's
    temporary file."""
    fix = lambda t: _upload_message(t, tmp, path, shown)  # noqa: E731
    if isinstance(exc, DataError):
        try:
            return type(exc)(fix(exc.problem), path=fix(exc.path), line=exc.line,
                             expected=fix(exc.expected), fix=fix(exc.fix))
        except TypeError:
            return DataError(fix(str(exc)))
    try:
        return type(exc)(fix(str(exc)))
    except TypeError:
        return ValueError(fix(str(exc)))


def load_uploaded(file_name: str, content: bytes, options: tuple = ()):
    """Write an upload to a temporary file under its own name and load it from there
    (shared with the other sessions that uploaded the same bytes under the same name).

    Errors name the upload (``file_name``), never the server's temporary path."""
    key = ("upload", file_name, hashlib.sha256(content).hexdigest(), tuple(options))
    return DATASETS.get(key, lambda: _load_upload(file_name, content, options))


def _load_upload(file_name: str, content: bytes, options: tuple):
    safe_name = _upload_file_name(file_name)
    shown = re.split(r"[\\/]", str(file_name))[-1] or safe_name
    with tempfile.TemporaryDirectory(prefix="kmviz-upload-") as tmp:
        path = Path(tmp) / safe_name
        path.write_bytes(content)
        limit = upload_limit_mb() * 1024 * 1024  # an archive expands to a multiple at most
        bounds = {"max_bytes": limit, "max_expanded_bytes": EXPANSION_FACTOR * limit}
        try:
            ratings = _load(str(path), **{**bounds, **dict(options)})
        except ValueError as exc:
            raise _upload_error(exc, tmp, path, shown) from None
    # The temporary path means nothing to the user: name the data after the upload.
    ratings.source = f"upload: {shown}"
    if ratings.name in ("ratings", path.stem, safe_name, str(path)) or (
            Path(tmp).name in ratings.name):
        ratings.name = shown
    return ratings


def _load_path_cached(path: str, mtime: float, options: tuple = ()):
    return DATASETS.get(("path", path, mtime, tuple(options)),
                        lambda: _load(path, **dict(options)))


def data_dirs() -> list[Path]:
    """The directories Local path may read (``$KMVIZ_DATA_DIRS``), resolved; existing ones
    only. Empty: Local path is off."""
    out = []
    for text in os.environ.get(DATA_DIRS_ENV, "").split(os.pathsep):
        if text.strip():
            d = Path(os.path.realpath(os.path.expanduser(text.strip())))
            if d.is_dir() and d not in out:
                out.append(d)
    return out


def _inside(path: Path, dirs) -> bool:
    return any(path == d or d in path.parents for d in dirs)


def resolve_local_path(text: str) -> Path:
    """The real path (symlinks and '..' resolved) of what the user typed, if it lies inside a
    data directory; relative paths are taken from the first one. Nothing is read before the
    check, and the refusal names only what was typed.

    Raises
    ------
    ValueError
        Local paths are off, the path is empty or outside the data directories, it does not
        exist, or a directory holds a link leading outside them.
    """
    dirs = data_dirs()
    if not dirs:
        raise ValueError("Local paths are turned off on this server: the operator has named "
                         "no data directory. Upload the file instead, or ask the operator to "
                         "start the app with `kmviz app --data-dir DIR` (or KMVIZ_DATA_DIRS).")
    text = str(text or "").strip()
    if not text:
        raise ValueError("No path given. Type the path of a ratings file, directory or zip "
                         "inside a data directory.")
    given = Path(os.path.expanduser(text))
    real = Path(os.path.realpath(given if given.is_absolute() else dirs[0] / given))
    where = ", ".join(str(d) for d in dirs)
    if not _inside(real, dirs):
        raise ValueError(f"{text}: outside the data directories this app may read ({where}). "
                         "Give a path inside one of them, or upload the file.")
    if not real.exists():
        raise ValueError(f"{text}: no such file or directory in the data directories "
                         f"({where}). Check the path and try again.")
    if real.is_dir():
        for child in real.iterdir():
            if not _inside(Path(os.path.realpath(child)), dirs):
                raise ValueError(f"{text}: {child.name} links outside the data directories "
                                 f"({where}); not reading this directory.")
    return real


def load_path(path: str, options: tuple = ()):
    """A file, directory or zip inside a data directory (:func:`resolve_local_path`); the
    shared copy is keyed by the modification time too."""
    real = resolve_local_path(path)
    return _load_path_cached(str(real), os.path.getmtime(real), options)


def upload_limit_mb() -> int:
    """The upload limit in MB: the server's ``server.maxUploadSize`` (what the upload widget
    enforces), :data:`MAX_UPLOAD_MB` unless the operator changed it."""
    try:
        return int(st.get_option("server.maxUploadSize"))
    except (RuntimeError, TypeError, ValueError):
        return MAX_UPLOAD_MB


def check_upload_size(n_bytes: int, file_name: str) -> None:
    """Refuse uploads above :func:`upload_limit_mb` with a message that says what to do."""
    limit = upload_limit_mb()
    if n_bytes > limit * 1024 * 1024:
        raise ValueError(
            f"{file_name} is {n_bytes / 1024 / 1024:.1f} MB; uploads are limited to "
            f"{limit} MB. Upload a zip of it, or ask the operator to put it in a data "
            "directory (`kmviz app --data-dir DIR`) and load it with Local path.")


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



def _split_for(ratings, settings: dict):
    """(split, settings used, note): ``ratings`` split by ``settings``, or all of it for
    training when that split cannot be made (the note, a sentence, says so; else None)."""
    settings = dict(settings)
    try:
        return make_split(ratings, **settings), settings, None
    except ValueError as exc:
        settings = {**settings, "val_size": 0.0, "test_size": 0.0}
        note = (f"The split could not be made ({exc}); all {ratings.n_ratings:,} ratings are "
                "used for training. Change the split below if the data allows it.")
        return make_split(ratings, **settings), settings, note


def set_dataset(ratings, spec: dict) -> str | None:
    """Make ``ratings`` the session's dataset, with the remembered (or default) split.

    If that split cannot be made (too few ratings for a held-out part), every rating goes to
    training; the returned sentence says so (None when the split worked).
    """
    current = (st.session_state.get(StateKeys.DATASET_SPEC) or {}).get("split", DEFAULT_SPLIT)
    split, current, note = _split_for(ratings, current)
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
    with st.spinner(LOADING):
        ratings = load_builtin(name, tuple(sorted(options.items())))
    set_dataset(ratings, {"kind": "built-in", "source": name, "options": options,
                          "title": getattr(entry, "title", name),
                          "licence": getattr(entry, "licence", ""),
                          "provenance": getattr(entry, "source", "")})


#: The Data page's widgets that say what its Load buttons load (read by :func:`load_clicked`).
BUILTIN_KEY = "data_builtin"
UPLOAD_KEY = "data_upload"
PATH_KEY = "data_path"


def _read_request(kind: str) -> dict:
    """What the Data page's widgets for ``kind`` ask for now, read from the session state
    (the upload's bytes too), with the split settings a new dataset gets."""
    state = st.session_state
    req = {"kind": kind,
           "split": dict((state.get(StateKeys.DATASET_SPEC) or {}).get("split",
                                                                        DEFAULT_SPLIT))}
    if kind == "built-in":
        name = state.get(BUILTIN_KEY) or DEFAULT_DATASET
        entry = catalogue_entry(name)
        req.update(name=name, entry=entry,
                   options=generator_options(entry_defaults(entry), prefix=f"data_{name}"))
    elif kind == "upload":
        up = state.get(UPLOAD_KEY)
        if up is None:
            raise ValueError("No file chosen: pick a ratings file above, then press Load "
                             "upload.")
        req.update(file_name=up.name, size=up.size, content=up.getvalue(),
                   options={**reading_options(prefix=UPLOAD_KEY),
                            **format_options(prefix=UPLOAD_KEY)})
    elif kind == "path":
        req.update(path=state.get(PATH_KEY) or "",
                   options={**reading_options(prefix=PATH_KEY),
                            **format_options(prefix=PATH_KEY)})
    else:
        raise ValueError(f"Unknown data source {kind!r}.")
    return req


def _load_request(req: dict):
    """(ratings, spec) of a :func:`_read_request` record; no Streamlit call in here."""
    options = req["options"]
    key = tuple(sorted(options.items()))
    if req["kind"] == "built-in":
        entry = req["entry"]
        return load_builtin(req["name"], key), {
            "kind": "built-in", "source": req["name"], "options": options,
            "title": entry.title, "licence": entry.licence, "provenance": entry.source}
    if req["kind"] == "upload":
        name = req["file_name"]
        check_upload_size(req["size"], name)
        return load_uploaded(name, req["content"], key), {
            "kind": "upload", "source": name, "options": options, "title": name,
            "licence": "as supplied by you", "provenance": "upload"}
    path = req["path"]
    return load_path(path, key), {"kind": "path", "source": path, "options": options,
                                  "title": path, "licence": "see the data's own terms",
                                  "provenance": path}


def load_clicked(kind: str) -> None:
    """The Data page's Load buttons' callback: load what the page's widgets name (``kind``:
    built-in, upload or path) and make it the session's dataset.

    Streamlit runs a callback before the next script run, whichever page that is, so a
    click followed at once by a change of page still loads. Nothing is raised: the outcome
    (the split's note, or the error as :func:`describe_exception` gives it) waits under
    :attr:`StateKeys.DATA_LOAD` for the Data page (:func:`pop_load_outcome`).

    Every access to the session state, and every element drawn, is a point at which
    Streamlit stops a callback when a newer request came in (a click on another page while
    this one loads), and a stopped callback is not run again. So the widgets are read
    first, the load itself makes no Streamlit call (the cached loaders show no spinner),
    and its result goes into the session's pending-load box (a plain dict kept in the
    session state) before anything else: if the callback is stopped while it makes the
    result the session's dataset, the next run of any page finishes that
    (:func:`apply_pending_load`, called by every page). The toast comes last."""
    box = st.session_state.get(StateKeys.PENDING_LOAD)
    if box is None:
        box = st.session_state[StateKeys.PENDING_LOAD] = {}
    # While this runs, a click elsewhere starts the next script run in a new thread
    # (Streamlit's fast reruns): the marker tells that run's Train a load is under way.
    marker = {"kind": kind, "since": time.time(), "thread": threading.current_thread()}
    box["loading"] = marker
    try:
        req = _read_request(kind)
        marker["what"] = _request_words(req)
        ratings, spec = _load_request(req)
        split, settings, note = _split_for(ratings, req["split"])
        result = ("ok", (ratings, {**spec, "split": settings}, split, note))
        box["load"] = result
        release_memory()  # a generator's or parser's temporaries: give their pages back
    except Exception as exc:  # noqa: BLE001 - shown on the Data page, never a crash elsewhere
        if is_streamlit_control(exc):
            raise
        result = ("error", describe_exception(exc, "loading the dataset"))
        box["load"] = result
    finally:
        if box.get("loading") is marker:  # plain dict operations: never stopped here
            box.pop("loading", None)
    # this run's own result: another run of the session (a page switch while it loaded) may
    # have applied and removed box["load"] already
    loaded = result[0] == "ok"
    apply_pending_load()
    if loaded:
        st.toast(f"Loaded {md_escape(ratings.name)}: {size_phrase(ratings)}, "
                 f"{ratings.n_ratings:,} ratings")
    else:
        st.toast("The dataset could not be loaded: the Data page says why.",
                 icon=":material/error:")


def _request_words(req: dict) -> str:
    """What a Load request loads, in a few words (for the Train page while it loads)."""
    if req["kind"] == "built-in":
        return str(getattr(req.get("entry"), "title", "") or req.get("name"))
    if req["kind"] == "upload":
        return f"the upload {req.get('file_name')}"
    return f"the file {req.get('path')}"


def load_in_progress() -> dict | None:
    """The Load under way in this session, if any: ``{"kind", "what", "since"}``.

    A Load button's callback runs in the script thread of the click; a click on another
    page meanwhile starts that page's run in a new thread while the load goes on, so the
    Train page can run before the new dataset is the session's (see :func:`load_clicked`).
    A marker whose thread has ended (stopped where nothing could clear it) is dropped."""
    box = st.session_state.get(StateKeys.PENDING_LOAD) or {}
    marker = box.get("loading")
    if not marker:
        return None
    thread = marker.get("thread")
    if thread is not None and not thread.is_alive():
        box.pop("loading", None)
        return None
    return {"kind": marker.get("kind"), "what": marker.get("what") or "a dataset",
            "since": marker.get("since")}


def apply_pending_load() -> bool:
    """Make a load that a Load callback finished the session's dataset (or its error the
    Data page's to show), if the callback could not do so itself; True if there was one.
    Every page calls it first (through :func:`kmviz.ui.views.collect_finished_job`)."""
    box = st.session_state.get(StateKeys.PENDING_LOAD)
    item = box.get("load") if box else None
    if item is None:
        return False
    status, payload = item
    if status == "ok":
        ratings, spec, split, note = payload
        st.session_state[StateKeys.DATASET] = ratings
        st.session_state[StateKeys.DATASET_SPEC] = spec
        st.session_state[StateKeys.SPLIT] = split
        st.session_state[StateKeys.DATA_LOAD] = {"ok": True, "note": note}
    else:
        st.session_state[StateKeys.DATA_LOAD] = {"ok": False, **payload}
    box.pop("load", None)  # last: applying twice does no harm, losing it would
    return True


def pop_load_outcome() -> dict | None:
    """What the last Load did, once (None when it was shown already or nothing was loaded)."""
    outcome = st.session_state.get(StateKeys.DATA_LOAD)
    st.session_state[StateKeys.DATA_LOAD] = None
    return outcome


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


def restore_run_data(opened, *, saved_data: bool = True) -> str | None:
    """Make a reopened run's dataset and split the session's data again (for a re-run).

    ``opened`` is a :class:`kmviz.runs.OpenedRun`. A catalogue dataset is reloaded with the
    run's options and split with its settings when that reproduces the saved fingerprints
    (the full catalogue data, side information included); otherwise the split saved with
    the run is used as it is, but only with ``saved_data`` (the run is this session's, or
    runs are shared): another session's training data is never loaded. Returns a sentence
    saying what was restored, or None if nothing was.
    """
    run = opened.run
    ds = run.dataset if isinstance(run.dataset, dict) else {}
    spec = dict(ds.get("spec") or {})
    settings = split_settings(run.meta.get("split"))
    catalogue = {e.name for e in list_catalogue()}
    if spec.get("kind") in ("built-in", "cli") and spec.get("source") in catalogue:
        try:
            options = dict(spec.get("options") or {})
            with st.spinner(LOADING):
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
    if opened.split is None or not saved_data:
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


def measured_settings(family: str):
    """The catalogue's measured settings of ``family`` for the session's built-in dataset
    (:func:`kmviz.data.suggested_settings`), None for other data or when there are none."""
    spec = st.session_state.get(StateKeys.DATASET_SPEC) or {}
    if spec.get("kind") != "built-in":
        return None
    return suggested_settings(str(spec.get("source", "")), family, spec.get("options"))
