"""The Explore pages' helpers without a browser: the item filter and the restricted graph."""

import numpy as np

from kmviz.data import Ratings
from kmviz.km.interpret import implication_graph
from kmviz.ui import analysis as an


def test_default_min_ratings_rule():
    small = Ratings.from_arrays([0, 1, 1], [0, 0, 1], [1.0, 2.0, 3.0])
    assert an.default_min_ratings(small) == 1
    big = Ratings.from_arrays(np.arange(20_001) % 500, np.arange(20_001) // 500,
                              np.arange(20_001) % 5 + 1.0)
    assert an.default_min_ratings(big) == an.LARGE_DATA_MIN_RATINGS == 20


def test_restrict_graph_drops_hidden_items_and_keeps_edges():
    psi = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 0], [1, 1, 1]])  # 0 => {1, 2} => 3
    G = implication_graph(psi, ["a", "b", "c", "d"], transitive_reduction=False)
    keep = np.array([True, False, True, True])
    H = an.restrict_graph(G, keep)
    members = sorted(m for _, d in H.nodes(data=True) for m in d["members"])
    assert members == [0, 2, 3]
    assert H.number_of_nodes() == 3 and H.number_of_edges() == 3
    node_c = an.node_of_item(H, 2)
    assert H.nodes[node_c]["names"] == ["c"] and H.nodes[node_c]["label"] == "c"
    H2 = an.restrict_graph(G, np.array([True, False, False, True]))
    assert H2.number_of_nodes() == 2 and an.node_of_item(H2, 1) is None


def test_influence_summary_counts_hidden_items_with_score_one():
    scores = np.array([1.0, 1.0, 0.5, 0.25])
    s = an.influence_summary(scores, np.array([False, True, True, True]))
    assert s == {"shown": 3, "hidden": 1, "one_shown": 1, "one_hidden": 1, "top3": [1, 2, 3]}
    assert an.filter_caption(s, 20) == ("Showing 3 of 4 items: 1 hidden with fewer than 20 "
                                        "training ratings, 1 of them with ς = 1.")
