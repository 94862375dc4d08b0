"""The optional JAX adapter (JAX is in the test extra, so this runs in CI; it is skipped
only where JAX is not installed)."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")


def test_jax_tower_matches_finite_differences():
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    from kmviz.similarity.jax_tower import JaxTower

    rng = np.random.default_rng(0)
    params = {"W1": jnp.asarray(rng.standard_normal((4, 5))), "b1": jnp.zeros(5),
              "W2": jnp.asarray(rng.standard_normal((5, 3)))}

    def apply(p, X):
        return jnp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"]

    tower = JaxTower(apply, params, 3)
    X = rng.standard_normal((6, 4))
    theta = tower.init(rng)
    d = rng.standard_normal(tower.n_params)
    h = 1e-6
    fd = (tower.forward(theta + h * d, X) - tower.forward(theta - h * d, X)) / (2 * h)
    np.testing.assert_allclose(tower.jvp(theta, X, None, d), fd, rtol=1e-6, atol=1e-8)
    M = rng.standard_normal((6, 3))
    assert np.isclose(tower.vjp(theta, X, None, M) @ d,
                      np.sum(tower.jvp(theta, X, None, d) * M))
