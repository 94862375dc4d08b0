"""The Runs page names one run everywhere after a delete, rename or import; it imports
exported runs; filters and settings columns (AppTest)."""

import pytest

from kmviz.runs import RunStore
from kmviz.trace import Trace
from tests.app.apphelpers import RUNS, button, goto, new_session
from tests.test_runs import make_arrays

pytestmark = pytest.mark.slow  # AppTest sessions of the whole app


@pytest.fixture(autouse=True)
def _shared(monkeypatch):
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # runs saved here are managed in the app


def save(label, family="km", *, params=None, sweep=None, tags=None, dataset="toy"):
    trace = Trace(f"{family}.x", {})
    for i in range(3):
        trace.record(objective=3.0 - i, train_nrmse=0.3 - 0.01 * i)
    trace.stop_reason = "max_iter"
    return RunStore().save(family, trace, make_arrays(), dataset=dataset,
                           params={"D": 4, "lambda_theta": 0.0, **(params or {})},
                           metrics={"validation_nrmse": 0.2, "test_nrmse": 0.21},
                           label=label, sweep=sweep, tags=tags)


def named_everywhere(at):
    """The run id every widget of "One run" names (asserting they agree)."""
    rid = at.selectbox(key="runs_one").value
    label = RunStore().load_meta(rid)["label"]
    name = [t for t in at.text_input if t.label == "Name"]
    assert len(name) == 1 and name[0].value == label, (rid, name[0].value, label)
    assert any(rid in c.value and "Name and note of run" in c.value for c in at.caption)
    assert rid in at.multiselect(key="runs_selected").value
    return rid


def test_after_a_delete_every_widget_names_the_same_run():
    alpha, beta, gamma = save("alpha"), save("beta"), save("gamma")
    at = goto(new_session(), RUNS)
    assert named_everywhere(at) == gamma  # the newest
    at.selectbox(key="runs_one").set_value(beta).run()
    assert named_everywhere(at) == beta
    at.button(key="runs_delete").click().run()
    at.button(key="runs_delete_yes").click().run()
    assert not at.exception and not at.error
    assert sorted(RunStore().ids()) == sorted([alpha, gamma])
    now = named_everywhere(at)
    assert now in (alpha, gamma)
    # a rename now renames that run, and says so
    name = next(t for t in at.text_input if t.label == "Name")
    name.input("renamed after the delete")
    button(at, "Save name and note").click().run()
    assert not at.exception and not at.error
    assert RunStore().load_meta(now)["label"] == "renamed after the delete"
    other = alpha if now == gamma else gamma
    assert RunStore().load_meta(other)["label"] in ("alpha", "gamma")
    assert any(now in t.value and "renamed after the delete" in t.value for t in at.toast)
    assert named_everywhere(at) == now


def test_text_typed_for_one_run_never_lands_on_another():
    alpha, beta = save("alpha"), save("beta")
    at = goto(new_session(), RUNS)
    at.selectbox(key="runs_one").set_value(alpha).run()
    next(t for t in at.text_input if t.label == "Name").input("typed for alpha")
    at.selectbox(key="runs_one").set_value(beta).run()  # switch before saving
    assert named_everywhere(at) == beta  # beta's own name, not the text typed for alpha
    button(at, "Save name and note").click().run()
    assert RunStore().load_meta(beta)["label"] == "beta"
    assert RunStore().load_meta(alpha)["label"] == "alpha"


def _upload(at, data: bytes, name="run.zip"):
    (up,) = [u for u in at.file_uploader if u.key.startswith("runs_upload_")]
    up.upload(name, data, "application/zip")
    at.run()
    at.button(key="runs_import").click().run()
    assert not at.exception


def test_import_on_the_runs_page_selects_the_imported_run():
    first, travelling = save("first"), save("travelling")
    data = RunStore().export_bytes(travelling)
    RunStore().delete(travelling)
    at = goto(new_session(), RUNS)
    assert named_everywhere(at) == first
    _upload(at, data)
    assert not at.error
    assert any(f"Imported run 'travelling' as {travelling}." in s.value for s in at.success)
    assert named_everywhere(at) == travelling
    # the same file again: a new id, said so, the existing run untouched
    _upload(at, data)
    new = named_everywhere(at)
    assert new not in (first, travelling) and len(RunStore()) == 3
    assert any("already in this store" in s.value for s in at.success)
    # a damaged file: an error, nothing changes
    before = sorted(RunStore().ids())
    _upload(at, data[: len(data) // 2])
    assert at.error and "nothing was imported" in at.error[0].value
    assert sorted(RunStore().ids()) == before


def test_settings_that_differ_are_columns_and_filters_narrow_the_table():
    a = save("a", params={"lambda_theta": 10.0}, sweep={"id": "sweep-1"}, tags=["sweep"])
    b = save("b", params={"lambda_theta": 100.0}, sweep={"id": "sweep-1"}, tags=["sweep"])
    c = save("c", dataset="other data", tags=["class"])
    at = goto(new_session(), RUNS)
    table = at.dataframe[0].value
    assert "lambda_theta" in table.columns and "D" not in table.columns  # D is the same
    assert set(table["run_id"]) == {a, b, c}
    at.multiselect(key="runs_filter_sweep").set_value(["sweep-1"]).run()
    assert set(at.dataframe[0].value["run_id"]) == {a, b}
    at.multiselect(key="runs_filter_sweep").set_value([]).run()
    at.multiselect(key="runs_filter_tags").set_value(["class"]).run()
    assert set(at.dataframe[0].value["run_id"]) == {c}
    assert named_everywhere(at) == c  # the selection follows the filter
    at.multiselect(key="runs_filter_tags").set_value([]).run()
    at.multiselect(key="runs_filter_dataset").set_value(["toy"]).run()
    assert set(at.dataframe[0].value["run_id"]) == {a, b}


def test_across_runs_figures_for_a_sweep_with_seeds():
    for d in (4, 8):
        for seed in (0, 1):
            save(f"D={d} seed {seed}", params={"D": d, "random_state": seed},
                 sweep={"id": "sweep-2"}, tags=["sweep"])
    at = goto(new_session(), RUNS)
    assert not at.exception
    assert any(s.value == "Across runs" for s in at.subheader)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert any('"parcoords"' in s for s in specs)
    assert any("mean over seeds" in s and "min to max" in s for s in specs)
    assert any("mean of 2 seeds" in s for s in specs)
    at.radio(key="runs_across_band").set_value("sd").run()
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("standard deviation" in s for s in specs)
