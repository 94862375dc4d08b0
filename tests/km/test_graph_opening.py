"""The item the implication graph opens on: chosen by a rule from the run (well supported
by the ratings, not a hub), not the item the other KM pages last used."""

import numpy as np
import pytest

from kmviz.data import Ratings
from kmviz.km.mining import mine_implications
from kmviz.km.teaching import graph_item

D = 30
USERS_PER_EVENT = 20
HUB, STAR, PAIR = 0, 1, 2
SINGLE = {k: 3 + k for k in range(D)}  # item of the singleton support {k}


def _planted():
    """Supports over D events: a hub (every event: liked by everyone), a star {0, 1, 2, 3}
    implied by the four singletons {0}..{3}, a pair {5, 6} implied by two, and a singleton
    per event; every user has one event and rates every item (5 liked, 1 not)."""
    n_items = 3 + D
    psi = np.zeros((n_items, D))
    psi[HUB] = 1.0
    psi[STAR, [0, 1, 2, 3]] = 1.0
    psi[PAIR, [5, 6]] = 1.0
    for k, item in SINGLE.items():
        psi[item, k] = 1.0
    n_users = D * USERS_PER_EVENT
    event = np.arange(n_users) % D
    users = np.repeat(np.arange(n_users), n_items)
    items = np.tile(np.arange(n_items), n_users)
    values = np.where(psi[items, event[users]] > 0, 5.0, 1.0)
    ratings = Ratings.from_arrays(users, items, values, r_min=1, r_max=5)
    return psi, ratings


@pytest.fixture(scope="module")
def mined():
    psi, ratings = _planted()
    return mine_implications(psi, ratings, liked=4.0), ratings


def test_the_graph_opens_on_the_supported_non_hub_item(mined):
    frame, ratings = mined
    hubs = set(frame.loc[frame["hub"], "consequent"])
    assert HUB in hubs  # implied by every item: the page calls it a hub
    choice = graph_item(frame, ratings.item_counts(), alpha=0.05)
    assert choice.item == STAR and choice.item not in hubs
    # its four implications {k} => star are each supported by the ratings
    rows = frame[(frame["consequent"] == STAR) & ~frame["equivalent"]]
    assert len(rows) == 4 and rows["supported"].all()
    assert choice.n_supported == 4 and "(4; lift > 1 at p ≤ 0.05" in choice.reason


def test_the_rule_keeps_to_the_items_shown(mined):
    frame, ratings = mined
    shown = np.ones(ratings.n_items, bool)
    shown[STAR] = False
    rows = frame[(frame["antecedent"] != STAR) & (frame["consequent"] != STAR)]
    choice = graph_item(rows, ratings.item_counts(), shown=shown)
    assert choice.item == PAIR  # next best: {5} => pair and {6} => pair
    assert choice.n_supported == 2


def test_without_supported_rows_the_most_connected_non_hub_is_taken(mined):
    frame, ratings = mined
    unsupported = frame.assign(supported=False)
    choice = graph_item(unsupported, ratings.item_counts())
    assert choice.item == STAR and choice.n_supported == 4
    assert choice.reason.startswith("no implication between non-hubs passes the exact test")


def test_rows_that_all_involve_a_hub_give_no_item(mined):
    frame, ratings = mined
    only_hub = frame[frame["consequent"] == HUB]
    assert graph_item(only_hub, ratings.item_counts()).item is None
    assert graph_item(frame.head(0), ratings.item_counts()).item is None


def test_a_big_group_does_not_win_by_its_size():
    """Fifteen items with one support {20, 21} (a group), implied by the singleton {20}
    only: fifteen rows, one partner group; the star's four partners win."""
    psi, ratings = _planted()
    n0 = psi.shape[0]
    extra = np.zeros((15, D))
    extra[:, [20, 21]] = 1.0
    psi = np.vstack([psi, extra])
    n_users = ratings.n_users
    event = np.arange(n_users) % D
    users = np.repeat(np.arange(n_users), psi.shape[0])
    items = np.tile(np.arange(psi.shape[0]), n_users)
    values = np.where(psi[items, event[users]] > 0, 5.0, 1.0)
    ratings = Ratings.from_arrays(users, items, values, r_min=1, r_max=5)
    frame = mine_implications(psi, ratings, liked=4.0)
    big = frame[frame["consequent"] >= n0]
    assert len(big) > 4  # more rows than the star has
    choice = graph_item(frame, ratings.item_counts(), alpha=0.05)
    assert choice.item == STAR and choice.n_supported == 4
