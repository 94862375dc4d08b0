"""The Implications page's first section, "Relations in the data": the relation miner's
default path on the run, started on its own for a small run, with the planted rules on top,
the table view and an export of every row; saved with the run, it reopens after a restart."""

import io
import time

import pandas as pd
import pytest

from kmviz.data.planted_relations import make_planted_relations
from tests.app.apphelpers import (KM_IMPLICATIONS, goto, load_builtin, new_session, only_run,
                                  train, wait_for_relations)


def _relations(at) -> pd.DataFrame:
    found = [d.value for d in at.dataframe
             if "score" in d.value.columns and "implied_by" not in d.value.columns]
    assert found, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def _buttons(at, prefix: str) -> list:
    return [b for b in at.get("download_button") if b.proto.id.endswith(
        (f"-{prefix}_csv", f"-{prefix}_parquet"))]


@pytest.mark.slow
def test_relations_in_the_data_start_on_their_own_and_put_planted_rules_first(monkeypatch):
    monkeypatch.setenv("KMVIZ_SHARED_RUNS", "1")  # a second session sees the first's runs
    at = goto(train(load_builtin(new_session(), "planted-relations"), D=8, max_iter=5),
              KM_IMPLICATIONS)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(h.value == "Relations in the data" for h in at.subheader)
    job = wait_for_relations(at)  # started without a click: the run is small
    assert job.saved_note.startswith("Saved with the run"), job.saved_note
    assert not at.exception and not at.error, [e.value for e in at.error]
    truth = make_planted_relations(300, 60, random_state=0)[1].keys()
    full = job.result
    keys = [(tuple(a), int(c)) for a, c in zip(full["antecedent"], full["consequent"])]
    assert sum(k in truth for k in keys[:5]) >= 3, full.head(8)
    shown = _relations(at)
    assert shown["antecedent_name"].iloc[0] == full["antecedent_name"].iloc[0]
    assert any(c.value.startswith("How the default was chosen") for c in at.caption)
    # the export holds every row (the table shows the top 100 at most)
    n = len(full)
    labels = sorted(b.label for b in _buttons(at, "rel"))
    assert labels == [f"CSV ({n:,} rows)", f"PARQUET ({n:,} rows)"], labels
    from kmviz.km import relation_view as rv

    exported = pd.read_csv(io.BytesIO(rv.export_bytes(rv.normalize(full), "csv")))
    assert len(exported) == n
    # the model's own table stays below, under its heading
    heads = [h.value for h in at.subheader]
    assert heads.index("Relations in the data") < heads.index("Implications and their figures")
    # a new session (a restart) reopens the saved table without computing
    run = only_run(at)
    again = goto(new_session(), KM_IMPLICATIONS)
    assert again.session_state["explore_run_km"] == run.run_id
    assert not again.session_state["impl_rel_jobs"]
    back = _relations(again)
    assert list(back["antecedent_name"]) == list(shown["antecedent_name"])
    assert any(c.value.startswith("Saved with the run") for c in again.caption)


@pytest.mark.slow
def test_a_large_run_waits_for_compute_and_stop_keeps_nothing(monkeypatch):
    from kmviz.km import run_relations as rr
    from kmviz.km.saved_tables import saved_relations
    from kmviz.runs import RunStore
    from kmviz.ui.families import km_relations_panel as panel
    from tests.app.apphelpers import load_planted

    monkeypatch.setattr(panel, "AUTO_MAX_RATINGS", 0)  # every run counts as large
    real = rr.mine_run_relations

    def held_back(run, *, progress=None, stop=None, **kw):
        """The real miner, its first step held until Stop (no race with a fast box)."""
        def first(done, total, what):
            end = time.time() + 120
            while not stop() and time.time() < end:
                time.sleep(0.05)
            progress(done, total, what)
        return real(run, progress=first, stop=stop, **kw)

    monkeypatch.setattr(rr, "mine_run_relations", held_back)
    at = goto(train(load_planted(new_session(), n_users=60, n_items=20)), KM_IMPLICATIONS)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not at.session_state["impl_rel_jobs"]  # nothing started on its own
    assert at.button(key="impl_rel_go").label == "Compute"
    at.button(key="impl_rel_go").click().run()
    job = next(iter(at.session_state["impl_rel_jobs"].values()))
    assert not job.done and at.button(key="impl_rel_go").disabled
    at.button(key="impl_rel_stop").click().run()  # the page's Stop
    job.thread.join(300)
    assert job.status == "stopped" and job.error is None, (job.status, job.error)
    at.run()
    assert not at.exception
    # stopped before the first refit: whatever was built is shown, never saved
    assert job.result is None or job.result.attrs["n_refits"] == 0
    if job.result is not None:
        assert any(c.value.startswith("Stopped early") for c in at.caption)
    assert saved_relations(only_run(at).run_id, store=RunStore()).table is None
    assert at.button(key="impl_rel_go").label == "Compute again"
