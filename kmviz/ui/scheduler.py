"""Fair sharing of the server's cores between sessions' fits: a FIFO queue and a limit.

Each session runs at most one fit at a time (:func:`kmviz.ui.training.start_requested_job`
refuses a second). Across sessions, at most :func:`max_fits` fits run at once; the others
wait in a first-in-first-out queue and the Train page shows their place in line
("Queued: 2nd in line, 1 fit running"). A waiting fit leaves the queue when its Stop is
pressed.

The default limit is one fit per two cores (``max(1, cores // 2)``): each running fit then
keeps two Numba threads for its parallel kernels, and fits that run one after another at
full speed give every session its result sooner on average than fits that all share the
cores at once (the first result comes after one fit's time, not after all of them). The
operator sets it with ``kmviz app --max-fits N`` (or ``$KMVIZ_MAX_FITS``).

Numba's thread count is per calling thread (``numba.set_num_threads``), so each fit's
thread sets its own share, :func:`threads_per_fit`: the Numba threads divided by the
limit, so that the running fits together never ask for more threads than there are.
No Streamlit in here: the tests drive it directly.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from contextlib import contextmanager

#: Environment variable with the server-wide limit of concurrent fits (``kmviz app
#: --max-fits``).
MAX_FITS_ENV = "KMVIZ_MAX_FITS"


def cores() -> int:
    """The cores this process may use (its CPU affinity where the system says it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_max_fits() -> int:
    """One concurrent fit per two cores, at least one."""
    return max(1, cores() // 2)


def max_fits() -> int:
    """The server's limit of concurrent fits: ``$KMVIZ_MAX_FITS`` if set, else the default.

    Raises
    ------
    ValueError
        The variable is set but is not a positive whole number.
    """
    text = os.environ.get(MAX_FITS_ENV, "").strip()
    if not text:
        return default_max_fits()
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{MAX_FITS_ENV}={text!r} is not a positive whole number: set it to "
                         "how many fits may run at once (e.g. 1), or unset it for the "
                         f"default ({default_max_fits()} on this machine).")
    return value


def numba_threads() -> int:
    """Numba's thread pool size (``NUMBA_NUM_THREADS``; the core count by default)."""
    try:
        import numba

        return max(1, int(numba.config.NUMBA_NUM_THREADS))
    except Exception:  # noqa: BLE001 - no Numba: nothing to share
        return cores()


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class FitScheduler:
    """At most ``limit`` fits at once, the others in a FIFO queue.

    A fit calls :meth:`slot` around its work: it blocks until the fit is first in line and
    a place is free (or its stop event is set: then it yields False and leaves the queue).
    """

    def __init__(self, limit: int):
        if int(limit) < 1:
            raise ValueError(f"the limit of concurrent fits must be at least 1, not {limit}")
        self.limit = int(limit)
        self._cond = threading.Condition()
        self._waiting: deque = deque()
        self._running: set = set()

    # -- the queue ----------------------------------------------------------------------
    def _acquire(self, ticket, stop_event: threading.Event | None, poll: float) -> bool:
        with self._cond:
            self._waiting.append(ticket)
            try:
                while not (self._waiting[0] == ticket and len(self._running) < self.limit):
                    if stop_event is not None and stop_event.is_set():
                        return False
                    self._cond.wait(poll)
                self._running.add(ticket)
                return True
            finally:
                self._waiting.remove(ticket)
                self._cond.notify_all()  # the next in line may go now

    def _release(self, ticket) -> None:
        with self._cond:
            self._running.discard(ticket)
            self._cond.notify_all()

    @contextmanager
    def slot(self, ticket, stop_event: threading.Event | None = None, *, poll: float = 0.2):
        """Wait for a place, in order of arrival; yields True once the fit may run, or
        False if ``stop_event`` was set while it waited (the place is never taken then)."""
        got = self._acquire(ticket, stop_event, poll)
        try:
            yield got
        finally:
            if got:
                self._release(ticket)

    # -- what the page shows ------------------------------------------------------------
    def position(self, ticket) -> int:
        """1 for the first in line, 2 for the second ...; 0 when not waiting."""
        with self._cond:
            for i, t in enumerate(self._waiting, start=1):
                if t == ticket:
                    return i
            return 0

    def running(self) -> int:
        with self._cond:
            return len(self._running)

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def threads_per_fit(self, total: int | None = None) -> int:
        """Numba threads each fit may use so that ``limit`` fits fit the pool together."""
        total = numba_threads() if total is None else int(total)
        return max(1, total // self.limit)

    def queue_words(self, ticket) -> str:
        """"Queued: 2nd in line, 1 fit running (at most 1 at a time on this server)"."""
        place, busy = self.position(ticket), self.running()
        where = f"{ordinal(place)} in line" if place else "next"
        fits = "fit" if busy == 1 else "fits"
        return (f"Queued: {where}, {busy} {fits} running (at most {self.limit} at a time on "
                "this server)")


_SCHEDULER: FitScheduler | None = None
_SCHEDULER_LOCK = threading.Lock()


def scheduler() -> FitScheduler:
    """The server process's scheduler (limit from :func:`max_fits`, read on first use)."""
    global _SCHEDULER
    with _SCHEDULER_LOCK:
        if _SCHEDULER is None:
            _SCHEDULER = FitScheduler(max_fits())
        return _SCHEDULER


@contextmanager
def fit_threads(n: int):
    """Numba's thread count for this thread's parallel kernels set to ``n`` inside (it is
    per thread: other fits keep theirs), restored on the way out."""
    try:
        import numba
    except ImportError:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), int(numba.config.NUMBA_NUM_THREADS))))
    try:
        yield
    finally:
        numba.set_num_threads(before)


@contextmanager
def gate(ticket, stop_event: threading.Event | None = None):
    """A place in the server's fit queue and its share of Numba's threads, for work that is
    not a Train fit but costs as much (stability refits, solver comparisons): the
    ``gate`` of a :class:`kmviz._jobs.BackgroundJob`."""
    fits = scheduler()
    with fits.slot(ticket, stop_event) as got:
        if not got:
            yield False
            return
        with fit_threads(fits.threads_per_fit()):
            yield True
