"""One-class data with planted two-tower structure (linear or nonlinear towers).

Users and items have Gaussian features; the true embeddings are ``P = tanh(X A_1) A_2``
and ``Q = tanh(Y B_1) B_2`` (one hidden layer: the benefit of a nonlinear tower over a
linear one is then known), or ``X A`` and ``Y B`` (``nonlinear=False``). Each user's
positives are drawn without replacement from a softmax of its scores (Gumbel top-k), so
the observed set is one-class data with a known ranking behind it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_number, check_random_state


@dataclass
class PlantedTowersTruth:
    """The true embeddings and scores of :func:`make_planted_towers`."""

    user_embeddings: np.ndarray
    item_embeddings: np.ndarray
    scores: np.ndarray


def _tower(rng, F, k, hidden, nonlinear):
    d = F.shape[1]
    if not nonlinear:
        return F @ (rng.standard_normal((d, k)) / np.sqrt(d))
    A1 = rng.standard_normal((d, hidden)) * (2.0 / np.sqrt(d))
    A2 = rng.standard_normal((hidden, k)) / np.sqrt(hidden)
    return np.tanh(F @ A1) @ A2


def make_planted_towers(n_users=300, n_items=200, k=4, *, n_user_features=6,
                        n_item_features=6, hidden=16, nonlinear=True, density=0.05,
                        temperature=0.25, random_state=None):
    """(Ratings, PlantedTowersTruth): implicit positives from planted towers.

    Parameters
    ----------
    n_users, n_items, k : int
    n_user_features, n_item_features : int
        Gaussian features (the Ratings' ``user_features`` / ``item_features``, columns f0..).
    hidden : int
        Width of the planted towers' tanh layer.
    nonlinear : bool
        tanh towers (True) or linear maps of the features.
    density : float in (0, 1)
        Mean fraction of items each user has as positives (at least 2 per user).
    temperature : float
        Softmax temperature of the draws on standardized scores (lower: closer to top-k).
    random_state : None, int or numpy.random.Generator
    """
    owner = "make_planted_towers"
    n_users = check_number(owner, "n_users", n_users, kind=int, low=2)
    n_items = check_number(owner, "n_items", n_items, kind=int, low=3)
    density = check_number(owner, "density", density, low=0, high=1, closed="neither")
    temperature = check_number(owner, "temperature", temperature, low=0, closed="neither")
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_users, n_user_features))
    Y = rng.standard_normal((n_items, n_item_features))
    P = _tower(rng, X, k, hidden, nonlinear)
    Q = _tower(rng, Y, k, hidden, nonlinear)
    S = P @ Q.T
    S = (S - S.mean()) / (S.std() + 1e-12)
    counts = np.clip(rng.poisson(density * n_items, n_users), 2, n_items - 1)
    gumbel = -np.log(-np.log(rng.random((n_users, n_items))))
    keys = S / temperature + gumbel
    order = np.argsort(-keys, axis=1, kind="stable")
    users = np.repeat(np.arange(n_users), counts)
    items = np.concatenate([order[u, :c] for u, c in enumerate(counts)])
    from ..data import Ratings

    ratings = Ratings.from_arrays(
        users, items, np.ones(users.size), user_ids=np.arange(n_users),
        item_ids=np.arange(n_items), implicit=True,
        user_features=pd.DataFrame(X, columns=[f"f{c}" for c in range(n_user_features)]),
        item_features=pd.DataFrame(Y, columns=[f"f{c}" for c in range(n_item_features)]),
        name="planted towers", source="planted-towers")
    ratings.info.update(generator="planted_towers", nonlinear=bool(nonlinear), k=k)
    return ratings, PlantedTowersTruth(P, Q, S)
