"""Multi-item antecedents: KM's intersection semantics against brute force on tiny psi, the
data counts against naive loops, and the closure query."""

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from kmviz.km.conjunctive import (closure, conjunction_held, km_conjunctions, pack_supports,
                                  rule_counts, subset_held)


def _sets(psi):
    return [frozenset(np.flatnonzero(row)) for row in np.asarray(psi)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("D", [3, 5, 70])
def test_km_conjunctions_match_brute_force(seed, D):
    rng = np.random.default_rng(seed)
    psi = (rng.random((9, D)) < 0.55).astype(np.int8)
    S = _sets(psi)
    want = set()
    for a, b in itertools.combinations(range(9), 2):
        both = S[a] & S[b]
        for c in range(9):
            if c in (a, b) or not both:
                continue
            if both <= S[c] and not (S[a] <= S[c]) and not (S[b] <= S[c]):
                want.add((a, b, c))
    got = {tuple(int(x) for x in r) for r in km_conjunctions(psi)}
    assert got == want
    bits = pack_supports(psi)
    j, i = np.nonzero(np.ones((9, 9), bool))
    held = subset_held(bits, j, i)
    assert all(held[k] == (bool(S[j[k]]) and S[j[k]] <= S[i[k]]) for k in range(j.size))
    a, b, c = (np.array(x) for x in zip(*itertools.product(range(9), repeat=3)))
    h = conjunction_held(bits, a, b, c)
    assert all(h[k] == (bool(S[a[k]] & S[b[k]]) and (S[a[k]] & S[b[k]]) <= S[c[k]])
               for k in range(a.size))


def test_rule_counts_match_naive_loops():
    rng = np.random.default_rng(1)
    rated = rng.random((40, 7)) < 0.7
    like = rated & (rng.random((40, 7)) < 0.5)
    L, R = sp.csc_matrix(like.astype(np.int32)), sp.csc_matrix(rated.astype(np.int32))
    a = np.array([0, 1, 2, 3, 0])
    b = np.array([-1, 4, -1, 5, 6])
    c = np.array([1, 2, 3, 0, 5])
    users = rng.random(40) < 0.6
    for mask in (None, users):
        sup, kn, co = rule_counts(L, R, L, a, b, c, users=mask)
        for k in range(a.size):
            fan = like[:, a[k]] & (like[:, b[k]] if b[k] >= 0 else True)
            if mask is not None:
                fan = fan & mask
            assert sup[k] == fan.sum()
            assert kn[k] == (fan & rated[:, c[k]]).sum()
            assert co[k] == (fan & like[:, c[k]]).sum()


def test_closure_from_psi_and_from_a_table():
    #          events 0 1 2
    psi = np.array([[1, 1, 0],   # 0
                    [0, 1, 1],   # 1
                    [1, 1, 1],   # 2: contains everything
                    [0, 1, 0],   # 3: supp 0 ∩ supp 1 = {1}
                    [1, 0, 0]])  # 4
    out = closure(psi, [0, 1])
    # ∩ = {1}: items whose support holds event 1, outside the set: 2 and 3
    assert sorted(out["item"]) == [2, 3]
    assert sorted(closure(psi, [4])["item"]) == [0, 2]
    assert closure(psi, [3, 4]).empty  # empty intersection: nothing follows
    table = pd.DataFrame({"antecedent": [(0,), (1, 5), (6,)], "consequent": [5, 6, 7],
                          "consequent_name": ["e", "f", "g"], "rank": [1, 2, 3]})
    got = closure(table, [0, 1])
    assert got[["item", "step"]].values.tolist() == [[5, 1], [6, 2], [7, 3]]
    assert got["because"].tolist() == [(0,), (1, 5), (6,)]
    assert closure(table, [1])["item"].tolist() == []
