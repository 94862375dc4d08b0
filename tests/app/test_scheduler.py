"""Fair sharing of the server's cores (issue 24, item 1): a FIFO queue of fits with a
server-wide limit, their place in line, one fit per session, each fit's share of Numba's
threads, and `kmviz app --max-fits`."""

import threading
import time

import pytest

from kmviz import cli
from kmviz.ui import scheduler as sch
from kmviz.ui.scheduler import FitScheduler, ordinal

#: How long a thread of these tests may take to get where the test waits for it. Only an
#: upper bound (every wait ends as soon as its condition holds): a box shared past its cores
#: can hold a thread off the CPU for seconds, and a holder that let go of its place after 5 s
#: would let the next fit run while the test still counts on the queue.
PATIENCE = 60.0


def _hold(fits, ticket, log, release, stop=None, started=None):
    with fits.slot(ticket, stop) as got:
        log.append((ticket, got))
        if started is not None:
            started.set()
        if got:
            release.wait(PATIENCE)


def _wait_until(cond, timeout=PATIENCE):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_fits_run_in_order_of_arrival_up_to_the_limit():
    fits = FitScheduler(2)
    log, releases, threads = [], {}, []
    for name in "abcde":
        releases[name] = threading.Event()
        t = threading.Thread(target=_hold, args=(fits, name, log, releases[name]), daemon=True)
        t.start()
        threads.append(t)
        _wait_until(lambda n=name: fits.position(n) > 0 or any(x == n for x, _ in log))
    _wait_until(lambda: fits.running() == 2)
    assert [x for x, _ in log] == ["a", "b"]
    assert [fits.position(n) for n in "cde"] == [1, 2, 3]
    assert fits.queue_words("d") == ("Queued: 2nd in line, 2 fits running (at most 2 at a "
                                     "time on this server)")
    releases["b"].set()   # a place frees: the first in line goes, not any other
    _wait_until(lambda: len(log) == 3)
    assert log[2] == ("c", True) and fits.position("d") == 1 and fits.position("e") == 2
    for e in releases.values():
        e.set()
    for t in threads:
        t.join(PATIENCE)
    assert [x for x, _ in log] == list("abcde") and fits.running() == 0


def test_a_stopped_fit_leaves_the_queue_without_running():
    fits = FitScheduler(1)
    log, hold, stop = [], threading.Event(), threading.Event()
    first = threading.Thread(target=_hold, args=(fits, "a", log, hold), daemon=True)
    first.start()
    _wait_until(lambda: fits.running() == 1)
    second = threading.Thread(target=_hold, args=(fits, "b", log, threading.Event(), stop),
                              daemon=True)
    second.start()
    _wait_until(lambda: fits.position("b") == 1)
    t0 = time.monotonic()
    stop.set()
    second.join(PATIENCE)
    assert time.monotonic() - t0 < 1.0
    assert ("b", False) in log and fits.waiting() == 0 and fits.running() == 1
    hold.set()
    first.join(PATIENCE)
    assert fits.running() == 0


def test_each_fit_gets_its_share_of_the_numba_threads():
    assert FitScheduler(1).threads_per_fit(8) == 8
    assert FitScheduler(4).threads_per_fit(8) == 2
    assert FitScheduler(3).threads_per_fit(2) == 1   # never zero


def test_fit_threads_sets_and_restores_this_threads_numba_count():
    numba = pytest.importorskip("numba")
    before = numba.get_num_threads()
    seen = {}

    def other():
        seen["other"] = numba.get_num_threads()

    with sch.fit_threads(1):
        assert numba.get_num_threads() == 1
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert numba.get_num_threads() == before
    assert seen["other"] == numba.config.NUMBA_NUM_THREADS  # per thread: others keep theirs


def test_the_limit_comes_from_the_environment_or_the_cores(monkeypatch):
    monkeypatch.delenv(sch.MAX_FITS_ENV, raising=False)
    monkeypatch.setattr(sch, "cores", lambda: 8)
    assert sch.max_fits() == 4
    monkeypatch.setattr(sch, "cores", lambda: 1)
    assert sch.max_fits() == 1
    monkeypatch.setenv(sch.MAX_FITS_ENV, "3")
    assert sch.max_fits() == 3
    monkeypatch.setenv(sch.MAX_FITS_ENV, "zero")
    with pytest.raises(ValueError, match="KMVIZ_MAX_FITS='zero' is not a positive"):
        sch.max_fits()


def test_ordinals():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]


def test_app_max_fits_reaches_the_server_environment(capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "_serve", lambda cmd, env=None, cwd=None: calls.append(env) or 0)
    monkeypatch.delenv(sch.MAX_FITS_ENV, raising=False)
    assert cli.main(["app", "--max-fits", "3"]) == 0
    assert calls[0][sch.MAX_FITS_ENV] == "3"
    assert cli.main(["app"]) == 0
    assert sch.MAX_FITS_ENV not in calls[1]
    capsys.readouterr()
    assert cli.main(["app", "--max-fits", "0"]) == 2 and len(calls) == 2
    err = capsys.readouterr().err
    assert "--max-fits" in err and "positive whole number" in err and "Traceback" not in err
