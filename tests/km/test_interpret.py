"""Implications mined from psi: direction, influence score (21), graph, checks on data."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from kmviz.data import Ratings
from kmviz.km import influence_scores, implication_graph
from kmviz.km.interpret import (
    implication_precision,
    implications_frame,
    implied_by_liking,
    implies,
    relation_mining_accuracy,
    support_matrix,
)

# hand-built: item 0 = {0}, item 1 = {0, 1}, item 2 = {0, 1, 2}, item 3 = {0, 1} (same as 1),
# item 4 = {3}, item 5 = {} (never liked)
PSI = np.array([
    [1, 0, 0, 0],
    [1, 1, 0, 0],
    [1, 1, 1, 0],
    [1, 1, 0, 0],
    [0, 0, 0, 1],
    [0, 0, 0, 0],
], dtype=float)


def _brute_N(psi, include_empty):
    n = psi.shape[0]
    N = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            sj, si = set(np.flatnonzero(psi[j])), set(np.flatnonzero(psi[i]))
            N[i, j] = sj <= si
            if not include_empty and (not sj or not si):
                N[i, j] = False
    return N


@pytest.mark.parametrize("D", [3, 8, 70])  # 70: supports span two 64-bit words
def test_support_matrix_and_influence_vs_brute_force(D):
    rng = np.random.default_rng(D)
    psi = (rng.random((40, D)) < 0.3).astype(float)
    psi[:3] = 0  # some empty supports
    psi[3] = 1
    for include_empty in (False, True):
        N = _brute_N(psi, include_empty)
        np.testing.assert_array_equal(support_matrix(psi, include_empty=include_empty), N)
    # eq. (21) literally: (1/I) sum_j N(i, j), all I items, empty supports included
    N = _brute_N(psi, True)
    lit = np.array([sum(N[i, j] for j in range(40)) / 40 for i in range(40)])
    np.testing.assert_allclose(influence_scores(psi, include_empty=True), lit)
    assert influence_scores(psi, include_empty=True)[3] == 1.0  # psi = 1: every item implies it
    # default: empty supports left out of the sum and of I
    Nd = _brute_N(psi, False)
    n_nonempty = int(psi.any(axis=1).sum())
    np.testing.assert_allclose(influence_scores(psi), Nd.sum(axis=1) / n_nonempty)
    assert influence_scores(psi)[3] == 1.0 and np.all(influence_scores(psi)[:3] == 0)


def test_direction_on_hand_built_psi():
    # liking item 0 ({0}) implies liking items 1, 2, 3 (supersets): anyone whose event is 0
    # likes them all
    assert implied_by_liking(PSI, 0).tolist() == [1, 2, 3]
    assert implies(PSI, 0).tolist() == []
    # what implies liking item 2 ({0, 1, 2})? every item inside it
    assert implies(PSI, 2).tolist() == [0, 1, 3]
    assert implied_by_liking(PSI, 2).tolist() == []
    # identical supports imply each other
    assert 3 in implied_by_liking(PSI, 1) and 1 in implied_by_liking(PSI, 3)
    # the empty item implies nothing by default, everything when asked
    assert implied_by_liking(PSI, 5).tolist() == []
    assert implied_by_liking(PSI, 5, include_empty=True).tolist() == [0, 1, 2, 3, 4]
    # the probabilistic meaning: P(like consequent) >= P(like antecedent) for every theta
    theta = np.random.default_rng(0).dirichlet(np.ones(4), 100)
    P = theta @ PSI.T
    N = support_matrix(PSI)
    for i, j in zip(*np.nonzero(N)):
        assert np.all(P[:, i] >= P[:, j] - 1e-15)


def test_implication_graph_merges_and_reduces():
    names = ["A", "B", "C", "B2", "D", "E"]
    G = implication_graph(PSI, names)
    # nodes: {0}, {3}, {0,1}(B,B2), {0,1,2}; the empty support is dropped (min_support=1)
    assert G.number_of_nodes() == 4
    by_support = {G.nodes[n]["support"]: n for n in G}
    a, d, b, c = (by_support[s] for s in [(0,), (3,), (0, 1), (0, 1, 2)])
    assert G.nodes[b]["members"] == [1, 3] and G.nodes[b]["names"] == ["B", "B2"]
    assert G.nodes[b]["support_size"] == 2
    assert G.nodes[c]["influence"] == pytest.approx(4 / 5)  # A, B, C, B2 of 5 non-empty
    # edge A -> B: liking A implies liking B; transitive A -> C removed
    assert set(G.edges) == {(a, b), (b, c)}
    assert nx.is_directed_acyclic_graph(G) and d in G and G.degree(d) == 0
    full = implication_graph(PSI, names, transitive_reduction=False)
    assert set(full.edges) == {(a, b), (b, c), (a, c)}
    assert implication_graph(PSI, min_support=2).number_of_nodes() == 2
    assert implication_graph(PSI, min_support=0).number_of_nodes() == 5


def test_implications_frame():
    df = implications_frame(PSI, ["A", "B", "C", "B2", "D", "E"])
    pairs = set(zip(df.antecedent, df.consequent))
    assert pairs == {(0, 1), (0, 2), (0, 3), (1, 2), (3, 2), (1, 3), (3, 1)}
    row = df[(df.antecedent == 0) & (df.consequent == 2)].iloc[0]
    assert row.statement == "everyone who likes A also likes C" and not row.equivalent
    assert df[(df.antecedent == 1) & (df.consequent == 3)].iloc[0].equivalent
    assert len(implications_frame(PSI, equal_supports=False)) == 5


def _ratings(triplets, n_users, n_items):
    u, i, r = map(np.asarray, zip(*triplets))
    return Ratings.from_arrays(u, i, r.astype(float), r_min=1, r_max=5,
                               user_ids=np.arange(n_users), item_ids=np.arange(n_items))


def test_implication_precision_counts():
    # psi: item 0 = {0} implies item 1 = {0, 1}; item 2 = {2} unrelated
    psi = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1]], dtype=float)
    # users 0-3 like item 0 (rating 5); of them 0, 1, 2 rated item 1 and 0, 1 like it
    trip = [(0, 0, 5), (1, 0, 5), (2, 0, 4), (3, 0, 5), (4, 0, 1),
            (0, 1, 5), (1, 1, 4), (2, 1, 2), (4, 1, 5), (5, 1, 1)]
    df = implication_precision(psi, _ratings(trip, 6, 3), min_users=1, probability="max")
    assert list(zip(df.antecedent, df.consequent)) == [(0, 1)]
    row = df.iloc[0]
    assert row.n_users == 3 and row.n_like_both == 2
    assert row.precision == pytest.approx(2 / 3)
    assert row.base_rate == pytest.approx(3 / 5)  # raters of item 1 who like it
    assert row.lift == pytest.approx((2 / 3) / (3 / 5))
    assert len(implication_precision(psi, _ratings(trip, 6, 3), min_users=4)) == 0


def test_relation_mining_accuracy_paper_measure():
    psi = np.array([[1, 1], [1, 0], [0, 1]], dtype=float)  # item 0 has influence 1
    # user 0 rated 3 items, liked 2 (p = r/5 >= 0.5 means r >= 2.5); user 1 rated 2, liked 1
    trip = [(0, 0, 5), (0, 1, 3), (0, 2, 1), (1, 0, 2), (1, 1, 4), (2, 1, 5)]
    df = relation_mining_accuracy(psi, _ratings(trip, 3, 3), 0)
    assert df.user.tolist() == [0, 1]
    assert df.n_rated.tolist() == [3, 2] and df.n_liked.tolist() == [2, 1]
    np.testing.assert_allclose(df.accuracy, [2 / 3, 1 / 2])
    assert (df.influence == 1.0).all()
    with pytest.raises(ValueError, match="out of range"):
        relation_mining_accuracy(psi, _ratings(trip, 3, 3), 7)


def test_implication_precision_without_any_implication():
    # disjoint singleton supports: no item's support lies inside another's
    psi = np.eye(3)
    ratings = Ratings.from_arrays([0, 0, 1, 1, 2], [0, 1, 1, 2, 2], [1.0, 0.2, 0.9, 0.7, 0.1],
                                  r_min=0.0, r_max=1.0)
    df = implication_precision(psi, ratings, min_users=1)
    assert df.empty
    assert "precision" in df.columns


def test_implication_precision_on_an_item_subset_equals_the_filtered_full_table():
    rng = np.random.default_rng(3)
    psi = (rng.random((30, 4)) < 0.5).astype(float)
    users = rng.integers(0, 40, 400)
    items = rng.integers(0, 30, 400)
    pairs = np.unique(np.c_[users, items], axis=0)
    ratings = Ratings.from_arrays(pairs[:, 0], pairs[:, 1], rng.random(len(pairs)),
                                  r_min=0.0, r_max=1.0, user_ids=np.arange(40),
                                  item_ids=np.arange(30))
    subset = np.zeros(30, dtype=bool)
    subset[::2] = True
    full = implication_precision(psi, ratings, min_users=1)
    part = implication_precision(psi, ratings, min_users=1, subset=subset)
    inside = subset[full["antecedent"]] & subset[full["consequent"]]
    expected = full[inside].sort_values(["antecedent", "consequent"]).reset_index(drop=True)
    got = part.sort_values(["antecedent", "consequent"]).reset_index(drop=True)
    assert len(got) > 0
    pd.testing.assert_frame_equal(got, expected)
