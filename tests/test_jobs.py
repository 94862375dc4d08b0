"""kmviz._jobs.BackgroundJob: the thread, stop flag and status the page-started jobs share
(the app's TrainingJob, similarity's ComparisonJob)."""

import threading

from kmviz._jobs import BackgroundJob


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
