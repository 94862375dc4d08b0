"""Explore pages open on a view that teaches, chosen by a rule (issue 33, item 1)."""

import pytest

from kmviz.km.teaching import dual_item
from kmviz.ui.state import StateKeys

from .apphelpers import KM_DUAL, cli_train, goto, new_session

pytestmark = pytest.mark.slow


def test_dual_gd_opens_on_the_rules_item_and_says_why():
    rid = cli_train(n_users=60, n_items=30, data_D=4, D=4)
    at = goto(new_session(), KM_DUAL)
    at.selectbox(key="explore_run_km").set_value(rid).run()
    run = at.session_state[StateKeys.RUNS][rid]
    want = dual_item(run.model, run.split.train, float(run.params.get("gamma", 100.0)))
    assert want.item is not None
    # a fresh session on the page: the run's first item is the rule's
    fresh = new_session()
    fresh.session_state[StateKeys.ACTIVE_RUN] = rid
    goto(fresh, KM_DUAL)
    assert fresh.selectbox(key="dual_item").value == want.item
    captions = [c.value for c in fresh.caption]
    assert any(c.startswith("Opened on this item by a rule") and want.reason in c
               for c in captions), captions
    assert any("fewer for Alg. 2" in c for c in captions)
    # a pick of the user's is kept: the rule does not override it
    counts = run.split.train.item_counts()
    other = next(i for i in range(counts.size) if counts[i] > 0 and i != want.item)
    fresh.selectbox(key="dual_item").set_value(other).run()
    goto(fresh, KM_DUAL)
    assert fresh.selectbox(key="dual_item").value == other
    assert not any(c.value.startswith("Opened on this item") for c in fresh.caption)


def test_lanczos_says_why_when_alg5_stops_at_m_1():
    from kmviz.km import analysis as an

    rid = cli_train(n_users=60, n_items=30, data_D=4, D=4)
    at = new_session()
    at.session_state[StateKeys.ACTIVE_RUN] = rid
    goto(at, "app_pages/km_lanczos.py")
    run = at.session_state[StateKeys.RUNS][rid]
    for a in (0.1, 10.0):
        at.slider(key="lanczos_a").set_value(a).run()
        item = at.selectbox(key="lanczos_item").value
        S, v = run.model.item_problem(run.split.train, item)
        u_star = an.dual_trajectories(S, v, float(run.params.get("gamma", 100.0)))["u_star"]
        C = an.item_dual_matrix(run.model, run.split.train, item, u_star)
        m = an.lanczos_view(C, a)["m_threshold"]
        said = any("Alg. 5 stops at m = 1" in i.value for i in at.info)
        assert said == (m <= 1), (a, m)
