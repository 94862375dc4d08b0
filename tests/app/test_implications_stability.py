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
