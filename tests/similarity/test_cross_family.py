"""Identity towers with the squared losses are OCMF's model: same objective and gradient.

OCMF (kmviz.ocmf) minimizes  sum_O (1 - s)^2 + rho sum_{not O} (a_bar - s)^2
+ lambda_w ||W||^2 + lambda_h ||H||^2 ; here  sum_O 0.5 (1 - s)^2 + 0.5 omega sum_{not O}
(Ytilde - s)^2 + 0.5 lambda ||theta||^2.  So with omega = rho, Ytilde = a_bar and
lambda = lambda_w = lambda_h, OCMF's objective and gradient are exactly twice ours.
"""

import numpy as np
import pytest

from kmviz.ocmf import _reference as ocmf_ref
from kmviz.similarity.allpairs import AllPairsProblem, ObservedPairs, constant_imputation
from kmviz.similarity.towers import IdentityTower


@pytest.mark.parametrize("a_bar", [-1.0, 0.0, 0.5])
def test_identity_squared_matches_one_class_mf(a_bar):
    rng = np.random.default_rng(0)
    m, n, k, rho, lam = 8, 6, 3, 0.3, 0.7
    Y = (rng.random((m, n)) < 0.4).astype(float)
    rows, cols = np.nonzero(Y)
    pairs = ObservedPairs(rows, cols, m, n)
    Pt, Qt = constant_imputation(a_bar, m, n)
    prob = AllPairsProblem(pairs, IdentityTower(m, k), IdentityTower(n, k), None, None,
                           "squared", rho, lam, None, None, Pt, Qt)
    theta = prob.init(rng)
    Wu, Wv = theta[:m * k].reshape(m, k), theta[m * k:].reshape(n, k)
    eye_m, eye_n = np.eye(m), np.eye(n)
    p, q = np.ones(m) * rho, np.ones(n)
    f_ocmf = ocmf_ref.objective(Wu, Wv, eye_m, eye_n, Y, "squared", p, q, a_bar, lam, lam)
    ev = prob.evaluate(theta)
    assert np.isclose(f_ocmf, 2 * prob.objective(ev), rtol=1e-12)
    gu = ocmf_ref.grad_user(Wu, Wv, eye_m, eye_n, Y, "squared", p, q, a_bar, lam)
    gv = ocmf_ref.grad_item(Wu, Wv, eye_m, eye_n, Y, "squared", p, q, a_bar, lam)
    g = prob.gradient(ev)
    np.testing.assert_allclose(np.concatenate([gu.ravel(), gv.ravel()]), 2 * g, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_fitted_identity_model_matches_one_class_mf(loss):
    """Both fits run to convergence from different starts and land on the same scores.

    OCMF's logistic objective has no 1/2 on its all-pairs and L2 terms, so there
    omega = 2 rho and lambda_theta = 2 lambda (and the objectives are equal); with the
    squared loss everything has the factor 2 (omega = rho, lambda_theta = lambda)."""
    import warnings

    from kmviz.ocmf import OneClassMF, make_planted_pu
    from kmviz.similarity import SimilarityLearning

    ratings, _ = make_planted_pu(40, 30, 3, density=0.15, random_state=0)
    rho, lam = 0.3, 0.7
    factor = 1.0 if loss == "squared" else 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ocmf = OneClassMF(k=3, loss=loss, rho=rho, a_bar=-1.0, lambda_w=lam, lambda_h=lam,
                          user_identity="all", item_identity="all", max_iter=300,
                          inner_max_iter=20, inner_tol=1e-8, tol=0,
                          random_state=0).fit(ratings)
        ours = SimilarityLearning(k=3, loss=loss, omega=factor * rho,
                                  lambda_theta=factor * lam, imputed=-1.0, max_iter=300,
                                  tol=1e-14, max_cg=100, cg_tol=1e-6,
                                  random_state=1).fit(ratings)
    f_ocmf = ocmf.trace_.column("objective")[-1]
    assert f_ocmf == pytest.approx((2.0 / factor) * ours.objective_, rel=1e-9)
    np.testing.assert_allclose(ours.user_factors_ @ ours.item_factors_.T,
                               ocmf.user_factors_ @ ocmf.item_factors_.T, atol=1e-4)
