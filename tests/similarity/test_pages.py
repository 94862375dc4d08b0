"""The similarity family in the app: its Train form, the Optimizers and Embeddings pages."""

import time

import pytest

from kmviz.ui.state import StateKeys
from tests.app.apphelpers import (goto, load_builtin, new_session, pick_family,
                                  plotly_specs, submit_train, wait_page_job)

OPTIMIZERS = "app_pages/similarity_optimizers.py"
EMBEDDINGS = "app_pages/similarity_embeddings.py"


def _no_errors(at):
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_pages_guard_without_a_run():
    at = new_session()
    goto(at, EMBEDDINGS)
    assert "run yet" in at.info[0].value and not at.error
    goto(at, OPTIMIZERS)  # needs data only: opens on the race, started on the first visit
    _no_errors(at)
    job = at.session_state["page_jobs"]["similarity_race"]
    job.stop()  # (run in test_optimizers_and_an_mlp_tower_on_planted_data)
    assert any("5 s of optimization" in m.value for m in at.markdown)
    job.thread.join(60)
    at.run()
    assert at.session_state["page_jobs"]["similarity_race"] is job  # not started again


@pytest.mark.slow
def test_default_form_beats_popularity_on_movielens_small_then_embeddings():
    """The form as it comes, on the built-in default data (MovieLens latest-small)."""
    at = pick_family(new_session(), "similarity")
    assert at.selectbox(key="train_similarity_user_tower").value == "identity"
    submit_train(at, {})  # its time is measured in bench/, not asserted here
    job = at.session_state[StateKeys.JOB]
    assert job.status == "done", job.progress()["message"]
    run = next(iter(at.session_state[StateKeys.RUNS].values()))
    pop = _popularity_map_at_5(run)
    assert run.metrics["test_map_at_5"] > pop + 0.03, (run.metrics, pop)

    goto(at, EMBEDDINGS)
    _no_errors(at)
    assert len(plotly_specs(at)) >= 2          # the 2-D map and the tower layers
    names = at.dataframe[0].value
    assert list(names["rank"]) == list(range(1, 11))
    at.selectbox(key="similarity_emb_colour_items").set_value("genre").run()
    _no_errors(at)
    groups = [t.get("name", "") for t in plotly_specs(at)[0]["data"]]
    assert any(g.startswith("Drama") for g in groups), groups
    at.radio(key="similarity_emb_side").set_value("users").run()
    _no_errors(at)
    # identity towers: no features to score a cold item from, said in words
    assert any("No cold scores" in i.value and "identity" in i.value for i in at.info)


def _popularity_map_at_5(run):
    import numpy as np

    from kmviz.similarity import SimilarityLearning

    model = run.model
    counts = np.bincount(model._seen_idx, minlength=model.item_factors_.shape[0])
    arrays = {"theta": np.zeros(1), "n_user_params": np.array([0]),
              "user_factors": np.ones((model.user_factors_.shape[0], 1)),
              "item_factors": counts[:, None] / counts.max(),
              "seen_indptr": model._seen_ptr, "seen_indices": model._seen_idx,
              "objective": np.array([0.0])}
    pop = SimilarityLearning.from_fitted_arrays(arrays, {"threshold": model.threshold})
    return pop.evaluate(run.split.test)["map_at_5"]


@pytest.mark.slow
def test_optimizers_and_an_mlp_tower_on_planted_data():
    at = new_session()
    load_builtin(at, "planted-lowrank", n_users=120, n_items=80, n_item_features=4)
    pick_family(at, "similarity")
    at.selectbox(key="train_similarity_item_tower").set_value("mlp:64")
    at.selectbox(key="train_similarity_side_features").set_value("item")
    submit_train(at, {"train_similarity_k": 8, "train_similarity_max_iter": 5})
    assert at.session_state[StateKeys.JOB].status == "done"

    goto(at, OPTIMIZERS)
    _no_errors(at)
    # the page opens on the race: started on the first visit, every solver for the same
    # budget, which alone ends each one (no curve squeezed against x = 0)
    wait_page_job(at, "similarity_race", timeout=600)
    _no_errors(at)
    result = at.session_state["page_jobs"]["similarity_race"].result
    assert list(result.frame["solver"].unique()) == ["newton", "gd", "gd-diag", "sogram-diag"]
    assert all("time limit of 5 s reached" == n for n in result.notes.values()), result.notes
    assert (result.frame.groupby("solver")["time_s"].max() >= 5).all()
    spec = plotly_specs(at)[0]
    assert {d["name"] for d in spec["data"] if d.get("showlegend", True) is not False} >= {
        "Gauss-Newton + CG (Alg. 3-4)"}
    assert "time_to_0.001_s" in at.dataframe[0].value.columns
    # not run again on the next visit; again on Compare, with other solvers and budget
    goto(at, EMBEDDINGS)
    goto(at, OPTIMIZERS)
    assert at.session_state["page_jobs"]["similarity_race"].result is result
    at.multiselect(key="similarity_opt_solvers").set_value(["newton", "gd"])
    at.number_input(key="similarity_opt_limit").set_value(2).run()
    at.button(key="similarity_opt_run").click().run()
    _no_errors(at)
    wait_page_job(at, "similarity_race", timeout=300)
    again = at.session_state["page_jobs"]["similarity_race"].result
    assert again is not result and set(again.frame["solver"]) == {"newton", "gd"}
    assert (again.frame.groupby("solver")["time_s"].max() >= 2).all()

    goto(at, EMBEDDINGS)
    _no_errors(at)
    assert at.metric[0].label.startswith("rank agreement")
    layer_names = plotly_specs(at)[-1]["data"][0]["y"]
    assert layer_names[0].startswith("hidden layer 1") and "embedding" in layer_names[-1]


@pytest.mark.slow
def test_stop_keeps_the_curves_so_far():
    from kmviz.similarity.optimizers import ComparisonJob
    from kmviz.similarity.synthetic import make_planted_towers

    data, _ = make_planted_towers(200, 120, 3, random_state=0)
    job = ComparisonJob(data, data, ["newton", "gd", "gd-diag"],
                        {"k": 4, "max_iter": 500, "tol": 0}).start()
    end = time.time() + 60
    while job.snapshot()["iteration"] < 3 and time.time() < end:
        time.sleep(0.05)
    job.stop()
    job.thread.join(60)
    assert job.snapshot()["status"] == "stopped"
    assert 0 < len(job.result.frame) and set(job.result.frame["solver"]) == {"newton"}


@pytest.mark.slow
def test_the_lesson_set_trains_at_its_measured_settings_and_maps_its_groups():
    """The similarity lesson's steps 1, 2 and 4 as AppTests: planted-towers with the Train
    form as it comes there (the measured linear towers), then the Embeddings page opens on
    the map coloured by the planted group, one trace per group, and scores a cold item."""
    at = new_session()
    load_builtin(at, "planted-towers")
    pick_family(at, "similarity")
    assert at.selectbox(key="train_similarity_item_tower").value == "linear"
    submit_train(at, {})
    job = at.session_state[StateKeys.JOB]
    assert job.status == "done", job.progress()["message"]
    goto(at, EMBEDDINGS)
    _no_errors(at)
    assert at.selectbox(key="similarity_emb_colour_items").value == "group"
    names = [t.get("name", "") for t in plotly_specs(at)[0]["data"]]
    assert [n.split(" (")[0] for n in names] == ["group A", "group B", "group C", "group D"]
    assert not any("No cold scores" in i.value for i in at.info)
    assert any(m.label.startswith("rank agreement") for m in at.metric)
