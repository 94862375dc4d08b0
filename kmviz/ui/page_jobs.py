"""One helper for the work a page starts that costs as much as a fit (a planted fit, a
grid of refits, a phase diagram): it runs in a background thread, waits for its turn in the
server's fit queue (:func:`kmviz.ui.scheduler.gate`), shows its progress with a Stop, and
hands its result back to the page under a key of the session, so that it survives leaving
the page and coming back.

A page writes::

    if st.button("Compute the grid"):
        start("ocmf_grid", lambda progress: validation_grid(..., progress=...),
              what="the rho x lambda grid")
    grid = result("ocmf_grid")   # None while it runs (its progress and Stop are drawn)

``work(progress)`` calls ``progress(done, total, text)`` between its units; once Stop is
pressed that call raises :class:`Stopped`, so the work ends there (the inner steps of a fit
also see Stop through :func:`kmviz._jobs.stop_requested`). A stopped job keeps nothing.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import streamlit as st

from kmviz._jobs import BackgroundJob

from .errors import describe_exception, show_described
from .scheduler import gate, scheduler
from .text import md_escape

#: The session-state key of the page jobs: {key: PageJob}.
JOBS = "page_jobs"
#: How often the progress of a running page job is redrawn (seconds).
EVERY_S = 0.5


class Stopped(Exception):
    """Raised by a stopped job's ``progress`` call: the work ends there."""


class PageJob(BackgroundJob):
    """``work(progress)`` in a thread, in the fit queue; ``result`` or ``error`` at the end
    (``error``: what :func:`kmviz.ui.errors.describe_exception` makes of the exception)."""

    def __init__(self, work: Callable[[Callable], Any], *, what: str):
        super().__init__("kmviz-page-job", gate=gate)
        self.work, self.what = work, str(what)
        self.done_n, self.total, self.text = 0, 1, ""
        self.result: Any = None
        self.error: dict | None = None
        self.started = time.perf_counter()

    def progress(self, done, total, text: str = "") -> None:
        if self.stop_event.is_set():
            raise Stopped
        self.done_n, self.total, self.text = int(done), max(int(total), 1), str(text)

    def _run(self) -> None:
        try:
            with self._turn() as go:
                if go:
                    self.started = time.perf_counter()
                    self.result = self.work(self.progress)
        except Stopped:
            self.result = None
        except Exception as exc:  # noqa: BLE001 - shown on the page, as user_errors does
            self.error = describe_exception(exc, self.what)
        if self.stop_event.is_set():
            self.result = None
        self._set(status="failed" if self.error else
                  "stopped" if self.stop_event.is_set() else "done")


def start(key: str, work: Callable[[Callable], Any], *, what: str) -> PageJob:
    """Start ``work`` as the page job ``key`` (stopping one still running under that key)."""
    jobs = st.session_state.setdefault(JOBS, {})
    old = jobs.get(key)
    if old is not None and not old.done:
        old.stop()
    jobs[key] = job = PageJob(work, what=what).start()
    return job


def running(key: str) -> bool:
    """Whether the page job ``key`` is waiting or running."""
    job = st.session_state.get(JOBS, {}).get(key)
    return job is not None and not job.done


def result(key: str, *, stop_help: str = "Ends the work at its next step; nothing of it "
                                         "is kept.") -> Any:
    """The finished result of the page job ``key`` (None if there is none). While the job
    waits or runs, its progress and Stop are drawn here (redrawn every half second; the page
    runs again once it ends); a failure or a stop is said here."""
    job = st.session_state.get(JOBS, {}).get(key)
    if job is None:
        return None
    if not job.done:
        _progress(job, key, stop_help)
        return None
    if job.status == "failed":
        show_described(job.error)
    elif job.status == "stopped":
        st.info(f"Stopped: {md_escape(job.what)} was not finished, and nothing of it is kept.",
                icon=":material/stop_circle:")
    return job.result


def _progress(job: PageJob, key: str, stop_help: str) -> None:
    @st.fragment(run_every=EVERY_S)
    def _panel():
        if job.done:
            st.rerun(scope="app")
        if job.status == "queued":
            st.info(scheduler().queue_words(job) + f" · {md_escape(job.what)} starts when its "
                    "turn comes.", icon=":material/hourglass_empty:")
        else:
            words = job.text or f"{job.done_n} of {job.total}"
            st.progress(min(job.done_n / job.total, 1.0),
                        text=f"{md_escape(job.what)}: {md_escape(words)} · "
                             f"{time.perf_counter() - job.started:.0f} s")
        if st.button("Stop", key=f"{key}_stop", icon=":material/stop:",
                     disabled=job.stop_event.is_set(), help=stop_help):
            job.stop()

    with st.container():
        _panel()
