"""A planted positive-unlabeled (PU) generator with known side-feature effects.

Users and items get latent vectors that are partly linear in their side features:

    b_i = sqrt(s) A^T f_i + sqrt(1 - s) e_i,     h_j = sqrt(s) C^T g_j + sqrt(1 - s) e'_j

(f_i ~ N(0, I_du), g_j ~ N(0, I_dv), A ~ N(0, 1/du), C ~ N(0, 1/dv), e ~ N(0, I_k); s is
``feature_share``). The affinity is ``a_ij = b_i^T h_j / sqrt(k) + beta_j`` with an item
popularity ``beta_j = popularity (sqrt(t) g_j^T c + sqrt(1 - t) e''_j)`` (c ~ N(0, 1/dv),
e'' ~ N(0, 1); t is ``popularity_share``, 0 by default: popularity unrelated to the
features); pair (i, j) is a TRUE positive with probability
``sigmoid(sharpness (a_ij - tau))``, tau set so that the expected density is ``density``;
each true positive is OBSERVED with probability ``label_rate`` (the PU setting: the rest are
indistinguishable from negatives). So the truth knows which feature moves which latent
direction (A, C), which unobserved pairs are positives, and a user graph that carries signal
(kNN on the true b).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._validation import check_number, check_random_state
from ..data.ratings import Ratings
from .features import knn_graph


@dataclass
class PlantedPUTruth:
    """Ground truth of :func:`make_planted_pu`.

    Attributes
    ----------
    user_effects : ndarray (n_user_features, k)
        A: how each user feature moves the user's latent vector.
    item_effects : ndarray (n_item_features, k)
        C: the same for items.
    user_latent, item_latent : ndarray (n_users, k), (n_items, k)
        b_i and h_j.
    item_bias : ndarray (n_items,)
        beta_j (popularity).
    positives : scipy.sparse.csr_matrix (n_users, n_items)
        Every true positive, observed or not.
    observed : scipy.sparse.csr_matrix
        The observed positives (the Ratings' entries).
    probability : ndarray (n_users, n_items)
        P(true positive) of every pair.
    feature_share, label_rate : float
    popularity_effects : ndarray (n_item_features,)
        c: how each item feature moves the popularity beta (zeros when
        ``popularity_share`` is 0).
    """

    user_effects: np.ndarray
    item_effects: np.ndarray
    user_latent: np.ndarray
    item_latent: np.ndarray
    item_bias: np.ndarray
    positives: sp.csr_matrix
    observed: sp.csr_matrix
    probability: np.ndarray
    feature_share: float
    label_rate: float
    popularity_effects: np.ndarray = None

    def affinity(self) -> np.ndarray:
        """``b_i^T h_j / sqrt(k) + beta_j`` for every pair (n_users x n_items)."""
        k = self.user_latent.shape[1]
        return self.user_latent @ self.item_latent.T / np.sqrt(k) + self.item_bias[None, :]


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def make_planted_pu(n_users=300, n_items=200, k=4, *, n_user_features=6, n_item_features=4,
                    feature_share=0.7, density=0.05, label_rate=0.8, popularity=0.5,
                    sharpness=4.0, graph_neighbors=10, popularity_share=0.0,
                    random_state=None):
    """Planted one-class data with side features; returns ``(ratings, truth)``.

    Parameters
    ----------
    n_users, n_items : int, default=300, 200
    k : int, default=4
        Latent dimension of the truth.
    n_user_features, n_item_features : int, default=6, 4
    feature_share : float in [0, 1], default=0.7
        Share of the latent variance explained by the features (1: fully inductive).
    density : float in (0, 1), default=0.05
        Expected share of true positives.
    label_rate : float in (0, 1], default=0.8
        Probability that a true positive is observed.
    popularity : float >= 0, default=0.5
        Standard deviation of the item popularity beta.
    sharpness : float > 0, default=4.0
        Slope of the sigmoid from affinity to probability.
    graph_neighbors : int >= 0, default=10
        Neighbours of the user graph (kNN on the true b); 0 for none.
    popularity_share : float in [0, 1], default=0.0
        Share of the popularity's variance explained by the item features (1: popular
        items are those with the right features, ``beta = popularity g_j^T c``; the
        direction c is ``truth.popularity_effects``). The draws of the default 0 are those
        of earlier versions (the same seed gives the same data).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    ratings : Ratings
        One-class (implicit) data over the full index space (users and items without an
        observed positive keep their index), ``user_features`` columns ``u0..``,
        ``item_features`` columns ``v0..``, ``user_graph`` (when graph_neighbors > 0).
    truth : PlantedPUTruth
    """
    owner = "make_planted_pu"
    check_number(owner, "n_users", n_users, kind=int, low=2)
    check_number(owner, "n_items", n_items, kind=int, low=2)
    check_number(owner, "k", k, kind=int, low=1)
    check_number(owner, "n_user_features", n_user_features, kind=int, low=0)
    check_number(owner, "n_item_features", n_item_features, kind=int, low=0)
    check_number(owner, "feature_share", feature_share, low=0.0, high=1.0)
    check_number(owner, "density", density, low=0.0, high=1.0, closed="neither")
    check_number(owner, "label_rate", label_rate, low=0.0, high=1.0, closed="right")
    check_number(owner, "popularity", popularity, low=0.0)
    check_number(owner, "sharpness", sharpness, low=0.0, closed="neither")
    check_number(owner, "graph_neighbors", graph_neighbors, kind=int, low=0)
    check_number(owner, "popularity_share", popularity_share, low=0.0, high=1.0)
    rng = check_random_state(random_state)
    du, dv = int(n_user_features), int(n_item_features)
    s = float(feature_share) if (du and dv) else 0.0
    Fu = rng.standard_normal((n_users, du))
    Fv = rng.standard_normal((n_items, dv))
    A = rng.standard_normal((du, k)) / np.sqrt(max(du, 1))
    C = rng.standard_normal((dv, k)) / np.sqrt(max(dv, 1))
    su = s if du else 0.0
    sv = s if dv else 0.0
    b = np.sqrt(su) * (Fu @ A) + np.sqrt(1.0 - su) * rng.standard_normal((n_users, k))
    h = np.sqrt(sv) * (Fv @ C) + np.sqrt(1.0 - sv) * rng.standard_normal((n_items, k))
    beta = float(popularity) * rng.standard_normal(n_items)
    c_pop = np.zeros(dv)
    t = float(popularity_share) if dv else 0.0
    if t > 0:
        c_pop = rng.standard_normal(dv) / np.sqrt(dv)
        beta = np.sqrt(1.0 - t) * beta + np.sqrt(t) * float(popularity) * (Fv @ c_pop)
    aff = b @ h.T / np.sqrt(k) + beta[None, :]
    # tau: the mean probability equals density (bisection on a monotone function)
    lo, hi = float(aff.min()) - 20.0, float(aff.max()) + 20.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if _sigmoid(sharpness * (aff - mid)).mean() > density:
            lo = mid
        else:
            hi = mid
    prob = _sigmoid(sharpness * (aff - 0.5 * (lo + hi)))
    true_pos = rng.random(prob.shape) < prob
    seen = true_pos & (rng.random(prob.shape) < label_rate)
    if seen.sum() < 2:
        raise ValueError(f"{owner}: the settings give fewer than 2 observed positives; raise "
                         "density or label_rate.")
    users, items = np.nonzero(seen)
    user_df = pd.DataFrame(Fu, columns=[f"u{c}" for c in range(du)]) if du else None
    item_df = pd.DataFrame(Fv, columns=[f"v{c}" for c in range(dv)]) if dv else None
    graph = knn_graph(b, graph_neighbors) if graph_neighbors else None
    ratings = Ratings.from_arrays(
        users, items, None, user_ids=np.arange(n_users), item_ids=np.arange(n_items),
        user_features=user_df, item_features=item_df, user_graph=graph, implicit=True,
        name="planted PU", source="generated (kmviz.ocmf.synthetic.make_planted_pu)")
    truth = PlantedPUTruth(
        user_effects=A, item_effects=C, user_latent=b, item_latent=h, item_bias=beta,
        positives=sp.csr_matrix(true_pos.astype(np.float64)),
        observed=sp.csr_matrix(seen.astype(np.float64)), probability=prob,
        feature_share=s, label_rate=float(label_rate), popularity_effects=c_pop)
    return ratings, truth


def planted_pu(n_users=300, n_items=200, k=4, *, n_user_features=6, n_item_features=4,
               feature_share=0.7, density=0.05, label_rate=0.8, popularity=0.5,
               sharpness=4.0, graph_neighbors=10, popularity_share=0.0,
               random_state=None) -> Ratings:
    """The Ratings of :func:`make_planted_pu` (same parameters), without the truth."""
    return make_planted_pu(n_users, n_items, k, n_user_features=n_user_features,
                           n_item_features=n_item_features, feature_share=feature_share,
                           density=density, label_rate=label_rate, popularity=popularity,
                           sharpness=sharpness, graph_neighbors=graph_neighbors,
                           popularity_share=popularity_share, random_state=random_state)[0]
