"""kmviz._jobs.BackgroundJob: the thread, stop flag and status the page-started jobs share
(the app's TrainingJob, similarity's ComparisonJob, the stability refits), and the gate
that puts the non-Train jobs in the server's fit queue."""

import threading
import time

from kmviz._jobs import BackgroundJob
from kmviz.ui.scheduler import FitScheduler


class Waits(BackgroundJob):
    """Waits for Stop, then says how it ended."""

    def __init__(self):
        super().__init__("kmviz-test-job", "queued")
        self.entered = threading.Event()

    def _run(self):
        self._set(status="running")
        self.entered.set()
        self.stop_event.wait(60)
        self._set(status="stopped" if self.stop_event.is_set() else "done", note="ended")


def test_a_job_runs_until_stopped_and_reports_done():
    job = Waits()
    assert job.status == "queued" and not job.done and not job.thread.is_alive()
    assert job.start() is job
    assert job.entered.wait(60)
    assert job.status == "running" and not job.done
    job.stop()
    job.thread.join(60)
    assert job.done and job.status == "stopped" and job._note == "ended"
    assert job.thread.daemon and job.thread.name == "kmviz-test-job"


class Gated(BackgroundJob):
    """Counts the times its work ran, inside the gate."""

    def __init__(self, gate):
        super().__init__("kmviz-test-gated", gate=gate)
        self.ran = 0

    def _run(self):
        with self._turn() as go:
            if go:
                self.ran += 1
        self._set(status="done" if self.ran else "stopped")


def _wait(cond, seconds=60.0):
    end = time.time() + seconds
    while not cond() and time.time() < end:
        time.sleep(0.01)
    return cond()


def test_a_gated_job_waits_its_turn_in_the_fit_queue_and_runs_once_let_in():
    fits = FitScheduler(1)
    holder = object()
    with fits.slot(holder) as got:  # another fit holds the only place
        assert got
        job = Gated(fits.slot).start()
        assert job.status == "queued"
        assert _wait(lambda: fits.waiting() == 1)
        time.sleep(0.3)
        assert job.ran == 0 and job.status == "queued"  # still waiting, not running
    job.thread.join(60)
    assert job.ran == 1 and job.status == "done" and fits.running() == 0


def test_a_gated_job_stopped_in_the_queue_never_runs_and_frees_its_place():
    fits = FitScheduler(1)
    with fits.slot(object()):
        job = Gated(fits.slot).start()
        assert _wait(lambda: fits.waiting() == 1)
        job.stop()
        job.thread.join(60)
        assert job.ran == 0 and job.status == "stopped" and fits.waiting() == 0


def test_the_apps_gate_takes_a_place_in_the_servers_queue(monkeypatch):
    from kmviz.ui import scheduler as sched

    fits = FitScheduler(1)
    monkeypatch.setattr(sched, "_SCHEDULER", fits)
    seen = []

    class Sees(Gated):
        def _run(self):
            with self._turn() as go:
                seen.append((go, fits.running()))
            self._set(status="done")

    job = Sees(sched.gate).start()
    job.thread.join(60)
    assert seen == [(True, 1)] and fits.running() == 0


def test_solver_comparisons_wait_in_the_fit_queue(monkeypatch):
    """The similarity Optimizers page's job: stopped while queued, no solver ran."""
    from kmviz.similarity.optimizers import ComparisonJob

    fits = FitScheduler(1)
    with fits.slot(object()):
        job = ComparisonJob(None, None, ["newton"], gate=fits.slot).start()
        assert _wait(lambda: fits.waiting() == 1)
        assert job.snapshot()["status"] == "queued"
        job.stop()
        job.thread.join(60)
    assert job.status == "stopped" and job.result is None and job.error == ""
