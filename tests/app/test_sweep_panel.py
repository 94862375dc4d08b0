"""The Train page's Sweep expander: a grid of saved runs tagged with their sweep, each point
waiting for its turn in the server's fit queue; Stop keeps the points done (AppTest)."""

import threading
import time

import pytest

from kmviz.runs import RunStore
from kmviz.ui import scheduler as sch
from kmviz.ui.scheduler import FitScheduler
from kmviz.ui.sweep import SWEEP_JOB, SweepJob
from tests.app.apphelpers import TRAIN, goto, load_planted, new_session

pytestmark = pytest.mark.slow  # AppTest sessions that train


def _start(at, values="2,3", seeds=1):
    goto(at, TRAIN)
    at.multiselect(key="sweep_km_vary").set_value(["D", "max_iter"]).run()
    at.text_input(key="sweep_km_D").input(values).run()
    at.text_input(key="sweep_km_max_iter").input("1").run()  # one value: fixed
    at.number_input(key="sweep_km_seeds").set_value(seeds).run()
    at.button(key="sweep_km_start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at.session_state[SWEEP_JOB]


def _wait(cond, timeout=120):
    end = time.time() + timeout
    while not cond():
        assert time.time() < end, "timed out"
        time.sleep(0.1)


def test_a_sweep_from_the_train_page_saves_tagged_runs_in_the_fit_queue(monkeypatch):
    fits = FitScheduler(1)
    monkeypatch.setattr(sch, "_SCHEDULER", fits)
    release, holding = threading.Event(), threading.Event()

    def hold():  # another session's fit holds the only slot
        with fits.slot("other session"):
            holding.set()
            release.wait(60)
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    holding.wait(10)
    at = load_planted(new_session())
    job = _start(at, seeds=2)
    _wait(lambda: job.status == "queued" and fits.waiting() == 1)
    time.sleep(0.5)
    assert job.progress()["done"] == 0 and len(RunStore()) == 0  # waits its turn
    release.set()
    _wait(lambda: job.done)
    at.run()
    assert job.status == "done", job.progress()
    df = RunStore().list()
    assert len(df) == 4 and set(df["D"]) == {2, 3}
    assert sorted(df["random_state"]) == [0, 0, 1, 1]
    assert df["sweep"].nunique() == 1 and df["sweep"].iloc[0] == job.plan.sweep_id
    assert (df["tags"] == "sweep").all() and (df["max_iter"] == 1).all()
    assert any("4 of 4 point" in s.value and "fitted" in s.value for s in at.success)


def test_stop_keeps_the_points_done(monkeypatch):
    fits = FitScheduler(1)
    monkeypatch.setattr(sch, "_SCHEDULER", fits)
    first_point = SweepJob._on_point

    def stop_after_the_first(self, i, n, row):  # Stop pressed once a point is saved:
        first_point(self, i, n, row)           # no race with a fast box finishing them all
        self.stop()
    monkeypatch.setattr(SweepJob, "_on_point", stop_after_the_first)
    at = load_planted(new_session())
    job = _start(at, values="2,3,4,5,6,7,8")
    _wait(lambda: job.done)
    done = job.progress()["done"]
    assert job.status == "stopped" and 1 <= done < 7
    assert len(RunStore()) == done
    at.run()
    assert any("stopped; the points done are kept" in s.value for s in at.success)


def test_a_bad_value_is_refused_naming_the_setting():
    at = load_planted(new_session())
    goto(at, TRAIN)
    at.multiselect(key="sweep_km_vary").set_value(["D"]).run()
    at.text_input(key="sweep_km_D").input("2,0").run()
    at.button(key="sweep_km_start").click().run()
    assert not at.exception and at.error and "D" in at.error[0].value
    assert at.session_state[SWEEP_JOB] is None if SWEEP_JOB in at.session_state else True


def test_a_tpe_search_from_the_train_page(monkeypatch):
    monkeypatch.setattr(sch, "_SCHEDULER", FitScheduler(1))
    at = load_planted(new_session())
    goto(at, TRAIN)
    at.multiselect(key="sweep_km_vary").set_value(["D", "lambda_theta"]).run()
    at.text_input(key="sweep_km_D").input("2,5").run()
    at.text_input(key="sweep_km_lambda_theta").input("0.1,100").run()
    at.radio(key="sweep_km_mode").set_value("tpe").run()
    at.number_input(key="sweep_km_n").set_value(3).run()
    at.button(key="sweep_km_start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    job = at.session_state[SWEEP_JOB]
    _wait(lambda: job.done)
    at.run()
    assert job.status == "done" and job.plan.mode == "tpe", job.progress()
    df = RunStore().list()
    assert len(df) == 3 and df["D"].between(2, 5).all()
    assert df["lambda_theta"].between(0.1, 100).all()
    assert any("3 of 3 point" in s.value for s in at.success)
