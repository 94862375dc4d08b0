"""Work a page starts and polls: a daemon thread with a stop flag and a lock-protected
status (plain Python, no Streamlit; Streamlit cannot cancel a running script).

A job subclasses :class:`BackgroundJob`, sets its status in ``__init__`` and writes
``_run``; the page calls :meth:`~BackgroundJob.start`, polls the subclass's snapshot and
:attr:`~BackgroundJob.done`, and :meth:`~BackgroundJob.stop` asks the work to end at its
next check of :attr:`~BackgroundJob.stop_event`. A job given a ``gate`` (a served app's
fit queue, :func:`kmviz.ui.scheduler.gate`) runs its work inside ``with self._turn()``: it
waits there, status "queued", until the gate lets it in.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable

#: The statuses after which a job's thread has nothing left to do.
FINISHED = ("done", "stopped", "failed")


class BackgroundJob:
    """A thread running ``self._run``, its stop flag and the lock around its status."""

    def __init__(self, thread_name: str, status: str = "running", *,
                 gate: Callable | None = None):
        self.stop_event = threading.Event()
        self._lock = threading.Lock()
        self._gate = gate
        self._status = "queued" if gate is not None and status == "running" else status
        self._started = time.time()
        self.thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

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
