"""Every page through AppTest: data -> train -> explore -> runs, bad input, the Stop button.

The pages live in app_pages/ (navigation built from the family registry in app.py); KM's
Explore pages are km_dual (Figs. 1-2), km_phases, km_lanczos and km_implications.
"""

import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from kmviz import families
from kmviz.runs import RunStore, open_run
from kmviz.ui.state import StateKeys
from kmviz.ui.text import md_escape
from kmviz.viz.convergence import MEAN_PREDICTOR
from tests.app.apphelpers import (CONVERGENCE, DATA, KM_DUAL, KM_IMPLICATIONS, KM_LANCZOS,
                                  KM_PAGES, KM_PHASES, RUNS, TIMEOUT, TRAIN, button,
                                  cli_train, goto, pick_family,
                                  load_planted, metrics, new_session, only_run, plain_text,
                                  plotly_specs, submit_train, train, wait_for_relations, wait_job)


@pytest.fixture()
def trained():
    """A session with a 3-iteration KM (enhanced dual GD, so Alg. 2's phases are recorded)
    on a small planted set, saved to the test's run store."""
    at = train(load_planted(new_session()), bqp_solver="enhanced")
    assert not at.exception
    return at


def test_home_quick_start_loads_data_and_opens_train():
    at = new_session()
    assert "three steps" in " ".join(h.value for h in at.subheader)
    papers = [m.value for m in at.markdown if m.value.startswith("Papers:")]
    assert len(papers) == 1 and all(fam.title in papers[0] for fam in families.all_families())
    at.button(key="home_planted").click().run()
    assert not at.exception
    ratings = at.session_state[StateKeys.DATASET]
    assert ratings is not None and ratings.n_users == 200  # the catalogue defaults
    assert at.session_state[StateKeys.SPLIT].train.n_ratings > 0
    assert not at.session_state[StateKeys.DATASET_SPEC].get("default")
    assert [t.value for t in at.title] == ["Train"]  # st.switch_page went to Train


def test_data_page_shows_counts_split_and_preview():
    at = load_planted(new_session())
    m = metrics(at)
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
    at.selectbox(key="data_split_by").set_value("user")
    [b for b in at.button if b.label == "Apply split"][0].click().run()
    assert not at.exception
    split = at.session_state[StateKeys.SPLIT]
    assert split.validation is None and split.by == "user"
    assert metrics(at)["validation ratings"] == "0"
    assert at.session_state[StateKeys.DATASET_SPEC]["split"]["by"] == "user"


def test_bad_upload_shows_the_loader_message():
    at = goto(new_session(), DATA)
    default = at.session_state[StateKeys.DATASET]
    at.radio(key="data_source").set_value("Upload").run()
    at.file_uploader(key="data_upload").upload(
        "ratings.csv", b"user,item,rating\n1,10,4\n2,abc,5\n2,11,not-a-number\n", "text/csv")
    at.run()
    at.button(key="data_load_upload").click().run()
    assert not at.exception
    assert len(at.error) == 1
    message = plain_text(at.error[0].value)
    assert "ratings.csv" in message and "line" in message
    assert "Traceback" not in message
    # the session keeps the dataset it had (the built-in default)
    assert at.session_state[StateKeys.DATASET] is default
    assert at.session_state[StateKeys.DATASET_SPEC]["default"]


def test_bad_local_path_and_bad_file_show_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("KMVIZ_DATA_DIRS", str(tmp_path))
    at = goto(new_session(), DATA)
    at.radio(key="data_source").set_value("Local path").run()
    at.text_input(key="data_path").input(str(tmp_path / "missing.csv"))
    at.button(key="data_load_path").click().run()
    assert not at.exception and "no such file" in at.error[0].value
    bad = tmp_path / "empty.csv"
    bad.write_text("")
    at.text_input(key="data_path").input(str(bad))
    at.button(key="data_load_path").click().run()
    assert not at.exception and at.error and "empty.csv" in plain_text(at.error[0].value)


def test_train_page_guards_when_no_dataset_can_be_loaded(monkeypatch):
    """A fresh session gets the built-in default; if even that fails, Train points to Data."""
    import kmviz.ui.datasets as ds

    monkeypatch.setattr(ds, "DEFAULT_DATASET", "no-such-dataset")
    at = goto(new_session(), TRAIN)
    assert at.session_state[StateKeys.DATASET] is None
    assert "Load a dataset first" in at.info[0].value
    assert not [b for b in at.button if b.label == "Train"]


@pytest.mark.slow
def test_train_shows_result_and_saves_the_run(trained):
    at = trained
    run = only_run(at)
    assert run.trace.n_iter == 3 and run.model.psi_.shape == (20, 3)
    assert run.model.theta_.shape == (30, 3) and run.split is at.session_state[StateKeys.SPLIT]
    m = metrics(at)
    assert m["iterations"] == "3"
    assert float(m["training NRMSE"]) == pytest.approx(run.metrics["train_nrmse"], abs=1e-4)
    assert float(m["validation NRMSE"]) == pytest.approx(run.metrics["validation_nrmse"],
                                                         abs=1e-4)
    assert not run.run_id.startswith("session-")  # it went to the run store
    listing = RunStore().list().set_index("run_id")
    assert run.run_id in listing.index
    assert listing.loc[run.run_id, "validation_nrmse"] == pytest.approx(
        run.metrics["validation_nrmse"])
    assert listing.loc[run.run_id, "bqp_solver"] == "enhanced"
    # tol = 0: it ends at its iteration limit, said once and not in green
    assert any("Finished 3 iteration" in s.value and "iteration limit" in s.value
               for s in at.info)
    assert not any("Finished" in s.value for s in at.success)
    assert [s.value for s in at.subheader if s.value.startswith("Result")] == [
        f"Result: {md_escape(run.label)}"]
    # links to Convergence and to each KM Explore page
    links = {link.label for link in at.page_link}
    assert {"Convergence", "Dual GD", "Phases", "Lanczos", "Implications"} <= links


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
    assert plain_text(at.error[0].value) == "ratings.csv, line 3: bad value. Fix: correct it"
    assert "Something went wrong while drawing" in at.error[1].value
    assert at.expander[0].label == "Details"
    assert at.markdown[-1].value == "False False"


@pytest.mark.slow
def test_two_sessions_train_at_once_without_seeing_each_other():
    one = train(load_planted(new_session()), wait=False)
    two = train(load_planted(new_session(), n_users=40), wait=False)
    wait_job(one)
    wait_job(two)
    runs_one = one.session_state[StateKeys.RUNS]
    runs_two = two.session_state[StateKeys.RUNS]
    assert len(runs_one) == 1 and len(runs_two) == 1
    assert set(runs_one).isdisjoint(runs_two)
    assert next(iter(runs_one.values())).model.theta_.shape[0] == 30
    assert next(iter(runs_two.values())).model.theta_.shape[0] == 40
    assert one.session_state[StateKeys.JOB] is not two.session_state[StateKeys.JOB]
    assert len(RunStore().list()) == 2  # both saved


@pytest.mark.slow
def test_stop_button_ends_training_and_keeps_the_model():
    # the preloaded MovieLens latest-small: a few tenths of a second per BCD iteration, so
    # 500 iterations cannot end before Stop is pressed
    at = train(new_session(), D=4, max_iter=500, wait=False)
    job = at.session_state[StateKeys.JOB]
    end = time.time() + TIMEOUT
    while job.progress()["n_done"] < 1 and time.time() < end:
        time.sleep(0.1)
    # the running fit is on the Convergence page, picked by default ("live")
    goto(at, CONVERGENCE)
    assert not at.error
    assert at.multiselect(key="conv_runs").value == ["live"]
    assert any("Following the running fit" in c.value for c in at.caption)
    goto(at, TRAIN)
    at.button(key="train_stop").click().run()
    assert not at.exception
    wait_job(at)
    assert job.status == "stopped"
    run = only_run(at)
    assert 1 <= run.trace.n_iter < 500 and run.stop_reason == "callback"
    assert run.model.psi_ is not None and run.model.psi_.shape[1] == 4
    assert any("Stopped after" in w.value for w in at.warning)
    assert RunStore().list()["run_id"].tolist() == [run.run_id]  # a stopped run is saved too


@pytest.mark.slow
def test_convergence_page(trained):
    at = goto(trained, CONVERGENCE)
    assert not at.error, [e.value for e in at.error]
    run = only_run(at)
    assert at.multiselect(key="conv_runs").value == [run.run_id]
    assert len(at.dataframe[0].value) == 3  # the trace table: one row per BCD iteration
    (spec,) = plotly_specs(at)
    names = {t.get("name") for t in spec["data"]}
    assert MEAN_PREDICTOR in names  # the dashed yardstick, from the run's own split
    dashed = [t for t in spec["data"] if t.get("name") == MEAN_PREDICTOR]
    assert all(t["line"]["dash"] == "dash" for t in dashed)
    at.toggle(key="conv_log").set_value(True).run()
    assert not at.exception and not at.error


@pytest.mark.slow
def test_dual_gd_page(trained):
    at = goto(trained, KM_DUAL)
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert "original GD (Alg. 1)" in table.index
    assert (table["dual iterations"] > 0).all()
    assert len(at.get("plotly_chart")) == 2  # Figs. 1 and 2


@pytest.mark.slow
def test_phases_page(trained):
    at = goto(trained, KM_PHASES)
    assert not at.error
    shares = [float(m.value.rstrip("%")) for m in at.metric]
    assert len(shares) == 4 and sum(shares) == pytest.approx(100, abs=0.5)
    assert len(at.dataframe[0].value) == 3  # the trace table: one row per BCD iteration
    # a run of a solver without the phases of Alg. 2 (exact enumeration): said, not drawn
    exact = cli_train("--bqp-solver", "exact")
    at.run()  # the picker lists the new run
    at.selectbox(key="phases_run").set_value(exact).run()
    assert not at.exception and not at.error
    assert not at.metric and "does not go through the phases" in at.info[0].value
    assert len(at.dataframe[0].value) == RunStore().load(exact).trace.n_iter


@pytest.mark.slow
def test_lanczos_page_and_slider(trained):
    at = goto(trained, KM_LANCZOS)
    assert not at.error, [e.value for e in at.error]
    m = metrics(at)
    assert m["size of C(u*)"] == "4 × 4"
    delta_1 = float(m["δ of (20)"])
    at.slider(key="lanczos_a").set_value(5.0).run()
    assert float(metrics(at)["δ of (20)"]) == pytest.approx(delta_1 / 5, rel=1e-3)


def _impl_table(at):
    """The Implications page's main table (the one with hub counts)."""
    found = [d.value for d in at.dataframe if "implied_by" in d.value.columns]
    assert found, [list(d.value.columns) for d in at.dataframe]
    return found[0]


@pytest.mark.slow
def test_implications_page(trained):
    from kmviz.km import mine_implications

    at = goto(trained, KM_IMPLICATIONS)
    assert not at.error, [e.value for e in at.error]
    run = only_run(at)
    text = " ".join(md.value for md in at.markdown)
    assert "Everyone who likes" in text
    # the counts are always in view and are those of mine_implications on the run
    frame = mine_implications(run.model, run.split.train, validation=run.split.held_out())
    counts = frame.attrs["counts"]
    m = metrics(at)
    assert m["implications"] == f"{counts['implications']:,}"
    assert m["claims between groups"] == f"{counts['claims']:,}"
    assert m["rows passing the filters"] == f"{len(frame):,}"  # no filter set yet
    assert m["groups of equivalent items"] == f"{counts['groups']:,}"
    assert m["hubs"] == f"{counts['hubs']:,}"
    table = _impl_table(at)
    assert {"support", "co_support", "n_known", "confidence", "confidence_lower",
            "classic_confidence", "base_rate", "lift", "p_value", "heldout_confidence",
            "heldout_lift", "implied_by", "hub"} <= set(table.columns)
    assert list(table["co_support"]) == list(frame["co_support"][:len(table)])
    assert list(table["antecedent"]) == list(frame["antecedent"][:len(table)])
    assert any("Lift" in c.value and "base rate" in c.value for c in at.caption)
    assert any("classic_confidence" in c.value and "all" in c.value for c in at.caption)
    assert any("Liked means rated 0\\.75 or more" in c.value for c in at.caption)
    table_vi = [d.value for d in at.dataframe if "n_rated" in d.value.columns][0]
    assert {"item", "user", "n_rated", "n_liked", "accuracy"} <= set(table_vi.columns)
    # planted data: recovered implications scored against the truth, for KM and the rules
    truth = [d.value for d in at.dataframe if "recall" in d.value.columns][0]
    assert truth["method"].str.contains("Kolmogorov").any()
    assert truth["method"].str.contains("association rules").any()
    assert len([b for b in at.get("download_button")  # CSV and Parquet of the model's
                if "-impl_" in b.proto.id]) == 2  # table (the relations' have rel_ keys)
    assert any(s["data"] and any(t.get("name") == "item groups (same support)"
                                 for t in s["data"]) for s in plotly_specs(at))


@pytest.mark.slow
def test_km_trained_on_likes_sets_the_pages_liked_default():
    at = goto(load_planted(new_session()), TRAIN)
    submit_train(at, {"train_km_D": 3, "train_km_max_iter": 3, "train_km_threshold": 0.5})
    run = only_run(at)
    assert run.model.threshold_ == 0.5 and run.model.get_params()["threshold"] == 0.5
    at = goto(at, KM_IMPLICATIONS)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.number_input(key="impl_liked").value == 0.5  # not the scale's default 0.75
    assert any("Liked means rated 0\\.5 or more" in c.value for c in at.caption)
    # the rules KM misses, with why, and the D that would state them
    assert any("strongest rules" in c.value and "events" in c.value for c in at.caption)


@pytest.fixture()
def trained_bigger():
    """A KM with more implications to filter: 150 users x 40 items, D = 6."""
    at = train(load_planted(new_session(), n_users=150, n_items=40, D=6), D=6, max_iter=5)
    assert not at.exception
    return at


@pytest.mark.slow
def test_implications_filters_apply_to_table_sentences_and_graph(trained_bigger):
    from kmviz.km import mining
    from kmviz.ui.text import pieces_markdown

    at = goto(trained_bigger, KM_IMPLICATIONS)
    run = only_run(at)
    train_part, held = run.split.train, run.split.held_out()
    at.number_input(key="impl_liked").set_value(0.3).run()
    at.number_input(key="impl_f_topk").set_value(0).run()
    assert not at.exception and not at.error
    frame = mining.mine_implications(run.model, train_part, liked=0.3, validation=held)
    assert len(_impl_table(at)) == len(frame)
    assert metrics(at)["rows passing the filters"] == f"{len(frame):,}"
    # the liked setting reaches every figure: supports are counts of ratings >= 0.3
    likes = np.bincount(train_part.items[train_part.values >= 0.3 - 1e-9],
                        minlength=train_part.n_items)
    table = _impl_table(at)
    assert (table["support"].to_numpy() == likes[table["antecedent"].to_numpy()]).all()

    at.number_input(key="impl_f_conf").set_value(0.6)
    at.number_input(key="impl_f_lift").set_value(1.4)
    at.number_input(key="impl_f_support").set_value(3).run()
    at.number_input(key="impl_f_heldout").set_value(0.5).run()
    assert not at.exception and not at.error
    want = frame[(frame.confidence >= 0.6) & (frame.lift >= 1.4) & (frame.co_support >= 3) &
                 (frame.heldout_confidence >= 0.5)]
    table = _impl_table(at)
    assert 2 <= len(want) < len(frame)  # the filters bite, and leave something
    assert list(table["rank"]) == list(want["rank"])
    assert (table["confidence"] >= 0.6).all() and (table["heldout_confidence"] >= 0.5).all()
    assert metrics(at)["rows passing the filters"] == f"{len(want):,}"
    # top k: the k best rows; the count of rows passing the filters does not change
    at.number_input(key="impl_f_topk").set_value(2).run()
    assert list(_impl_table(at)["rank"]) == list(want["rank"][:2])
    assert metrics(at)["rows passing the filters"] == f"{len(want):,}"
    # the sentences about the selected item use the same filters
    strict = want[~want["equivalent"]]
    assert len(strict), "no strict implication passes: the graph check needs one"
    item = int(strict["antecedent"].iloc[0])
    at.selectbox(key="impl_item").set_value(item).run()
    around = mining.mine_implications(run.model, train_part, liked=0.3, validation=held,
                                      around=item)
    kept = mining.filter_implications(around, min_support=3, min_confidence=0.6, min_lift=1.4,
                                      min_heldout_confidence=0.5, top_k=2)
    expected = "\n".join(f"- {pieces_markdown(p)}" for p in mining.sentences(
        kept, item, [train_part.item_label(k) for k in range(train_part.n_items)]))
    assert expected in [md.value for md in at.markdown]
    # ... and so does the graph: around the item, only groups of rows that pass
    at.radio(key="impl_view").set_value("around the item").run()
    assert not at.exception
    passing = mining.filter_implications(frame, min_support=3, min_confidence=0.6, min_lift=1.4,
                                         min_heldout_confidence=0.5)
    g_of = frame.attrs["group_of"]
    allowed = set(passing.antecedent_group) | set(passing.consequent_group) | {g_of[item]}
    nodes = [t for s in plotly_specs(at) for t in s["data"]
             if t.get("name") == "item groups (same support)"]
    assert len(nodes) <= 1
    drawn = {g_of[int(k)] for t in nodes for k in t.get("customdata", [])}
    assert g_of[item] in drawn and drawn <= allowed
    # an impossible minimum empties every view
    at.number_input(key="impl_f_lift").set_value(1e6).run()
    assert not at.exception and len(_impl_table(at)) == 0
    assert metrics(at)["rows passing the filters"] == "0"
    words = [md.value for md in at.markdown if "passes the filters" in md.value]
    assert words and "implies liking no other item" in words[0]


@pytest.mark.slow
def test_runs_page_compare_rerun_and_delete(trained):
    run = only_run(trained)
    at = goto(trained, RUNS)
    assert not at.error
    table = at.dataframe[0].value
    assert len(table) == 1 and table["run_id"].tolist() == [run.run_id]
    assert table["validation_nrmse"].iloc[0] == pytest.approx(run.metrics["validation_nrmse"])
    assert len(at.get("download_button")) == 5
    assert at.multiselect(key="runs_selected").value == [run.run_id]
    at.button(key="runs_rerun").click().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Train"]
    assert at.session_state["train_km_D"] == 3  # settings handed to the Train page
    assert at.session_state["train_km_bqp_solver"] == "enhanced"
    assert "Settings of the saved run loaded" in at.info[0].value
    goto(at, RUNS)
    at.button(key="runs_delete").click().run()
    assert not at.exception and len(RunStore().list()) == 1  # not before the confirmation
    at.button(key="runs_delete_yes").click().run()
    assert not at.exception
    assert len(RunStore().list()) == 0
    assert "No saved runs yet" in at.info[0].value
    assert run.run_id not in at.session_state[StateKeys.RUNS]


def test_explore_pages_guard_without_runs():
    at = new_session()
    for page in (CONVERGENCE, RUNS):
        goto(at, page)
        assert not at.error, page
        assert at.info, page
        assert any(link.label == "Go to Train" for link in at.page_link), page
    for page in KM_PAGES:  # a family's pages name it and lead to Train with it picked
        goto(at, page)
        assert not at.error, page
        assert at.info[0].value.startswith("No Kolmogorov model (KM) run yet"), page
        assert [b.label for b in at.button] == ["Train KM here",
                                                "Change the settings on Train first"], page


def test_an_explore_pages_train_button_opens_train_with_its_family_picked():
    """From the OCMF page without an OCMF run, after KM was picked on Train: the button
    opens Train with OCMF picked, so the fit it leads to is one the page can show."""
    at = pick_family(new_session(), "km")
    goto(at, "app_pages/ocmf.py")
    assert "No One-class MF with side information (OCMF) run yet" in at.info[0].value
    button(at, "Change the settings on Train first").click().run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Train"]
    assert at.selectbox(key="train_family").value == "ocmf"
    assert at.number_input(key="train_ocmf_k") is not None


def test_a_bare_explore_page_trains_its_family_itself_at_the_measured_settings():
    """Without a run, an Explore page's first button fits its family right there, at the
    settings the catalogue measured for the built-in default dataset (not bare defaults)."""
    at = pick_family(new_session(), "km")
    goto(at, "app_pages/ocmf.py")
    assert "at the settings measured on this dataset" in at.info[0].value
    job = at.session_state[StateKeys.JOB]
    button(at, "Train OCMF here").click().run()
    assert not at.exception, at.exception
    started = at.session_state[StateKeys.JOB]
    assert started is not job and started.family == "ocmf"   # started on this page
    assert started.params["rho"] == 0.0078125 and started.params["threshold"] == 4.0
    assert [t.value for t in at.title] != ["Train"]           # the page did not move
    started.stop()
    started.thread.join(300)


@pytest.mark.slow
def test_a_bare_explore_page_shows_its_figure_after_its_own_fit():
    at = new_session()
    goto(at, "app_pages/ocmf.py")
    button(at, "Train OCMF here").click().run()
    wait_job(at, timeout=600)
    at.run()
    assert not at.exception, at.exception
    assert not any("run yet" in i.value for i in at.info)
    assert plotly_specs(at), "the page draws its figures once its own fit has ended"
    assert len(at.session_state[StateKeys.RUNS]) == 1


# ------------------------------------------------------------------- saved runs, re-runs
@pytest.mark.slow
def test_saved_run_reopens_on_every_explore_page_in_a_new_session(trained, monkeypatch):
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # the operator shares runs between sessions
    first = only_run(trained)
    lanczos = metrics(goto(trained, KM_LANCZOS))
    impl = goto(trained, KM_IMPLICATIONS)
    wait_for_relations(impl)  # its table is saved with the run, and reopens with it
    words = [md.value for md in impl.markdown if "likes" in md.value]
    influence = metrics(impl)
    dual = goto(trained, KM_DUAL).dataframe[0].value

    fresh = new_session()  # a new browser session: no runs in session state
    assert fresh.session_state[StateKeys.RUNS] == {}
    assert fresh.session_state[StateKeys.DATASET_SPEC]["default"]  # not the run's data
    at = goto(fresh, KM_LANCZOS)
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="explore_run_km").value == first.run_id
    m = metrics(at)
    assert m["size of C(u*)"] == "4 × 4"
    assert m["δ of (20)"] == lanczos["δ of (20)"] and m["m chosen"] == lanczos["m chosen"]
    reopened = at.session_state[StateKeys.RUNS][first.run_id]
    assert reopened.reopened and reopened.split.train.fingerprint() == \
        first.split.train.fingerprint()
    np.testing.assert_array_equal(reopened.model.theta_, first.model.theta_)
    np.testing.assert_array_equal(reopened.model.psi_, first.model.psi_)

    goto(at, KM_IMPLICATIONS)
    assert not at.error, [e.value for e in at.error]
    assert metrics(at) == influence
    assert [md.value for md in at.markdown if "likes" in md.value] == words
    # the planted items' names came back with the run (escaped: they are user data)
    assert "\\(support \\{" in words[0]
    goto(at, KM_DUAL)
    assert not at.error
    table = at.dataframe[0].value
    assert (table["dual iterations"] > 0).all()
    assert table["dual iterations"].tolist() == dual["dual iterations"].tolist()
    goto(at, KM_PHASES)
    assert not at.error and len(at.dataframe[0].value) == 3
    goto(at, CONVERGENCE)
    assert not at.error
    assert at.multiselect(key="conv_runs").value == [first.run_id]


@pytest.mark.slow
def test_run_saved_without_its_data_explains_why_on_the_km_pages(trained, monkeypatch):
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # a run saved from Python has no owner
    run = only_run(trained)
    old_id = RunStore().save("km", run.trace,
                             {"theta": run.model.theta_, "psi": run.model.psi_},
                             dataset="old planted", params=dict(run.params),
                             metrics=run.metrics, label="old run")
    problem = open_run(old_id).problem
    assert "old run" in problem and "without its training data" in problem
    at = new_session()
    goto(at, KM_DUAL)
    at.selectbox(key="explore_run_km").set_value(old_id).run()
    assert not at.exception and not at.error
    assert at.info[0].value == md_escape(problem)  # OpenedRun.problem, shown as text
    for page in (KM_LANCZOS, KM_IMPLICATIONS):  # the chosen run carries over
        goto(at, page)
        assert at.selectbox(key="explore_run_km").value == old_id, page
        assert not at.error, page
        assert at.info[0].value == md_escape(problem), page
        assert any(link.label == "See its convergence" for link in at.page_link), page
    # the views that need only the trace still work
    goto(at, KM_PHASES)
    at.selectbox(key="phases_run").set_value(old_id).run()
    assert not at.exception and not at.error
    assert len(at.dataframe[0].value) == 3
    goto(at, CONVERGENCE)
    at.multiselect(key="conv_runs").set_value([old_id]).run()
    assert not at.exception and not at.error
    (spec,) = plotly_specs(at)
    assert any(t.get("x") for t in spec["data"])  # its curves are drawn ...
    assert MEAN_PREDICTOR not in {t.get("name") for t in spec["data"]}  # ... no data, no line
    assert len(at.dataframe[0].value) == 3
    goto(at, RUNS)
    assert len(at.dataframe[0].value) == 2
    assert at.selectbox(key="runs_one").value == old_id  # the newest run
    at.button(key="runs_rerun").click().run()  # settings only
    assert not at.exception
    assert "saved without its data" in " ".join(i.value for i in at.info)
    assert at.session_state[StateKeys.DATASET_SPEC]["default"]  # the data loaded is kept


@pytest.mark.slow
def test_rerun_restores_settings_data_and_split_and_reproduces_the_trace(trained):
    first = only_run(trained)
    objectives = [row["objective"] for row in first.trace.rows]
    at = goto(new_session(), RUNS)  # new session: only the default data loaded
    at.button(key="runs_rerun").click().run()
    assert not at.exception and not at.error
    assert "Data restored" in at.info[0].value
    assert at.session_state["train_km_D"] == 3 and at.session_state["train_km_random_state"] == 0
    split = at.session_state[StateKeys.SPLIT]
    assert split.train.fingerprint() == first.split.train.fingerprint()
    submit_train(goto(at, TRAIN), {})
    rerun = only_run(at)
    assert rerun.run_id != first.run_id
    assert rerun.params == first.params
    assert [row["objective"] for row in rerun.trace.rows] == objectives


@pytest.mark.slow
def test_rerun_of_non_catalogue_data_uses_the_split_saved_with_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("KMVIZ_DATA_DIRS", str(tmp_path))
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # the fresh session may load the run's data
    rows = ["user,item,rating"] + [f"{u},{i},{(u * 7 + i * 3) % 5 + 1}"
                                   for u in range(12) for i in range(8) if (u + i) % 3]
    path = tmp_path / "ratings.csv"
    path.write_text("\n".join(rows) + "\n")
    at = goto(new_session(), DATA)
    at.radio(key="data_source").set_value("Local path").run()
    at.text_input(key="data_path").input(str(path))
    at.button(key="data_load_path").click().run()
    assert not at.exception and not at.error
    at = train(at, D=2, max_iter=2)
    first = only_run(at)
    path.unlink()  # the file is gone: only the run's own copy can bring the data back
    fresh = goto(new_session(), RUNS)
    fresh.button(key="runs_rerun").click().run()
    assert not fresh.exception and "split saved with the run" in fresh.info[0].value
    split = fresh.session_state[StateKeys.SPLIT]
    assert split.train.fingerprint() == first.split.train.fingerprint()
    whole = fresh.session_state[StateKeys.DATASET]
    assert whole.fingerprint() == at.session_state[StateKeys.DATASET].fingerprint()
    assert list(whole.item_ids) == list(range(8))
    submit_train(goto(fresh, TRAIN), {})
    rerun = only_run(fresh)
    assert [r["objective"] for r in rerun.trace.rows] == [
        r["objective"] for r in first.trace.rows]


@pytest.mark.slow
def test_implications_minimum_ratings_filter(trained):
    at = goto(trained, KM_IMPLICATIONS)
    from kmviz.ui.families.km_implications import min_ratings_key

    key = min_ratings_key(only_run(at))      # one widget per run
    assert at.number_input(key=key).value == 1  # small data: show every item
    train_part = only_run(at).split.train
    counts = train_part.item_counts()
    cut = int(np.median(counts)) + 1
    at.number_input(key=key).set_value(cut).run()
    assert not at.exception and not at.error
    hidden = int((counts < cut).sum())
    assert f"{hidden:,} hidden with fewer than {cut} training ratings" in " ".join(
        c.value for c in at.caption)
    shown = set(np.flatnonzero(counts >= cut).tolist())
    # options read "name [index] · n ratings"
    offered = {int(o.rsplit("[", 1)[1].split("]")[0])
               for o in at.selectbox(key="impl_item").options}
    assert offered == shown
    table = _impl_table(at)
    assert set(table["antecedent"]) <= shown and set(table["consequent"]) <= shown
    at.number_input(key=key).set_value(10_000).run()
    assert not at.exception and "lower the minimum" in at.info[0].value


def test_data_page_generator_widgets():
    at = goto(new_session(), DATA)
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
    assert not at.exception and "max_support" in plain_text(at.error[0].value)


def test_too_small_for_the_split_loads_with_everything_in_training():
    at = goto(new_session(), DATA)
    at.selectbox(key="data_builtin").set_value("planted-km").run()
    for name, value in {"n_users": 2, "n_items": 2, "D": 1}.items():
        at.number_input(key=f"data_planted-km_{name}").set_value(value)
    at.button(key="data_load_builtin").click().run()
    assert not at.exception and not at.error
    assert "used for training" in at.warning[0].value
    split = at.session_state[StateKeys.SPLIT]
    assert split.validation is None and split.test is None
    assert split.train.n_ratings == at.session_state[StateKeys.DATASET].n_ratings


def test_data_page_loads_gapminder_with_its_options_and_boston():
    at = goto(new_session(), DATA)
    at.selectbox(key="data_builtin").set_value("gapminder").run()
    indicator = at.selectbox(key="data_gapminder_indicator")
    assert indicator.value == "life_expectancy" and "fertility" in indicator.options[1]
    assert at.selectbox(key="data_gapminder_log").value is None
    indicator.set_value("gdp")
    at.number_input(key="data_gapminder_year_width").set_value(5)
    at.button(key="data_load_builtin").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    ratings = at.session_state[StateKeys.DATASET]
    assert ratings.name == "Gapminder gdp (log10)" and ratings.shape == (185, 57)
    assert ratings.info["year_width"] == 5
    at.selectbox(key="data_builtin").set_value("boston").run()
    at.button(key="data_load_builtin").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[StateKeys.DATASET].shape == (506, 1)


def test_load_then_another_page_at_once_still_loads():
    """Load's callback loads: a click followed by a change of page (the click's run is the
    other page's) loads the picked dataset with the options typed, and the Data page shows
    it afterwards without loading again."""
    at = new_session()
    goto(at, DATA)
    at.selectbox(key="data_builtin").set_value("planted-km").run()
    at.number_input(key="data_planted-km_n_users").set_value(25)
    at.button(key="data_load_builtin").click()
    at.switch_page(TRAIN).run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Train"]
    ratings = at.session_state[StateKeys.DATASET]
    assert ratings.n_users == 25
    spec = at.session_state[StateKeys.DATASET_SPEC]
    assert spec["source"] == "planted-km" and spec["options"]["n_users"] == 25
    assert not spec.get("default")
    assert any(t.value.startswith("Loaded ") for t in at.toast)
    goto(at, DATA)
    assert at.session_state[StateKeys.DATASET] is ratings
    assert metrics(at)["users"] == "25" and not at.error


def test_a_load_that_fails_in_its_callback_is_shown_on_the_data_page_not_elsewhere():
    """A malformed upload, loaded and left at once for Train: Train runs normally with the
    old dataset; the Data page then shows the loader's message as text, once."""
    at = goto(new_session(), DATA)
    default = at.session_state[StateKeys.DATASET]
    at.radio(key="data_source").set_value("Upload").run()
    at.file_uploader(key="data_upload").upload(
        "bad **b** [x](y).csv", b"user,item,rating\n1,10,4\n2,11,not-a-number\n",
        "text/csv")
    at.run()
    at.button(key="data_load_upload").click()
    at.switch_page(TRAIN).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert [t.value for t in at.title] == ["Train"]
    assert at.session_state[StateKeys.DATASET] is default
    assert any("could not be loaded" in t.value for t in at.toast)
    goto(at, DATA)
    (error,) = at.error
    message = plain_text(error.value)
    assert message.startswith("bad **b** [x](y).csv, line 3"), message
    assert "](y)" not in error.value and "**b**" not in error.value  # text, not markup
    assert any(i.value.startswith("Still using:") for i in at.info)
    at.run()  # shown once
    assert not at.error


def test_a_load_that_its_stopped_callback_left_pending_is_applied_by_the_next_page():
    """A Load callback stopped by Streamlit (a newer click came in) after loading, before it
    made the data the session's: the next run of any page finishes it."""
    from kmviz.data import load
    from kmviz.data.splits import make_split

    at = goto(new_session(), TRAIN)
    ratings = load("planted-km", n_users=30, n_items=20, D=3)
    spec = {"kind": "built-in", "source": "planted-km", "options": {}, "title": "Planted",
            "licence": "", "provenance": "", "split": {"val_size": 0.1, "test_size": 0.2,
                                                      "by": "random", "seed": 0}}
    box = at.session_state[StateKeys.PENDING_LOAD]
    box["load"] = ("ok", (ratings, spec, make_split(ratings), None))
    at.session_state[StateKeys.PENDING_LOAD] = box
    at.run()
    assert not at.exception, at.exception
    assert at.session_state[StateKeys.DATASET].fingerprint() == ratings.fingerprint()
    assert "planted KM" in at.caption[0].value
    assert not at.session_state[StateKeys.PENDING_LOAD]
