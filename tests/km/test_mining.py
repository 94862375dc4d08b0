"""kmviz.km.mining: the model's implications with their figures, groups, hubs, ranking,
filters, words, ego rows and the planted truth, against brute force on tiny data."""

import itertools

import numpy as np
import pandas as pd
import pytest

from kmviz.data import Ratings, make_planted_km
from kmviz.km import mine_implications, planted_truth
from kmviz.km.mining import (
    ego_rows,
    export_csv,
    filter_implications,
    implication_counts,
    km_claims,
    lattice_graph,
    recovery_table,
    sentences,
    support_groups,
)
from kmviz.rules import pair_statistics

# item 0 = {0}, 1 = {0, 1}, 2 = {0, 1, 2}, 3 = {0, 1} (same as 1), 4 = {3}, 5 = {} (never),
# 6 = {0, 1, 2} (same as 2), 7 = {0, 1, 2, 3}
PSI = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 1],
                [0, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=float)


def _ratings(seed=0, n_users=60, observed=0.7):
    rng = np.random.default_rng(seed)
    n_items = PSI.shape[0]
    mask = rng.random((n_users, n_items)) < observed
    mask[0] = True
    u, i = np.nonzero(mask)
    v = rng.integers(1, 6, u.size).astype(float)
    names = [f"film {k}" for k in range(n_items)]
    return Ratings.from_arrays(u, i, v, r_min=1, r_max=5, user_ids=np.arange(n_users),
                               item_ids=np.arange(n_items), item_names=names)


def _subset(j, i):
    sj, si = set(np.flatnonzero(PSI[j])), set(np.flatnonzero(PSI[i]))
    return bool(sj) and sj <= si


def _brute_rows(keep):
    """(j, i, equivalent): strict pairs both ways they hold, equivalent pairs once (j < i
    within the group's most-liked-first order is not checked here, only the set)."""
    strict, equiv = set(), set()
    for j, i in itertools.permutations(keep, 2):
        if _subset(j, i) and _subset(i, j):
            equiv.add(frozenset((j, i)))
        elif _subset(j, i):
            strict.add((j, i))
    return strict, equiv


def test_item_level_rows_are_every_implication_with_pair_statistics():
    r = _ratings()
    train, test = r.split(0.25, random_state=0)
    df = mine_implications(PSI, train, validation=test, merge_groups=False)
    keep = [k for k in range(8) if PSI[k].any() and train.item_counts()[k] > 0]
    strict, equiv = _brute_rows(keep)
    got_strict = {(a, c) for a, c, e in zip(df.antecedent, df.consequent, df.equivalent)
                  if not e}
    got_equiv = [frozenset((a, c)) for a, c, e in zip(df.antecedent, df.consequent,
                                                      df.equivalent) if e]
    assert got_strict == strict
    assert sorted(map(sorted, got_equiv)) == sorted(map(sorted, equiv))  # each once
    assert len(got_equiv) == len(set(got_equiv))
    # the statistics are those of kmviz.rules for the same pairs
    ref = pair_statistics(train, df.antecedent, df.consequent, validation=test)
    for col in ("support", "co_support", "n_known", "confidence", "base_rate", "lift",
                "p_value", "heldout_n", "heldout_confidence", "heldout_lift"):
        pd.testing.assert_series_equal(df[col].reset_index(drop=True), ref[col],
                                       check_names=False)
    assert (df["statement"][~df.equivalent].str.startswith("everyone who likes film")).all()
    assert (df["statement"][df.equivalent].str.endswith("are liked by the same people")).all()
    assert df.attrs["liked"] == 4.0


def test_groups_counts_and_hubs_match_brute_force():
    r = _ratings(seed=1)
    groups = support_groups(PSI, r)
    # supports {0}, {3}, {0,1}, {0,1,2}, {0,1,2,3}: five groups, item 5 (empty) left out
    assert sorted(map(sorted, groups["members"])) == [[0], [1, 3], [2, 6], [4], [7]]
    assert groups["group"][5] == -1
    likes = np.bincount(r.items[r.values >= 4], minlength=8)
    for m in groups["members"]:  # most liked member first
        assert list(likes[m]) == sorted(likes[m], reverse=True)
    for i in range(8):
        want = sum(1 for j in range(8) if j != i and _subset(j, i) and not _subset(i, j))
        assert groups["implied_by"][i] == (want if PSI[i].any() else 0)
    counts = implication_counts(groups, hub_share=0.4)
    strict, equiv = _brute_rows([k for k in range(8) if PSI[k].any()])
    assert counts["implications"] == len(strict) + len(equiv)
    assert counts["groups"] == 2 and counts["items"] == 7
    assert counts["hubs"] == sum(groups["implied_by"][k] > 0.4 * 7 for k in range(8))
    df = mine_implications(PSI, r, hub_share=0.4, merge_groups=False)
    assert (df["hub"] == (df["implied_by"] > 0.4 * 7)).all()
    assert (df["implied_by"] == groups["implied_by"][df["consequent"]]).all()


def test_merged_rows_state_each_group_once_and_keep_item_pairs():
    r = _ratings(seed=2)
    full = mine_implications(PSI, r, merge_groups=False)
    key = ["antecedent_group", "consequent_group"]
    # default: strict implications item by item, equivalences once per group
    merged = mine_implications(PSI, r)
    strict = full[~full.equivalent]
    assert list(merged[~merged.equivalent][["antecedent", "consequent"]].itertuples(
        index=False)) == list(strict[["antecedent", "consequent"]].itertuples(index=False))
    eq = merged[merged.equivalent]
    assert len(eq) == 2 and not eq.duplicated(key).any()  # {1, 3} and {2, 6}
    for _, row in eq.iterrows():
        assert row.antecedent_group_size == 2 and row.antecedent_others in \
            {f"film {k}" for k in (1, 3, 2, 6)}
    assert list(merged["rank"]) == list(range(1, len(merged) + 1))
    # "pairs": one row per pair of groups, its best-ranked item pair
    pairs = mine_implications(PSI, r, merge_groups="pairs")
    assert not pairs.duplicated(key).any()
    assert set(map(tuple, pairs[key].to_numpy())) == set(map(tuple, full[key].to_numpy()))
    for _, row in pairs.iterrows():
        same = full[(full.antecedent_group == row.antecedent_group) &
                    (full.consequent_group == row.consequent_group)]
        assert (row.antecedent, row.consequent) == (same.antecedent.iloc[0],
                                                    same.consequent.iloc[0])
    assert pairs.attrs["counts"]["claims"] == len(pairs)
    with pytest.raises(ValueError, match="merge_groups"):
        mine_implications(PSI, r, merge_groups="groups")


def test_default_ranking_puts_supported_non_hubs_first_by_cautious_gain():
    r = _ratings(seed=3, n_users=200)
    df = mine_implications(PSI, r, merge_groups=False, hub_share=0.5)
    tier = (~df.supported).astype(int) + df.hub.astype(int)
    assert (np.diff(tier.to_numpy()) >= 0).all()
    assert np.allclose(df.score, df.confidence_lo - df.base_rate)
    for t in tier.unique():
        s = df.score[tier == t].fillna(-np.inf).to_numpy()
        assert (np.diff(s) <= 1e-12).all()
    assert (df.supported == (df.p_value <= 0.05)).all()


def test_items_filter_and_around():
    r = _ratings(seed=4)
    items = np.array([True, True, True, False, True, True, False, True])
    df = mine_implications(PSI, r, items=items, merge_groups=False)
    assert set(df.antecedent) | set(df.consequent) <= {0, 1, 2, 4, 7}
    around = mine_implications(PSI, r, around=1)
    full = mine_implications(PSI, r, merge_groups=False)
    on_1 = {(a, c) for a, c in zip(full.antecedent, full.consequent) if 1 in (a, c)}
    got = {(a, c) for a, c in zip(around.antecedent, around.consequent)}
    # around=1 states equivalences from item 1's side: (1, 3) whatever the full table's order
    assert {frozenset(p) for p in got} == {frozenset(p) for p in on_1}
    assert all(1 in p for p in got)
    assert len(mine_implications(PSI, r, around=5)) == 0  # empty support: no implications


def test_filters_apply_every_threshold_then_top_k():
    r = _ratings(seed=5, n_users=120)
    train, test = r.split(0.3, random_state=1)
    df = mine_implications(PSI, train, validation=test, merge_groups=False)
    out = filter_implications(df, min_support=3, min_confidence=0.3, min_lift=1.0,
                              min_heldout_confidence=0.2)
    want = df[(df.co_support >= 3) & (df.confidence >= 0.3) & (df.lift >= 1.0) &
              (df.heldout_confidence >= 0.2)]
    assert list(out.index) == list(want.index)
    assert len(filter_implications(df, top_k=3)) == min(3, len(df))
    assert list(filter_implications(df, top_k=3)["rank"]) == list(df["rank"][:3])
    assert len(filter_implications(df)) == len(df)  # NaN figures pass zero minimums
    no_hubs = filter_implications(df, hubs=False)
    assert not no_hubs.hub.any() and len(no_hubs) == int((~df.hub).sum())


def test_ego_rows_follow_implications_both_ways_for_one_or_two_steps():
    r = _ratings(seed=6)
    df = mine_implications(PSI, r, merge_groups=False)
    g = df.attrs["group_of"]
    one = ego_rows(df, 0, hops=1)
    g0 = g[0]
    assert ((one.antecedent_group == g0) | (one.consequent_group == g0)).all()
    assert len(one) == int(((df.antecedent_group == g0) | (df.consequent_group == g0)).sum())
    two = ego_rows(df, 4, hops=2)  # {3} -> {0,1,2,3} -> back to the others below it
    reach = {g[4], g[7]}
    assert set(two.antecedent_group) | set(two.consequent_group) >= reach
    assert len(two) >= len(ego_rows(df, 4, hops=1))


def test_sentences_state_the_model_and_the_data():
    r = _ratings(seed=7, n_users=100)
    train, test = r.split(0.2, random_state=0)
    rows = mine_implications(PSI, train, validation=test, around=1)
    said = sentences(rows, 1, [f"film {k}" for k in range(8)])
    text = ["".join(t for t, _ in s) for s in said]
    assert text[0].startswith("Everyone who likes film 1 also likes, under the model, film 3")
    assert "the other way round" in text[0]
    assert text[1].startswith("Everyone who likes film 1 also likes, under the model:")
    assert "film 2" in text[1] and "lift" in text[1] and "held-out" in text[1]
    assert text[2].startswith("Everyone who likes any of these also likes film 1")
    assert "film 0" in text[2]
    bold = {t for s in said for t, b in s if b}
    assert {"film 1", "film 3", "film 0"} <= bold  # names are pieces, escaped by the page
    none = sentences(rows.head(0), 1, [f"film {k}" for k in range(8)])
    assert ["".join(t for t, _ in s) for s in none] == [
        "Liking film 1 implies liking no other item that passes the filters.",
        "Liking film 1 is implied by liking no item that passes the filters."]


def test_planted_truth_from_names_and_features_and_perfect_recovery():
    ratings, truth = make_planted_km(50, 12, 5, noise=0.0, observed=0.8, random_state=3)
    got = planted_truth(ratings)
    assert set(map(tuple, got)) == set(map(tuple, truth.implications))
    claims = km_claims(truth.psi.astype(float), ratings)
    assert set(map(tuple, claims)) == set(map(tuple, truth.implications))
    table = recovery_table(truth.psi.astype(float), ratings, got, liked=0.3, min_support=2)
    km_row = table.iloc[0]
    assert km_row.precision == 1.0 and km_row.recall == 1.0
    assert table.iloc[1]["found"] <= len(claims)
    # MovieLens-format planted data: the supports are the genre columns "support k"
    feats = pd.DataFrame(truth.psi, columns=[f"support {d}" for d in range(5)])
    other = Ratings.from_arrays(ratings.users, ratings.items, ratings.values,
                                r_min=0, r_max=1, item_features=feats)
    assert set(map(tuple, planted_truth(other))) == set(map(tuple, truth.implications))
    plain = Ratings.from_arrays(ratings.users, ratings.items, ratings.values, r_min=0,
                                r_max=1)
    assert planted_truth(plain) is None


def test_lattice_graph_and_export():
    r = _ratings(seed=8)
    df = mine_implications(PSI, r)
    groups = support_groups(PSI, r)
    G = lattice_graph(df, groups, PSI, r)
    strict = df[~df.equivalent]
    assert G.number_of_edges() == len(set(zip(strict.antecedent_group,
                                              strict.consequent_group))) > 0
    for a, c in zip(strict.antecedent_group, strict.consequent_group):
        assert set(np.flatnonzero(PSI[groups["members"][a][0]])) < \
            set(np.flatnonzero(PSI[groups["members"][c][0]]))
    node = G.nodes[groups["group"][2]]
    assert sorted(node["members"]) == [2, 6] and node["support"] == (0, 1, 2)
    csv = export_csv(df, "rated 4 or more (scale 1-5)")
    back = pd.read_csv(pd.io.common.StringIO(csv))
    assert {"confidence", "lift", "p_value", "implied_by", "hub", "antecedent_others",
            "liked", "statement"} <= set(back.columns)
    assert (back["liked"] == "rated 4 or more (scale 1-5)").all() and len(back) == len(df)


def test_ego_graph_figure_draws_the_rows_around_the_item_with_escaped_names():
    from kmviz.km.figures import ego_graph_figure

    r = _ratings(seed=9)
    names = [f"<i>film</i> {k} & co" for k in range(8)]
    df = mine_implications(PSI, r, merge_groups=False, names=names)
    g = df.attrs["group_of"]
    rows = ego_rows(df, 1, hops=1)
    fig = ego_graph_figure(rows, g[1], hops=1)
    nodes = [t for t in fig.data if t.name == "item groups (same support)"][0]
    strict = rows[~rows.equivalent]
    want = set(strict.antecedent_group) | set(strict.consequent_group)
    assert {g[int(k)] for k in nodes.customdata} == want
    # one arrow per pair of groups (item pairs between the same groups share it)
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert len(arrows) == len(set(zip(strict.antecedent_group,
                                      strict.consequent_group))) >= 2
    assert all("<i>" not in t and "&lt;i&gt;" in t for t in nodes.text)
    labels = [a.text for a in fig.layout.annotations if not a.showarrow]
    assert sorted(labels) == sorted(nodes.text)  # every node labelled
    capped = ego_graph_figure(rows, g[1], hops=1, max_nodes=2)
    assert "more not drawn" in capped.layout.annotations[-1].text
    xs = dict(zip((g[int(k)] for k in nodes.customdata), nodes.x))
    assert xs[g[1]] == 0
    for a, c in zip(strict.antecedent_group, strict.consequent_group):  # j left of i
        assert xs[a] < xs[c]
    two = ego_graph_figure(ego_rows(df, 1, hops=2), g[1], hops=2)
    n2 = [t for t in two.data if t.name == "item groups (same support)"][0]
    assert len(n2.x) >= len(nodes.x) and max(abs(x) for x in n2.x) <= 2.6
    named = ego_graph_figure(rows, g[1], center_item=3, center_name="the pick")
    n3 = [t for t in named.data if t.name == "item groups (same support)"][0]
    assert "the pick +1" in n3.text and 3 in list(n3.customdata)
    empty = ego_graph_figure(rows.head(0), g[1])
    assert "No implication around this item" in empty.layout.annotations[0].text


def test_sentences_call_a_hub_a_hub():
    r = _ratings(seed=10, n_users=100)
    rows = mine_implications(PSI, r, around=7, hub_share=0.1)  # {0,1,2,3}: implied by all
    said = ["".join(t for t, _ in s) for s in sentences(rows, 7, [f"film {k}" for k in
                                                                  range(8)])]
    assert any("film 7 is a hub: implied by 6 items" in s for s in said)


def test_heldout_summary_pools_the_rows_or_says_nothing():
    from kmviz.km.mining import heldout_summary
    from kmviz.rules import pooled_heldout_lift

    r = _ratings(seed=12, n_users=150)
    train, test = r.split(0.3, random_state=0)
    rows = mine_implications(PSI, train, validation=test, merge_groups=False)
    got = heldout_summary(train, test, rows, 4.0)
    want = pooled_heldout_lift(train, test, rows.antecedent, rows.consequent, liked=4.0,
                               n_boot=200, random_state=0)
    assert got == want and got["heldout_n"] > 0
    assert heldout_summary(train, None, rows, 4.0) is None
    assert heldout_summary(train, test, rows.head(0), 4.0) is None
    assert heldout_summary(train, test, rows, "interacted") is None


def test_interaction_data_counts_every_user():
    rng = np.random.default_rng(13)
    X = rng.random((80, 8)) < 0.4
    u, i = np.nonzero(X)
    r = Ratings.from_arrays(u, i, user_ids=np.arange(80), item_ids=np.arange(8))
    train, test = r.split(0.25, random_state=0)
    df = mine_implications(PSI, train, validation=test, merge_groups=False)
    assert df.attrs["liked"] == "interacted"
    assert (df["n_known"] == df["support"]).all()
    T = np.zeros(r.shape, bool)
    T[train.users, train.items] = True
    assert np.allclose(df["base_rate"], T[:, df["consequent"]].mean(axis=0))
    said = sentences(mine_implications(PSI, train, around=2), 2, [f"film {k}" for k in
                                                                 range(8)])
    assert said and all(isinstance(t, str) for s in said for t, _ in s)


def test_graph_without_edges_puts_the_nodes_first():
    """Plotly draws no <g class="trace"> for an empty trace: the node trace must come first
    when there is no edge to hover, so the DOM's traces and the figure's stay aligned."""
    from kmviz.km.figures import implication_graph_figure

    r = _ratings(seed=14)
    df = mine_implications(PSI, r)
    G = lattice_graph(df[df.equivalent], support_groups(PSI, r), PSI, r)
    assert G.number_of_edges() == 0 and G.number_of_nodes() == 2
    fig = implication_graph_figure(G)
    assert [t.name for t in fig.data][0] == "item groups (same support)"
    assert all(len(t.x) for t in fig.data)


def test_order_dimension_bounds_against_known_orders():
    from kmviz.km.mining import order_dimension

    chain = order_dimension([0, 1, 2], [1, 2, 3])  # 0 => 1 => 2 => 3
    assert (chain["classes"], chain["chain"], chain["width"]) == (4, 4, 1)
    assert chain["d_lower"] == chain["d_upper"] == 4
    star = order_dimension([0] * 6, [1, 2, 3, 4, 5, 6])  # 0 under six unrelated items
    assert (star["chain"], star["width"]) == (2, 6)
    assert star["d_lower"] == 4 and star["d_upper"] == 7  # C(4, 2) = 6 sets in 4 events
    both_ways = order_dimension([0, 1, 1], [1, 0, 2])  # 0 <=> 1, then 2
    assert (both_ways["items"], both_ways["classes"], both_ways["chain"]) == (3, 2, 2)
    assert order_dimension([], [])["d_upper"] == 0


def test_missed_rules_say_which_events_stop_the_implication():
    from kmviz.km.mining import missed_caption, missed_rules

    # rules: 0 => 1 (held: {0} ⊆ {0, 1}), 1 => 4 (missed: events 0, 1 outside {3}),
    # 2 => 1 (missed: event 2 outside), 5 => 0 (5 has an empty support)
    rules = pd.DataFrame({"antecedent": [0, 1, 2, 5], "consequent": [1, 4, 1, 0],
                          "lift": [3.0, 2.0, 1.5, 1.2]})
    out = missed_rules(PSI, rules, strong=4)
    assert list(zip(out.antecedent, out.consequent)) == [(1, 4), (2, 1), (5, 0)]
    assert list(out.outside_events) == [2, 1, 0]
    assert list(out.antecedent_events) == [2, 3, 0]
    assert "empty support" in out.why.iloc[2] and "2 of supp(ψ_j)'s 2 events" in out.why.iloc[0]
    assert out.model_confidence.isna().all()  # psi alone: no theta to weigh the events
    assert out.attrs["held"] == 1 and out.attrs["strong"] == 4 and out.attrs["D"] == 4
    dim = out.attrs["dimension"]  # 5 => 0 => 1 => 4, and 2 => 1: a chain of 4, width 2
    assert (dim["chain"], dim["width"], dim["d_lower"], dim["d_upper"]) == (4, 2, 4, 5)
    assert missed_rules(PSI, rules, strong=1).empty  # the strongest one is held
    text = missed_caption(out)
    assert "implies 1 of the 4 strongest rules" in text and "at least 4 and at most 5" in text


def test_missed_rules_model_confidence_weighs_events_by_theta():
    from kmviz.km.mining import missed_rules

    class Fitted:  # theta puts 3/4 of the users' mass on event 0, 1/4 on event 2
        psi_ = PSI
        theta_ = np.array([[0.75, 0.0, 0.25, 0.0]] * 2)
        known_users_ = np.array([True, True])

    rules = pd.DataFrame({"antecedent": [2], "consequent": [0]})  # {0, 1, 2} vs {0}
    out = missed_rules(Fitted(), rules)
    assert out.outside_events.iloc[0] == 2
    assert out.model_confidence.iloc[0] == pytest.approx(0.75)  # P(i | j) = 0.75 / 1.0
