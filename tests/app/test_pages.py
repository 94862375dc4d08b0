"""Every page through AppTest: data -> train -> explore -> runs, bad input, the Stop button."""

import time
from pathlib import Path

import numpy as np
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


# ------------------------------------------------------------------- saved runs, re-runs
def _markdown(at) -> str:
    return " ".join(md.value for md in at.markdown)


def test_saved_run_reopens_on_every_explore_page_in_a_new_session(trained):
    first = next(iter(trained.session_state[StateKeys.RUNS].values()))
    lanczos = _metrics(trained.switch_page("pages/5_Lanczos.py").run())
    impl = trained.switch_page("pages/6_Implications.py").run()
    words = [md.value for md in impl.markdown if "likes" in md.value]
    influence = _metrics(impl)

    fresh = _app()  # a new browser session: no data, no runs in session state
    assert fresh.session_state[StateKeys.DATASET] is None
    at = fresh.switch_page("pages/5_Lanczos.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="explore_run").value == first.run_id
    m = _metrics(at)
    assert m["size of C(u*)"] == "4 × 4"
    assert m["δ of (20)"] == lanczos["δ of (20)"] and m["m chosen"] == lanczos["m chosen"]
    reopened = at.session_state[StateKeys.RUNS][first.run_id]
    assert reopened.reopened and reopened.split.train.fingerprint() == \
        first.split.train.fingerprint()
    np.testing.assert_array_equal(reopened.theta, first.theta)

    at.switch_page("pages/6_Implications.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert _metrics(at) == influence
    assert [md.value for md in at.markdown if "likes" in md.value] == words
    assert "(support {" in words[0]  # the planted items' names came back with the run
    at.switch_page("pages/3_Convergence.py").run()
    assert not at.exception and not at.error
    assert (at.dataframe[0].value["dual iterations"] > 0).all()


def test_run_saved_without_its_data_still_opens_where_possible(trained):
    from kmviz.runs import RunStore

    run = next(iter(trained.session_state[StateKeys.RUNS].values()))
    old_id = RunStore().save("km", run.trace, {"theta": run.theta, "psi": run.psi},
                             dataset="old planted", params=dict(run.params),
                             metrics=run.metrics, label="old run")
    at = _app()
    at.switch_page("pages/5_Lanczos.py").run()
    at.selectbox(key="explore_run").set_value(old_id).run()
    assert not at.exception and not at.error
    assert "saved without its training data" in at.info[0].value
    at.switch_page("pages/6_Implications.py").run()
    assert not at.exception and "saved without its training data" in at.info[0].value
    at.switch_page("pages/4_Phases.py").run()
    at.selectbox(key="phases_run").set_value(old_id).run()
    assert not at.exception and not at.error
    assert len(at.dataframe[0].value) == 3
    at.switch_page("pages/3_Convergence.py").run()
    assert not at.exception and "saved without its training data" in at.info[0].value
    at.switch_page("pages/7_Runs.py").run()
    assert not at.exception and len(at.dataframe[0].value) == 2
    at.button(key="runs_rerun").click().run()  # the newest (old) run: settings only
    assert not at.exception
    assert "saved without its data" in at.session_state[StateKeys.NOTICE]


def test_rerun_restores_settings_data_and_split_and_reproduces_the_trace(trained):
    first = next(iter(trained.session_state[StateKeys.RUNS].values()))
    objectives = [row["objective"] for row in first.trace.rows]
    at = _app()  # new session, nothing loaded
    at.switch_page("pages/7_Runs.py").run()
    at.button(key="runs_rerun").click().run()
    assert not at.exception and not at.error
    assert "Data restored" in at.info[0].value
    assert at.session_state["train_D"] == 3 and at.session_state["train_random_state"] == 0
    split = at.session_state[StateKeys.SPLIT]
    assert split.train.fingerprint() == first.split.train.fingerprint()
    # AppTest reruns the page it was on after an st.switch_page; a browser follows it
    at.switch_page("pages/2_Train.py").run()
    [b for b in at.button if b.label == "Train"][0].click().run()
    assert not at.exception and not at.error
    _wait_job(at)
    again = at.session_state[StateKeys.RUNS]
    assert len(again) == 1
    rerun = next(iter(again.values()))
    assert rerun.run_id != first.run_id
    assert [row["objective"] for row in rerun.trace.rows] == objectives


def test_rerun_of_non_catalogue_data_uses_the_split_saved_with_the_run(tmp_path):
    rows = ["user,item,rating"] + [f"{u},{i},{(u * 7 + i * 3) % 5 + 1}"
                                   for u in range(12) for i in range(8) if (u + i) % 3]
    path = tmp_path / "ratings.csv"
    path.write_text("\n".join(rows) + "\n")
    at = _app()
    at.switch_page("pages/1_Data.py").run()
    at.radio(key="data_source").set_value("Local path").run()
    at.text_input(key="data_path").input(str(path))
    at.button(key="data_load_path").click().run()
    assert not at.exception and not at.error
    at = _train(at, D=2, max_iter=2)
    first = next(iter(at.session_state[StateKeys.RUNS].values()))
    path.unlink()  # the file is gone: only the run's own copy can bring the data back
    fresh = _app().switch_page("pages/7_Runs.py").run()
    fresh.button(key="runs_rerun").click().run()
    assert not fresh.exception and "split saved with the run" in fresh.info[0].value
    split = fresh.session_state[StateKeys.SPLIT]
    assert split.train.fingerprint() == first.split.train.fingerprint()
    whole = fresh.session_state[StateKeys.DATASET]
    assert whole.fingerprint() == at.session_state[StateKeys.DATASET].fingerprint()
    assert list(whole.item_ids) == list(range(8))
    fresh.switch_page("pages/2_Train.py").run()
    [b for b in fresh.button if b.label == "Train"][0].click().run()
    _wait_job(fresh)
    rerun = next(iter(fresh.session_state[StateKeys.RUNS].values()))
    assert [r["objective"] for r in rerun.trace.rows] == [
        r["objective"] for r in first.trace.rows]


def test_implications_minimum_ratings_filter(trained):
    at = trained.switch_page("pages/6_Implications.py").run()
    assert at.number_input(key="impl_min_ratings").value == 1  # small data: show every item
    train = next(iter(at.session_state[StateKeys.RUNS].values())).split.train
    counts = train.item_counts()
    cut = int(np.median(counts)) + 1
    at.number_input(key="impl_min_ratings").set_value(cut).run()
    assert not at.exception and not at.error
    hidden = int((counts < cut).sum())
    assert f"{hidden:,} hidden with fewer than {cut} training ratings" in " ".join(
        c.value for c in at.caption)
    shown = set(np.flatnonzero(counts >= cut).tolist())
    offered = {int(o.rsplit("[", 1)[1].rstrip("]")) for o in at.selectbox(key="impl_item").options}
    assert offered == shown
    prec = at.dataframe[1].value
    assert set(prec["antecedent"]) <= shown and set(prec["consequent"]) <= shown
    at.number_input(key="impl_min_ratings").set_value(10_000).run()
    assert not at.exception and "lower the minimum" in at.info[0].value


def test_data_page_generator_widgets():
    at = _app().switch_page("pages/1_Data.py").run()
    at.selectbox(key="data_builtin").set_value("planted-km").run()
    scale = at.selectbox(key="data_planted-km_scale")
    assert scale.options == ["unit (probabilities in [0, 1])", "stars (1-5)"]
    assert at.number_input(key="data_planted-km_star_step").disabled
    assert at.number_input(key="data_planted-km_max_support").value == 0
    assert "0 = the generator's default" in at.number_input(
        key="data_planted-km_max_support").help
    scale.set_value("stars").run()
    at.number_input(key="data_planted-km_n_users").set_value(30)
    at.number_input(key="data_planted-km_max_support").set_value(2)
    at.button(key="data_load_builtin").click().run()
    assert not at.exception and not at.error
    ratings = at.session_state[StateKeys.DATASET]
    assert ratings.r_max == 5.0 and ratings.n_users == 30
    assert at.session_state[StateKeys.DATASET_SPEC]["options"]["max_support"] == 2
    assert not [m for m in at.metric if m.label == "split"]
    # a max_support above D is refused with the generator's message, not a traceback
    at.number_input(key="data_planted-km_max_support").set_value(12)
    at.button(key="data_load_builtin").click().run()
    assert not at.exception and "max_support" in at.error[0].value


def test_too_small_for_the_split_loads_with_everything_in_training():
    at = _app().switch_page("pages/1_Data.py").run()
    at.selectbox(key="data_builtin").set_value("planted-km").run()
    for name, value in {"n_users": 2, "n_items": 2, "D": 1}.items():
        at.number_input(key=f"data_planted-km_{name}").set_value(value)
    at.button(key="data_load_builtin").click().run()
    assert not at.exception and not at.error
    assert "used for training" in at.warning[0].value
    split = at.session_state[StateKeys.SPLIT]
    assert split.validation is None and split.test is None
    assert split.train.n_ratings == at.session_state[StateKeys.DATASET].n_ratings
