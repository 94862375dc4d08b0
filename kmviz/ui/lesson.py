"""Lesson mode: a short list of links walked through with Next / Back, the controls hidden.

A lesson is a TOML file (``kmviz app --lesson FILE``; kmviz ships one per family in
``lessons/``)::

    title = "Dual gradient descent for the Kolmogorov model (Figs. 1 and 2)"

    [[steps]]
    title = "The data: a planted Kolmogorov model"
    link = "/data?dataset=planted-km&data.D=4"
    note = "Every user is a mixture of D = 4 elementary events ..."

Each step's ``link`` is an app link (:mod:`kmviz.ui.links`); its ``note`` is shown above
the page. In lesson mode (``?lesson=1``, ``?lesson=km`` for a shipped lesson, or the
sidebar's switch) the settings of the pages are hidden, the sidebar lists only the
lesson's pages, and the figures, their captions and the Train button stay.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlparse

import streamlit as st

from kmviz.exceptions import InvalidParameterError

from . import links
from .address import LESSON_NAME, LESSON_ON, LESSON_STEP, PRESENT_ON, apply_link, link_context

#: The lesson ``kmviz app --lesson FILE`` serves (a file path, or a shipped lesson's name).
LESSON_ENV = "KMVIZ_LESSON"
#: The shipped lessons, one per family (``lessons/<family>.toml`` of the checkout).
LESSONS_DIR = Path(__file__).resolve().parents[2] / "lessons"
_NOTICES = "kmviz_lesson_notices"     # session: what the last step's link got wrong
_OPENED = "kmviz_lesson_opened"       # session: the lesson has opened on a step once
MAX_STEPS = 30
MAX_BYTES = 64 * 1024
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


class LessonError(InvalidParameterError):
    """A lesson file that cannot be used (the message names the file and the step)."""


@dataclass(frozen=True)
class Step:
    title: str
    link: str
    note: str = ""

    @property
    def page(self) -> str:
        return urlparse(self.link).path.strip("/")

    @property
    def query(self) -> dict:
        return dict(parse_qsl(urlparse(self.link).query, keep_blank_values=True))


@dataclass(frozen=True)
class Lesson:
    title: str
    steps: tuple
    source: str = ""

    def pages(self) -> list[str]:
        """The URL paths of the lesson's pages, in order of first use."""
        out = []
        for step in self.steps:
            if step.page not in out:
                out.append(step.page)
        return out


def _text(where: str, table: dict, key: str, *, required: bool = True, limit: int = 2000) -> str:
    value = table.get(key, "" if not required else None)
    if value is None:
        raise LessonError(f"{where} has no {key!r}; add {key} = \"...\".")
    if not isinstance(value, str):
        raise LessonError(f"{where}: {key} must be text in quotes, got {value!r}.")
    if len(value) > limit:
        raise LessonError(f"{where}: {key} is longer than {limit} characters.")
    return value.strip()


def parse_lesson(text: str, source: str = "the lesson") -> Lesson:
    """A :class:`Lesson` from TOML ``text``; :class:`LessonError` names what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LessonError(f"{source} is not valid TOML: {exc}.") from None
    title = _text(source, data, "title", limit=200)
    raw = data.get("steps")
    if not isinstance(raw, list) or not raw:
        raise LessonError(f"{source} has no steps: add [[steps]] tables with a title and a "
                          "link each.")
    if len(raw) > MAX_STEPS:
        raise LessonError(f"{source} has {len(raw)} steps; a lesson has at most {MAX_STEPS}.")
    steps = []
    for n, table in enumerate(raw, 1):
        where = f"{source}, step {n}"
        if not isinstance(table, dict):
            raise LessonError(f"{where} is not a table: write it as [[steps]].")
        link = _text(where, table, "link", limit=1000)
        if not link.startswith("/") or urlparse(link).netloc or urlparse(link).scheme:
            raise LessonError(f"{where}: link must be a path of the app such as "
                              f"\"/train?dataset=planted-km\", got {link!r}.")
        steps.append(Step(title=_text(where, table, "title", limit=200), link=link,
                          note=_text(where, table, "note", required=False)))
    return Lesson(title=title, steps=tuple(steps), source=source)


def shipped_lessons() -> dict:
    """name -> path of the lessons kmviz ships."""
    if not LESSONS_DIR.is_dir():
        return {}
    return {p.stem: p for p in sorted(LESSONS_DIR.glob("*.toml")) if _NAME.match(p.stem)}


def lesson_path(given: str) -> Path:
    """The file of a lesson given as a path or a shipped lesson's name."""
    shipped = shipped_lessons()
    if given in shipped:
        return shipped[given]
    path = Path(given).expanduser()
    if not path.is_file():
        names = ", ".join(shipped) or "none"
        raise LessonError(f"No lesson file {given!r}: give a TOML file, or the name of a "
                          f"shipped lesson ({names}).")
    return path.resolve()


def read_lesson(given: str) -> Lesson:
    """The lesson of a file path or a shipped lesson's name (:func:`lesson_path`)."""
    path = lesson_path(given)
    if path.stat().st_size > MAX_BYTES:
        raise LessonError(f"{path.name} is larger than {MAX_BYTES // 1024} KB; a lesson is "
                          "a short list of links.")
    return parse_lesson(path.read_text(encoding="utf-8"), path.name)


def check_lesson(lesson: Lesson, context: links.Context) -> list[str]:
    """What the lesson's links get wrong (page, names, values), one line each."""
    problems = []
    for n, step in enumerate(lesson.steps, 1):
        _, notices = links.parse_link(step.page, step.query, context)
        problems += [f"step {n} ({step.title}): {text}" for text in notices]
    return problems


# ------------------------------------------------------------------ in the app
@st.cache_data(max_entries=16, show_spinner=False)
def _cached_lesson(given: str, mtime: float) -> Lesson:
    return read_lesson(given)


def active_lesson() -> Lesson | None:
    """The lesson of this session: the shipped one its link named, else the app's
    (``kmviz app --lesson``); None without one (or when it cannot be read: the sidebar
    says why)."""
    given = st.session_state.get(LESSON_NAME) or os.environ.get(LESSON_ENV, "").strip()
    if not given:
        return None
    try:
        path = lesson_path(given)
        return _cached_lesson(str(path), path.stat().st_mtime)
    except (LessonError, OSError) as exc:
        st.sidebar.warning(f"The lesson could not be read: {exc}", icon=":material/school:")
        return None


def lesson_mode() -> bool:
    return bool(st.session_state.get(LESSON_ON))


def _copy_switch(widget_key: str, state_key: str) -> None:
    st.session_state[state_key] = bool(st.session_state.get(widget_key))


def sidebar_switches() -> None:
    """The sidebar's Lesson mode and Presentation switches. Their state lives under our
    own keys (a link sets them; Streamlit drops a widget's own state on a change of
    page), copied into the widgets before they are drawn."""
    st.session_state.setdefault(LESSON_ON, bool(os.environ.get(LESSON_ENV, "").strip()))
    st.session_state.setdefault(PRESENT_ON, False)
    for state_key, label, text in (
            (LESSON_ON, "Lesson mode", "Hide the settings and the pages a lesson does not "
             "use; keep the figures and captions, with Next / Back between the lesson's "
             "pages. The address bar keeps it (lesson=1)."),
            (PRESENT_ON, "Presentation", "Larger text in every chart, for a projector "
             "(present=1).")):
        widget_key = state_key + "_switch"
        st.session_state[widget_key] = bool(st.session_state.get(state_key))
        st.sidebar.toggle(label, key=widget_key, help=text, on_change=_copy_switch,
                          args=(widget_key, state_key))


def navigation(pages: dict, lesson: Lesson | None):
    """``st.navigation`` over every page (links between pages keep working); in lesson
    mode with a lesson, the sidebar lists only Home and the lesson's pages, in the
    lesson's order."""
    if not lesson_mode() or lesson is None:  # every page listed, none folded away
        return st.navigation(pages, expanded=True)
    current = st.navigation(pages, position="hidden")
    by_path = {p.url_path: p for entries in pages.values() for p in entries}
    st.sidebar.markdown(f"**Lesson:** {lesson.title}")
    for path in [""] + [p for p in lesson.pages() if p != ""]:
        if path in by_path:
            st.sidebar.page_link(by_path[path], label=by_path[path].title,
                                 icon=by_path[path].icon or None)
    return current


#: What lesson mode hides in the page (not the sidebar): every input widget, button and
#: expander, and the Data page's choice of a dataset with its captions, except the Train
#: button (a form's submit), Stop, the lesson's own buttons, an Explore page's "Train ...
#: here" (:func:`kmviz.ui.views.no_runs_yet`: the one click to a figure) and the replay's
#: iteration slider and play (:mod:`kmviz.ui.replay`: lesson content).
HIDE_SETTINGS_CSS = """<style>
[data-testid="stMain"] [data-testid="stSelectbox"],
[data-testid="stMain"] [data-testid="stMultiSelect"],
[data-testid="stMain"] [data-testid="stNumberInput"],
[data-testid="stMain"] [data-testid="stTextInput"],
[data-testid="stMain"] [data-testid="stSlider"],
[data-testid="stMain"] [data-testid="stCheckbox"],
[data-testid="stMain"] [data-testid="stRadio"],
[data-testid="stMain"] [data-testid="stFileUploader"],
[data-testid="stMain"] [data-testid="stDownloadButton"],
[data-testid="stMain"] [data-testid="stExpander"],
[data-testid="stMain"] [data-testid="stButton"],
[data-testid="stMain"] .st-key-data_choose { display: none; }
[data-testid="stMain"] .st-key-kmviz_lesson_bar [data-testid="stButton"],
[data-testid="stMain"] .st-key-train_stop [data-testid="stButton"],
[data-testid="stMain"] .st-key-no_runs_train_here [data-testid="stButton"] { display: block; }
[data-testid="stMain"] .st-key-kmviz_replay [data-testid="stSlider"],
[data-testid="stMain"] .st-key-kmviz_replay [data-testid="stCheckbox"] { display: block; }
</style>"""


def hide_settings() -> None:
    if lesson_mode():
        st.html(HIDE_SETTINGS_CSS)


def _current_step(lesson: Lesson, page: str) -> int:
    step = st.session_state.get(LESSON_STEP)
    if isinstance(step, int) and 1 <= step <= len(lesson.steps) and (
            lesson.steps[step - 1].page == page):
        return step
    for n, s in enumerate(lesson.steps, 1):  # the first step on this page
        if s.page == page:
            return n
    return step if isinstance(step, int) and 1 <= step <= len(lesson.steps) else 0


def go_to_step(lesson: Lesson, n: int, pages_by_path: dict, all_pages) -> None:
    """Restore step ``n``'s link in this session and switch to its page."""
    step = lesson.steps[n - 1]
    link, notices = links.parse_link(step.page, step.query, link_context(all_pages))
    link.lesson, link.step = True, n
    apply_link(link, notices, switches=False)  # the switches' widgets are drawn already
    st.session_state[_NOTICES] = notices
    st.switch_page(pages_by_path[link.page])


def lesson_bar(page: str, pages_by_path: dict) -> None:
    """In lesson mode with a lesson: where the class is (step k of n, its note) and Back /
    Next to the neighbouring steps' links."""
    lesson = active_lesson()
    if not lesson_mode() or lesson is None:
        return
    n = _current_step(lesson, page)
    opened, st.session_state[_OPENED] = st.session_state.get(_OPENED), True
    if not n and not opened:
        # the lesson's link (or `kmviz app --lesson`) opens on its first step, not on a page
        # the lesson does not use; later visits to such a page show the bar below
        st.session_state[LESSON_STEP] = 1
        go_to_step(lesson, 1, pages_by_path, list(pages_by_path))
    if n and not opened and set(st.query_params) <= {"lesson", "step"}:
        # opened on a step's page by a bare lesson link (/data?lesson=km): that step's own
        # link restores its data and family (the page kept the session's before: MovieLens
        # under the planted set's note); a link that names its own view keeps it
        st.session_state[LESSON_STEP] = n
        go_to_step(lesson, n, pages_by_path, list(pages_by_path))
    with st.container(border=True, key="kmviz_lesson_bar"):
        for text in st.session_state.pop(_NOTICES, None) or []:
            st.warning(text, icon=":material/link_off:")
        left, mid, right = st.columns([1, 6, 1], vertical_alignment="center")
        back = left.button("Back", icon=":material/arrow_back:", disabled=n <= 1,
                           key="kmviz_lesson_back", use_container_width=True)
        nxt = right.button("Next", icon=":material/arrow_forward:",
                           disabled=n >= len(lesson.steps), key="kmviz_lesson_next",
                           use_container_width=True)
        if n:
            step = lesson.steps[n - 1]
            mid.markdown(f"**{lesson.title}** · step {n} of {len(lesson.steps)}: "
                         f"**{step.title}**")
            if step.note:
                mid.caption(step.note)  # written by the lesson's author
        else:
            mid.markdown(f"**{lesson.title}**: this page is not one of the lesson's steps; "
                         "Next goes to its first step.")
    target = n - 1 if back else n + 1 if nxt else None
    if target is not None and 1 <= target <= len(lesson.steps):
        st.session_state[LESSON_STEP] = target
        go_to_step(lesson, target, pages_by_path, list(pages_by_path))
