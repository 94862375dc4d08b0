"""Tiny all-pairs problems: dense O(mn) oracles stay cheap at these sizes."""

import numpy as np
import pytest
import scipy.sparse as sp

from kmviz.similarity.allpairs import AllPairsProblem, ObservedPairs, constant_imputation
from kmviz.similarity.towers import IdentityTower, LinearTower, MLPTower, tower_input

TOWERS = ("identity", "linear", "linear_csr", "mlp_elu", "mlp_tanh", "ids_and_features")


def make_tower(kind, n_rows, k, rng):
    """(tower, input) of a kind on n_rows entities."""
    F = rng.standard_normal((n_rows, 4))
    if kind == "identity":
        return IdentityTower(n_rows, k, init_scale=0.5), None
    if kind == "linear":
        return LinearTower(4, k, init_scale=0.5), F
    if kind == "linear_csr":
        return LinearTower(4, k, init_scale=0.5), sp.csr_matrix(F * (rng.random(F.shape) < .6))
    if kind == "mlp_elu":
        return MLPTower(4, (5, 3), k, "elu"), F
    if kind == "mlp_tanh":
        return MLPTower(4, (5,), k, "tanh"), F
    if kind == "ids_and_features":
        X = tower_input(n_rows, sp.csr_matrix(F), ids=True)
        return MLPTower(X.shape[1], (4,), k, "elu"), X
    raise ValueError(kind)


def tiny_problem(loss="logistic", tower="mlp_elu", *, m=6, n=5, k=3, seed=0, omega=0.3,
                 lam=0.2, imputed=-1.0, weights=False, prior=False, cover=False):
    rng = np.random.default_rng(seed)
    Y = rng.random((m, n)) < 0.35
    Y[0, :2] = True
    if cover:    # every row and column has an observed pair
        Y[np.arange(max(m, n)) % m, np.arange(max(m, n)) % n] = True
    rows, cols = np.nonzero(Y)
    labels = np.ones(rows.size) if loss == "logistic" else rng.uniform(0.5, 1.5, rows.size)
    pairs = ObservedPairs(rows, cols, m, n, labels)
    fu, U = make_tower(tower, m, k, rng)
    fv, V = make_tower("identity" if tower == "ids_and_features" else tower, n, k, rng)
    a = rng.uniform(0.5, 2.0, m) if weights else None
    b = rng.uniform(0.5, 2.0, n) if weights else None
    if prior:
        Pt, Qt = rng.standard_normal((m, 2)), rng.standard_normal((n, 2))
    else:
        Pt, Qt = constant_imputation(imputed, m, n)
    prob = AllPairsProblem(pairs, fu, fv, U, V, loss, omega, lam, a, b, Pt, Qt)
    theta = prob.init(rng)
    if tower.startswith("mlp") or tower == "ids_and_features":
        theta = theta + 0.3 * rng.standard_normal(theta.size)
    return prob, theta


@pytest.fixture
def rng():
    return np.random.default_rng(0)
