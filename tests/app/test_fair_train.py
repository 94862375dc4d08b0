"""The Train page on a shared server (issue 24, items 1 and 4): fits wait in a FIFO queue
and say their place in line, a session runs one fit at a time, Train refuses while the Data
page's Load is still running, and the result names the data it was trained on."""

import threading
import time

import pytest

from kmviz.ui import datasets as ds
from kmviz.ui import scheduler as sch
from kmviz.ui.state import StateKeys
from kmviz.ui.training import ONE_FIT_PER_SESSION

from .apphelpers import (TRAIN, goto, load_planted, new_session, only_run, plain_text,
                         texts, train, train_button, wait_job)

#: The longest a helper thread of these tests may take to get going or to end (an upper
#: bound only: the waits end as soon as the thread is there), and how long the stand-in
#: threads live unless released, on a box shared past its cores.
PATIENCE = 120


@pytest.fixture()
def one_fit_at_a_time(monkeypatch):
    """A server whose limit is one fit; yields (hold, release): hold takes the only place
    (another session's fit, as it were) until release is called."""
    fits = sch.FitScheduler(1)
    monkeypatch.setattr(sch, "_SCHEDULER", fits)
    taken, release = threading.Event(), threading.Event()

    def other_session():
        with fits.slot("other session"):
            taken.set()
            release.wait(10 * PATIENCE)

    thread = threading.Thread(target=other_session, daemon=True)

    def hold():
        thread.start()
        assert taken.wait(PATIENCE)

    def let_go():
        release.set()
        thread.join(PATIENCE)

    yield hold, let_go
    let_go()


def _wait_status(job, status, timeout=PATIENCE):
    end = time.time() + timeout
    while job.status != status and time.time() < end:
        time.sleep(0.05)
    assert job.status == status


def _a_queued_fit(hold):
    """Another session's fit takes the only place (``hold``), then a new session presses
    Train on a small planted set: its session and its job, waiting in the queue, with the
    page run once since."""
    hold()
    at = train(load_planted(new_session()), wait=False)
    job = at.session_state[StateKeys.JOB]
    _wait_status(job, "queued")
    at.run()
    return at, job


@pytest.mark.slow
def test_a_queued_fit_shows_its_place_and_a_second_click_is_refused(one_fit_at_a_time):
    hold, let_go = one_fit_at_a_time
    at, job = _a_queued_fit(hold)
    queued = [i.value for i in at.info if "in line" in i.value]
    assert queued and plain_text(queued[0]).startswith(
        "Queued: 1st in line, 1 fit running (at most 1 at a time on this server)"), queued
    # a second Train click of the same session while its fit waits: refused, said so
    train_button(at).click().run()
    assert not at.exception
    assert at.session_state[StateKeys.JOB] is job
    assert any(ONE_FIT_PER_SESSION in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.session_state[StateKeys.TRAIN_REQUEST] is None  # not kept for later either
    let_go()
    wait_job(at)
    assert job.status == "done" and len(at.session_state[StateKeys.RUNS]) == 1


@pytest.mark.slow
def test_stop_takes_a_queued_fit_out_of_the_queue(one_fit_at_a_time):
    hold, _ = one_fit_at_a_time
    at, job = _a_queued_fit(hold)
    at.button(key="train_stop").click().run()
    wait_job(at)
    assert job.status == "stopped" and sch._SCHEDULER.waiting() == 0
    assert not at.session_state[StateKeys.RUNS]


def _loading_marker(at, what="Planted Kolmogorov model"):
    """What load_clicked leaves in the session while its load runs in another script
    thread (a click on another page came in meanwhile): a marker naming a live thread."""
    done = threading.Event()
    loader = threading.Thread(target=done.wait, args=(10 * PATIENCE,), daemon=True)
    loader.start()
    box = at.session_state[StateKeys.PENDING_LOAD]
    box["loading"] = {"kind": "built-in", "what": what, "since": time.time(),
                      "thread": loader}
    at.session_state[StateKeys.PENDING_LOAD] = box
    return box, done, loader


@pytest.mark.slow
def test_train_refuses_while_a_load_is_running_then_trains_on_the_new_data():
    at = goto(new_session(), TRAIN)
    old = at.session_state[StateKeys.DATASET]
    box, done, loader = _loading_marker(at)
    at.run()
    assert any(i.value.startswith("Loading Planted Kolmogorov model") for i in at.info)
    train_button(at).click().run()
    assert not at.exception
    assert at.session_state[StateKeys.JOB] is None   # nothing trained on the old data
    assert any("Planted Kolmogorov model is still loading" in w.value for w in at.warning)
    assert at.session_state[StateKeys.DATASET] is old
    # the load ends: its result lands, the marker goes, Train works on the new data
    from kmviz.data import load
    from kmviz.data.splits import make_split

    new = load("planted-km", n_users=30, n_items=20, D=3)
    spec = {"kind": "built-in", "source": "planted-km", "options": {}, "title": "Planted",
            "licence": "", "provenance": "", "split": {"val_size": 0.1, "test_size": 0.2,
                                                      "by": "random", "seed": 0}}
    box["load"] = ("ok", (new, spec, make_split(new), None))
    box.pop("loading")
    done.set()
    loader.join(PATIENCE)
    at = train(at)
    run = only_run(at)
    assert run.fingerprint == new.fingerprint() != old.fingerprint()
    # the label names the data it was trained on (settings that differ may follow it)
    assert run.dataset_name == new.name and f" on {new.name}" in run.label
    shown = [plain_text(c.value) for c in at.caption if "Trained on" in c.value]
    assert shown == [f"Trained on **{new.name}** (fingerprint `{new.fingerprint()}`)"], shown


def test_a_marker_left_by_an_ended_thread_is_dropped():
    at = goto(new_session(), TRAIN)
    box, done, loader = _loading_marker(at)
    done.set()
    loader.join(PATIENCE)
    at.run()
    # (other "Loading ..." notes, such as the kernels' warm-up, may be on the page)
    assert not any(i.value.startswith("Loading Planted Kolmogorov model") for i in at.info)
    assert "loading" not in at.session_state[StateKeys.PENDING_LOAD]


def test_load_marks_itself_pending_while_it_loads(monkeypatch):
    """load_clicked puts the marker in the session's box before it loads and takes it out
    afterwards, whether the load works or fails."""
    seen = []
    real = ds._load_request

    def spy(req):
        import streamlit as st

        box = st.session_state[StateKeys.PENDING_LOAD]   # in the script's thread
        seen.append(dict(box.get("loading") or {}))
        if req["options"].get("n_users") == 13:
            raise ValueError("planted failure")
        return real(req)

    monkeypatch.setattr(ds, "_load_request", spy)
    at = load_planted(new_session())
    assert seen and seen[0]["kind"] == "built-in"
    assert seen[0]["what"] == "Planted Kolmogorov model"
    assert seen[0]["thread"] is not threading.current_thread()  # the script's thread
    assert "loading" not in at.session_state[StateKeys.PENDING_LOAD]
    at.number_input(key="data_planted-km_n_users").set_value(13)
    at.button(key="data_load_builtin").click().run()
    assert any("planted failure" in t for t in texts(at))
    assert len(seen) == 2 and "loading" not in at.session_state[StateKeys.PENDING_LOAD]
