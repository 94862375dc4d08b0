"""What a fitted similarity model says, as plain data for the Embeddings page.

- :func:`embedding_pca`: 2-D coordinates of the user or item embeddings (PCA);
- :func:`nearest`: an item's (user's) nearest neighbours by cosine of embeddings;
- :func:`tower_activations`: what each layer of a tower does to one entity;
- :func:`score_from_features`: the scores of an item described by features alone (a cold
  item), against every user; :func:`cold_item_scores` for an item of the data;
- :func:`side_labels`: a label per user or item (genre, decade, age group, activity) to
  colour the 2-D embeddings by.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
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


# ----------------------------------------------------------------------------- page data
#: Age groups of the MovieLens user tables (the 100K/1M bands).
AGE_EDGES = (18, 25, 35, 45, 56)
ACTIVITY = "positives in training"


def _flag_columns(df):
    return [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])
            and set(pd.unique(df[c].dropna())) <= {0, 1, 0.0, 1.0}]


def colour_options(ratings, side="items") -> list:
    """What :func:`side_labels` can colour a side by: ``"genre"`` (0/1 flag columns, as
    MovieLens genres), the other columns of the side's feature table, and the activity."""
    df = getattr(ratings, f"{side[:-1]}_features", None)
    out = []
    if df is not None:
        flags = _flag_columns(df)
        if len(flags) > 1:
            out.append("genre")
        out += [str(c) for c in df.columns if c not in flags]
    return out + [ACTIVITY]


def side_labels(ratings, side, option, counts=None) -> np.ndarray:
    """One label per user (item) for colouring: the first flagged genre (or "none"), the
    decade of a year, the age group of an age, a category as it is, or the quartile of
    training positives (``counts``, one per row) for :data:`ACTIVITY`."""
    n = ratings.n_users if side == "users" else ratings.n_items
    if option == ACTIVITY:
        c = np.zeros(n) if counts is None else np.asarray(counts, dtype=np.float64)
        edges = np.unique(np.quantile(c, [0.25, 0.5, 0.75]))
        band = np.searchsorted(edges, c, side="right")
        names = {}
        for b in np.unique(band):  # each band's own range: no count is in two labels
            lo, hi = c[band == b].min(), c[band == b].max()
            names[b] = (f"{lo:.0f} positives" if lo == hi
                        else f"{lo:.0f}-{hi:.0f} positives")
        return np.array([names[b] for b in band], dtype=object)
    df = getattr(ratings, f"{side[:-1]}_features", None)
    if df is None:
        raise ValueError(f"these {side} have no side features; colour by {ACTIVITY!r}.")
    if option == "genre":
        flags = _flag_columns(df)
        F = df[flags].fillna(0).to_numpy(dtype=np.float64)
        first = np.argmax(F > 0, axis=1)
        return np.where(F.any(axis=1), np.array(flags, dtype=object)[first], "none")
    if option not in map(str, df.columns):
        raise ValueError(f"{option!r} is not a column of the {side[:-1]} features; choose one "
                         f"of {colour_options(ratings, side)}.")
    col = df[[c for c in df.columns if str(c) == option][0]]
    if pd.api.types.is_numeric_dtype(col):
        x = col.to_numpy(dtype=np.float64)
        ok = ~np.isnan(x)
        if "age" in option.lower():
            edges = np.asarray(AGE_EDGES, dtype=np.float64)
            names = ["under 18"] + [f"{a:g}-{b - 1:g}" for a, b in zip(edges[:-1], edges[1:])]
            names.append(f"{edges[-1]:g}+")
            lab = np.array([names[b] for b in np.searchsorted(edges, np.nan_to_num(x),
                                                                side="right")], dtype=object)
        elif ok.any() and np.all((x[ok] >= 1800) & (x[ok] <= 2100)):   # a year: decades
            lab = np.array([f"{np.floor(v / 10) * 10:.0f}s" for v in np.nan_to_num(x)],
                           dtype=object)
        elif ok.any() and np.unique(x[ok]).size <= 12:
            lab = np.array([f"{v:g}" for v in x], dtype=object)
        else:                                                          # quartiles
            q = np.quantile(x[ok], [0.25, 0.5, 0.75]) if ok.any() else np.zeros(3)
            names = ["1st quartile", "2nd quartile", "3rd quartile", "4th quartile"]
            lab = np.array([names[b] for b in np.searchsorted(q, np.nan_to_num(x))],
                           dtype=object)
        lab[~ok] = "unknown"
        return lab
    return col.astype("object").where(col.notna(), "unknown").astype(str).to_numpy()


def item_ids_width(model) -> int:
    """How many one-hot id columns lead the item tower's input (0 for an identity tower:
    it has no input)."""
    _, X = _tower_and_input(model, "items")
    if X is None:
        return 0
    ids = model.item_ids
    n = model.item_factors_.shape[0]
    if ids == "all":
        return n
    if ids == "none":
        return 0
    return int(np.unique(model._seen_idx).size)


def cold_scoring_problem(model) -> str | None:
    """Why the items of ``model`` cannot be scored from their features alone (None: they
    can)."""
    tower, X = _tower_and_input(model, "items")
    if tower.kind == "identity":
        return ("the item tower is an identity (an embedding table): an item has no "
                "features to be scored from; train with a linear or MLP item tower and item "
                "side features.")
    if X.shape[1] == item_ids_width(model):
        return ("the item tower has no feature columns; train with side_features 'item' or "
                "'both' (or give item_features to fit).")
    return None


def cold_item_scores(model, item) -> tuple[np.ndarray, np.ndarray]:
    """(cold, warm) scores of item ``item`` against every user: ``cold`` from its features
    alone (its id column dropped, as if the item were new), ``warm`` the fitted ones."""
    problem = cold_scoring_problem(model)
    if problem is not None:
        raise ValueError(problem)
    _, X = _tower_and_input(model, "items")
    width = item_ids_width(model)
    row = X[[int(item)]].toarray().ravel() if sp.issparse(X) else np.asarray(X[item]).ravel()
    cold = score_from_features(model, row[width:], ids_width=width)
    return cold, model.user_factors_ @ model.item_factors_[int(item)]


def neighbours_table(model, index, labels, k=10, side="items") -> pd.DataFrame:
    """The k nearest rows of ``index`` by cosine of embeddings, with their labels."""
    idx, cos = nearest(model, index, k=k, side=side)
    return pd.DataFrame({"rank": np.arange(1, idx.size + 1), "index": idx,
                         "name": [str(labels[i]) for i in idx], "cosine": cos})


def layer_table(activations) -> pd.DataFrame:
    """Per layer of :func:`tower_activations`: width, norm, share of units that are
    active (above 0), mean and spread."""
    return pd.DataFrame([{"layer": name, "width": a.size, "norm": float(np.linalg.norm(a)),
                          "active units": float(np.mean(a > 0)),
                          "mean": float(a.mean()), "std": float(a.std())}
                         for name, a in activations])


def positives_per(model, side="items") -> np.ndarray:
    """Training positives per user (item) of a fitted model."""
    model._check_fitted()
    if side == "users":
        return np.diff(model._seen_ptr)
    return np.bincount(model._seen_idx, minlength=model.item_factors_.shape[0])


def rank_agreement(a, b) -> float:
    """Spearman correlation of two score vectors (ranks, ties by order)."""
    ra = np.argsort(np.argsort(a, kind="stable"), kind="stable").astype(np.float64)
    rb = np.argsort(np.argsort(b, kind="stable"), kind="stable").astype(np.float64)
    return float(np.corrcoef(ra, rb)[0, 1]) if ra.size > 1 else float("nan")
