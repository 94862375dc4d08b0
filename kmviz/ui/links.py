"""Links that restore a view: the app's state as readable query parameters, and back.

The address bar of every page holds what a teacher needs to send a class to the same view::

    /train?dataset=planted-km&data.D=5&family=km&D=5
    /km_dual?dataset=run:20261201-abc&family=km&run=20261201-abc&item=Toy+Story+(1995)

``dataset`` is a built-in dataset's name, ``run:RUN_ID`` (the data saved with a run) or
``upload:TOKEN`` (an uploaded file the server keeps under that token); ``data.NAME`` are the
built-in generator's options and ``split.NAME`` the split's settings that differ from their
defaults; ``family`` is a registered model family, and every other name is one of its
settings (its estimator's declared :class:`~kmviz._params.Param`) whose value differs from
the defaults the form starts from; ``run`` and ``item`` pick what the Explore pages show;
``lesson=1`` and ``present=1`` switch lesson mode and the presentation theme on.

This module is pure (no Streamlit): :func:`parse_link` validates a query against the
declarations and returns the :class:`Link` and the notices for what it ignored (an unknown
name, a value out of range), never an exception; :func:`link_query` writes a Link back as
the query. :mod:`kmviz.ui.address` reads and writes the browser's address with them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from kmviz._params import RANDOM_STATE, Param
from kmviz.data.splits import DEFAULT_SPLIT

#: Query names that are not settings of the family.
DATASET, FAMILY, RUN, ITEM, LESSON, PRESENT, STEP = (
    "dataset", "family", "run", "item", "lesson", "present", "step")
RESERVED = (DATASET, FAMILY, RUN, ITEM, LESSON, PRESENT, STEP)
DATA_PREFIX, SPLIT_PREFIX = "data.", "split."
#: ``dataset=run:ID`` and ``dataset=upload:TOKEN``.
RUN_DATA, UPLOAD_DATA = "run:", "upload:"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
_TOKEN = re.compile(r"^[0-9a-f]{16}$")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

#: The split's settings as declarations (what :func:`kmviz.data.splits.make_split` takes).
SPLIT_PARAMS = {
    "val_size": Param(float, low=0.0, high=0.9, label="validation fraction"),
    "test_size": Param(float, low=0.0, high=0.9, label="test fraction"),
    "by": Param(str, options=("random", "user", "cold_users", "cold_items"), label="split"),
    "seed": Param(int, low=0, high=2**31 - 1, label="seed"),
}


@dataclass
class Link:
    """One view of the app, as a link holds it (see the module's docstring)."""

    page: str = ""                                  # the page's URL path; "" is Home
    dataset: str | None = None                      # a name, "run:ID" or "upload:TOKEN"
    data_options: dict = field(default_factory=dict)  # generator options off their defaults
    split: dict = field(default_factory=dict)       # split settings off DEFAULT_SPLIT
    family: str | None = None
    settings: dict = field(default_factory=dict)    # family settings off the form's defaults
    run: str | None = None
    item: str | None = None                         # an item's label, or "#index"
    lesson: bool | None = None                      # None: the link does not say
    lesson_name: str | None = None                  # a shipped lesson (lesson=km)
    present: bool = False
    step: int | None = None                         # the lesson step shown (1-based)

    def path(self) -> str:
        """``/page?query`` of this link (query percent-encoded)."""
        from urllib.parse import urlencode
        query = urlencode(link_query(self))
        return f"/{self.page}" + (f"?{query}" if query else "")


# ------------------------------------------------------------------ values as text
def value_text(value) -> str:
    """A setting's value as a link writes it: ``true``/``false``, ``none``, the shortest
    decimal that reads back as the same float (``0.001``, ``1e-05``, ``100``)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def changed(values: Mapping, defaults: Mapping) -> dict:
    """The entries of ``values`` that differ from ``defaults`` (in ``values``' order)."""
    return {k: v for k, v in values.items() if k not in defaults or not _same(v, defaults[k])}


def _in_form_bounds(spec: Param, value) -> bool:
    """Whether ``value`` lies in the bounds the form's widget accepts (``form_low`` /
    ``form_high``, else ``low`` / ``high``): a number box refuses anything else."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    lo = spec.form_low if spec.form_low is not None else spec.low
    hi = spec.form_high if spec.form_high is not None else spec.high
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def parse_value(owner: str, name: str, spec: Param, text: str):
    """``text`` read as ``spec`` declares, checked against its bounds and the form's;
    raises ``ValueError`` with the reason."""
    value = spec.parse(owner, name, text)
    if spec.kind in (int, RANDOM_STATE) and isinstance(value, int) and not isinstance(
            value, bool) and "." in text:
        raise ValueError(f"{name} takes an integer; got {text!r}")
    if not _in_form_bounds(spec, value):
        lo = spec.form_low if spec.form_low is not None else spec.low
        hi = spec.form_high if spec.form_high is not None else spec.high
        raise ValueError(f"{name} = {text} is outside the form's range "
                         f"[{'-inf' if lo is None else f'{lo:g}'}, "
                         f"{'inf' if hi is None else f'{hi:g}'}]")
    return value


def generator_params(defaults: Mapping, *, bounds: Mapping | None = None,
                     choices: Mapping | None = None) -> dict:
    """Declarations of a built-in generator's options, from their defaults (the kind),
    ``bounds`` (name -> (low, high)) and ``choices`` (name -> {value: label})."""
    bounds, choices = dict(bounds or {}), dict(choices or {})
    out = {}
    for name, default in defaults.items():
        lo, hi = bounds.get(name, (None, None))
        if name in choices:
            options = tuple(choices[name])
            if None in options or default is None:
                out[name] = Param(bool if set(options) <= {None, True, False} else str,
                                  none_ok=True, options=tuple(o for o in options
                                                              if o is not None))
            else:
                out[name] = Param(str, options=options)
        elif isinstance(default, bool):
            out[name] = Param(bool)
        elif isinstance(default, int) or (default is None and isinstance(lo, int)):
            out[name] = Param(int, low=lo, high=hi, none_ok=default is None)
        elif isinstance(default, float) or (default is None and isinstance(lo, float)):
            out[name] = Param(float, low=lo, high=hi, none_ok=default is None)
        else:
            out[name] = Param(str, none_ok=default is None)
    return out


# ------------------------------------------------------------------ parse and write
@dataclass
class Context:
    """What a link is checked against.

    ``pages`` the URL paths of the app's pages; ``datasets`` built-in name -> its
    generator options' declarations (:func:`generator_params`); ``families`` family name
    -> its settings' declarations; ``default_family`` the family a link without one
    means (its settings are then read against it)."""

    pages: tuple = ()
    datasets: Mapping = field(default_factory=dict)
    families: Mapping = field(default_factory=dict)
    default_family: str | None = None
    lessons: tuple = ()


def _first(value) -> str:
    if isinstance(value, (list, tuple)):
        return str(value[-1]) if value else ""
    return str(value)


def _flag(name: str, text: str, notices: list) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered not in _FALSE:
        notices.append(f"{name}={text!r} was ignored: it takes 1 (on) or 0 (off).")
    return False


def parse_link(page: str | None, query: Mapping, context: Context) -> tuple[Link, list[str]]:
    """The :class:`Link` a page's address stands for, and one notice per query entry it
    ignored (each names the entry, why, and what would do). Never raises on user text.
    ``page`` None: the page is not checked (Streamlit opens it)."""
    notices: list[str] = []
    query = {str(k): _first(v) for k, v in dict(query).items()}
    link = Link(page=str(page or "").strip("/"))
    if page is not None and context.pages and link.page not in context.pages:
        notices.append(f"The page {link.page!r} does not exist; Home is shown.")
        link.page = ""
    used = set()

    text = query.get(DATASET)
    if text is not None:
        used.add(DATASET)
        if text.startswith(RUN_DATA) and _RUN_ID.match(text[len(RUN_DATA):]):
            link.dataset = text
        elif text.startswith(UPLOAD_DATA) and _TOKEN.match(text[len(UPLOAD_DATA):]):
            link.dataset = text
        elif text in context.datasets:
            link.dataset = text
        else:
            known = ", ".join(context.datasets) or "none"
            notices.append(f"dataset={text!r} was ignored: it is not a built-in dataset "
                           f"({known}), run:RUN_ID or upload:TOKEN.")
    specs = context.datasets.get(link.dataset, {}) if link.dataset else {}
    for key, text in query.items():
        if key.startswith(DATA_PREFIX):
            used.add(key)
            name = key[len(DATA_PREFIX):]
            if name not in specs:
                what = (f"an option of {link.dataset}" if link.dataset in context.datasets
                        else "an option of a built-in dataset named by dataset=")
                notices.append(f"{key}={text!r} was ignored: {name!r} is not {what}"
                               + (f" (options: {', '.join(specs)})." if specs else "."))
                continue
            try:
                link.data_options[name] = parse_value(link.dataset, name, specs[name], text)
            except ValueError as exc:
                notices.append(f"{key}={text!r} was ignored: {exc}")
        elif key.startswith(SPLIT_PREFIX):
            used.add(key)
            name = key[len(SPLIT_PREFIX):]
            if name not in SPLIT_PARAMS:
                notices.append(f"{key}={text!r} was ignored: the split has no setting "
                               f"{name!r} (settings: {', '.join(SPLIT_PARAMS)}).")
                continue
            try:
                link.split[name] = parse_value("the split", name, SPLIT_PARAMS[name], text)
            except ValueError as exc:
                notices.append(f"{key}={text!r} was ignored: {exc}")
    if link.split.get("val_size", 0) + link.split.get("test_size", 0) > 0.9:
        notices.append("split.val_size + split.test_size were ignored: together they leave "
                       "less than 10% of the ratings for training.")
        link.split.pop("val_size", None), link.split.pop("test_size", None)

    text = query.get(FAMILY)
    if text is not None:
        used.add(FAMILY)
        if text in context.families:
            link.family = text
        else:
            notices.append(f"family={text!r} was ignored: the families are "
                           f"{', '.join(context.families) or 'none'}.")
    family = link.family or context.default_family
    constraints = context.families.get(family, {}) if family else {}

    text = query.get(RUN)
    if text is not None:
        used.add(RUN)
        if _RUN_ID.match(text):
            link.run = text
        else:
            notices.append(f"run={text!r} was ignored: it is not a run id.")
    text = query.get(ITEM)
    if text is not None:
        used.add(ITEM)
        if text.strip():
            link.item = text.strip()[:300]
    if LESSON in query:
        used.add(LESSON)
        if query[LESSON] in context.lessons:
            link.lesson, link.lesson_name = True, query[LESSON]
        elif query[LESSON].strip().lower() in _TRUE + _FALSE or not context.lessons:
            link.lesson = _flag(LESSON, query[LESSON], notices)
            if query[LESSON].strip().lower() not in _TRUE + _FALSE:
                link.lesson = None
        else:
            notices.append(f"lesson={query[LESSON]!r} was ignored: it takes 1 (on), 0 (off) "
                           f"or a lesson's name ({', '.join(context.lessons)}).")
    if PRESENT in query:
        used.add(PRESENT)
        link.present = _flag(PRESENT, query[PRESENT], notices)
    if STEP in query:
        used.add(STEP)
        text = query[STEP].strip()
        if text.isdigit() and 1 <= int(text) <= 99:
            link.step = int(text)
        else:
            notices.append(f"step={query[STEP]!r} was ignored: it takes a lesson step "
                           "number (1, 2, ...).")

    for key, text in query.items():
        if key in used:
            continue
        if key not in constraints:
            owner = f"the settings of {family}" if family else "the link's names"
            notices.append(f"{key}={text!r} was ignored: it is not one of {owner}"
                           + (f" ({', '.join(constraints)})." if constraints else "."))
            continue
        try:
            link.settings[key] = parse_value(family, key, constraints[key], text)
        except ValueError as exc:
            notices.append(f"{key}={text!r} was ignored: {exc}")
    return link, notices


def link_query(link: Link) -> dict:
    """The query of ``link`` as ``{name: text}``, in a readable order: the data, the
    family and its settings, the run and item, then the switches. Settings and options
    are written as they are (the caller keeps only those off their defaults, with
    :func:`changed`)."""
    out: dict = {}
    if link.dataset:
        out[DATASET] = link.dataset
        for k, v in link.data_options.items():
            out[DATA_PREFIX + k] = value_text(v)
    for k, v in changed(link.split, DEFAULT_SPLIT).items():
        out[SPLIT_PREFIX + k] = value_text(v)
    if link.family:
        out[FAMILY] = link.family
        for k, v in link.settings.items():
            if k not in RESERVED:
                out[k] = value_text(v)
    if link.run:
        out[RUN] = link.run
    if link.item:
        out[ITEM] = link.item
    if link.lesson:
        out[LESSON] = link.lesson_name or "1"
        if link.step:
            out[STEP] = str(link.step)
    if link.present:
        out[PRESENT] = "1"
    return out


def item_text(index: int, labels) -> str:
    """How a link names item ``index``: its label when no other item has the same one,
    else ``#index``."""
    label = str(labels[index])
    if sum(1 for x in labels if str(x) == label) == 1 and not label.startswith("#"):
        return label
    return f"#{index}"


def resolve_item(text: str, labels) -> int | None:
    """The index of the item a link names (:func:`item_text`), or None if none is."""
    text = str(text).strip()
    if text.startswith("#") and text[1:].isdigit():
        index = int(text[1:])
        return index if 0 <= index < len(labels) else None
    hits = [i for i, x in enumerate(labels) if str(x) == text]
    return hits[0] if len(hits) == 1 else None


# ------------------------------------------------------------------ uploads kept for links
class KeptDatasets:
    """Uploaded datasets the server keeps so that a link (``dataset=upload:TOKEN``) can
    bring one back after a reload of its tab, bounded in count and in bytes (the oldest
    goes first). A token is an HMAC of the data's fingerprint under a secret of this
    server process: it names the data, is not guessable, and is looked up here only (a
    client never chooses a path)."""

    def __init__(self, max_count: int = 8, max_bytes: int = 512 * 2**20,
                 secret: bytes | None = None):
        import secrets
        import threading
        from collections import OrderedDict

        self.max_count, self.max_bytes = int(max_count), int(max_bytes)
        self._secret = secret if secret is not None else secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._kept: OrderedDict = OrderedDict()  # token -> (ratings, spec, bytes)

    def token(self, fingerprint: str) -> str:
        import hashlib
        import hmac
        return hmac.new(self._secret, str(fingerprint).encode(), hashlib.sha256).hexdigest()[:16]

    def keep(self, ratings, spec: dict, *, fingerprint: str, n_bytes: int) -> str | None:
        """Keep ``ratings`` (with how it was loaded, ``spec``) and return its token; None
        when it is larger than the whole budget (a link then cannot bring it back)."""
        if n_bytes > self.max_bytes:
            return None
        token = self.token(fingerprint)
        with self._lock:
            self._kept.pop(token, None)
            self._kept[token] = (ratings, dict(spec), int(n_bytes))
            while len(self._kept) > self.max_count or sum(
                    b for *_, b in self._kept.values()) > self.max_bytes:
                self._kept.popitem(last=False)
        return token

    def get(self, token: str):
        """(ratings, spec) kept under ``token``, or None."""
        with self._lock:
            found = self._kept.get(str(token))
            if found is None:
                return None
            self._kept.move_to_end(str(token))
            return found[0], dict(found[1])

    def __len__(self) -> int:
        return len(self._kept)
