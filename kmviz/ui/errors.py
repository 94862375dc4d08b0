"""Turn exceptions into messages a user can act on, never a raw traceback on the page."""

from __future__ import annotations

import logging
import traceback
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

from .text import md_escape

log = logging.getLogger("kmviz.ui")


@dataclass
class Outcome:
    """Filled in by :func:`user_errors`: ``ok`` is False when the block failed."""

    ok: bool = True
    message: str = ""


def _is_streamlit_control(exc: BaseException) -> bool:
    # st.stop(), st.rerun() and st.switch_page() work by raising; let them through.
    name = type(exc).__name__
    return name in {"StopException", "RerunException"} or type(exc).__module__.startswith(
        "streamlit.runtime.scriptrunner")


def show_exception(exc: BaseException, action: str, details: str | None = None) -> str:
    """Render ``exc``: a ValueError's own message, or a friendly note with details folded.

    Messages are shown as plain text: they quote file names, ids and lines of user files."""
    if isinstance(exc, ValueError):
        message = str(exc) or f"{action} failed: invalid input."
        st.error(md_escape(message), icon=":material/error:")
        return message
    log.exception("Unexpected error while %s", action)
    message = (f"Something went wrong while {action}: {type(exc).__name__}: {exc}. "
               "Try other settings or reload the data; if it keeps happening, report it with "
               "the details below.")
    st.error(md_escape(message), icon=":material/bug_report:")
    with st.expander("Details"):
        st.code(details or "".join(traceback.format_exception(exc)), language="text")
    return message


@contextmanager
def user_errors(action: str):
    """Run a block; show its ValueError messages with ``st.error`` and hide tracebacks.

    Usage::

        with user_errors("loading the file") as outcome:
            data = load(path)
        if not outcome.ok:
            st.stop()
    """
    outcome = Outcome()
    try:
        yield outcome
    except Exception as exc:  # noqa: BLE001 - the point is to show every error politely
        if _is_streamlit_control(exc):
            raise
        outcome.ok = False
        outcome.message = show_exception(exc, action)
