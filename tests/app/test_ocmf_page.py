"""The OCMF family in the app: chosen on Train, trained on the default data, explored."""

import numpy as np

from kmviz.runs import RunStore
from kmviz.ui.state import StateKeys

from .apphelpers import goto, new_session, pick_family, submit_train

OCMF_PAGE = "app_pages/ocmf.py"


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
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(c.proto.spec and "validation p@5" in c.proto.spec for c in at.get("plotly_chart"))
