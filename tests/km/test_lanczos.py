"""Lanczos (Alg. 5): kernel vs reference, Ritz values vs eigh, Lemmas 2-3 for every m."""

import numpy as np
import pytest

from kmviz.km import _kernels as K
from kmviz.km import _reference as R
from kmviz.km import solvers as bqp
from kmviz.km.lanczos import lanczos, lanczos_diagnostics

from tests.km.instances import km_instance, random_symmetric


def dual_matrices():
    out = []
    for D, seed in ((8, 0), (12, 1), (20, 2)):
        S, v = km_instance(D, seed)
        r = bqp.solve_bqp(S, v, method="fast", random_state=0)
        out.append(bqp.dual_matrix(S, v, r.u))          # at the optimum
        out.append(bqp.dual_matrix(S, v, r.u - 0.05))   # a generic II-B iterate
    return out


MATRICES = [random_symmetric(n, s) for n, s in ((2, 0), (5, 1), (13, 2), (40, 3))]


@pytest.mark.parametrize("C", MATRICES[1:3] + dual_matrices()[:2])
def test_kernel_matches_reference(C):
    n = C.shape[0]
    p1 = np.empty(n)
    K.lanczos_start(n, p1)
    np.testing.assert_allclose(p1, R.lanczos_start(n), rtol=1e-15)
    delta = float(K.lanczos_threshold(C, 1.0))
    assert delta == pytest.approx(R.lanczos_threshold(C, 1.0)["delta"], rel=1e-12)
    al, be, P = np.empty(n), np.empty(n), np.empty((n, n))
    m = K.lanczos_tridiag(C, p1, delta, al, be, P)
    al_r, be_r, P_r = R.lanczos_tridiag(C, p1, delta)
    assert m == al_r.size
    np.testing.assert_allclose(al[:m], al_r, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(be[:m], be_r, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(P[:m].T, P_r, rtol=1e-8, atol=1e-10)
    # positive Ritz pairs from the kernel equal the reference Ritz pairs
    w, V = np.empty(n), np.empty((n, n))
    k, m2, beta = K.lanczos_positive_pairs(C, p1, delta, w, V, P, al, be)
    theta, Y, _ = R.ritz_pairs(al_r, be_r, P_r)
    pos = theta > 0
    assert k == pos.sum() and m2 == m and beta == pytest.approx(be_r[-1], rel=1e-9, abs=1e-14)
    np.testing.assert_allclose(w[:k], theta[pos], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.abs(V[:, :k]), np.abs(Y[:, pos]), atol=1e-8)


@pytest.mark.parametrize("C", MATRICES + dual_matrices())
def test_full_lanczos_reproduces_eigh(C):
    res = lanczos(C, delta=0.0)
    lam = np.linalg.eigvalsh(C)
    if res.m == C.shape[0]:
        np.testing.assert_allclose(res.ritz_values, lam, atol=1e-10 * max(1, abs(lam).max()))
    np.testing.assert_allclose(res.ritz_vectors.T @ res.ritz_vectors, np.eye(res.m), atol=1e-10)


@pytest.mark.parametrize("C", MATRICES + dual_matrices())
def test_lemma_2_and_3_bounds_hold_for_every_m(C):
    d = lanczos_diagnostics(C, a=1.0)
    ok = ~np.isnan(d["beta"])
    tol = 1e-10 * max(1.0, np.abs(d["eigenvalues"]).max())
    beta = d["beta"][ok]
    assert np.all(d["residual_max"][ok] <= beta + tol)               # (16)
    assert np.all(d["max_err"][ok] <= beta + tol)                    # (17)
    assert np.all(d["min_err"][ok] <= d["beta_q_min"][ok] + tol)     # (18), best pair
    assert np.all(d["dominant_err"][ok] <= d["beta_q_dominant"][ok] + tol)
    assert np.all(beta <= d["lemma3_bound"][ok] + tol)               # (19)
    assert d["sigma_LB"] <= d["sigma_UB"] + tol
    assert 1 <= d["m_threshold"] <= C.shape[0]
    m_thr = d["m_threshold"]
    assert d["beta"][m_thr - 1] <= d["delta"] or m_thr == ok.sum()


def test_per_pair_bound_18_every_ritz_value():
    C = random_symmetric(15, 7)
    lam = np.linalg.eigvalsh(C)
    p1 = R.lanczos_start(15)
    for delta in (0.5, 0.1, 0.0):
        al, be, P = R.lanczos_tridiag(C, p1, delta)
        theta, _, Q = R.ritz_pairs(al, be, P)
        err = np.abs(theta[:, None] - lam[None, :]).min(axis=1)
        assert np.all(err <= be[-1] * np.abs(Q[-1, :]) + 1e-10)


def test_threshold_stops_at_delta_and_d1_runs_full():
    C = dual_matrices()[1]
    res = lanczos(C, a=1.0)
    assert res.beta <= res.delta or res.m == C.shape[0]
    C1 = np.array([[0.2, 0.3], [0.3, -1.0]])
    res1 = lanczos(C1)
    assert res1.delta == 0.0 and res1.m == 2
    np.testing.assert_allclose(res1.ritz_values, np.linalg.eigvalsh(C1), atol=1e-14)


def test_lanczos_rejects_bad_input():
    with pytest.raises(ValueError, match="C must be symmetric"):
        lanczos(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="NaN"):
        lanczos(np.array([[np.nan, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="The 'a' parameter of lanczos must be a float"):
        lanczos(np.eye(3), a=0.0)


def test_diagnostics_ritz_values_per_m_interlace_the_spectrum():
    rng = np.random.default_rng(7)
    B = rng.standard_normal((9, 9))
    C = (B + B.T) / 2
    d = lanczos_diagnostics(C, a=1.0)
    lam = np.linalg.eigvalsh(C)
    for m in range(1, 10):
        theta = d["ritz_values"][d["ritz_m"] == m]
        assert theta.size == m
        # Cauchy interlacing: every Ritz value lies inside the spectrum
        assert theta.min() >= lam[0] - 1e-10 and theta.max() <= lam[-1] + 1e-10
    np.testing.assert_allclose(np.sort(d["ritz_values"][d["ritz_m"] == 9]), lam, atol=1e-8)
