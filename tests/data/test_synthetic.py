"""Tests of the synthetic generators and their ground truth."""

import numpy as np
import pytest

from kmviz.data import (
    implication_pairs,
    km_toy,
    make_planted_km,
    make_planted_lowrank,
    planted_km,
    planted_km_truth,
    planted_lowrank,
)
from kmviz.exceptions import InvalidParameterError


def test_km_toy_observes_every_pair_in_unit_range():
    r = km_toy(random_state=0)
    assert (r.n_users, r.n_items, r.n_ratings) == (20, 40, 800)
    assert (r.r_min, r.r_max) == (0.0, 1.0)
    assert 0.0 <= r.values.min() and r.values.max() <= 1.0
    assert r.fingerprint() == km_toy(random_state=0).fingerprint()
    assert r.fingerprint() != km_toy(random_state=1).fingerprint()


def test_planted_km_theta_on_simplex_and_psi_binary():
    r, t = make_planted_km(60, 30, 5, random_state=3)
    assert t.theta.shape == (60, 5) and t.psi.shape == (30, 5)
    np.testing.assert_allclose(t.theta.sum(axis=1), 1.0)
    assert (t.theta >= 0).all()
    assert set(np.unique(t.psi)) <= {0, 1} and (t.psi.sum(axis=1) >= 1).all()


def test_planted_km_noiseless_values_are_theta_psi():
    r, t = make_planted_km(40, 25, 6, noise=0.0, random_state=1)
    np.testing.assert_allclose(r.values, t.p[r.users, r.items])
    assert (r.r_min, r.r_max) == (0.0, 1.0)


def test_planted_km_implications_hold_for_every_user():
    _, t = make_planted_km(100, 40, 8, random_state=2)
    j, i = t.implications.T
    assert len(j) > 0 and t.strict.any()
    assert np.all(i != j)
    # supp(psi_j) inside supp(psi_i): liking j implies liking i, i.e. p_uj <= p_ui
    assert np.all(t.p[:, j] <= t.p[:, i] + 1e-12)
    for a, b, s in zip(j, i, t.strict):
        assert set(t.support(a)) <= set(t.support(b))
        assert s == (set(t.support(a)) < set(t.support(b)))


def test_implication_pairs_direction_on_a_hand_example():
    psi = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [1, 1, 0]])
    pairs, strict = implication_pairs(psi)
    got = {tuple(p): bool(s) for p, s in zip(pairs.tolist(), strict)}
    # item 0's support {0} is inside {0, 1}: 0 => 1 and 0 => 3, strictly; 1 and 3 are equal
    assert got == {(0, 1): True, (0, 3): True, (1, 3): False, (3, 1): False}


def test_planted_km_coverage_and_observed_fraction():
    r = planted_km(200, 60, 8, observed=0.3, random_state=0)
    assert r.user_counts().min() >= 2 and r.item_counts().min() >= 1
    assert 0.25 < r.density < 0.35
    sparse = planted_km(50, 40, 4, observed=0.001, random_state=0)
    assert sparse.user_counts().min() >= 2 and sparse.item_counts().min() >= 1


def test_planted_km_stars_scale_half_stars_and_continuous():
    r, t = make_planted_km(30, 20, 4, scale="stars", random_state=4)
    assert (r.r_min, r.r_max) == (1.0, 5.0)
    np.testing.assert_array_equal(r.values * 2, np.round(r.values * 2))
    np.testing.assert_allclose(r.values, np.round((1 + 4 * t.p[r.users, r.items]) * 2) / 2)
    cont = planted_km(30, 20, 4, scale="stars", star_step=None, random_state=4)
    np.testing.assert_allclose(cont.values, 1 + 4 * t.p[cont.users, cont.items])


def test_planted_km_noise_is_clipped():
    r, t = make_planted_km(50, 20, 4, noise=0.5, random_state=5)
    assert r.values.min() >= 0.0 and r.values.max() <= 1.0
    assert not np.allclose(r.values, t.p[r.users, r.items])


def test_planted_km_names_info_and_reproducibility():
    r = planted_km(20, 10, 4, random_state=9)
    t = planted_km_truth(20, 10, 4, random_state=9)
    assert r.item_names[0] == f"item 0 (support {{{', '.join(map(str, t.support(0)))}}})"
    assert all(np.asarray(v).size == 1 for v in r.info.values())
    np.testing.assert_array_equal(r.values, planted_km(20, 10, 4, random_state=9).values)


def test_planted_km_rejects_bad_parameters():
    with pytest.raises(InvalidParameterError, match="'observed' parameter of make_planted_km"):
        planted_km(observed=0.0)
    with pytest.raises(InvalidParameterError, match="'scale' parameter.*'unit', 'stars'"):
        planted_km(scale="percent")


def test_planted_lowrank_factors_are_linear_in_features():
    r, t = make_planted_lowrank(40, 30, 3, noise=0.0, random_state=0)
    x = r.user_features.to_numpy()
    y = r.item_features.to_numpy()
    expected = (x @ t.user_map) @ (y @ t.item_map).T / np.sqrt(3)
    np.testing.assert_allclose(t.matrix, expected)
    np.testing.assert_allclose(r.values, t.matrix[r.users, r.items])
    assert np.linalg.matrix_rank(t.matrix) == 3
    assert r.user_features.shape == (40, 6) and r.item_features.shape == (30, 6)


def test_planted_lowrank_coverage_and_scale():
    r = planted_lowrank(random_state=1)
    assert (r.n_users, r.n_items) == (100, 80)
    assert r.user_counts().min() >= 2 and r.item_counts().min() >= 1
    assert r.r_min <= r.values.min() and r.values.max() <= r.r_max


def test_planted_km_in_row_blocks_is_the_whole_draw(monkeypatch):
    """The generator draws the noise and the mask in row blocks: the values (and so the
    fingerprint of a seed) are those of one draw of the whole matrix, whatever the block."""
    import kmviz.data.synthetic as syn

    rng = np.random.default_rng(5)
    theta = rng.dirichlet(np.ones(4), size=70)
    psi = (rng.random((33, 4)) < 0.5).astype(np.int8)
    rng = np.random.default_rng(6)
    whole = np.clip(theta @ psi.T + 0.1 * rng.standard_normal((70, 33)), 0.0, 1.0)
    mask = rng.random((70, 33)) < 0.3
    monkeypatch.setattr(syn, "_BLOCK_ENTRIES", 100)   # 3 rows a block, the last one short
    rng = np.random.default_rng(6)
    p = np.empty((70, 33))
    for lo, hi in syn._row_blocks(70, 33):
        block = theta[lo:hi] @ psi.T.astype(np.float64)
        block += 0.1 * rng.standard_normal((hi - lo, 33))
        np.clip(block, 0.0, 1.0, out=p[lo:hi])
    np.testing.assert_array_equal(p, whole)
    np.testing.assert_array_equal(syn._observed_mask(rng, 70, 33, 0.3, min_per_user=0)
                                  | ~mask.any(axis=0), mask | ~mask.any(axis=0))
    small = syn.planted_km(300, 50, 5, noise=0.05, random_state=4)
    monkeypatch.setattr(syn, "_BLOCK_ENTRIES", 1 << 20)
    assert syn.planted_km(300, 50, 5, noise=0.05, random_state=4).fingerprint() == \
        small.fingerprint()


def test_planted_km_peak_memory_is_bounded(monkeypatch):
    """Stated bound, measured with tracemalloc: the dense probabilities (8 bytes a pair),
    three blocks of temporaries, and 40 bytes a rating (the generator drew four full-size
    matrices at once: 258 MB for 20,000 x 400, against 122 MB now)."""
    import gc
    import tracemalloc

    import kmviz.data.synthetic as syn

    monkeypatch.setattr(syn, "_BLOCK_ENTRIES", 1 << 16)  # blocks well below the set's size
    n_users, n_items = 3000, 200
    gc.collect()
    tracemalloc.start()
    try:
        r = planted_km(n_users, n_items, 6, noise=0.05, observed=0.3, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 8 * n_users * n_items + 3 * 8 * (1 << 16) + 40 * r.n_ratings + (1 << 20), \
        peak
