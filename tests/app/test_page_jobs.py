"""Work a page starts (a planted fit, a grid of refits) runs as a page job: it waits for its
turn in the server's fit queue behind a running fit, shows that it waits, then draws its
result; Stop ends it between its steps and keeps nothing (kmviz.ui.page_jobs)."""

import threading
import time

import pytest

from kmviz.ui import page_jobs
from kmviz.ui import scheduler as sch
from kmviz.ui.scheduler import FitScheduler
from tests.app.apphelpers import goto, new_session, plotly_specs, wait_page_job

RECOVERY = "app_pages/gfm_recovery.py"


def _wait(cond, timeout=60):
    end = time.time() + timeout
    while not cond():
        assert time.time() < end, "timed out"
        time.sleep(0.05)


@pytest.mark.slow  # an AppTest fit
def test_a_page_fit_waits_behind_a_running_fit_then_draws(monkeypatch):
    fits = FitScheduler(1)
    monkeypatch.setattr(sch, "_SCHEDULER", fits)
    release, holding = threading.Event(), threading.Event()

    def hold():  # another session's Train fit holds the only slot
        with fits.slot("other session"):
            holding.set()
            release.wait(60)
    threading.Thread(target=hold, daemon=True).start()
    holding.wait(10)
    at = goto(new_session(), RECOVERY)
    at.slider(key="gfm_rec_d").set_value(20)
    at.slider(key="gfm_rec_batches").set_value(4)
    at.button[0].click().run()
    job = at.session_state[page_jobs.JOBS]["gfm_recovery_result"]
    _wait(lambda: fits.waiting() == 1)
    time.sleep(0.3)
    assert job.status == "queued" and job.result is None
    at.run()
    assert not at.exception
    assert any("Queued" in i.value and "fitting the planted problem" in i.value
               for i in at.info), [i.value for i in at.info]
    assert not [s for s in plotly_specs(at) if "εₜ" in str(s)]  # nothing drawn yet
    release.set()
    wait_page_job(at, "gfm_recovery_result")
    assert job.status == "done" and not at.exception and not at.error
    assert any(t.get("name", "").startswith("εₜ") for s in plotly_specs(at) for t in s["data"])


def test_stop_ends_the_work_between_its_steps_and_keeps_nothing(monkeypatch):
    monkeypatch.setattr(sch, "_SCHEDULER", FitScheduler(1))
    steps, started = [], threading.Event()

    def work(progress):
        for i in range(1000):
            progress(i, 1000, f"step {i}")
            steps.append(i)
            started.set()
            time.sleep(0.01)
        return "finished"

    job = page_jobs.PageJob(work, what="a long grid").start()
    started.wait(10)
    job.stop()
    _wait(lambda: job.done)
    assert job.status == "stopped" and job.result is None and job.error is None
    assert 1 <= len(steps) < 1000


def test_a_failing_job_keeps_the_message_a_page_shows(monkeypatch):
    monkeypatch.setattr(sch, "_SCHEDULER", FitScheduler(1))

    def work(progress):
        raise ValueError("d must be at least 2k: set d >= 4.")

    job = page_jobs.PageJob(work, what="fitting").start()
    _wait(lambda: job.done)
    assert job.status == "failed" and job.result is None
    assert job.error["message"] == "d must be at least 2k: set d >= 4."
    assert job.error["details"] is None  # a user error: no traceback shown
