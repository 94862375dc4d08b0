"""The exact second-order least squares oracle, ALS on eq. (3), and the synthetic generator."""

import numpy as np
import pytest

from kmviz.gfm import GFMStream, make_gfm, make_preset, planted_truth
from kmviz.gfm import _reference as R
from kmviz.gfm.baselines import _unpack, als_fit, exact_ls_fit, second_order_features
from kmviz.gfm.synthetic import PRESETS, sample


def test_second_order_features_and_unpack_are_inverse():
    rng = np.random.default_rng(0)
    d = 6
    X = rng.standard_normal((20, d))
    w = rng.standard_normal(d)
    A = rng.standard_normal((d, d))
    M = 0.5 * (A + A.T)
    a, b = np.triu_indices(d)
    theta = np.concatenate([w, np.where(a == b, 1.0, 2.0) * M[a, b]])
    np.testing.assert_allclose(second_order_features(X) @ theta, X @ w + R.sense(X, M))
    w2, M2 = _unpack(theta, d)
    np.testing.assert_allclose(w2, w)
    np.testing.assert_allclose(M2, M)


@pytest.mark.parametrize("method", ["lstsq", "lsqr"])
def test_exact_least_squares_recovers_the_truth_on_small_d(method):
    d = 12
    p = make_gfm(d, 3, 3 * (d + d * (d + 1) // 2), condition=3.0, random_state=1)
    res = exact_ls_fit(p.X, p.y, method=method, truth=p)
    np.testing.assert_allclose(res.M, p.M_star, atol=1e-8)
    np.testing.assert_allclose(res.w, p.w_star, atol=1e-8)
    assert res.rows[0]["rel_err"] < 1e-8 and not res.rows[0]["underdetermined"]
    # with an intercept and noise: unbiased to O(noise / sqrt(N))
    q = make_gfm(d, 3, 20 * (d + d * (d + 1) // 2), noise=0.1, random_state=2)
    yq = q.y + 2.5
    fit = exact_ls_fit(q.X, yq, method=method, fit_intercept=True, truth=q)
    assert fit.b == pytest.approx(2.5, abs=0.05)
    assert fit.rows[0]["rel_err"] < 0.05
    np.testing.assert_allclose(fit.predict(q.X[:10]), yq[:10], atol=0.5)


def test_exact_least_squares_is_underdetermined_below_the_feature_count():
    d = 10
    p = make_gfm(d, 2, (d + d * (d + 1) // 2) // 2, random_state=3)
    res = exact_ls_fit(p.X, p.y, truth=p)
    assert res.rows[0]["underdetermined"] and res.rows[0]["rel_err"] > 0.1


def test_als_decreases_the_objective_and_approaches_the_truth():
    p = make_gfm(30, 2, 3000, random_state=4)
    res = als_fit(p.X, p.y, 2, n_passes=6, truth=p, random_state=0)
    obj = [r["objective"] for r in res.rows]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(obj, obj[1:]))  # exact block minimization
    assert res.rows[-1]["rel_err"] < 0.5 * res.rows[0]["rel_err"]
    np.testing.assert_allclose(res.predict(p.X[:5]),
                               p.X[:5] @ res.w + R.sense(p.X[:5], 0.5 * (res.U @ res.V.T
                                                                         + res.V @ res.U.T)))
    stopped = als_fit(p.X, p.y, 2, n_passes=6, callback=lambda row: False, random_state=0)
    assert len(stopped.rows) == 1
    with pytest.raises(ValueError, match="init must be"):
        als_fit(p.X, p.y, 2, init="zeros")


# ----------------------------------------------------------------------------- generator
def test_planted_truth_has_the_requested_spectrum():
    t = planted_truth(40, 3, condition=4.0, signs="alternating", w_norm=2.0, m_norm=3.0,
                      random_state=0)
    np.testing.assert_allclose(t.U.T @ t.U, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(t.lam, [3.0, -1.875, 0.75])  # linspace(1, 1/4) * 3
    assert t.w_norm == pytest.approx(2.0) and t.M_spec == pytest.approx(3.0)
    assert np.linalg.norm(t.M, 2) == pytest.approx(3.0)
    assert np.all(planted_truth(10, 2, signs="positive", random_state=0).lam > 0)
    tail = planted_truth(10, 2, tail=[0.05, 0.01], random_state=0)
    assert tail.U.shape == (10, 4) and tail.top(2).lam.tolist() == [1.0, -1.0]
    for bad, msg in [(dict(k=0), "between 1 and d"), (dict(condition=0.5), ">= 1"),
                     (dict(signs="zigzag"), "signs must be")]:
        with pytest.raises(ValueError, match=msg):
            planted_truth(10, **{"k": 2, **bad})


def test_make_gfm_unpacks_and_labels_follow_eq_1():
    p = make_gfm(8, 2, 50, noise=0.0, random_state=0)
    X, y, w, M = p
    np.testing.assert_allclose(y, X @ w + R.sense(X, M))
    noisy = make_gfm(8, 2, 20000, noise=0.5, random_state=0)
    resid = noisy.y - noisy.X @ noisy.w_star - R.sense(noisy.X, noisy.M_star)
    assert np.std(resid) == pytest.approx(0.5, rel=0.05)
    assert [len(b[1]) for b in p.batches(20)] == [20, 20]


def test_presets_are_the_papers_special_cases():
    assert set(PRESETS) >= {"matrix_sensing", "phase_retrieval", "indefinite"}
    pr = make_preset("phase_retrieval", 10, random_state=0)
    assert pr.truth.U.shape[1] == 1 and pr.truth.lam[0] > 0 and pr.truth.w_norm == 0
    ms = make_preset("matrix_sensing", 10, random_state=0)
    assert ms.truth.w_norm == 0
    ind = make_preset("indefinite", 10, random_state=0)
    assert (ind.truth.lam > 0).any() and (ind.truth.lam < 0).any()
    with pytest.raises(ValueError, match="w\\* = 0 by definition"):
        make_preset("matrix_sensing", 10, w_norm=1.0)
    with pytest.raises(ValueError, match="unknown gFM preset"):
        make_preset("nope")


def test_stream_batches_are_reproducible_and_fresh():
    t = planted_truth(6, 1, random_state=0)
    s = GFMStream(t, batch_size=10, n_batches=3, chunk_rows=4, seed=5)
    a = s.arrays(1)
    b = np.vstack([X for X, _ in s[1]])
    np.testing.assert_array_equal(a[0], b)
    assert a[0].shape == (10, 6)
    assert not np.allclose(s.arrays(0)[0], a[0])
    np.testing.assert_allclose(a[1], a[0] @ t.w + R.sense(a[0], t.M))
    assert s.generation_seconds > 0 and len(s) == 3
    with pytest.raises(IndexError):
        s[3]
    X, y = sample(t, 5, random_state=0)
    assert X.shape == (5, 6) and y.shape == (5,)
