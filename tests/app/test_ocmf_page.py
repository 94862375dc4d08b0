"""The OCMF family in the app: chosen on Train, trained on the default data, explored."""

import numpy as np
import pytest

from kmviz.runs import RunStore
from kmviz.ui.state import StateKeys

from .apphelpers import (goto, new_session, pick_family, plotly_specs, submit_train,
                         wait_page_job)

OCMF_PAGE = "app_pages/ocmf.py"


@pytest.mark.slow
def test_train_ocmf_from_the_train_page_and_explore_it():
    at = pick_family(new_session(), "ocmf")
    # the form is OCMF's, built from its declared parameters
    assert at.number_input(key="train_ocmf_k") is not None
    submit_train(at, {"train_ocmf_k": 8, "train_ocmf_max_iter": 2, "train_ocmf_threshold": 4.0})
    job = at.session_state[StateKeys.JOB]
    assert job.status == "done", job.progress()["message"]
    run = next(iter(at.session_state[StateKeys.RUNS].values()))
    assert run.family == "ocmf" and run.model.get_params()["threshold"] == 4.0
    p5 = run.metrics["test_precision_at_5"]
    assert 0.0 <= p5 <= 1.0 and "validation_precision_at_5" in run.metrics
    # saved with the family's metrics, listed by the store
    df = RunStore().list()
    assert df.loc[df["run_id"] == run.run_id, "family"].item() == "ocmf"

    goto(at, OCMF_PAGE)
    assert not at.error, [e.value for e in at.error]
    recs = at.dataframe[-1].value if len(at.dataframe) else None
    assert recs is not None and {"rank", "item", "score", "held_out"} <= set(recs.columns)
    assert list(recs["rank"]) == list(range(1, len(recs) + 1))
    assert np.all(np.diff(recs["score"].to_numpy()) <= 1e-12)  # best first
    # the grid on request, one cell
    at.multiselect(key="ocmf_rhos").set_value([1.0])
    at.multiselect(key="ocmf_lambdas").set_value([4.0])
    at.button(key="ocmf_grid").click().run()
    wait_page_job(at, "ocmf_grid_job")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(c.proto.spec and "validation p@5" in c.proto.spec for c in at.get("plotly_chart"))
    # the grid stays when another user is picked, with ρ and λ as powers of 2
    grid_spec = [c.proto.spec for c in at.get("plotly_chart") if "validation p@5" in c.proto.spec]
    assert '"2^0"' in grid_spec[0] and '"2^2"' in grid_spec[0]
    users = at.selectbox(key="ocmf_user").options
    at.selectbox(key="ocmf_user").set_value(at.selectbox(key="ocmf_user").value)
    at.selectbox(key="ocmf_user").select_index(min(1, len(users) - 1)).run()
    assert any("validation p@5" in c.proto.spec for c in at.get("plotly_chart"))
    # other ρ: no stale grid, a line that says so
    at.multiselect(key="ocmf_rhos").set_value([0.5]).run()
    assert not any("validation p@5" in c.proto.spec for c in at.get("plotly_chart"))
    assert any("press Compute the grid" in c.value for c in at.caption)


def test_the_objective_split_leaves_out_a_graph_term_that_is_always_zero():
    at = pick_family(new_session(), "ocmf")
    # no user graph (the form starts from the graph measured on MovieLens, issue 20)
    at.session_state["train_ocmf_graph"] = "none"
    at.session_state["train_ocmf_lambda_g"] = 0.0
    at.run()
    submit_train(at, {"train_ocmf_k": 4, "train_ocmf_max_iter": 2,
                      "train_ocmf_threshold": 4.0})
    goto(at, OCMF_PAGE)
    titles = [[a.get("text", "") for a in spec["layout"].get("annotations", [])]
              for spec in plotly_specs(at)]
    convergence = [t for t in titles if "Objective of (2)" in t or "λ_w ‖W‖²" in t]
    assert len(convergence) == 2, titles  # losses, then regularizers
    assert not any("λ_w λ_g tr(BᵀLB)" in t for t in convergence)
    assert any("tr(BᵀLB)" in c.value and "stayed 0" in c.value for c in at.caption)
