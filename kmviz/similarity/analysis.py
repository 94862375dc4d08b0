"""What a fitted similarity model says, as plain data for the Embeddings page.

- :func:`embedding_pca`: 2-D coordinates of the user or item embeddings (PCA);
- :func:`nearest`: an item's (user's) nearest neighbours by cosine of embeddings;
- :func:`tower_activations`: what each layer of a tower does to one entity;
- :func:`score_from_features`: the scores of an item described by features alone (a cold
  item), against every user.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _factors(model, side):
    model._check_fitted()
    if side not in ("users", "items"):
        raise ValueError(f"side must be 'users' or 'items'; got {side!r}.")
    return model.user_factors_ if side == "users" else model.item_factors_


def embedding_pca(model, side="items", n_components=2):
    """(coordinates (rows x n_components), explained variance ratios) of the embeddings."""
    E = _factors(model, side)
    C = E - E.mean(axis=0)
    _, s, Vt = np.linalg.svd(C, full_matrices=False)
    n = min(n_components, Vt.shape[0])
    total = float(np.sum(s ** 2)) or 1.0
    return C @ Vt[:n].T, (s[:n] ** 2) / total


def nearest(model, index, k=10, side="items"):
    """(indices, cosine similarities) of the k rows nearest to row ``index`` (not itself)."""
    E = _factors(model, side)
    if not 0 <= int(index) < E.shape[0]:
        raise ValueError(f"index {index} is out of range for {E.shape[0]} {side}.")
    norms = np.linalg.norm(E, axis=1)
    cos = (E @ E[index]) / np.maximum(norms * norms[index], 1e-300)
    cos[index] = -np.inf
    order = np.argsort(-cos, kind="stable")[:k]
    return order, cos[order]


def _tower_and_input(model, side):
    model._check_fitted()
    tower = getattr(model, f"{side[:-1]}_tower_", None)
    if tower is None:
        raise ValueError("this model holds no towers (it was loaded from fitted arrays); "
                         "refit it to look inside the towers.")
    return tower, getattr(model, f"{side[:-1]}_input_")


def tower_activations(model, index, side="items"):
    """[(layer name, activation vector)] of one entity through its tower: the input row's
    nonzero count, then each layer's output (the last is the embedding)."""
    tower, X = _tower_and_input(model, side)
    tu = model.theta_[:model.n_user_params_] if side == "users" else \
        model.theta_[model.n_user_params_:]
    if tower.kind == "identity":
        return [("embedding (table row)", tower.forward(tu, np.array([index]))[0])]
    row = X[[index]]
    out = []
    if tower.kind == "linear":
        return [("embedding (linear)", tower.forward(tu, row)[0])]
    cache = {}
    emb = tower.forward(tu, row, cache)
    for l, A in enumerate(cache["A"], start=1):
        out.append((f"hidden layer {l} ({tower.activation})", A[0]))
    out.append(("embedding (output layer)", emb[0]))
    return out


def score_from_features(model, features, ids_width=None):
    """Scores against every user of one item given by its feature vector alone (no id
    column): the item tower's input is ``[0 ... 0 | features]``."""
    tower, X = _tower_and_input(model, "items")
    if tower.kind == "identity":
        raise ValueError("an identity item tower has no features to score from.")
    f = np.asarray(features, dtype=np.float64).ravel()
    width = X.shape[1] - f.size if ids_width is None else int(ids_width)
    if width < 0:
        raise ValueError(f"{f.size} features for an input of {X.shape[1]} columns.")
    row = sp.csr_matrix(np.concatenate([np.zeros(width), f])[None, :])
    q = tower.forward(model.theta_[model.n_user_params_:], row)[0]
    return model.user_factors_ @ q
