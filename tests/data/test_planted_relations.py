"""The planted-relations generator: its truth holds exactly in the data it draws."""

import numpy as np
import pytest

from kmviz.data import load
from kmviz.data.planted_relations import make_planted_relations
from kmviz.exceptions import InvalidParameterError


def _stars(ratings):
    """{(user, item): stars} from the triplets (the brute-force view)."""
    return {(int(u), int(i)): float(v)
            for u, i, v in zip(ratings.users, ratings.items, ratings.values)}


@pytest.mark.parametrize("seed", [0, 1])
def test_every_true_pair_holds_exactly(seed):
    ratings, truth = make_planted_relations(300, 60, random_state=seed)
    s = _stars(ratings)
    assert ratings.r_min == 1 and ratings.r_max == 5
    assert set(np.unique(ratings.values)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert len(truth.pairs) >= len(truth.planted) > 0
    for j, i in truth.pairs:
        fans = [u for (u, k), v in s.items() if k == j and v >= 4]
        judged = [u for u in fans if (u, int(i)) in s]
        assert len(judged) >= 5, (j, i)
        assert all(s[(u, int(i))] >= 4 for u in judged)


def test_conjunctive_rule_holds_and_its_halves_do_not():
    ratings, truth = make_planted_relations(600, 80, random_state=3)
    s = _stars(ratings)
    assert truth.conjunctive
    for (a, b), c in truth.conjunctive:
        both = [u for u in range(ratings.n_users)
                if s.get((u, a), 0) >= 4 and s.get((u, b), 0) >= 4 and (u, c) in s]
        assert len(both) >= 5 and all(s[(u, c)] >= 4 for u in both)
        for x in (a, b):
            judged = [u for u in range(ratings.n_users) if s.get((u, x), 0) >= 4 and (u, c) in s]
            assert sum(s[(u, c)] < 4 for u in judged) >= 3  # a => c alone has counterexamples
    # the chain's closure is in the truth
    for chain in truth.chains:
        assert (chain[0], chain[-1]) in {tuple(p) for p in truth.pairs.tolist()}


def test_same_seed_same_data_and_catalogue_entry():
    a, ta = make_planted_relations(200, 40, random_state=5)
    b, tb = make_planted_relations(200, 40, random_state=5)
    assert np.array_equal(a.values, b.values) and np.array_equal(ta.pairs, tb.pairs)
    r = load("planted-relations", n_users=200, n_items=40, random_state=5)
    assert np.array_equal(r.values, a.values)


def test_blocks_bound_memory_and_big_requests_are_refused(monkeypatch):
    import kmviz.data.planted_relations as pr

    monkeypatch.setattr(pr, "BLOCK_CELLS", 40 * 7)  # 7 users x 40 items a block
    r_small, t_small = pr.make_planted_relations(100, 40, random_state=1)
    assert r_small.n_ratings > 0 and len(t_small.pairs) > 0
    with pytest.raises(InvalidParameterError, match="observed entries"):
        pr.make_planted_relations(100_000, 100_000, random_state=0)
    with pytest.raises(InvalidParameterError, match="distinct items"):
        pr.make_planted_relations(100, 10, random_state=0)
