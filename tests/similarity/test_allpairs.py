"""The all-pairs building blocks against naive O(mn) sums and dense Jacobians."""

import numpy as np
import pytest

from kmviz.similarity import _reference as ref
from kmviz.similarity.allpairs import constant_imputation

from .conftest import TOWERS, tiny_problem

CASES = [(loss, tower) for loss in ("logistic", "squared") for tower in TOWERS]
VARIANTS = [dict(), dict(weights=True), dict(prior=True), dict(imputed=0.0),
            dict(weights=True, prior=True)]


@pytest.mark.parametrize("loss,tower", CASES)
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_function_value_equals_the_naive_sum(loss, tower, variant):
    prob, theta = tiny_problem(loss, tower, **VARIANTS[variant])
    ev = prob.evaluate(theta)
    assert np.isclose(prob.objective(ev), ref.objective(prob, theta), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("loss,tower", CASES)
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_gradient_equals_the_naive_sum(loss, tower, variant):
    prob, theta = tiny_problem(loss, tower, **VARIANTS[variant])
    ev = prob.evaluate(theta)
    Mu, Mv = prob.embedding_gradient(ev)
    Mu0, Mv0 = ref.embedding_gradient(prob, theta)
    np.testing.assert_allclose(Mu, Mu0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(Mv, Mv0, rtol=1e-10, atol=1e-12)
    g = prob.gradient(ev)
    h = 1e-6
    fd = np.array([(ref.objective(prob, theta + h * e) - ref.objective(prob, theta - h * e))
                   / (2 * h) for e in np.eye(theta.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("loss,tower", CASES)
def test_gauss_newton_product_equals_dense_jacobians(loss, tower):
    prob, theta = tiny_problem(loss, tower, weights=True, prior=True)
    ev = prob.evaluate(theta)
    G = ref.gauss_newton_matrix(prob, theta)
    rng = np.random.default_rng(5)
    for _ in range(2):
        d = rng.standard_normal(theta.size)
        np.testing.assert_allclose(prob.gnvp(ev, d), G @ d, rtol=1e-6, atol=1e-6)


def test_gauss_newton_matrix_is_symmetric_pd_with_negative_curvatures():
    prob, theta = tiny_problem("logistic", "identity", omega=3.0, lam=0.1)
    ev = prob.evaluate(theta)
    assert (ev.cplus < 0).any()      # c_ij = l'' - omega a_i b_j < 0 is common
    G = np.stack([prob.gnvp(ev, e) for e in np.eye(theta.size)], axis=1)
    np.testing.assert_allclose(G, G.T, atol=1e-10)
    assert np.linalg.eigvalsh(G).min() >= prob.lam - 1e-9


def test_constant_term():
    prob, _ = tiny_problem("logistic", "identity", m=6, n=5, omega=0.5)
    assert np.isclose(prob.constant, 0.5 * 0.5 * 6 * 5)    # 0.5 omega sum_ij a_i b_j 1
    Pt, Qt = constant_imputation(0.0, 4, 3)
    assert Pt.shape == (4, 0) and Qt.shape == (3, 0)
    prob0, _ = tiny_problem("logistic", "identity", imputed=0.0)
    assert prob0.constant == 0.0
