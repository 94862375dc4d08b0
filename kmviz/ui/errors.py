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


def is_streamlit_control(exc: BaseException) -> bool:
    # st.stop(), st.rerun() and st.switch_page() work by raising; let them through.
    name = type(exc).__name__
    return name in {"StopException", "RerunException"} or type(exc).__module__.startswith(
        "streamlit.runtime.scriptrunner")


def describe_exception(exc: BaseException, action: str) -> dict:
    """What :func:`show_exception` shows for ``exc``, as data (kept in the session state by
    a callback, shown later by :func:`show_described`): ``message``, and for an unexpected
    error (not a ValueError) ``details``, the traceback, logged here."""
    if isinstance(exc, ValueError):
        return {"message": str(exc) or f"{action} failed: invalid input.", "details": None}
    log.exception("Unexpected error while %s", action, exc_info=exc)
    return {"message": f"Something went wrong while {action}: {type(exc).__name__}: {exc}. "
                       "Try other settings or reload the data; if it keeps happening, report "
                       "it with the details below.",
            "details": "".join(traceback.format_exception(exc))}


def show_described(described: dict) -> str:
    """Render a :func:`describe_exception` record as text (an error box, the traceback
    folded away); returns the message."""
    message = described["message"]
    if described.get("details") is None:
        st.error(md_escape(message), icon=":material/error:")
    else:
        st.error(md_escape(message), icon=":material/bug_report:")
        with st.expander("Details"):
            st.code(described["details"], language="text")
    return message


def show_exception(exc: BaseException, action: str, details: str | None = None) -> str:
    """Render ``exc``: a ValueError's own message, or a friendly note with details folded.

    Messages are shown as plain text: they quote file names, ids and lines of user files."""
    described = describe_exception(exc, action)
    if details is not None and described["details"] is not None:
        described["details"] = details
    return show_described(described)


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
        if is_streamlit_control(exc):
            raise
        outcome.ok = False
        outcome.message = show_exception(exc, action)
