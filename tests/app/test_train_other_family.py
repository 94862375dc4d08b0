"""A fit of one family while the Train page shows another (CI saw a Train click land on the
KM form while the page switched to gFM: the KM fit ran, and the page showed only a static
"fit is running" line, with no progress and no result, for as long as one cared to wait)."""

import time

import pytest

from kmviz.ui.state import StateKeys

from .apphelpers import KM_DUAL, TRAIN, goto, load_planted, new_session, submit_train

pytestmark = pytest.mark.slow


def _texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def test_another_familys_fit_shows_its_progress_and_the_page_reruns_when_it_ends():
    at = load_planted(new_session())
    goto(at, TRAIN)
    submit_train(at, {"train_km_D": 3, "train_km_max_iter": 100_000, "train_km_tol": 0.0},
                 wait=False)
    job = at.session_state[StateKeys.JOB]
    at.selectbox(key="train_family").set_value("gfm").run()
    assert not at.exception, at.exception
    assert any("fit is running" in t for t in _texts(at.info))
    assert len(at.get("progress")) == 1                  # the KM fit's progress, polled here
    assert [b for b in at.button if b.key == "train_stop"]   # and it can be stopped here
    end = time.time() + 600                          # past the kernels' first compile
    while job.progress()["n_done"] < 1 and time.time() < end:
        time.sleep(0.1)
    job.stop()
    job.thread.join(120)
    assert job.done
    at.run()
    assert not at.exception, at.exception
    assert not any("fit is running" in t for t in _texts(at.info))
    assert at.session_state[StateKeys.FAMILY] == "gfm"   # the page stays on the family picked
    assert any(r.family == "km" for r in at.session_state[StateKeys.RUNS].values())


def test_a_train_click_shows_the_family_it_trains():
    """A Train request of one family (here an Explore page's "Train KM here") makes the Train
    page show that family, so its fit's progress and result are in view there."""
    at = load_planted(new_session())
    goto(at, TRAIN)
    at.selectbox(key="train_family").set_value("gfm").run()
    goto(at, KM_DUAL)
    next(b for b in at.button if b.label == "Train KM here").click().run()
    assert not at.exception, at.exception
    job = at.session_state[StateKeys.JOB]
    assert job.family == "km"
    job.thread.join(600)
    goto(at, TRAIN)
    assert at.selectbox(key="train_family").value == "km"
    assert any(h.value.startswith("Result: ") for h in at.subheader)
