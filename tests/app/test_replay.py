"""Training replayed in the app: the Implications page's iteration slider redraws the page
from the model after an earlier iteration, and what it draws equals the page of a fit
stopped there (max_iter = t, same seed); the history is saved with the run and a reopened
run replays from it; play steps through the iterations; the Convergence page's slider cuts
the curves at the chosen iteration."""

import base64
import json

import numpy as np
import pytest

from kmviz.history import load_history
from kmviz.runs import RunStore
from kmviz.ui.state import StateKeys
from tests.app.apphelpers import (CONVERGENCE, KM_IMPLICATIONS, goto, load_planted,
                                  new_session, only_run, train, wait_for_relations)

pytestmark = pytest.mark.slow

DATA = dict(n_users=60, n_items=30, D=3)   # with D = 8, psi still moves at iteration 4


def _session(max_iter: int):
    at = train(load_planted(new_session(), **DATA), D=8, max_iter=max_iter, tol=0.0)
    at = goto(at, KM_IMPLICATIONS)
    wait_for_relations(at)  # the relations in the data (a background job) drawn too
    return at


def _page(at) -> dict:
    """What the Implications page draws: its tables, metrics and figures' data."""
    assert not at.exception and not at.error, [e.value for e in at.error]
    tables = [d.value.reset_index(drop=True) for d in at.dataframe]
    figures = [json.loads(c.proto.spec)["data"] for c in at.get("plotly_chart")]
    return {"tables": tables, "figures": figures,
            "metrics": [(m.label, m.value) for m in at.metric]}


def _same_page(a: dict, b: dict) -> bool:
    return (len(a["tables"]) == len(b["tables"])
            and all(x.equals(y) for x, y in zip(a["tables"], b["tables"]))
            and a["figures"] == b["figures"] and a["metrics"] == b["metrics"])


def _slider(at, run):
    return at.select_slider(key=f"impl_replay_{run.run_id}")


def test_the_slider_redraws_an_earlier_iteration_as_a_fit_stopped_there():
    at = _session(4)
    run = only_run(at)
    slider = _slider(at, run)
    assert slider.value == 4 and [int(o) for o in slider.options] == [1, 2, 3, 4]
    last = _page(at)
    history = run.model.history_
    moved = [t for t in history.iterations
             if (history.arrays_at(t)["psi"] != run.model.psi_).any()]
    assert moved, "psi never changes on this data: pick data where the replay shows more"
    t = moved[-1]                      # the last iteration whose supports differ
    slider.set_value(t).run()
    replayed = _page(at)
    assert any(f"Replaying iteration {t} of 4" in c.value for c in at.caption)

    live = _page(_session(t))          # a new session: the same data and seed, max_iter t
    assert _same_page(replayed, live)
    assert not _same_page(replayed, last)  # the replay shows other implications

    # back to the last iteration: the run's own model again
    _slider(at, run).set_value(4).run()
    assert _same_page(_page(at), last)

    # the history is saved with the run; reopened from the store, the run replays from it
    saved = load_history(run.run_id, store=RunStore())
    assert saved.iterations == [1, 2, 3, 4]
    at.session_state[StateKeys.RUNS] = {}
    at.session_state["replay_histories"] = {}
    at.run()
    reopened = only_run(at)
    assert reopened.reopened and getattr(reopened.model, "history_", None) is None
    _slider(at, reopened).set_value(t).run()
    assert _same_page(_page(at), replayed)


def test_play_steps_through_the_iterations_and_stops_at_the_last():
    at = _session(3)
    run = only_run(at)
    key = f"impl_replay_{run.run_id}"
    at.toggle(key=f"{key}_play").set_value(True).run()   # on the last: starts from the first
    assert _slider(at, run).value == 1
    for want in (2, 3):
        at.session_state[f"{key}_tick"] = True            # what the play timer sets
        at.run()
        assert _slider(at, run).value == want
    assert at.toggle(key=f"{key}_play").value is False    # stopped at the last iteration


def _array(a):
    """A Plotly array from a figure's JSON: a list, or typed binary ``{dtype, bdata}``."""
    if isinstance(a, dict) and "bdata" in a:
        return np.frombuffer(base64.b64decode(a["bdata"]), dtype=a["dtype"])
    return np.asarray(a)


def _run_curves(at, *, ghosts=False) -> list:
    """The x values of the run's curves on the Convergence page (not the mean predictor);
    with ``ghosts``, those of the whole fit drawn faintly behind a replay instead."""
    return [_array(t["x"]).tolist() for fig in _page(at)["figures"] for t in fig
            if "x" in t and not str(t.get("name", "")).startswith("mean predictor")
            and str(t.get("name", "")).endswith("(later iterations)") == ghosts]


def test_convergence_slider_cuts_the_curves():
    at = train(load_planted(new_session(), n_users=30, n_items=20, D=3), D=3, max_iter=4,
               tol=0.0)
    goto(at, CONVERGENCE)
    curves = _run_curves(at)
    assert curves and all(x == [1, 2, 3, 4] for x in curves)
    assert at.select_slider(key="conv_replay").value == 4
    at.select_slider(key="conv_replay").set_value(2).run()
    assert any("up to iteration 2" in c.value for c in at.caption)
    cut = _run_curves(at)
    assert len(cut) == len(curves) and all(x == [1, 2] for x in cut)
    behind = _run_curves(at, ghosts=True)      # the whole fit, faintly: the y axes hold
    assert len(behind) == len(curves) and all(x == [1, 2, 3, 4] for x in behind)
    layouts = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
    ranges = [v["range"] for lay in layouts for k, v in lay.items()
              if k.startswith("xaxis") and isinstance(v, dict) and "range" in v]
    assert ranges and all(r == [0.75, 4.25] for r in ranges)  # the axes keep all 4
    rows = [d.value for d in at.dataframe if "iteration" in d.value.columns]
    assert rows and list(rows[0]["iteration"]) == [1, 2]   # the trace table too
