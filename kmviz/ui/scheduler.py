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

On an app served to others, two more rules keep one browser from holding the server:

- **At most** :func:`max_fits_per_owner` **running-or-queued fits per owner** (a browser,
  :func:`kmviz.ui.state.session_owner`; ``kmviz app --max-fits-per-owner N`` or
  ``$KMVIZ_MAX_FITS_PER_OWNER``, default 1): :meth:`FitScheduler.admit` refuses another
  with :class:`OwnerFitLimitError`, whose message says why and what to do.
- **A fit whose browser is gone is cancelled**: every script run notes its session under
  its owner (:meth:`FitScheduler.note_session`); a watcher thread polls the sessions'
  liveness (Streamlit's runtime: a session is active while its tab's websocket is
  connected, :func:`streamlit_session_alive`) and, once none of an owner's sessions has
  been alive for :data:`GONE_AFTER_S` seconds (a reconnect in between keeps it), stops
  that owner's fits: a queued one leaves the queue, a running one ends at its next
  inner step (:func:`kmviz._jobs.stop_requested`).

No Streamlit is imported in here: the tests drive it directly with their own liveness
probe.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import Callable

#: Environment variable with the server-wide limit of concurrent fits (``kmviz app
#: --max-fits``).
MAX_FITS_ENV = "KMVIZ_MAX_FITS"
#: Environment variable with the limit of running-or-queued fits per owner on a served app
#: (``kmviz app --max-fits-per-owner``).
MAX_FITS_PER_OWNER_ENV = "KMVIZ_MAX_FITS_PER_OWNER"
DEFAULT_MAX_FITS_PER_OWNER = 1
#: Seconds none of an owner's sessions may be alive before its fits are cancelled (a
#: reconnecting tab, a reload, comes back well within it).
GONE_AFTER_S = 10.0
#: Seconds between two polls of the sessions' liveness.
WATCH_EVERY_S = 1.0


class OwnerFitLimitError(ValueError):
    """This owner already has as many running-or-queued fits as one owner may."""


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


def max_fits_per_owner() -> int:
    """Running-or-queued fits one owner may have on a served app:
    ``$KMVIZ_MAX_FITS_PER_OWNER`` if set, else 1.

    Raises
    ------
    ValueError
        The variable is set but is not a positive whole number.
    """
    text = os.environ.get(MAX_FITS_PER_OWNER_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_FITS_PER_OWNER
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{MAX_FITS_PER_OWNER_ENV}={text!r} is not a positive whole number: "
                         "set it to how many fits one browser may have running or queued "
                         f"(e.g. 1), or unset it for the default "
                         f"({DEFAULT_MAX_FITS_PER_OWNER}).")
    return value


def streamlit_session_alive(session_id: str) -> bool:
    """Whether the Streamlit session ``session_id`` has a connected tab (its websocket);
    True when there is no Streamlit runtime to ask (bare scripts, tests)."""
    try:
        from streamlit import runtime

        if not runtime.exists():
            return True
        return bool(runtime.get_instance().is_active_session(session_id))
    except Exception:  # noqa: BLE001 - never cancel a fit on a probe that failed
        return True


def owner_limit_words(limit: int, running: int, queued: int) -> str:
    """Why a Train click was refused under the per-owner limit, and what to do."""
    held = ", ".join(part for part in (f"{running} running" if running else "",
                                       f"{queued} queued" if queued else "") if part)
    fits = "fit" if limit == 1 else "fits"
    return (f"Not started: this browser already has {held} on this server, and each browser "
            f"may have at most {limit} {fits} running or queued at a time, so that every "
            "user gets a turn. Stop it on the Train page of the tab that started it, or "
            "wait for it to finish, then press Train again. A fit whose tabs are all "
            f"closed is cancelled within about {GONE_AFTER_S:.0f} s.")


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

    def __init__(self, limit: int, *, per_owner: int | None = None,
                 alive: Callable[[str], bool] | None = streamlit_session_alive,
                 gone_after: float = GONE_AFTER_S, watch_every: float = WATCH_EVERY_S):
        if int(limit) < 1:
            raise ValueError(f"the limit of concurrent fits must be at least 1, not {limit}")
        if per_owner is not None and int(per_owner) < 1:
            raise ValueError(f"the limit of fits per owner must be at least 1, not "
                             f"{per_owner}")
        self.limit = int(limit)
        self.per_owner = None if per_owner is None else int(per_owner)
        self._alive, self.gone_after, self.watch_every = alive, float(gone_after), \
            float(watch_every)
        self._cond = threading.Condition()
        self._waiting: deque = deque()
        self._running: set = set()
        self._owned: dict = {}      # ticket -> owner, from admit until the ticket is done
        self._watched: dict = {}    # ticket -> owner: other jobs (gate), watched, not counted
        self._sessions: dict = {}   # owner -> set of session ids seen
        self._gone_since: dict = {}  # owner -> time.monotonic() when none was alive
        self._ever: set = set()     # owners with a session seen while they held a fit
        self._watcher: threading.Thread | None = None
        self.cancelled: list = []   # (ticket, owner) stopped because the browser left

    # -- owners -------------------------------------------------------------------------
    @staticmethod
    def _finished(ticket) -> bool:
        return bool(getattr(ticket, "done", False))

    def _prune(self) -> None:
        for table in (self._owned, self._watched):
            for t in [t for t in table if self._finished(t)]:
                del table[t]

    def owned(self, owner) -> list:
        """The running-or-queued tickets of ``owner`` (finished ones are dropped)."""
        with self._cond:
            self._prune()
            return [t for t, o in self._owned.items() if o == owner]

    def admit(self, ticket, owner, session_id: str | None = None) -> None:
        """Count ``ticket`` as ``owner``'s until it is done (its ``done`` is true), or
        refuse it with :class:`OwnerFitLimitError` when the owner has
        :attr:`per_owner` already. ``owner=None`` (a private app): no limit, no watch."""
        if owner is None:
            return
        with self._cond:
            self._prune()
            mine = [t for t, o in self._owned.items() if o == owner]
            if self.per_owner is not None and len(mine) >= self.per_owner:
                running = sum(1 for t in mine if t in self._running)
                raise OwnerFitLimitError(owner_limit_words(self.per_owner, running,
                                                           len(mine) - running))
            self._owned[ticket] = owner
            if session_id:
                self._sessions.setdefault(owner, set()).add(session_id)
            if self._sessions.get(owner):
                self._ever.add(owner)
        self._watch()

    def watch(self, ticket, owner, session_id: str | None = None) -> None:
        """Cancel ``ticket`` (a job through :func:`gate`: stability refits, solver
        comparisons) once ``owner``'s tabs are all gone, like a Train fit; it does not
        count towards :attr:`per_owner`. ``owner=None``: not watched."""
        if owner is None:
            return
        with self._cond:
            self._prune()
            self._watched[ticket] = owner
            if session_id:
                self._sessions.setdefault(owner, set()).add(session_id)
            if self._sessions.get(owner):
                self._ever.add(owner)
        self._watch()

    def note_session(self, owner, session_id: str | None) -> None:
        """A script run of ``owner``'s browser in session ``session_id`` (any tab)."""
        if owner is None or not session_id:
            return
        with self._cond:
            self._sessions.setdefault(owner, set()).add(session_id)
            self._gone_since.pop(owner, None)
            if owner in self._owned.values() or owner in self._watched.values():
                self._ever.add(owner)

    def sweep(self, now: float | None = None) -> list:
        """Stop the fits of owners none of whose sessions has been alive for
        :attr:`gone_after` seconds; returns the tickets stopped. The watcher calls it
        every :attr:`watch_every` seconds."""
        if self._alive is None:
            return []
        now = time.monotonic() if now is None else now
        with self._cond:
            self._prune()
            owners = set(self._owned.values()) | set(self._watched.values())
            idle = {o: set(v) for o, v in self._sessions.items() if o not in owners}
            # only owners whose tabs were seen can be judged gone (a fit admitted without a
            # session, outside a browser, is never cancelled)
            owners = {o for o in owners if o in self._ever}
            sessions = {o: set(self._sessions.get(o, ())) for o in owners}
        for owner, sids in idle.items():   # forget the closed tabs of owners without fits
            dead = {sid for sid in sids if not self._alive(sid)}
            with self._cond:
                known = self._sessions.get(owner)
                if known is not None:
                    known.difference_update(dead)
                    if not known:
                        del self._sessions[owner]
        stopped = []
        for owner in owners:
            live = {sid for sid in sessions[owner] if self._alive(sid)}
            with self._cond:
                known = self._sessions.setdefault(owner, set())
                known.difference_update(sessions[owner] - live)  # closed ones are gone
                if known:   # a tab of this browser is connected (or came since)
                    self._gone_since.pop(owner, None)
                    continue
                since = self._gone_since.setdefault(owner, now)
                if now - since < self.gone_after:
                    continue
                tickets = []
                for table in (self._owned, self._watched):
                    mine = [t for t, o in table.items() if o == owner]
                    for t in mine:
                        del table[t]
                    tickets += mine
                self._gone_since.pop(owner, None)
                self._sessions.pop(owner, None)
                self._ever.discard(owner)
                self.cancelled.extend((t, owner) for t in tickets)
                self._cond.notify_all()
            for t in tickets:
                cancel = getattr(t, "cancel_gone", None) or getattr(t, "stop", None)
                if cancel is not None:
                    cancel()
            stopped.extend(tickets)
        return stopped

    def _watch(self) -> None:
        """Start the liveness watcher once (a daemon thread) when there is a probe."""
        if self._alive is None:
            return
        with self._cond:
            if self._watcher is not None and self._watcher.is_alive():
                return
            self._watcher = threading.Thread(target=self._watch_loop,
                                             name="kmviz-fit-watcher", daemon=True)
            self._watcher.start()

    def _watch_loop(self) -> None:
        while True:
            time.sleep(self.watch_every)
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - the watcher must outlive one bad probe
                pass
            with self._cond:
                self._prune()
                if not (self._owned or self._watched):   # nothing to watch: end (the
                    # next admit or watch starts it again)
                    self._watcher = None
                    return

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
            _SCHEDULER = FitScheduler(max_fits(), per_owner=max_fits_per_owner())
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


#: () -> (owner or None, session id or None) of the script run making a job; set by
#: :mod:`kmviz.ui.state` (:func:`set_job_owner`), which knows the browser.
_job_owner: Callable[[], tuple] | None = None


def set_job_owner(probe: Callable[[], tuple] | None) -> None:
    """Tell :func:`gate` how to find the browser (owner, session) making a job."""
    global _job_owner
    _job_owner = probe


def _watch_in_session(job) -> None:
    """``gate.on_create``: a job made in a served app's script run is watched under its
    browser (:meth:`FitScheduler.watch`), so it ends when the browser's tabs are gone."""
    if _job_owner is None:
        return
    try:
        owner, sid = _job_owner()
    except Exception:  # noqa: BLE001 - no script run (tests, bare scripts): not watched
        return
    scheduler().watch(job, owner, sid)


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


#: :class:`kmviz._jobs.BackgroundJob` calls this with the new job, in the thread making it.
gate.on_create = _watch_in_session
