"""The Dual GD page's opening item (kmviz.km.teaching.dual_item) against brute force."""

import pytest

from kmviz.data import load, make_split
from kmviz.km import KolmogorovModel
from kmviz.km.analysis import dual_trajectories
from kmviz.km.teaching import MIN_VISIBLE_ITERATIONS, dual_candidates, dual_item, score_dual


@pytest.mark.slow
def test_the_chosen_item_has_the_largest_saving_of_all_candidates():
    split = make_split(load("planted-km", n_users=120, n_items=50, D=4))
    model = KolmogorovModel(D=4, max_iter=2, random_state=0).fit(split.train)
    choice = dual_item(model, split.train, 100.0)
    scores = {}
    for item in dual_candidates(split.train):
        S, v = model.item_problem(split.train, item)
        scored = score_dual(dual_trajectories(S, v, 100.0))
        if scored is not None and scored[1] >= MIN_VISIBLE_ITERATIONS:
            scores[item] = scored
    assert choice.tried == len(dual_candidates(split.train))
    if not scores:
        assert choice.item is None
        return
    assert choice.item in scores
    assert scores[choice.item][0] == pytest.approx(max(s[0] for s in scores.values()))
    assert choice.evd_saving == scores[choice.item][2]
    assert f"{choice.saving:.0%}" in choice.reason


def test_candidates_leave_out_the_extremes():
    split = make_split(load("planted-km", n_users=120, n_items=50, D=4))
    counts = split.train.item_counts()
    cands = dual_candidates(split.train, limit=10)
    assert 1 <= len(cands) <= 10 and len(set(cands)) == len(cands)
    assert counts.argmax() not in cands and all(counts[i] > 0 for i in cands)
