"""The stochastic gradients of similarity learning are unbiased, checked exactly: their mean
over every sample the solver can draw, each equally likely, is the full gradient.

The Monte Carlo checks in ``test_solvers.py`` (20,000 draws, 3% tolerance, half a minute
each) are marked slow; these enumerate the draws instead (a few hundred), so the equality
holds to rounding. The solver's generator is replaced by one that hands out the draws in
turn, checking that each is asked for as the solver draws it (population, size, without
replacement).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from kmviz.similarity.solvers import Settings
from kmviz.similarity.solvers import stochastic

from .conftest import tiny_problem


class Draws:
    """A stand-in for ``numpy.random.Generator.choice`` that returns given samples in order."""

    def __init__(self, samples):
        self.samples = list(samples)

    def choice(self, n, size, replace=True):
        population, sample = self.samples.pop(0)
        assert (n, size, replace) == (population, len(sample), False)
        return np.array(sample)


def test_sampling_gradient_mean_over_every_block_is_the_full_gradient():
    prob, theta = tiny_problem("logistic", "identity", m=6, n=5, weights=True, prior=True)
    full = prob.gradient(prob.evaluate(theta))
    m, n, rho = prob.pairs.n_rows, prob.pairs.n_cols, 0.4
    mh, nh = math.ceil(rho * m), math.ceil(rho * n)
    blocks = list(itertools.product(itertools.combinations(range(m), mh),
                                    itertools.combinations(range(n), nh)))
    assert len(blocks) == math.comb(m, mh) * math.comb(n, nh) == 200
    total = np.zeros_like(full)
    for users, items in blocks:
        rng = Draws([(m, users), (n, items)])
        total += stochastic.sampling_gradient(prob, theta, rng, rho)
        assert rng.samples == []
    np.testing.assert_allclose(total / len(blocks), full, rtol=1e-10, atol=1e-12)


def test_sogram_estimate_without_averaging_mean_over_every_pair_of_draws_is_the_gradient():
    """One pair per draw (rho = 1 / nnz), alpha = 1 (the running Gramians are this draw's):
    the mean over every (first pair, second pair) is the full gradient."""
    prob, theta = tiny_problem("logistic", "mlp_tanh", m=6, n=5, weights=True, prior=True,
                               cover=True)
    full = prob.gradient(prob.evaluate(theta))
    nnz = prob.pairs.nnz
    st = stochastic.start(prob, theta, Settings(rho=0.3, learning_rate=0.1),
                          np.random.default_rng(0), name="sogram")
    total = np.zeros_like(full)
    for first, second in itertools.product(range(nnz), repeat=2):
        rng = Draws([(nnz, (first,)), (nnz, (second,))])
        total += stochastic.sogram_gradient(prob, theta, rng, 1.0 / nnz, st.grams, st.abar,
                                            st.bbar, 1.0)
    np.testing.assert_allclose(total / nnz ** 2, full, rtol=1e-10, atol=1e-12)
