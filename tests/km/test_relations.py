"""The relation miner's default path on planted relations."""

import numpy as np
import pytest

from kmviz.data.planted_relations import make_planted_relations
from kmviz.km.relations import RELATION_COLUMNS, mine_relations

pytestmark = pytest.mark.slow  # KM refits: seconds each


@pytest.fixture(scope="module")
def planted():
    ratings, truth = make_planted_relations(300, 60, random_state=1)
    return ratings, truth, mine_relations(ratings, n_refits=4, random_state=1)


def _keys(df, n):
    return [(tuple(sorted(a)), int(c)) for a, c in zip(df["antecedent"].head(n),
                                                       df["consequent"].head(n))]


def test_table_contract_and_recovery(planted):
    ratings, truth, df = planted
    for col in RELATION_COLUMNS:
        assert col in df.columns
    assert df["rank"].tolist() == list(range(1, len(df) + 1))
    assert (np.diff(df["score"].to_numpy()) <= 1e-12).all()
    top = _keys(df, truth.n_true)
    hits = sum(k in truth.keys() for k in top)
    assert hits / truth.n_true >= 0.75
    assert "summary" in df.attrs["chosen"] and "KM D =" in df.attrs["chosen"]["summary"]
    # confidence among the antecedent's fans who rated the consequent; classic among all
    row = df.iloc[0]
    assert row["confidence"] == pytest.approx(row["co_support"] / row["n_known"])
    assert row["classic_confidence"] == pytest.approx(row["co_support"] / row["support"])


def test_planted_conjunction_found_and_its_halves_are_not_pair_rules(planted):
    ratings, truth, df = planted
    (a, b), c = truth.conjunctive[0]
    keys = _keys(df, len(df))
    assert (tuple(sorted((a, b))), c) in keys[:truth.n_true + 2]
    assert ((a,), c) not in keys and ((b,), c) not in keys
    row = df[[k == (tuple(sorted((a, b))), c) for k in keys]].iloc[0]
    assert row["size"] == 2 and " & " in row["antecedent_name"]
    assert row["confidence"] == 1.0


def test_direction_and_popular_consequents(planted):
    ratings, truth, df = planted
    pos = {k: r for r, k in enumerate(_keys(df, len(df)))}
    for j, i in truth.planted:
        fwd, rev = ((int(j),), int(i)), ((int(i),), int(j))
        assert fwd in pos
        assert pos[fwd] < pos.get(rev, len(df))
    head = df.head(truth.n_true)
    assert not head["consequent"].isin(truth.popular).any()


def test_stop_before_the_refits_still_gives_a_table():
    ratings, truth = make_planted_relations(200, 40, random_state=2)
    seen = []
    df = mine_relations(ratings, n_refits=3, stop=lambda: "listing" in " ".join(seen),
                        progress=lambda done, total, what: seen.append(what))
    assert df["n_refits"].eq(0).all() and df.attrs["chosen"]["warnings"]
    assert len(df) and df["stability"].eq(0).all()


def test_stop_during_the_setting_choice_ends_within_an_iteration():
    ratings, _ = make_planted_relations(400, 60, random_state=3)
    calls = {"n": 0}

    def stop():            # false before the first fit, true at its first iteration's end
        calls["n"] += 1
        return calls["n"] > 1
    with pytest.raises(RuntimeError, match="Stopped before a setting was chosen"):
        mine_relations(ratings, stop=stop)
    assert calls["n"] == 2   # one BCD iteration of the first fit, not its 10
