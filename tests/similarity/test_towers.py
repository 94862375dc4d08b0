"""Tower forward / VJP / JVP against central finite differences."""

import numpy as np
import pytest
import scipy.sparse as sp

from kmviz.similarity.towers import (
    IdentityTower, LinearTower, MLPTower, make_tower, parse_tower, tower_input)

from .conftest import TOWERS
from .conftest import make_tower as tiny_tower


def _fd_jvp(tower, theta, X, d, h=1e-6):
    return (tower.forward(theta + h * d, X) - tower.forward(theta - h * d, X)) / (2 * h)


@pytest.mark.parametrize("kind", TOWERS)
def test_jvp_matches_finite_differences(kind):
    rng = np.random.default_rng(1)
    tower, X = tiny_tower(kind, 7, 3, rng)
    theta = tower.init(rng) + 0.2 * rng.standard_normal(tower.n_params)
    d = rng.standard_normal(tower.n_params)
    cache = {}
    P = tower.forward(theta, X, cache)
    assert P.shape == (7, 3)
    np.testing.assert_allclose(tower.jvp(theta, X, cache, d), _fd_jvp(tower, theta, X, d),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind", TOWERS)
def test_vjp_is_the_adjoint_of_jvp_and_matches_finite_differences(kind):
    rng = np.random.default_rng(2)
    tower, X = tiny_tower(kind, 7, 3, rng)
    theta = tower.init(rng) + 0.2 * rng.standard_normal(tower.n_params)
    M = rng.standard_normal((7, 3))
    cache = {}
    tower.forward(theta, X, cache)
    g = tower.vjp(theta, X, cache, M)
    # <J, M> = d/dtheta sum_i f_i^T M_i, by finite differences per coordinate
    h = 1e-6
    fd = np.empty(tower.n_params)
    for t in range(tower.n_params):
        e = np.zeros(tower.n_params)
        e[t] = h
        fd[t] = np.sum((tower.forward(theta + e, X) - tower.forward(theta - e, X)) * M) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    d = rng.standard_normal(tower.n_params)
    assert np.isclose(g @ d, np.sum(tower.jvp(theta, X, cache, d) * M))


def test_relu_tower_derivatives_away_from_kinks():
    rng = np.random.default_rng(3)
    tower = MLPTower(4, (6,), 2, "relu")
    X = rng.standard_normal((5, 4))
    theta = tower.init(rng)
    d = rng.standard_normal(tower.n_params)
    np.testing.assert_allclose(tower.jvp(theta, X, None, d), _fd_jvp(tower, theta, X, d),
                               rtol=1e-5, atol=1e-7)


def test_dense_and_csr_inputs_agree():
    rng = np.random.default_rng(4)
    F = rng.standard_normal((6, 4)) * (rng.random((6, 4)) < 0.5)
    tower = MLPTower(4, (3,), 2, "elu")
    theta = tower.init(rng)
    M = rng.standard_normal((6, 2))
    d = rng.standard_normal(tower.n_params)
    Fs = sp.csr_matrix(F)
    np.testing.assert_allclose(tower.forward(theta, F), tower.forward(theta, Fs))
    np.testing.assert_allclose(tower.vjp(theta, F, None, M), tower.vjp(theta, Fs, None, M))
    np.testing.assert_allclose(tower.jvp(theta, F, None, d), tower.jvp(theta, Fs, None, d))


def test_ids_and_features_input_is_an_embedding_table_beside_features():
    F = np.arange(6.0).reshape(3, 2)
    X = tower_input(3, F, ids=True)
    assert X.shape == (3, 5)
    np.testing.assert_array_equal(X.toarray()[:, :3], np.eye(3))
    np.testing.assert_array_equal(X.toarray()[:, 3:], F)
    lin = LinearTower(5, 2)
    theta = np.arange(10.0)
    W = theta.reshape(5, 2)
    np.testing.assert_allclose(lin.forward(theta, X), W[:3] + F @ W[3:])


def test_presets_and_errors():
    assert parse_tower("mlp:256,256") == ("mlp", (256, 256))
    assert parse_tower("identity") == ("identity", ())
    assert parse_tower("mlp") == ("mlp", (256, 256))
    for bad in ("mlp:", "mlp:a,b", "conv", "mlp:0"):
        with pytest.raises(ValueError, match="unknown tower"):
            parse_tower(bad)
    t = make_tower("mlp:8", 10, 4, 3, activation="tanh")
    assert isinstance(t, MLPTower) and t.hidden == (8,) and t.activation == "tanh"
    assert t.n_params == 4 * 8 + 8 + 8 * 3 + 3
    assert isinstance(make_tower("identity", 10, 4, 3), IdentityTower)
    with pytest.raises(ValueError, match="lacks"):
        make_tower(object(), 10, 4, 3)
    with pytest.raises(ValueError, match="takes 4 input columns"):
        LinearTower(4, 2).forward(np.zeros(8), np.zeros((3, 5)))
