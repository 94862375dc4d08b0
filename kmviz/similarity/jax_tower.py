"""An optional adapter: any JAX function as a tower (JAX is not a kmviz dependency).

``JaxTower(apply, params, k)`` wraps ``apply(params, X) -> (rows, k)`` (a Flax / Haiku /
plain-JAX network with its parameter pytree) into the tower protocol of
:mod:`kmviz.similarity.towers`: the pytree is flattened to one float64 vector
(``jax.flatten_util.ravel_pytree``), ``vjp`` is ``jax.vjp`` and ``jvp`` is ``jax.jvp``.
Sparse (CSR) inputs are densified for JAX. For float64 results enable
``jax.config.update("jax_enable_x64", True)`` before building the parameters; otherwise JAX
computes in float32 and the finite-difference oracles only hold to about 1e-4.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


class JaxTower:
    """A tower computed by JAX: ``P = apply(params, X)``."""

    kind = "jax"

    def __init__(self, apply, params, k):
        try:
            from jax.flatten_util import ravel_pytree
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("JaxTower needs JAX: pip install jax") from exc
        flat, self._unravel = ravel_pytree(params)
        self._theta0 = np.asarray(flat, dtype=np.float64)
        self._dtype = flat.dtype
        self.apply, self.k = apply, int(k)

    @property
    def n_params(self):
        return self._theta0.size

    def init(self, rng):
        """The parameters given at construction (JAX initializes its own networks)."""
        return self._theta0.copy()

    def _fn(self, X):
        import jax.numpy as jnp

        if X is not None:
            X = jnp.asarray(X.toarray() if sp.issparse(X) else X)
        return lambda flat: self.apply(self._unravel(flat), X)

    def _flat(self, v):
        import jax.numpy as jnp

        return jnp.asarray(np.asarray(v), dtype=self._dtype)

    def forward(self, theta, X, cache=None):
        return np.asarray(self._fn(X)(self._flat(theta)), dtype=np.float64)

    def vjp(self, theta, X, cache, M):
        import jax

        _, pull = jax.vjp(self._fn(X), self._flat(theta))
        return np.asarray(pull(self._flat(M))[0], dtype=np.float64)

    def jvp(self, theta, X, cache, d):
        import jax

        _, out = jax.jvp(self._fn(X), (self._flat(theta),), (self._flat(d),))
        return np.asarray(out, dtype=np.float64)
