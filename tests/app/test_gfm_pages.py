"""The gFM family in the app: trained from the Train page (ALS on ratings), explored on
Interactions, and the Recovery page's planted fit and phase diagram (no run needed)."""

import base64

import numpy as np
import pytest

from kmviz.runs import RunStore
from kmviz.ui.state import StateKeys

from .apphelpers import (CONVERGENCE, goto, load_builtin, new_session, pick_family,
                         plain_text, plotly_specs, submit_train, texts, wait_page_job)

RECOVERY = "app_pages/gfm_recovery.py"
INTERACTIONS = "app_pages/gfm_interactions.py"
TIMEOUT = 240  # Numba's first compile on a cold cache, on a loaded box


def _values(data):
    """An array of a Plotly JSON spec (plain lists, or Plotly 6's typed base64 arrays)."""
    if isinstance(data, dict) and "bdata" in data:
        out = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        return out.reshape([int(x) for x in str(data["shape"]).split(",")]) if "shape" in \
            data else out
    return np.asarray(data, dtype=float)


def _gfm_session():
    """A session with a small planted low-rank set loaded, on the Train page with gFM chosen."""
    at = new_session()
    at.default_timeout = TIMEOUT
    load_builtin(at, "planted-lowrank", n_users=60, n_items=40)
    return pick_family(at, "gfm")


def test_train_gfm_and_explore_its_interactions():
    at = _gfm_session()
    # the form is gFM's; its optional parameters start empty ("automatic")
    assert at.number_input(key="train_gfm_batch_size").value is None
    assert at.selectbox(key="train_gfm_user_ids").value is None
    submit_train(at, {"train_gfm_rank": 2, "train_gfm_n_passes": 4}, timeout=TIMEOUT)
    job = at.session_state[StateKeys.JOB]
    assert job.status == "done", job.progress()["message"]
    assert job.progress()["max_iter"] == 4  # the progress bar counts ALS passes
    run = next(iter(at.session_state[StateKeys.RUNS].values()))
    assert run.family == "gfm" and run.model.solver_ == "als"
    assert run.model.get_params()["batch_size"] is None
    assert run.metrics["test_rmse"] < run.metrics.get("train_rmse", 10) + 1.0
    df = RunStore().list()
    assert df.loc[df["run_id"] == run.run_id, "family"].item() == "gfm"

    goto(at, INTERACTIONS)
    assert not at.error, [e.value for e in at.error]
    shown = {m.label: m.value for m in at.metric}
    assert float(shown["test RMSE"]) < float(shown["RMSE of the training mean"])
    table = at.dataframe[0].value
    assert {"feature_a", "feature_b", "M_ab"} <= set(table.columns)
    assert np.all(np.diff(np.abs(table["M_ab"].to_numpy())) <= 1e-12)  # strongest first
    names = set(table["feature_a"]) | set(table["feature_b"])
    assert any(n.startswith(("user=", "item=", "user:", "item:")) for n in names), names
    assert len(plotly_specs(at)) == 3

    # the shared Convergence page draws the ALS passes with gFM's labels
    goto(at, CONVERGENCE)
    assert not at.error, [e.value for e in at.error]
    assert plotly_specs(at)


@pytest.mark.slow
def test_onepass_divergence_on_ratings_is_explained():
    at = _gfm_session()
    at.selectbox(key="train_gfm_solver").set_value("onepass")
    submit_train(at, {"train_gfm_n_batches": 6}, timeout=TIMEOUT)
    # the result says, in words, what to do
    words = plain_text(" ".join(texts(at)))
    assert "diverging" in words and "solver='als'" in words, words[:2000]


def test_recovery_page_fits_a_preset_and_draws_the_phase_diagram():
    at = goto(new_session(), RECOVERY)
    assert not at.error
    # no run needed: the page opens on the default problem, fitted on the first visit
    wait_page_job(at, "gfm_recovery_result")
    assert any("fitted rate" in t.get("name", "") for s in plotly_specs(at) for t in s["data"])
    at.selectbox(key="gfm_rec_preset").set_value("phase_retrieval")
    at.slider(key="gfm_rec_d").set_value(30)
    at.slider(key="gfm_rec_batches").set_value(8)
    at.button[0].click().run()
    wait_page_job(at, "gfm_recovery_result")
    assert not at.exception and not at.error, [e.value for e in at.error]
    specs = plotly_specs(at)
    names = [t.get("name", "") for s in specs for t in s["data"]]
    assert any("fitted rate" in n for n in names) and any("√(kd/n)" in n for n in names)
    eps = [t for s in specs for t in s["data"] if t.get("name", "").startswith("εₜ")][0]
    y = _values(eps["y"])
    assert y[-1] < 1e-2 < y[0]  # phase retrieval recovered
    assert any(t.get("type") == "heatmap" for s in specs for t in s["data"])
    # the phase diagram, a small grid
    at.multiselect(key="gfm_phase_ratios").set_value([2, 20])
    at.multiselect(key="gfm_phase_ks").set_value([1, 2])
    at.slider(key="gfm_phase_seeds").set_value(1)
    [b for b in at.button if b.label == "Compute the phase diagram"][0].click().run()
    wait_page_job(at, "gfm_recovery_phase")
    assert not at.exception and not at.error, [e.value for e in at.error]
    phase = [s for s in plotly_specs(at) if "batch size n / (k d)" in str(s["layout"])]
    assert phase, "no phase diagram"
    z = _values(phase[0]["data"][0]["z"])
    assert np.nanmax(z[:, 1]) < np.nanmin(z[:, 0])  # large batches recover, small ones not
