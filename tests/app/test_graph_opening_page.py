"""The Implications page's graph opens on the rule's item (well supported, not a hub), not
on the item another KM page left behind; a pick on the page is kept."""

import numpy as np
import pytest

from kmviz import rules as pair_rules
from kmviz.km import mining
from kmviz.km.teaching import graph_item
from kmviz.ui.state import StateKeys
from tests.app.apphelpers import (KM_IMPLICATIONS, goto, load_planted, new_session, only_run,
                                  train)


@pytest.mark.slow
def test_the_graph_opens_on_the_rules_item_then_keeps_the_users_pick():
    at = train(load_planted(new_session(), n_users=150, n_items=40, D=6), D=6, max_iter=5)
    run = only_run(at)
    counts = run.split.train.item_counts()
    # another KM page left the most rated item (a hub on most runs) as the current item
    popular = int(np.argmax(counts))
    at.session_state[StateKeys.ITEM] = {run.run_id: popular}
    at = goto(at, KM_IMPLICATIONS)
    assert not at.exception and not at.error, [e.value for e in at.error]
    liked = at.number_input(key="impl_liked").value
    frame = mining.mine_implications(run.model, run.split.train, liked=liked,
                                     validation=run.split.held_out())
    want = graph_item(frame, counts, alpha=pair_rules.ALPHA)
    assert want.item is not None
    hubs = set(frame.loc[frame["hub"], "consequent_group"])
    assert frame.attrs["group_of"][want.item] not in hubs
    assert at.selectbox(key="impl_item").value == want.item
    assert any(c.value.startswith("Opened on ") and "not hubs" in c.value for c in at.caption)
    assert want.n_supported >= 1
    # the address bar (and so a link) names the item the graph shows
    assert at.session_state[StateKeys.ITEM][run.run_id] == want.item
    # a pick on this page stays, and becomes the item of every KM page
    other = next(int(o.rsplit("[", 1)[1].split("]")[0])
                 for o in at.selectbox(key="impl_item").options
                 if int(o.rsplit("[", 1)[1].split("]")[0]) != want.item)
    at.selectbox(key="impl_item").set_value(other).run()
    at.run()
    assert at.selectbox(key="impl_item").value == other
    assert not any(c.value.startswith("Opened on ") for c in at.caption)
    assert at.session_state[StateKeys.ITEM][run.run_id] == other
