"""Work a page starts and polls: a daemon thread with a stop flag and a lock-protected
status (plain Python, no Streamlit; Streamlit cannot cancel a running script).

A job subclasses :class:`BackgroundJob`, sets its status in ``__init__`` and writes
``_run``; the page calls :meth:`~BackgroundJob.start`, polls the subclass's snapshot and
:attr:`~BackgroundJob.done`, and :meth:`~BackgroundJob.stop` asks the work to end at its
next check of :attr:`~BackgroundJob.stop_event`.
"""

from __future__ import annotations

import threading
import time

#: The statuses after which a job's thread has nothing left to do.
FINISHED = ("done", "stopped", "failed")


class BackgroundJob:
    """A thread running ``self._run``, its stop flag and the lock around its status."""

    def __init__(self, thread_name: str, status: str = "running"):
        self.stop_event = threading.Event()
        self._lock = threading.Lock()
        self._status = status
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

    def _run(self) -> None:  # pragma: no cover - every job writes its own
        raise NotImplementedError
