"""One browser cannot hold a served app's fit queue (issue 35, defect 3): at most N
running-or-queued fits per owner (`kmviz app --max-fits-per-owner`, default 1), and the fits
of a browser whose tabs are all closed are cancelled and leave the queue."""

import threading
import time

import pytest

from kmviz import cli
from kmviz._jobs import BackgroundJob, stop_requested
from kmviz.ui import scheduler as sch
from kmviz.ui.scheduler import FitScheduler, OwnerFitLimitError

PATIENCE = 60.0


def _wait_until(cond, timeout=PATIENCE):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


class Fit(BackgroundJob):
    """A fit as the Train page runs one: it waits in the queue, then works in small steps
    until stopped (or released), asking stop_requested() like the solvers' inner loops."""

    def __init__(self, fits, name):
        super().__init__(f"kmviz-test-{name}", gate=None)
        self.fits, self.name = fits, name
        self.release = threading.Event()
        self.ran = threading.Event()
        self._status = "queued"

    def _run(self):
        with self.fits.slot(self, self.stop_event) as got:
            if not got:
                self._set(status="stopped")
                return
            self._set(status="running")
            self.ran.set()
            while not (stop_requested() or self.release.is_set()):
                time.sleep(0.01)
        self._set(status="stopped" if self.stop_event.is_set() else "done")


def test_a_second_fit_of_the_same_owner_is_refused_until_the_first_is_done():
    fits = FitScheduler(2, per_owner=1, alive=None)
    a, b, c = Fit(fits, "a"), Fit(fits, "b"), Fit(fits, "c")
    fits.admit(a, "owner-1", "tab-1")
    a.start()
    _wait_until(a.ran.is_set)
    with pytest.raises(OwnerFitLimitError) as refused:
        fits.admit(b, "owner-1", "tab-2")      # Train after a reload: another tab
    words = str(refused.value)
    assert "this browser already has 1 running" in words and "at most 1 fit" in words
    assert "Stop it" in words and "press Train again" in words
    fits.admit(c, "owner-2", "tab-3")          # another browser is not held up by it
    c.start()
    _wait_until(c.ran.is_set)
    a.release.set()
    a.thread.join(PATIENCE)
    assert a.done
    fits.admit(b, "owner-1", "tab-2")          # a's turn is over: b may go now
    assert fits.owned("owner-1") == [b]
    c.release.set()
    c.thread.join(PATIENCE)


def test_queued_fits_count_and_the_limit_is_settable():
    fits = FitScheduler(1, per_owner=2, alive=None)
    a, b, c = Fit(fits, "a"), Fit(fits, "b"), Fit(fits, "c")
    fits.admit(a, "o")
    fits.admit(b, "o")                         # not started yet: still counted
    with pytest.raises(OwnerFitLimitError, match="already has 2 queued.*at most 2 fits"):
        fits.admit(c, "o")
    fits.admit(c, None)                        # a private app: no per-owner rule


@pytest.mark.slow
def test_a_fit_whose_tabs_are_all_closed_is_cancelled_and_leaves_the_queue():
    live = {"x-tab-1", "x-tab-2", "y-tab"}
    fits = FitScheduler(1, per_owner=1, alive=lambda sid: sid in live, gone_after=0.3,
                        watch_every=0.05)
    orphan, waiting, other = Fit(fits, "orphan"), Fit(fits, "waiting"), Fit(fits, "other")
    fits.admit(orphan, "x", "x-tab-1")
    fits.note_session("x", "x-tab-2")          # a second tab of the same browser
    orphan.start()
    _wait_until(orphan.ran.is_set)
    fits.admit(waiting, "z", "z-tab")          # z's only tab closes while it waits
    waiting.start()
    _wait_until(lambda: fits.position(waiting) == 1)
    fits.admit(other, "y", "y-tab")
    other.start()
    live.discard("x-tab-1")                    # one of x's tabs is closed: x is still here
    time.sleep(1.0)
    assert not orphan.stop_event.is_set() and orphan.status == "running"
    live.discard("x-tab-2")                    # every tab of x is closed
    t0 = time.monotonic()
    _wait_until(orphan.stop_event.is_set, 10)
    assert 0.25 <= time.monotonic() - t0 < 5
    _wait_until(lambda: orphan.done, 10)
    assert orphan.status == "stopped"
    # z never had a live tab: its queued fit is cancelled and leaves the queue
    _wait_until(lambda: waiting.done, 10)
    assert waiting.status == "stopped" and not waiting.ran.is_set()
    _wait_until(other.ran.is_set, 10)          # y's fit runs, not behind the orphans
    assert {(t.name, o) for t, o in fits.cancelled} == {("orphan", "x"), ("waiting", "z")}
    assert fits.owned("x") == [] and fits.owned("y") == [other]
    other.release.set()
    other.thread.join(PATIENCE)


@pytest.mark.slow
def test_a_tab_that_reconnects_within_the_grace_keeps_its_fit():
    live = {"t1"}
    fits = FitScheduler(1, per_owner=1, alive=lambda sid: sid in live, gone_after=0.5,
                        watch_every=0.05)
    fit = Fit(fits, "kept")
    fits.admit(fit, "o", "t1")
    fit.start()
    _wait_until(fit.ran.is_set)
    live.discard("t1")
    time.sleep(0.2)
    live.add("t2")                              # a reload: a new session of the browser
    fits.note_session("o", "t2")
    time.sleep(1.0)
    assert not fit.stop_event.is_set()
    fit.release.set()
    fit.thread.join(PATIENCE)
    assert fit.status == "done" and fits.cancelled == []


@pytest.mark.slow
def test_a_failing_liveness_probe_never_cancels():
    def broken(sid):
        raise RuntimeError("no runtime")

    fits = FitScheduler(1, per_owner=1, alive=broken, gone_after=0.0, watch_every=0.05)
    fit = Fit(fits, "f")
    fits.admit(fit, "o", "t")
    fit.start()
    _wait_until(fit.ran.is_set)
    time.sleep(0.5)
    assert not fit.stop_event.is_set()
    fit.release.set()
    fit.thread.join(PATIENCE)
    assert sch.streamlit_session_alive("no-such-session")  # no runtime here: alive


def test_max_fits_per_owner_from_the_environment_and_the_cli(monkeypatch, capsys):
    monkeypatch.delenv(sch.MAX_FITS_PER_OWNER_ENV, raising=False)
    assert sch.max_fits_per_owner() == 1
    monkeypatch.setenv(sch.MAX_FITS_PER_OWNER_ENV, "3")
    assert sch.max_fits_per_owner() == 3
    for bad in ("0", "-1", "two"):
        monkeypatch.setenv(sch.MAX_FITS_PER_OWNER_ENV, bad)
        with pytest.raises(ValueError, match="KMVIZ_MAX_FITS_PER_OWNER"):
            sch.max_fits_per_owner()
    calls = []
    monkeypatch.setattr(cli, "_serve", lambda cmd, env=None, cwd=None: calls.append(env) or 0)
    monkeypatch.delenv(sch.MAX_FITS_PER_OWNER_ENV, raising=False)
    assert cli.main(["app", "--host", "0.0.0.0", "--max-fits-per-owner", "2"]) == 0
    assert calls[0][sch.MAX_FITS_PER_OWNER_ENV] == "2"
    assert cli.main(["app"]) == 0 and sch.MAX_FITS_PER_OWNER_ENV not in calls[1]
    capsys.readouterr()
    assert cli.main(["app", "--max-fits-per-owner", "0"]) == 2
    assert "not a positive whole number" in capsys.readouterr().err


def test_a_fit_admitted_without_a_session_is_never_taken_for_an_orphan():
    fits = FitScheduler(1, per_owner=1, alive=lambda sid: False, gone_after=0.0,
                        watch_every=0.05)
    fit = Fit(fits, "script")
    fits.admit(fit, "o", None)     # no browser session to judge by
    fit.start()
    _wait_until(fit.ran.is_set)
    assert fits.sweep() == [] and fits.sweep(time.monotonic() + 100) == []
    assert not fit.stop_event.is_set()
    fit.release.set()
    fit.thread.join(PATIENCE)


def test_closed_tabs_of_owners_without_fits_are_forgotten():
    live = {"a1", "busy"}
    fits = FitScheduler(1, per_owner=1, alive=lambda sid: sid in live, gone_after=0.0)
    fits.note_session("idle", "a1")
    fits.note_session("idle", "a2")
    held = Fit(fits, "held")
    fits.admit(held, "busy", "busy")
    fits.sweep()
    assert fits._sessions["idle"] == {"a1"}
    live.discard("a1")
    fits.sweep()
    assert "idle" not in fits._sessions and fits._sessions["busy"] == {"busy"}


class Refits(BackgroundJob):
    """A job through the server's gate (stability refits, solver comparisons)."""

    def __init__(self):
        super().__init__("kmviz-test-refits", gate=sch.gate)
        self.ran = threading.Event()

    def _run(self):
        with self._turn() as go:
            if not go:
                self._set(status="stopped")
                return
            self.ran.set()
            while not stop_requested():
                time.sleep(0.01)
        self._set(status="stopped")


@pytest.mark.slow
def test_gate_jobs_of_a_closed_browser_are_cancelled_but_not_counted(monkeypatch):
    from kmviz.ui import state

    assert sch._job_owner is not None     # kmviz.ui.state tells the gate the browser
    live = {"tab"}
    fits = FitScheduler(1, per_owner=1, alive=lambda sid: sid in live, gone_after=0.2,
                        watch_every=0.05)
    monkeypatch.setattr(sch, "_SCHEDULER", fits)
    owner = ["b"]
    monkeypatch.setattr(sch, "_job_owner", lambda: (owner[0], "tab"))
    job = Refits()                          # made in the browser's script run: watched
    assert fits._watched == {job: "b"}
    job.start()
    _wait_until(job.ran.is_set)
    fits.admit(Fit(fits, "train"), "b", "tab")   # a gate job is not a Train fit
    live.clear()
    _wait_until(lambda: job.done, 10)
    assert job.stop_event.is_set() and ("b" in {o for _, o in fits.cancelled})
    owner[0] = None                         # a private app: not watched
    assert Refits() not in fits._watched and len(fits._watched) == 0
