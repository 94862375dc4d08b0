"""The Implications page's stability over refits: started on request, with progress, then a
stability column, filter and order, and one implication across the refits."""

import time

import pytest

from tests.app.apphelpers import (KM_IMPLICATIONS, goto, load_planted, new_session, only_run,
                                  plotly_specs, train)


@pytest.mark.slow
def test_stability_on_request_adds_column_filter_and_refit_view():
    at = goto(train(load_planted(new_session())), KM_IMPLICATIONS)
    assert not at.error, [e.value for e in at.error]
    table = [d.value for d in at.dataframe if "implied_by" in d.value.columns][0]
    assert "stability" not in table.columns  # nothing refitted before the user asks
    at.number_input(key="impl_stab_B").set_value(40)  # long enough to still run below
    at.button(key="impl_stab_go").click().run()
    first = next(iter(at.session_state["impl_stability_jobs"].values()))
    if not first.finished:  # the page reran: the button cannot start a second job
        assert at.button(key="impl_stab_go").disabled
    first.stop()
    first.thread.join(300)
    assert first.finished
    at.run()
    at.number_input(key="impl_stab_B").set_value(3)
    at.button(key="impl_stab_go").click().run()
    job = next(iter(at.session_state["impl_stability_jobs"].values()))
    assert job is not first
    end = time.time() + 300
    while not job.finished and time.time() < end:
        time.sleep(0.5)
    assert job.finished and job.error is None, job.error
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = [d.value for d in at.dataframe if "implied_by" in d.value.columns][0]
    assert {"stability", "oob_lift_lo"} <= set(table.columns)
    assert table["stability"].between(0, 1).all()
    assert any("refits on resampled users" in c.value for c in at.caption)
    assert any("enough evidence" in c.value for c in at.caption)
    assert any(s["layout"].get("title", {}).get("text", "").startswith("Refits in which")
               for s in plotly_specs(at))
    assert any("held in" in t.value for t in at.text)
    # the order by stability alone
    at.radio(key="impl_sort").set_value("stability alone").run()
    table = [d.value for d in at.dataframe if "implied_by" in d.value.columns][0]
    assert (table["stability"].diff().dropna() <= 1e-12).all()
    # the filter keeps only the rows at or above the chosen stability
    at.number_input(key="impl_f_stab").set_value(1.0).run()
    table = [d.value for d in at.dataframe if "implied_by" in d.value.columns][0]
    assert (table["stability"] == 1.0).all()
    assert only_run(at).run_id in next(iter(at.session_state["impl_stability_jobs"]))


@pytest.mark.slow
def test_stability_is_saved_with_the_run_and_reopens_in_a_new_session(monkeypatch):
    import json

    from kmviz.km.saved_tables import saved_stability
    from kmviz.runs import RunStore
    from tests.app.apphelpers import new_session as fresh_session

    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # a second session sees the first's runs
    at = goto(train(load_planted(new_session())), KM_IMPLICATIONS)
    run = only_run(at)
    at.number_input(key="impl_stab_B").set_value(3)
    at.button(key="impl_stab_go").click().run()
    job = next(iter(at.session_state["impl_stability_jobs"].values()))
    end = time.time() + 300
    while not job.finished and time.time() < end:
        time.sleep(0.5)
    assert job.finished and job.error is None, job.error
    assert job.saved_note.startswith("Saved with the run")
    at.run()
    computed = [d.value for d in at.dataframe if "implied_by" in d.value.columns][0]
    # the Python / CLI reader finds it without knowing the page's settings
    found = saved_stability(run.run_id)
    assert found.table is not None and found.table.attrs["n_refits"] == 3
    assert found.table.attrs["held"].shape == (3, len(found.table))

    # a new session (as after a restart): the table comes back without refitting
    again = goto(fresh_session(), KM_IMPLICATIONS)
    assert not again.exception and not again.error, [e.value for e in again.error]
    assert again.session_state["impl_stability_jobs"] == {}
    table = [d.value for d in again.dataframe if "implied_by" in d.value.columns][0]
    assert "stability" in table.columns
    assert list(table["stability"]) == list(computed["stability"])
    assert any("Saved with the run" in c.value and "3 refits" in c.value for c in again.caption)
    assert again.button(key="impl_stab_go").label == "Compute again"

    # a damaged attachment reads as not computed, with a notice, never a crash
    folder = RunStore().runs_dir / run.run_id / "attachments"
    header = json.loads(next(folder.glob("stability-*.json")).read_text())
    (folder / header["data"]["file"]).write_bytes(b"garbage")
    broken = goto(fresh_session(), KM_IMPLICATIONS)
    assert not broken.exception
    assert any("cannot be read" in w.value for w in broken.warning)
    table = [d.value for d in broken.dataframe if "implied_by" in d.value.columns][0]
    assert "stability" not in table.columns
    assert broken.button(key="impl_stab_go").label == "Compute stability"
