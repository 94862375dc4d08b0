"""Work a page starts and polls: a daemon thread with a stop flag and a lock-protected
status (plain Python, no Streamlit; Streamlit cannot cancel a running script).

A job subclasses :class:`BackgroundJob`, sets its status in ``__init__`` and writes
``_run``; the page calls :meth:`~BackgroundJob.start`, polls the subclass's snapshot and
:attr:`~BackgroundJob.done`, and :meth:`~BackgroundJob.stop` asks the work to end at its
next check of :attr:`~BackgroundJob.stop_event`. A job given a ``gate`` (a served app's
fit queue, :func:`kmviz.ui.scheduler.gate`) runs its work inside ``with self._turn()``: it
waits there, status "queued", until the gate lets it in.

Long loops inside a fit (a solver's inner steps, CG, line searches, refits) ask
:func:`stop_requested` at a bounded interval: it is true once the stop flag of the job
running in the calling thread is set (a :class:`BackgroundJob` registers its flag for its
thread), or of any :func:`stop_when` block around the call. So Stop ends the work within
one inner step, not after an outer iteration that may take minutes.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable

#: The statuses after which a job's thread has nothing left to do.
FINISHED = ("done", "stopped", "failed")

_flags = threading.local()  # .stack: the stop flags registered in this thread


def _is_set(flag) -> bool:
    return flag.is_set() if hasattr(flag, "is_set") else bool(flag())


def stop_requested() -> bool:
    """Whether the work running in this thread was asked to stop: a flag registered by
    :func:`stop_when` (or the thread's :class:`BackgroundJob`) is set. Cheap (an
    attribute look-up and an ``Event.is_set``): call it every inner step."""
    return any(_is_set(flag) for flag in getattr(_flags, "stack", ()))


@contextmanager
def stop_when(flag):
    """Inside the block, :func:`stop_requested` in this thread is true once ``flag`` (a
    ``threading.Event``, or a callable returning true to stop) is set; blocks nest. From
    Python: run a fit in a thread inside ``with stop_when(event):`` and set the event to
    end it within one inner step (the fit then ends as if its callback said stop)."""
    if flag is None:
        yield
        return
    stack = getattr(_flags, "stack", None)
    if stack is None:
        stack = _flags.stack = []
    stack.append(flag)
    try:
        yield
    finally:
        stack.remove(flag)


class BackgroundJob:
    """A thread running ``self._run``, its stop flag and the lock around its status."""

    def __init__(self, thread_name: str, status: str = "running", *,
                 gate: Callable | None = None):
        self.stop_event = threading.Event()
        self._lock = threading.Lock()
        self._gate = gate
        self._status = "queued" if gate is not None and status == "running" else status
        self._started = time.time()
        self.thread = threading.Thread(target=self._run_until_stopped, name=thread_name,
                                       daemon=True)
        on_create = getattr(gate, "on_create", None)
        if on_create is not None:  # the gate's owner of the job (a served app's browser)
            on_create(self)

    def _run_until_stopped(self) -> None:
        with stop_when(self.stop_event):  # inner loops of the work see Stop at once
            self._run()

    def start(self):
        """Start the thread; returns the job."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Ask the work to end at its next check of ``stop_event``."""
        self.stop_event.set()

    @property
    def done(self) -> bool:
        """The status is one of :data:`FINISHED`."""
        with self._lock:
            return self._status in FINISHED

    @property
    def status(self) -> str:
        with self._lock:
            return self._status

    def _set(self, **fields) -> None:
        """Set ``self._<name>`` for each field, under the lock (one consistent update)."""
        with self._lock:
            for name, value in fields.items():
                setattr(self, f"_{name}", value)

    @contextmanager
    def _turn(self):
        """Yields True once the work may run (at once without a gate; else when the gate
        lets it in, status "running"), False if the job was stopped while it waited."""
        if self._gate is None:
            yield True
            return
        with self._gate(self, self.stop_event) as got:
            if got and not self.stop_event.is_set():
                self._set(status="running")
                yield True
            else:
                yield False

    def _run(self) -> None:  # pragma: no cover - every job writes its own
        raise NotImplementedError
