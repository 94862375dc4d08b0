"""A link restores the view in a new session (AppTest): page, data, family, settings, run,
item; bad parameters give notices; an upload survives a reload of its tab."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kmviz.data import load
from kmviz.ui.state import StateKeys

from .apphelpers import (APP, CONVERGENCE, KM_DUAL, TIMEOUT, TRAIN, cli_train, goto,
                         new_session, submit_train)

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def open_link(page: str, query: dict) -> AppTest:
    """A new browser session opened on ``page`` with the address's query ``query``."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def query(at) -> dict:
    return {k: v[-1] if isinstance(v, list) else v for k, v in dict(at.query_params).items()}


def test_a_train_link_restores_data_family_and_settings_and_names_what_it_ignored():
    at = open_link(TRAIN, {"dataset": "planted-km", "data.D": "5", "data.n_users": "40",
                           "family": "km", "D": "6", "evd": "lanczos", "bogus": "1",
                           "max_iter": "-3"})
    spec = at.session_state[StateKeys.DATASET_SPEC]
    assert spec["source"] == "planted-km" and spec["options"]["D"] == 5
    assert at.session_state[StateKeys.DATASET].n_users == 40
    assert at.selectbox(key="train_family").value == "km"
    assert at.number_input(key="train_km_D").value == 6
    assert at.selectbox(key="train_km_evd").value == "lanczos"
    notices = [w.value for w in at.warning]
    assert any(n.startswith("bogus='1' was ignored") for n in notices), notices
    assert any(n.startswith("max_iter='-3' was ignored") for n in notices), notices
    # the address now holds the view as the app writes it: the bad parts are gone
    q = query(at)
    assert q["dataset"] == "planted-km" and q["data.D"] == "5" and q["D"] == "6"
    assert "bogus" not in q and "max_iter" not in q
    # and that address restores the same view again
    again = open_link(TRAIN, q)
    assert again.number_input(key="train_km_D").value == 6
    assert query(again) == q
    assert not [w.value for w in again.warning if "ignored" in str(w.value)]


def test_the_address_follows_the_form_and_the_family():
    at = new_session()
    goto(at, TRAIN)
    assert query(at)["family"] == "km" and "D" not in query(at)
    at.selectbox(key="train_family").set_value("kmc").run()
    assert query(at)["family"] == "kmc"


def test_an_explore_link_restores_the_run_and_its_item():
    rid = cli_train()
    at = open_link(KM_DUAL, {"run": rid})
    run = at.session_state[StateKeys.RUNS][rid]
    train = run.split.train
    counts = train.item_counts()
    item = int(max(range(train.n_items), key=lambda i: (counts[i] > 0, -i)))  # not the default
    at.selectbox(key="dual_item").set_value(item).run()
    q = query(at)
    assert q["run"] == rid and q["family"] == "km" and "dataset" not in q
    assert q["item"] in (train.item_label(item), f"#{item}")
    fresh = open_link(KM_DUAL, q)
    assert fresh.session_state[StateKeys.ACTIVE_RUN] == rid
    assert fresh.selectbox(key="dual_item").value == item
    assert query(fresh) == q
    # an item that the run's data does not have: a notice, the page still draws
    bad = open_link(KM_DUAL, {"run": rid, "item": "No Such Film"})
    assert any("item='No Such Film' was ignored" in str(w.value) for w in bad.warning)
    gone = open_link(KM_DUAL, {"run": "20990101-000000-deadbeef"})
    assert any("run=20990101-000000-deadbeef was ignored" in str(w.value)
               for w in gone.warning)


def test_an_uploaded_dataset_survives_a_reload_of_its_tab():
    ratings = load(str(ROOT / "sample_data" / "planted-triplets.csv"))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[StateKeys.DATASET] = ratings
    at.session_state[StateKeys.DATASET_SPEC] = {"kind": "upload", "source": "mine.csv",
                                                "options": {}, "title": "mine.csv"}
    from kmviz.data.splits import make_split
    at.session_state[StateKeys.SPLIT] = make_split(ratings)
    at.switch_page(TRAIN).run()
    q = query(at)
    assert q["dataset"].startswith("upload:") and len(q["dataset"]) == len("upload:") + 16
    reloaded = open_link(TRAIN, q)
    again = reloaded.session_state[StateKeys.DATASET]
    assert again.fingerprint() == ratings.fingerprint()
    assert reloaded.session_state[StateKeys.DATASET_SPEC]["kind"] == "upload"
    forged = open_link(TRAIN, {"dataset": "upload:0123456789abcdef"})
    assert any("no longer keeps that upload" in str(w.value) for w in forged.warning)
    assert forged.session_state[StateKeys.DATASET_SPEC]["source"] == "movielens-small"


def test_a_lesson_shows_runs_on_its_data_only_and_trains_one_there():
    """The KM lesson, opened after somebody saved a KM run on other data: its Dual GD step
    does not open on that run (it did: the lesson drew another file's flat fit); it offers
    to train on the lesson's data, and then shows that run."""
    other = cli_train(n_users=30, n_items=20)            # KM on other data, in the store
    plain = goto(new_session(), KM_DUAL)                 # outside a lesson it is shown
    assert plain.selectbox(key="explore_run_km").value == other
    at = open_link("app_pages/data.py", {"lesson": "km"})
    assert at.session_state[StateKeys.LESSON_ON]
    # a bare lesson link on a step's page restores that step's link: the planted set
    assert at.session_state[StateKeys.DATASET_SPEC]["source"] == "planted-km"
    assert at.session_state[StateKeys.FAMILY] == "km"
    goto(at, KM_DUAL)
    assert "No Kolmogorov model (KM) run on the lesson's data yet" in at.info[0].value
    assert not [s for s in at.selectbox if s.key == "explore_run_km"]
    next(b for b in at.button if b.label == "Train KM here").click().run()
    job = at.session_state[StateKeys.JOB]
    job.thread.join(600)
    at.run()
    assert not at.exception, at.exception
    shown = at.selectbox(key="explore_run_km")
    assert shown.value != other and len(shown.options) == 1   # the lesson's run only
    run = at.session_state[StateKeys.RUNS][shown.value]
    assert run.fingerprint == at.session_state[StateKeys.DATASET].fingerprint()


def test_a_lessons_convergence_step_shows_its_familys_runs_only():
    """The OCMF lesson's Convergence step opened on a similarity run another session had
    trained on the same MovieLens data (seen in Chromium): a lesson shows its family's runs."""
    other = goto(new_session(), TRAIN)                  # the default data: latest-small
    other.selectbox(key="train_family").set_value("similarity").run()
    submit_train(other, {"train_similarity_max_iter": 1})
    at = open_link("app_pages/data.py", {"lesson": "ocmf"})
    assert at.session_state[StateKeys.DATASET].fingerprint() == \
        other.session_state[StateKeys.DATASET].fingerprint()    # the same data
    goto(at, CONVERGENCE)
    assert "No One-class MF with side information (OCMF) run on the lesson's data yet" in \
        at.info[0].value
    plain = goto(new_session(), CONVERGENCE)            # outside a lesson: it is shown
    assert not [i for i in plain.info if "run yet" in str(i.value)]
