"""Every page through AppTest: data -> train -> explore -> runs, bad input, the Stop button."""

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kmviz.ui.state import StateKeys

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 120  # Numba's first compile takes seconds


def _app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    return at


def _load_planted(at, n_users=30, n_items=20, D=3) -> AppTest:
    at.switch_page("pages/1_Data.py").run()
    at.selectbox(key="data_builtin").set_value("planted-km").run()
    at.number_input(key="data_planted-km_n_users").set_value(n_users)
    at.number_input(key="data_planted-km_n_items").set_value(n_items)
    at.number_input(key="data_planted-km_D").set_value(D)
    at.button(key="data_load_builtin").click().run()
    assert not at.exception and not at.error
    return at


def _wait_job(at, timeout=TIMEOUT) -> None:
    end = time.time() + timeout
    while time.time() < end:
        job = at.session_state[StateKeys.JOB]
        if job.done:
            break
        time.sleep(0.2)
    at.run()
    assert at.session_state[StateKeys.JOB].done


def _train(at, *, D=3, max_iter=3, wait=True) -> AppTest:
    at.switch_page("pages/2_Train.py").run()
    assert not at.exception, at.exception
    at.number_input(key="train_D").set_value(D)
    at.number_input(key="train_max_iter").set_value(max_iter)
    at.number_input(key="train_tol").set_value(0.0)
    [b for b in at.button if b.label == "Train"][0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    if wait:
        _wait_job(at)
    return at


@pytest.fixture()
def trained():
    at = _train(_load_planted(_app()))
    assert not at.exception
    return at


def _metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_home_quick_start_loads_data_and_opens_train():
    at = _app()
    assert "three steps" in " ".join(h.value for h in at.subheader)
    at.button(key="home_planted").click().run()
    assert not at.exception
    ratings = at.session_state[StateKeys.DATASET]
    assert ratings is not None and ratings.n_users == 200  # the catalogue defaults
    assert at.session_state[StateKeys.SPLIT].train.n_ratings > 0


def test_data_page_shows_counts_split_and_preview():
    at = _load_planted(_app())
    m = _metrics(at)
    assert m["users"] == "30" and m["items"] == "20"
    ratings = at.session_state[StateKeys.DATASET]
    assert m["ratings"] == f"{ratings.n_ratings:,}"
    split = at.session_state[StateKeys.SPLIT]
    assert m["training ratings"] == f"{split.train.n_ratings:,}"
    assert split.train.n_ratings + split.validation.n_ratings + split.test.n_ratings == \
        ratings.n_ratings
    preview = at.dataframe[1].value
    assert {"user", "item", "value", "item_name"} <= set(preview.columns)
    # change the split: per user, no validation part
    at.number_input(key="data_val_size").set_value(0.0)
    at.radio(key="data_split_by").set_value("user")
    [b for b in at.button if b.label == "Apply split"][0].click().run()
    assert not at.exception
    split = at.session_state[StateKeys.SPLIT]
    assert split.validation is None and split.by == "user"
    assert _metrics(at)["validation ratings"] == "0"


def test_bad_upload_shows_the_loader_message():
    at = _app()
    at.switch_page("pages/1_Data.py").run()
    at.radio(key="data_source").set_value("Upload").run()
    at.file_uploader(key="data_upload").upload(
        "ratings.csv", b"user,item,rating\n1,10,4\n2,abc,5\n2,11,not-a-number\n", "text/csv")
    at.run()
    at.button(key="data_load_upload").click().run()
    assert not at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert "ratings.csv" in message and "line" in message
    assert "Traceback" not in message
    assert at.session_state[StateKeys.DATASET] is None


def test_bad_local_path_and_bad_file_show_errors(tmp_path):
    at = _app()
    at.switch_page("pages/1_Data.py").run()
    at.radio(key="data_source").set_value("Local path").run()
    at.text_input(key="data_path").input(str(tmp_path / "missing.csv"))
    at.button(key="data_load_path").click().run()
    assert not at.exception and "no such file" in at.error[0].value
    bad = tmp_path / "empty.csv"
    bad.write_text("")
    at.text_input(key="data_path").input(str(bad))
    at.button(key="data_load_path").click().run()
    assert not at.exception and at.error and "empty.csv" in at.error[0].value


def test_train_page_guards_without_data():
    at = _app()
    at.switch_page("pages/2_Train.py").run()
    assert not at.exception
    assert "Load a dataset first" in at.info[0].value


def test_train_shows_result_and_saves_the_run(trained):
    at = trained
    runs = at.session_state[StateKeys.RUNS]
    assert len(runs) == 1
    run = next(iter(runs.values()))
    assert run.trace.n_iter == 3 and run.psi.shape == (20, 3)
    m = _metrics(at)
    assert m["BCD iterations"] == "3"
    assert float(m["training RMSE"]) == pytest.approx(run.metrics["final_train_rmse"], abs=1e-4)
    assert not run.run_id.startswith("session-")  # it went to the run store
    from kmviz.runs import RunStore

    assert run.run_id in RunStore().list()["run_id"].tolist()
    assert any("Finished 3 iteration" in s.value for s in at.success)


def test_errors_helper_shows_messages_not_tracebacks():
    def page():
        import streamlit as st

        from kmviz.ui.errors import user_errors

        with user_errors("loading") as first:
            raise ValueError("ratings.csv, line 3: bad value. Fix: correct it")
        with user_errors("drawing") as second:
            raise KeyError("boom")
        st.write(f"{first.ok} {second.ok}")

    at = AppTest.from_function(page, default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.error[0].value == "ratings.csv, line 3: bad value. Fix: correct it"
    assert "Something went wrong while drawing" in at.error[1].value
    assert at.expander[0].label == "Details"
    assert at.markdown[-1].value == "False False"


def test_two_sessions_train_at_once_without_seeing_each_other():
    one = _train(_load_planted(_app()), wait=False)
    two = _train(_load_planted(_app(), n_users=40), wait=False)
    _wait_job(one)
    _wait_job(two)
    runs_one = one.session_state[StateKeys.RUNS]
    runs_two = two.session_state[StateKeys.RUNS]
    assert len(runs_one) == 1 and len(runs_two) == 1
    assert set(runs_one).isdisjoint(runs_two)
    assert next(iter(runs_two.values())).theta.shape[0] == 40
    assert one.session_state[StateKeys.JOB] is not two.session_state[StateKeys.JOB]


def test_stop_button_ends_training_and_keeps_the_model():
    at = _load_planted(_app(), n_users=150, n_items=80, D=6)
    at = _train(at, D=6, max_iter=500, wait=False)
    job = at.session_state[StateKeys.JOB]
    end = time.time() + TIMEOUT
    while job.progress()["n_done"] < 1 and time.time() < end:
        time.sleep(0.1)
    at.run()
    at.button(key="train_stop").click().run()
    assert not at.exception
    _wait_job(at)
    assert job.status == "stopped"
    run = next(iter(at.session_state[StateKeys.RUNS].values()))
    assert 1 <= run.trace.n_iter < 500 and run.stop_reason == "callback"
    assert run.psi is not None
    assert any("Stopped after" in w.value for w in at.warning)


def test_convergence_page(trained):
    at = trained.switch_page("pages/3_Convergence.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.multiselect(key="conv_runs").value) == 1
    table = at.dataframe[0].value
    assert "original GD (Alg. 1)" in table.index
    assert (table["dual iterations"] > 0).all()


def test_phases_page(trained):
    at = trained.switch_page("pages/4_Phases.py").run()
    assert not at.exception and not at.error
    shares = [float(m.value.rstrip("%")) for m in at.metric]
    assert len(shares) == 4 and sum(shares) == pytest.approx(100, abs=0.5)
    assert len(at.dataframe[0].value) == 3  # the trace table: one row per BCD iteration


def test_lanczos_page_and_slider(trained):
    at = trained.switch_page("pages/5_Lanczos.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    m = _metrics(at)
    assert m["size of C(u*)"] == "4 × 4"
    delta_1 = float(m["δ of (20)"])
    at.slider(key="lanczos_a").set_value(5.0).run()
    assert float(_metrics(at)["δ of (20)"]) == pytest.approx(delta_1 / 5, rel=1e-3)


def test_implications_page(trained):
    at = trained.switch_page("pages/6_Implications.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = " ".join(md.value for md in at.markdown)
    assert "likes" in text
    table_vi, precision = at.dataframe[0].value, at.dataframe[1].value
    assert {"item", "user", "n_rated", "n_liked", "accuracy"} <= set(table_vi.columns)
    assert {"train_precision", "heldout_precision"} <= set(precision.columns)
    assert len(at.get("download_button")) == 1


def test_runs_page_compare_rerun_and_delete(trained):
    at = trained.switch_page("pages/7_Runs.py").run()
    assert not at.exception and not at.error
    assert len(at.dataframe[0].value) == 1
    assert len(at.get("download_button")) == 5
    at.button(key="runs_rerun").click().run()
    assert not at.exception
    assert at.session_state["train_D"] == 3  # settings handed to the Train page
    at.switch_page("pages/7_Runs.py").run()
    at.checkbox(key="runs_confirm").check().run()
    at.button(key="runs_delete").click().run()
    assert not at.exception
    from kmviz.runs import RunStore

    assert len(RunStore().list()) == 0
    assert "No saved runs yet" in at.info[0].value


def test_explore_pages_guard_without_runs():
    at = _app()
    for page in ("pages/3_Convergence.py", "pages/4_Phases.py", "pages/5_Lanczos.py",
                 "pages/6_Implications.py", "pages/7_Runs.py"):
        at.switch_page(page).run()
        assert not at.exception, page
        assert at.info, page
