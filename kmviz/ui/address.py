"""The browser's address holds the view (:mod:`kmviz.ui.links` has the pure logic).

app.py calls :func:`restore_view` once per session, before the page runs (a link opened
in a new browser or a reloaded tab brings back its page, data, family, settings, run and
item; what the link gets wrong is ignored with a notice), and :func:`sync_address` after
every run of a page, which writes the session's view back into the address bar.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from kmviz import families
from kmviz.data.catalogue import list_datasets
from kmviz.data.splits import DEFAULT_SPLIT, split_settings
from kmviz.runs import open_run

from . import links
from .datacache import dataset_bytes
from .datasets import (apply_split, catalogue_entry, ensure_dataset, entry_defaults,
                       load_builtin, restore_run_data, set_dataset)
from .errors import is_streamlit_control
from .forms import GENERATOR_BOUNDS, GENERATOR_CHOICES, load_form
from .state import StateKeys, active_run, init_state, owns, session_runs
from .views import run_record

#: Session keys of this module.
RESTORED = "kmviz_link_restored"      # True once the session's first address was read
NOTICES = "kmviz_link_notices"        # list of str: what the first address got wrong
LESSON_ON = StateKeys.LESSON_ON       # bool: lesson mode (kmviz.ui.lesson)
LESSON_STEP = "kmviz_lesson_step"     # int or None: the lesson step shown
PRESENT_ON = "kmviz_present_on"       # bool: the presentation theme (larger text)
LESSON_NAME = "kmviz_lesson_name"     # str or None: the shipped lesson a link named
_LABELS = "kmviz_link_item_labels"    # (run_id, labels): the last run's item labels
_DEFAULTS = "kmviz_link_form_defaults"  # (key, defaults) of the last form defaults asked

#: Pages whose view is a run (and an item), not the data and settings of a new fit.
DATA_PAGES = ("", "data", "train", "runs")

#: Uploaded (and local-path) datasets kept for links, shared by the server's sessions.
KEPT = links.KeptDatasets()


def _catalogue() -> dict:
    return {e.name: e for e in list_datasets()}, entry_defaults


def link_context(pages) -> links.Context:
    """What the app's links are checked against: its pages, built-in datasets (with their
    generators' options), families (with their settings)."""
    entries, entry_defaults = _catalogue()
    datasets = {name: links.generator_params(entry_defaults(e), bounds=GENERATOR_BOUNDS,
                                             choices=GENERATOR_CHOICES)
                for name, e in entries.items()}
    fams = {}
    for name in families.names():
        try:
            fams[name] = families.get(name).constraints()
        except (ImportError, AttributeError, ValueError):  # an installed family's bug
            continue
    default = st.session_state.get(StateKeys.FAMILY) or (families.names() or [None])[0]
    return links.Context(pages=tuple(pages), datasets=datasets, families=fams,
                         default_family=default, lessons=tuple(shipped_lesson_names()))


def shipped_lesson_names() -> list[str]:
    """The names of the lessons kmviz ships (``lessons/*.toml`` of the checkout)."""
    folder = Path(__file__).resolve().parents[2] / "lessons"
    return sorted(p.stem for p in folder.glob("*.toml")) if folder.is_dir() else []


def form_defaults(family, ratings, spec: dict) -> dict:
    """The defaults ``family``'s form starts from on the session's data (what a link's
    settings are written against), remembered for the last data and family asked."""
    built_in = (spec or {}).get("kind") == "built-in"
    dataset = str(spec.get("source", "")) if built_in else None
    options = spec.get("options") if built_in else None
    key = (family.name, ratings.fingerprint(), dataset, repr(sorted((options or {}).items())))
    cached = st.session_state.get(_DEFAULTS)
    if cached and cached[0] == key:
        return dict(cached[1])
    try:
        defaults = family.dataset_defaults(ratings, dataset, options).params
    except ValueError:
        defaults = family.default_params()
    if defaults.get("random_state", 0) is None:  # the form shows seed 0 for "none"
        defaults["random_state"] = 0
    st.session_state[_DEFAULTS] = (key, dict(defaults))
    return dict(defaults)


def _item_labels(run) -> list:
    cached = st.session_state.get(_LABELS)
    if cached and cached[0] == run.run_id:
        return cached[1]
    train = run.split.train
    labels = [str(train.item_label(i)) for i in range(train.n_items)]
    st.session_state[_LABELS] = (run.run_id, labels)
    return labels


# ------------------------------------------------------------------ restore
def _restore_data(link: links.Link, notices: list) -> None:
    name = link.dataset
    if name.startswith(links.RUN_DATA):
        rid = name[len(links.RUN_DATA):]
        try:
            opened = open_run(rid)
        except (ValueError, OSError) as exc:
            notices.append(f"dataset={name} was ignored: the run could not be opened ({exc}).")
            return
        if restore_run_data(opened, saved_data=owns(opened.run.meta)) is None:
            notices.append(f"dataset={name} was ignored: the data of run {rid} cannot be "
                           "loaded here (another browser's run, or no data saved with it).")
        return
    if name.startswith(links.UPLOAD_DATA):
        found = KEPT.get(name[len(links.UPLOAD_DATA):])
        if found is None:
            notices.append(f"dataset={name} was ignored: the server no longer keeps that "
                           f"upload (it keeps the last {KEPT.max_count}, and none after a "
                           "restart). Upload the file again on the Data page.")
            return
        set_dataset(*found)
    else:
        entry = catalogue_entry(name)
        options = {**entry_defaults(entry), **link.data_options}
        try:
            ratings = load_builtin(name, tuple(sorted(options.items())))
        except ValueError as exc:
            notices.append(f"dataset={name} with the link's options was ignored: {exc}")
            return
        set_dataset(ratings, {"kind": "built-in", "source": name, "options": options,
                              "title": entry.title, "licence": entry.licence,
                              "provenance": entry.source})
    if link.split:
        try:
            apply_split({**DEFAULT_SPLIT, **link.split})
        except ValueError as exc:
            notices.append(f"The link's split was ignored: {exc}")


def _restore_item(link: links.Link, notices: list) -> None:
    run = run_record(link.run)
    if run is None:
        notices.append(f"run={link.run} was ignored: there is no such run here (it may "
                       "have been deleted, or saved on another server).")
        st.session_state[StateKeys.ACTIVE_RUN] = None
        return
    st.session_state[StateKeys.ACTIVE_RUN] = run.run_id
    if not link.item:
        return
    if run.split is None:
        notices.append(f"item={link.item!r} was ignored: run {run.run_id} cannot give its "
                       "data here.")
        return
    index = links.resolve_item(link.item, _item_labels(run))
    if index is None:
        notices.append(f"item={link.item!r} was ignored: run {run.run_id}'s data has no "
                       "item of that name (a name shared by several items is written #index).")
        return
    items = dict(st.session_state.get(StateKeys.ITEM) or {})
    items[run.run_id] = index
    st.session_state[StateKeys.ITEM] = items


def apply_link(link: links.Link, notices: list, *, switches: bool = True) -> None:
    """Make the session show ``link``'s view (data, family and its form, run, item, and
    with ``switches`` lesson mode and presentation); what cannot be restored adds a
    notice."""
    if link.dataset:
        _restore_data(link, notices)
    if link.family:
        st.session_state[StateKeys.FAMILY] = st.session_state["train_family"] = link.family
    if link.settings or link.dataset:
        ratings, _ = ensure_dataset()
        family = families.get(link.family or st.session_state.get(StateKeys.FAMILY)
                              or families.names()[0])
        if ratings is not None:
            spec = st.session_state.get(StateKeys.DATASET_SPEC) or {}
            load_form(family, {**form_defaults(family, ratings, spec), **link.settings},
                      {"key": ratings.fingerprint(), "name": ratings.name})
    if link.run:
        _restore_item(link, notices)
    st.session_state[LESSON_STEP] = link.step
    if not switches:
        return
    if link.lesson is not None:
        st.session_state[LESSON_ON] = bool(link.lesson)
    if link.lesson_name:
        st.session_state[LESSON_NAME] = link.lesson_name
    st.session_state[PRESENT_ON] = bool(link.present)


def restore_view(pages) -> None:
    """Once per session: read the address the session was opened with and restore its
    view; the notices are shown by :func:`show_notices` on this first run. (The page
    itself is Streamlit's to open: ``pages``, the app's URL paths, check the rest.)"""
    if st.session_state.get(RESTORED):
        st.session_state[NOTICES] = []
        return
    init_state()
    st.session_state[RESTORED] = True
    query = st.query_params.to_dict()
    if not query:
        return
    link, notices = links.parse_link(None, query, link_context(pages))
    try:
        apply_link(link, notices)
    except Exception as exc:  # noqa: BLE001 - a link must never break the page
        if is_streamlit_control(exc):
            raise
        notices.append(f"The link could not be restored completely: {exc}")
    st.session_state[NOTICES] = notices


def show_notices() -> None:
    """What the session's first address got wrong, one notice per ignored entry."""
    for text in st.session_state.get(NOTICES) or []:
        st.warning(text, icon=":material/link_off:")


# ------------------------------------------------------------------ write
def _data_value(spec: dict, ratings) -> tuple[str | None, dict]:
    """(dataset=, data options off their defaults) of the session's data."""
    kind = spec.get("kind")
    if kind == "built-in":
        entries, entry_defaults = _catalogue()
        entry = entries.get(str(spec.get("source")))
        if entry is None:
            return None, {}
        return entry.name, links.changed(dict(spec.get("options") or {}),
                                         entry_defaults(entry))
    if kind == "saved run":
        return links.RUN_DATA + str(spec.get("source")), {}
    if kind in ("upload", "path") and ratings is not None:
        token = spec.get("link_token")
        if token is None or KEPT.get(token) is None:
            plain = {k: v for k, v in spec.items() if k not in ("link_token", "split")}
            token = KEPT.keep(ratings, plain, fingerprint=ratings.fingerprint(),
                              n_bytes=dataset_bytes(ratings))
            if token is None:
                return None, {}
            st.session_state[StateKeys.DATASET_SPEC] = {**spec, "link_token": token}
        return links.UPLOAD_DATA + token, {}
    return None, {}


def current_link(page: str) -> links.Link:
    """The session's view on ``page`` as a link."""
    link = links.Link(page=page, lesson=bool(st.session_state.get(LESSON_ON)),
                      lesson_name=st.session_state.get(LESSON_NAME),
                      present=bool(st.session_state.get(PRESENT_ON)),
                      step=st.session_state.get(LESSON_STEP))
    if page == "":
        return link
    ratings = st.session_state.get(StateKeys.DATASET)
    spec = st.session_state.get(StateKeys.DATASET_SPEC) or {}
    if ratings is not None:
        link.dataset, link.data_options = _data_value(spec, ratings)
        if not (link.dataset or "").startswith(links.RUN_DATA):
            link.split = split_settings(spec.get("split"))
    name = st.session_state.get(StateKeys.FAMILY)
    if page not in DATA_PAGES:
        run = active_run() if st.session_state.get(StateKeys.ACTIVE_RUN) in session_runs() \
            else None
        if run is not None:  # the run's view: its own data, not the session's
            link.run, name = run.run_id, run.family
            link.dataset, link.data_options, link.split = None, {}, {}
            item = (st.session_state.get(StateKeys.ITEM) or {}).get(run.run_id)
            if item is not None and run.split is not None:
                labels = _item_labels(run)
                if 0 <= int(item) < len(labels):
                    link.item = links.item_text(int(item), labels)
    if name in families.names():
        link.family = name
        if page in ("train", "data") and ratings is not None:
            family = families.get(name)
            params = st.session_state.get(f"kmviz_params_{name}")
            if params:
                link.settings = links.changed(params, form_defaults(family, ratings, spec))
    return link


def sync_address(page: str) -> None:
    """Write the session's view on ``page`` into the address bar (when it changed)."""
    try:
        query = links.link_query(current_link(page))
        if query != st.query_params.to_dict():
            st.query_params.from_dict(query)
    except Exception as exc:  # noqa: BLE001 - the address is a convenience, never a crash
        if is_streamlit_control(exc):
            raise
