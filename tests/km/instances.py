"""Small BQP instances shared by the KM kernel tests."""

import numpy as np


def km_instance(D, seed, n_users=60):
    """S = sum_u theta_u theta_u^T and v = sum_u theta_u p_u for Dirichlet(1) theta and star
    ratings p in {0.2, ..., 1}: the statistics of one item's BQP (4)."""
    rng = np.random.default_rng(seed)
    th = rng.dirichlet(np.ones(D), n_users)
    p = rng.integers(1, 6, n_users) / 5.0
    return th.T @ th, th.T @ p


def random_symmetric(n, seed, kind=0):
    """Gaussian symmetric; kind 1: small-scale PSD, 2: an exact zero row and column, 3: an
    eigenvalue of high multiplicity."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n))
    A = (X + X.T) / 2
    if kind == 1:
        A = 1e-3 * A @ A.T  # PSD, small scale
    elif kind == 2:
        A[0, :] = 0.0
        A[:, 0] = 0.0  # an exact zero row (scale == 0 branch of tred2)
    elif kind == 3:
        A = np.diag(np.repeat([1.0, -2.0, 3.0], n)[:n])  # multiple eigenvalues
    return A
