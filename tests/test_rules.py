"""kmviz.rules: "liked" in the data's units, pair statistics and association rules, checked
against brute force on small dense data."""

import itertools
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from scipy.stats import fisher_exact

from kmviz.data import Ratings
from kmviz.rules import (
    INTERACTED,
    compare_with_rules,
    liked_phrase,
    liked_threshold,
    pair_statistics,
    pairwise_rules,
    pooled_heldout_lift,
    rank_pairs,
    rating_step,
    recovery_scores,
    resolve_liked,
    wilson_interval,
)


def _random_ratings(seed=0, n_users=40, n_items=9, density=0.5, scale=(1, 5), step=1.0):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    mask[:, 0] |= rng.random(n_users) < 0.3  # every item rated by someone
    u, i = np.nonzero(mask)
    lo, hi = scale
    levels = np.arange(lo, hi + step / 2, step)
    v = rng.choice(levels, size=u.size)
    return Ratings.from_arrays(u, i, v, r_min=lo, r_max=hi, user_ids=np.arange(n_users),
                               item_ids=np.arange(n_items))


def _dense(r):
    """users x items: NaN where unrated."""
    M = np.full(r.shape, np.nan)
    M[r.users, r.items] = r.values
    return M


# ----------------------------------------------------------------------------- liked
@pytest.mark.parametrize("scale,step,expected", [
    ((1, 5), 1.0, 4.0), ((0.5, 5), 0.5, 4.0), ((1, 10), 1.0, 8.0), ((0, 1), 0.25, 0.75),
])
def test_liked_threshold_is_the_top_quarter_rounded_to_the_step(scale, step, expected):
    r = _random_ratings(scale=scale, step=step)
    assert rating_step(r) == pytest.approx(step)
    assert liked_threshold(r) == pytest.approx(expected)
    assert resolve_liked(r) == liked_threshold(r)


def test_liked_threshold_on_continuous_and_interaction_data():
    rng = np.random.default_rng(1)
    u, i = np.nonzero(rng.random((30, 6)) < 0.6)
    cont = Ratings.from_arrays(u, i, rng.random(u.size), r_min=0, r_max=1)
    assert rating_step(cont) is None
    assert liked_threshold(cont) == pytest.approx(0.75)
    implicit = Ratings.from_arrays(u, i)
    assert implicit.implicit and liked_threshold(implicit) == INTERACTED
    assert "interacted" in liked_phrase(implicit)
    assert liked_phrase(_random_ratings()) == "rated 4 or more (scale 1-5)"
    with pytest.raises(ValueError, match="outside the rating scale"):
        resolve_liked(_random_ratings(), 7)
    with pytest.raises(ValueError):
        resolve_liked(_random_ratings(), "loved")


def test_wilson_interval_known_value():
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    lo, hi = wilson_interval(np.array([0]), np.array([0]))
    assert np.isnan(lo[0]) and np.isnan(hi[0])


# ----------------------------------------------------------------------------- statistics
def _brute_pair(M, j, i, t, *, held=None):
    like = M >= t
    rated = ~np.isnan(M)
    fans = like[:, j]
    co = int((fans & like[:, i]).sum())
    known = int((fans & rated[:, i]).sum())
    base = like[:, i].sum() / rated[:, i].sum()
    table = [[co, known - co], [int(like[:, i].sum()) - co,
                                int(rated[:, i].sum()) - int(like[:, i].sum()) - (known - co)]]
    out = {"support": int(fans.sum()), "co_support": co, "n_known": known,
           "confidence": co / known if known else np.nan, "base_rate": base,
           "p_value": fisher_exact(table, alternative="greater")[1] if known else 1.0}
    if held is not None:
        hl, hr = held >= t, ~np.isnan(held)
        n_h = int((fans & hr[:, i]).sum())
        co_h = int((fans & hl[:, i]).sum())
        out["heldout_n"] = n_h
        out["heldout_co_support"] = co_h
        out["heldout_confidence"] = co_h / n_h if n_h else np.nan
        out["heldout_base_rate"] = hl[:, i].sum() / hr[:, i].sum() if hr[:, i].any() else np.nan
    return out


def test_pair_statistics_match_brute_force_with_held_out_data():
    r = _random_ratings(seed=3)
    train, test = r.split(0.3, random_state=0)
    M, H = _dense(train), _dense(test)
    pairs = [(j, i) for j, i in itertools.permutations(range(r.n_items), 2)]
    j, i = np.array(pairs).T
    df = pair_statistics(train, j, i, liked=4, validation=test)
    assert list(df["antecedent"]) == list(j) and list(df["consequent"]) == list(i)
    for row in df.itertuples():
        want = _brute_pair(M, row.antecedent, row.consequent, 4, held=H)
        for key, value in want.items():
            got = getattr(row, key)
            if np.isnan(value):
                assert np.isnan(got), key
            else:
                assert got == pytest.approx(value, rel=1e-9, abs=1e-12), key
        if row.n_known:
            assert row.lift == pytest.approx(row.confidence / row.base_rate)
            assert row.confidence_lo <= row.confidence <= row.confidence_hi
        if row.heldout_n and row.heldout_base_rate > 0:
            assert row.heldout_lift == pytest.approx(row.heldout_confidence /
                                                     row.heldout_base_rate)


def test_pair_statistics_for_interactions_count_every_user():
    rng = np.random.default_rng(5)
    X = rng.random((50, 6)) < 0.35
    u, i = np.nonzero(X)
    r = Ratings.from_arrays(u, i, user_ids=np.arange(50), item_ids=np.arange(6))
    train, test = r.split(0.25, random_state=1)
    T = np.zeros(r.shape, bool)
    T[train.users, train.items] = True
    Hm = np.zeros(r.shape, bool)
    Hm[test.users, test.items] = True
    df = pair_statistics(train, [0, 2, 5], [1, 3, 0], validation=test)
    for row in df.itertuples():
        j, i = row.antecedent, row.consequent
        co = (T[:, j] & T[:, i]).sum()
        assert row.support == T[:, j].sum() and row.co_support == co
        assert row.n_known == T[:, j].sum()  # nobody is "unknown" with interactions
        assert row.base_rate == pytest.approx(T[:, i].mean())
        # held out: j's fans without a training interaction with i
        pool = T[:, j] & ~T[:, i]
        assert row.heldout_n == pool.sum()
        assert row.heldout_co_support == (pool & Hm[:, i]).sum()
        assert row.heldout_base_rate == pytest.approx(Hm[:, i].sum() / (~T[:, i]).sum())


# ----------------------------------------------------------------------------- rules
def test_pairwise_rules_are_exactly_the_qualifying_pairs():
    r = _random_ratings(seed=7, n_users=80, n_items=10, density=0.6)
    M = _dense(r)
    want = set()
    for j, i in itertools.permutations(range(r.n_items), 2):
        b = _brute_pair(M, j, i, 4)
        if b["co_support"] >= 6 and b["n_known"] and b["confidence"] >= 0.55:
            want.add((j, i))
    df = pairwise_rules(r, liked=4, min_support=6, min_confidence=0.55)
    assert set(zip(df["antecedent"], df["consequent"])) == want
    assert list(df["rank"]) == list(range(1, len(df) + 1))
    # the rules' default ranking: supported non-hubs first, then lift descending
    tier = (~df["supported"]).astype(int) + df["hub"].astype(int)
    assert (np.diff(tier.to_numpy()) >= 0).all()
    for t in tier.unique():
        lifts = df.loc[tier == t, "lift"].to_numpy()
        assert (np.diff(lifts) <= 1e-12).all()
    implied = df.groupby("consequent")["antecedent"].count()
    assert (df["implied_by"] == df["consequent"].map(implied)).all()
    assert df["antecedent_name"].iloc[0] == f"item {df['antecedent'].iloc[0]}"


def test_pairwise_rules_item_subset_and_score_ranking():
    r = _random_ratings(seed=8, n_users=80, n_items=10, density=0.6)
    items = [1, 3, 4, 7]
    df = pairwise_rules(r, min_support=2, min_confidence=0.0, items=items, rank_by="score")
    assert set(df["antecedent"]) | set(df["consequent"]) <= set(items)
    assert np.allclose(df["score"], df["confidence_lo"] - df["base_rate"])
    with pytest.raises(ValueError, match="rank by"):
        rank_pairs(df, by="popularity")


def test_lift_lo_ranking_sorts_by_the_cautious_lift_within_tiers():
    r = _random_ratings(seed=9, n_users=120, n_items=10, density=0.6)
    df = pairwise_rules(r, min_support=2, min_confidence=0.0, rank_by="lift_lo")
    assert np.allclose(df["lift_lo"], df["confidence_lo"] / df["base_rate"], equal_nan=True)
    tier = (~df["supported"]).astype(int) + df["hub"].astype(int)
    assert (np.diff(tier.to_numpy()) >= 0).all()
    for t in tier.unique():
        v = df.loc[tier == t, "lift_lo"].fillna(-np.inf).to_numpy()
        assert (np.diff(v) <= 1e-12).all()
    # the rarer consequent wins by the lift's bound and loses by the gain over the base rate
    two = pd.DataFrame({"antecedent": [0, 1], "consequent": [2, 3], "co_support": [9, 9],
                        "confidence_lo": [0.6, 0.35], "base_rate": [0.4, 0.2],
                        "p_value": [0.01, 0.01]})
    assert list(rank_pairs(two, by="score")["consequent"]) == [2, 3]    # gains 0.20 > 0.15
    assert list(rank_pairs(two, by="lift_lo")["consequent"]) == [3, 2]  # 1.75 > 1.5


def test_rules_never_build_a_dense_users_by_items_matrix():
    rng = np.random.default_rng(0)
    n_users, n_items, n = 1_000_000, 100_000, 200_000
    u = rng.integers(0, n_users, n)
    i = np.minimum(rng.zipf(1.6, n) - 1, n_items - 1)  # a few popular items
    r = Ratings(u, i, rng.integers(1, 6, n).astype(float), n_users=n_users, n_items=n_items,
                r_min=1, r_max=5)
    tracemalloc.start()
    df = pairwise_rules(r, liked=4, min_support=3, min_confidence=0.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(df) > 0
    assert peak < 300e6  # a dense users x items array of bools alone would be 100 GB


# ----------------------------------------------------------------------------- comparisons
def test_compare_with_rules_sorts_implications_into_the_four_cases():
    km = pd.DataFrame({"antecedent": [0, 1, 2, 3, 5], "consequent": [1, 2, 3, 4, 6],
                       "co_support": [30, 30, 3, 25, 40],
                       "equivalent": [False, False, False, False, True]})
    rules = pd.DataFrame({"antecedent": [0, 6, 7, 1], "consequent": [1, 5, 8, 0],
                          "co_support": [30, 40, 50, 30]})
    out = compare_with_rules(km, rules, n_items=10, min_support=20, strong=3)
    assert set(out["confirmed"]["antecedent"]) == {0, 5}  # 5 <=> 6 matched the other way
    assert list(out["too_rare"]["antecedent"]) == [2]
    assert set(out["unconfirmed"]["antecedent"]) == {1, 3}
    assert list(zip(out["missed"]["antecedent"], out["missed"]["consequent"])) == [(7, 8)]
    assert out["counts"] == {"confirmed": 2, "too_rare": 1, "unconfirmed": 2, "missed": 1,
                             "strong": 3}


def test_recovery_scores():
    s = recovery_scores([(0, 1), (1, 2), (2, 3), (0, 1)], [(0, 1), (1, 2), (5, 6), (6, 7)])
    assert s["found"] == 3 and s["correct"] == 2 and s["true"] == 4
    assert s["precision"] == pytest.approx(2 / 3) and s["recall"] == pytest.approx(0.5)
    assert s["f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert np.isnan(recovery_scores(np.zeros((0, 2)), [(0, 1)])["precision"])


def test_pooled_heldout_lift_matches_brute_force():
    r = _random_ratings(seed=11, n_users=120, n_items=8, density=0.7)
    train, test = r.split(0.3, random_state=2)
    M, H = _dense(train), _dense(test)
    pairs = [(0, 1), (2, 3), (4, 5), (1, 0)]
    j, i = np.array(pairs).T
    out = pooled_heldout_lift(train, test, j, i, liked=4, n_boot=300, random_state=0)
    obs = exp = n = 0
    for a, b in pairs:
        fans = M[:, a] >= 4
        hr, hl = ~np.isnan(H[:, b]), H[:, b] >= 4
        base = hl.sum() / hr.sum()
        n += (fans & hr).sum()
        obs += (fans & hl).sum()
        exp += (fans & hr).sum() * base
    assert out["pairs"] == 4 and out["heldout_n"] == n
    assert out["confidence"] == pytest.approx(obs / n)
    assert out["lift"] == pytest.approx(obs / exp)
    assert out["lift_lo"] <= out["lift"] <= out["lift_hi"]
    empty = pooled_heldout_lift(train, test, [], [])
    assert empty["pairs"] == 0 and np.isnan(empty["lift"])
