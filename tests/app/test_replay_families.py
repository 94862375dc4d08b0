"""The replay slider on the Explore pages of gFM, OCMF, Kernel MC and similarity learning:
after a fit on the Train page, the family's page shows the iteration slider (with play) at
the last iteration; moving it redraws the page at an earlier iteration (its caption says
which) without an error, and other figures than the last iteration's."""

import json

import pytest

from kmviz.ui.state import StateKeys

from tests.app.apphelpers import goto, load_builtin, new_session, pick_family, submit_train

pytestmark = pytest.mark.slow   # trains through AppTest

PAGES = {"gfm": ("app_pages/gfm_interactions.py", "gfm_replay", "n_passes"),
         "ocmf": ("app_pages/ocmf.py", "ocmf_replay", "max_iter"),
         "kmc": ("app_pages/kmc_completion.py", "kmc_replay", "max_iter"),
         "similarity": ("app_pages/similarity_embeddings.py", "similarity_replay",
                        "max_iter")}


def _figures(at) -> list:
    return [json.loads(c.proto.spec)["data"] for c in at.get("plotly_chart")]


@pytest.mark.parametrize("family", sorted(PAGES))
def test_the_explore_page_replays_an_earlier_iteration(family):
    page, key, stop = PAGES[family]
    at = load_builtin(new_session(), "planted-lowrank", n_users=40, n_items=30)
    at = pick_family(at, family)
    if family == "kmc":  # KKMCEX on small data is solved directly, in one step
        at.selectbox(key="train_kmc_method").set_value("als").run()
    numbers = {f"train_{family}_{stop}": 3}
    if any(n.key == f"train_{family}_tol" for n in at.number_input):
        numbers[f"train_{family}_tol"] = 0.0
    submit_train(at, numbers)
    run = next(iter(at.session_state[StateKeys.RUNS].values()))
    assert run.trace.n_iter == 3, run.trace.stop_message
    goto(at, page)
    slider = at.select_slider(key=f"{key}_{run.run_id}")
    assert [int(o) for o in slider.options] == [1, 2, 3] and int(slider.value) == 3
    assert at.toggle(key=f"{key}_{run.run_id}_play").value is False
    last = _figures(at)
    slider.set_value(1).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Replaying iteration 1 of 3" in c.value for c in at.caption)
    assert _figures(at) != last
