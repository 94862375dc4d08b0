"""The order of the relation miner's score: cautious lift, and the check that chooses between
conviction (relations that hold) and cautious lift (tendencies) on a split of the data."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from kmviz.data import Ratings
from kmviz.data.planted_relations import make_planted_relations
from kmviz.km.relation_ranking import (CHECK_TEST_SIZE, FEW_FANS, HOLD_CHECK_ROWS,
                                       HOLD_CONVICTION, HOLD_MIN_KNOWN, LIFT_LEVEL, LIFT_PRIOR,
                                       cautious_lift, choose_ranking, tendency_tiers)
from kmviz.km.relations import MIN_CONFIDENCE, PairCounts, mine_relations

SETTINGS = {"D": 8, "lambda_theta": 0.0, "max_iter": 2}


def _choose(ratings, seed=0):
    return choose_ranking(ratings, 4.0, pairs_of=PairCounts, min_confidence=MIN_CONFIDENCE,
                          random_state=seed)


def _wilson_lower(k, n, z):
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min((centre - half) / (1 + z * z / n), p)


def test_cautious_lift_is_the_shrunk_wilson_bound_over_the_base_rate():
    z = NormalDist().inv_cdf(0.5 + LIFT_LEVEL / 2)
    co = np.array([8, 40, 36, 0, 5])
    n = np.array([8, 40, 40, 10, 5])
    base = np.array([0.5, 0.5, 0.3, 0.2, 0.9])
    got = cautious_lift(co, n, base)
    for g, c, m, b in zip(got, co, n, base):
        want = _wilson_lower(c + LIFT_PRIOR * b, m + LIFT_PRIOR, z) / b
        assert g == pytest.approx(want, rel=1e-12)
    # 40 of 40 fans beat 8 of 8 at the same base rate; a rule never liked stays below 1
    assert got[1] > got[0] and got[3] < 1.0
    # without shrinkage a rule on few fans is not pulled towards the base rate
    assert cautious_lift(co[:1], n[:1], base[:1], prior=0.0) > got[0]
    assert np.isnan(cautious_lift([3], [3], [0.0])).all()
    assert np.isnan(cautious_lift([3], [3], [np.nan])).all()


def _independent(n_users=150, n_items=30, seed=0):
    """Each user rates 60 % of the items; a like (5 stars) with the item's own popularity,
    independently of everything else: tendencies, no relation holds."""
    rng = np.random.default_rng(seed)
    popularity = np.linspace(0.15, 0.97, n_items)
    users, items, values = [], [], []
    for u in range(n_users):
        rated = np.flatnonzero(rng.random(n_items) < 0.6)
        like = rng.random(rated.size) < popularity[rated]
        users += [u] * rated.size
        items += rated.tolist()
        values += np.where(like, 5.0, rng.integers(1, 4, rated.size)).tolist()
    return Ratings.from_arrays(users, items, values, r_min=1, r_max=5)


def _conviction_oracle(ratings, seed):
    """The check's held-out conviction by brute force on dense arrays (same split)."""
    rng = np.random.default_rng(seed)
    train, val = ratings.split_per_user(CHECK_TEST_SIZE, random_state=int(rng.integers(2**31 - 1)))
    U, m = ratings.n_users, ratings.n_items
    R = np.zeros((U, m), bool)
    L = np.zeros((U, m), bool)
    R[train.users, train.items] = True
    L[train.users, train.items] = train.values >= 4
    Rh = np.zeros((U, m), bool)
    Lh = np.zeros((U, m), bool)
    Rh[val.users, val.items] = True
    Lh[val.users, val.items] = val.values >= 4
    cands = []
    for j in range(m):
        for i in range(m):
            kn = int((L[:, j] & R[:, i]).sum())
            co = int((L[:, j] & L[:, i]).sum())
            if i != j and kn >= HOLD_MIN_KNOWN and co == kn:
                cands.append((-kn, j, i))
    cands = sorted(cands)[:HOLD_CHECK_ROWS]
    base_h = Lh.sum(0) / np.maximum(Rh.sum(0), 1)
    expected = observed = 0.0
    for _, j, i in cands:
        kn_h = int((L[:, j] & Rh[:, i]).sum())
        co_h = int((L[:, j] & Lh[:, i]).sum())
        expected += kn_h * (1 - base_h[i])
        observed += kn_h - co_h
    return len(cands), expected / observed if observed else math.inf


def test_tendencies_are_ranked_by_cautious_lift_and_the_check_matches_brute_force():
    ratings = _independent()
    out = _choose(ratings, seed=3)
    checked, conviction = _conviction_oracle(ratings, 3)
    assert out["checked"] == checked > 0
    assert out["validation_conviction"] == pytest.approx(conviction, rel=1e-12)
    assert conviction < HOLD_CONVICTION
    assert out["order"] == "cautious lift" and "tendencies" in out["summary"]


def test_planted_relations_are_ranked_by_conviction():
    ratings, _ = make_planted_relations(600, 80, random_state=0)
    out = _choose(ratings, seed=0)
    checked, conviction = _conviction_oracle(ratings, 0)
    assert out["checked"] == checked > 0
    assert out["validation_conviction"] == pytest.approx(conviction, rel=1e-12)
    assert out["validation_conviction"] >= HOLD_CONVICTION
    assert out["order"] == "conviction" and "the relations hold" in out["summary"]


def test_interactions_keep_the_conviction_order():
    r = Ratings.from_arrays([0, 0, 1, 1, 2], [0, 1, 0, 1, 1])
    out = choose_ranking(r, "interacted", pairs_of=PairCounts, min_confidence=0.5)
    assert out["order"] == "conviction" and out["checked"] == 0


def test_too_few_fans_to_check_is_not_a_relation_that_holds():
    r = _independent(n_users=12, n_items=6, seed=1)
    out = _choose(r)
    assert out["order"] == "cautious lift"
    assert "no pair holds" in out["summary"] or out["validation_conviction"] < HOLD_CONVICTION


def test_mine_relations_scores_tendencies_by_cautious_lift():
    ratings = _independent(seed=4)
    df = mine_relations(ratings, settings=SETTINGS, refits=[], max_antecedent=1)
    assert df.attrs["chosen"]["ranking"]["order"] == "cautious lift"
    assert "cautious lift" in df.attrs["chosen"]["summary"]
    np.testing.assert_allclose(df["score"], np.log(df["lift_lower"]), rtol=1e-12)
    few = df["n_known"].to_numpy() < FEW_FANS
    assert few.any() and (~few).any()
    # the rows on few fans come last, each part by its score
    assert not (np.diff(few.astype(int)) < 0).any()
    for part in (few, ~few):
        assert (np.diff(df["score"].to_numpy()[part]) <= 1e-12).all()
    want = cautious_lift(df["co_support"], df["n_known"], df["base_rate"])
    np.testing.assert_allclose(df["lift_lower"], want, rtol=1e-12)


def test_tendencies_put_the_rows_a_refit_states_first_within_each_part():
    ratings = _independent(seed=6)
    rng = np.random.default_rng(0)
    psi = rng.random((ratings.n_items, 8)) < 0.4          # a made-up refit's supports
    mult = (rng.random(ratings.n_users) < 0.5).astype(np.int64)
    refit = {"psi": psi, "rated": np.ones(ratings.n_items, bool), "multiplicity": mult,
             "seconds": 0.0, "seed": 0}
    df = mine_relations(ratings, settings=SETTINGS, refits=[refit], max_antecedent=1)
    assert df.attrs["chosen"]["ranking"]["order"] == "cautious lift"
    a = np.array([t[0] for t in df["antecedent"]])
    c = df["consequent"].to_numpy()
    states = ((psi[a] & ~psi[c]).sum(axis=1) == 0) & psi[a].any(axis=1)
    np.testing.assert_array_equal(df["n_held"].to_numpy() > 0, states)
    few = df["n_known"].to_numpy() < FEW_FANS
    tier = 2 * few + ~states                   # 0: many fans, stated ... 3: few, not stated
    assert not (np.diff(tier) < 0).any() and len(set(tier)) >= 3
    for t in set(tier):
        part = tier == t
        assert (np.diff(df["score"].to_numpy()[part]) <= 1e-12).all()


def test_mine_relations_keeps_conviction_on_planted_relations():
    ratings, truth = make_planted_relations(600, 80, random_state=0)
    df = mine_relations(ratings, settings=SETTINGS, refits=[], max_antecedent=1)
    assert df.attrs["chosen"]["ranking"]["order"] == "conviction"
    # no refits: the score is the log conviction lower bound alone
    base = df["base_rate"].clip(upper=1 - 1e-6)
    lo = df["confidence_lower"].clip(upper=1 - 1e-6)
    np.testing.assert_allclose(df["score"], np.log((1 - base) / (1 - lo)), rtol=1e-9)
    planted = {(int(j), int(i)) for j, i in truth.planted}
    top = {(a[0], int(c)) for a, c in zip(df["antecedent"].head(len(planted)),
                                          df["consequent"].head(len(planted)))}
    assert len(top & planted) >= len(planted) - 1


def test_another_rank_skips_the_check():
    ratings = _independent(seed=5)
    df = mine_relations(ratings, settings=SETTINGS, refits=[], max_antecedent=1,
                        rank="lift_lower")
    assert df.attrs["chosen"]["ranking"]["order"] == "conviction"
    assert (np.diff(df["lift_lower"].to_numpy()) <= 1e-12).all()


def _tendencies_with_a_conjunction(seed=0):
    """:func:`_independent`-like likes (400 users rate 80 % of 30 items), and item 2 liked by
    every fan of both 0 and 1 who rated it: {0, 1} => 2 holds, 0 => 2 and 1 => 2 do not."""
    rng = np.random.default_rng(seed)
    n_users, n_items = 400, 30
    popularity = np.linspace(0.15, 0.9, n_items)
    popularity[:3] = (0.5, 0.5, 0.3)
    users, items, values = [], [], []
    for u in range(n_users):
        rated = np.flatnonzero(rng.random(n_items) < 0.8)
        like = rng.random(rated.size) < popularity[rated]
        liked = set(rated[like].tolist())
        if {0, 1} <= liked and 2 in rated:
            like[rated == 2] = True
        users += [u] * rated.size
        items += rated.tolist()
        values += np.where(like, 5.0, rng.integers(1, 4, rated.size)).tolist()
    return Ratings.from_arrays(users, items, values, r_min=1, r_max=5)


def test_tendencies_put_the_conjunctions_after_the_pairs_on_as_many_fans():
    ratings = _tendencies_with_a_conjunction()
    df = mine_relations(ratings, settings=SETTINGS, refits=[])
    assert df.attrs["chosen"]["ranking"]["order"] == "cautious lift"
    assert "conjunctions after the pairs" in df.attrs["chosen"]["summary"]
    keys = [(tuple(a), int(c)) for a, c in zip(df["antecedent"], df["consequent"])]
    assert ((0, 1), 2) in keys                       # the conjunction is still found
    assert ((0,), 2) not in keys and ((1,), 2) not in keys   # its halves are not pair rows
    size = df["size"].to_numpy()
    few = df["n_known"].to_numpy() < FEW_FANS
    score = df["score"].to_numpy()
    tier = 2 * few + (size == 2)       # 0: pairs on many fans ... 3: conjunctions on few
    assert not (np.diff(tier) < 0).any()
    for t in set(tier):
        assert (np.diff(score[tier == t]) <= 1e-12).all()
    # the order matters here: by the score alone the conjunction would lead the table
    row = keys.index(((0, 1), 2))
    assert tier[row] == 1 and score[row] > score[tier == 0].max()
    assert row == int((tier == 0).sum())             # right after the last such pair


def test_tendency_tiers_are_few_fans_then_size_then_unstated():
    n_known = np.array([20, 20, 20, 20, 5, 5])
    size = np.array([1, 1, 2, 2, 1, 2])
    n_held = np.array([3, 0, 1, 0, 2, 0])
    score = np.array([0.1, 0.9, 0.8, 0.7, 2.0, 3.0])
    order = np.lexsort((-score, *tendency_tiers(n_known, size, n_held)))
    assert order.tolist() == [0, 1, 2, 3, 4, 5]
    order = np.lexsort((-score, *tendency_tiers(n_known, np.ones(6, int), n_held)))
    assert order.tolist() == [2, 0, 1, 3, 4, 5]      # one size: stated rows first
