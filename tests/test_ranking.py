"""kmviz.ranking: the top-k kernel and the exclusion CSR shared by the one-class families,
against kmviz.metrics.rank_items and a plain loop."""

import numpy as np

from kmviz import metrics, ranking


def test_top_items_match_rank_items_with_ties_and_exclusions():
    rng = np.random.default_rng(0)
    P, Q = rng.standard_normal((7, 3)), rng.standard_normal((9, 3))
    Q[4] = Q[2]                           # a tie: the lower index first
    excl = [[1, 2], [], [0, 3, 5, 6, 7, 8, 1, 2], [4], [], [8], [0]]
    ptr = np.cumsum([0] + [len(e) for e in excl]).astype(np.int64)
    idx = np.array([j for e in excl for j in e], dtype=np.int64)
    got, scores = ranking.top_items(P, Q, 3, ptr, idx)
    want = metrics.rank_items(P @ Q.T, 3, exclude=excl)
    np.testing.assert_array_equal(got, want)
    S = P @ Q.T
    for r in range(7):
        for c in range(3):
            if got[r, c] >= 0:
                assert scores[r, c] == np.float64(S[r, got[r, c]]) or \
                    abs(scores[r, c] - S[r, got[r, c]]) < 1e-12
            else:
                assert scores[r, c] == -np.inf  # row 2 keeps one item only
    plain, _ = ranking.top_items(P, Q, 20)  # k above n_items, nothing excluded
    np.testing.assert_array_equal(plain, np.argsort(-S, axis=1, kind="stable"))


def test_exclusion_takes_the_users_rows_minus_the_dropped_pairs():
    seen = [[0, 3], [], [1, 2, 4], [5]]
    ptr = np.cumsum([0] + [len(e) for e in seen]).astype(np.int64)
    idx = np.array([j for e in seen for j in e], dtype=np.int64)
    users = np.array([2, 0, 1, 2])
    n_items = 6
    drop = np.array([2 * n_items + 4, 0 * n_items + 3])
    out_ptr, out_idx = ranking.exclusion(ptr, idx, users, n_items, drop)
    want = [[1, 2], [0], [], [1, 2]]
    got = [out_idx[out_ptr[r]:out_ptr[r + 1]].tolist() for r in range(users.size)]
    assert got == want


def test_top_k_parallel_and_serial_agree():
    rng = np.random.default_rng(1)
    P, Q = rng.standard_normal((6, 3)), rng.standard_normal((10, 3))
    ptr = np.array([0, 1, 1, 3, 3, 3, 4])
    idx = np.array([2, 0, 9, 5])
    outs = []
    for fn in (ranking._top_k_ser, ranking._top_k_par):
        oi, os_ = np.empty((6, 4), dtype=np.int64), np.empty((6, 4))
        fn(P, Q, ptr, idx, 4, oi, os_)
        outs.append(oi)
    np.testing.assert_array_equal(outs[0], outs[1])
