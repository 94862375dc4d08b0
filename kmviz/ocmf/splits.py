"""Splits and baselines for one-class evaluation: held-out positives, cold users and items,
user groups by training activity, and the popularity ranking.

All parts keep the full index space, so a model trained on ``train`` scores ``test`` users
and items directly, and users or items without training positives stay addressable (the
cold-start cases of :class:`kmviz.ocmf.OneClassMF`).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_number, check_random_state
from ..exceptions import EmptyDataError


def _entity_split(ratings, fraction, random_state, side):
    check_number(f"cold_{side}_split", "fraction", fraction, low=0.0, high=1.0,
                 closed="neither")
    rng = check_random_state(random_state)
    idx = np.asarray(ratings.users if side == "user" else ratings.items)
    present = np.unique(idx)
    n_cold = int(round(fraction * present.size))
    if n_cold == 0 or n_cold == present.size:
        raise EmptyDataError(f"fraction={fraction} of {present.size} {side}s leaves an empty "
                             "part", expected="a fraction that puts at least one on each side")
    cold = np.zeros(ratings.n_users if side == "user" else ratings.n_items, dtype=bool)
    cold[rng.choice(present, size=n_cold, replace=False)] = True
    test = cold[idx]
    name = ratings.name
    return (ratings.subset(~test, name=f"{name} (train, cold {side}s out)"),
            ratings.subset(test, name=f"{name} (cold {side}s)"), cold)


def cold_user_split(ratings, fraction=0.1, *, random_state=None):
    """Every entry of a random ``fraction`` of the users goes to test: ``(train, test,
    cold_mask)``; the test users have no training positives (only features can rank them)."""
    return _entity_split(ratings, fraction, random_state, "user")


def cold_item_split(ratings, fraction=0.1, *, random_state=None):
    """Every entry of a random ``fraction`` of the items goes to test: ``(train, test,
    cold_mask)``."""
    return _entity_split(ratings, fraction, random_state, "item")


def sparse_user_split(ratings, fraction=0.1, keep=5, *, random_state=None):
    """Make a random ``fraction`` of the users sparse: each keeps ``keep`` of its entries
    (chosen at random) in train and the rest go to test. Returns ``(train, test,
    sparse_mask)``.

    Only users with more than ``keep`` entries can be chosen. On MovieLens a 90/10 split of
    the positives leaves very few users with <= 5 training positives (7 with a test
    positive on ML-100K), so a metric over them moves by ~3 points per hit; this split
    gives about ``fraction`` of the users that many training positives, every one with
    test positives.
    """
    check_number("sparse_user_split", "fraction", fraction, low=0.0, high=1.0,
                 closed="neither")
    check_number("sparse_user_split", "keep", keep, kind=int, low=1)
    rng = check_random_state(random_state)
    users = np.asarray(ratings.users)
    counts = np.bincount(users, minlength=ratings.n_users)
    eligible = np.flatnonzero(counts > keep)
    n_sparse = int(round(fraction * eligible.size))
    if n_sparse == 0:
        raise EmptyDataError(f"fraction={fraction} of the {eligible.size} users with more "
                             f"than {keep} entries is none", expected="a larger fraction")
    sparse = np.zeros(ratings.n_users, dtype=bool)
    sparse[rng.choice(eligible, size=n_sparse, replace=False)] = True
    test = np.zeros(users.size, dtype=bool)
    for u in np.flatnonzero(sparse):
        rows = np.flatnonzero(users == u)
        test[rng.permutation(rows)[keep:]] = True
    name = ratings.name
    return (ratings.subset(~test, name=f"{name} (train, sparse users)"),
            ratings.subset(test, name=f"{name} (sparse users' held-out entries)"), sparse)


def user_groups(train, *, sparse_max=5) -> dict:
    """Masks over users by their number of training positives: ``"cold"`` (0),
    ``"sparse"`` (1..sparse_max), ``"regular"`` (more)."""
    counts = np.bincount(np.asarray(train.users), minlength=train.n_users)
    return {"cold": counts == 0, "sparse": (counts >= 1) & (counts <= sparse_max),
            "regular": counts > sparse_max}


def restrict_users(ratings, mask, *, name=None):
    """The entries of the users where ``mask`` is True (same index space)."""
    keep = np.asarray(mask, dtype=bool)[np.asarray(ratings.users)]
    return ratings.subset(keep, name=name or f"{ratings.name} (subset)")


def restrict_items(ratings, mask, *, name=None):
    """The entries of the items where ``mask`` is True (same index space)."""
    keep = np.asarray(mask, dtype=bool)[np.asarray(ratings.items)]
    return ratings.subset(keep, name=name or f"{ratings.name} (subset)")


def popularity_scores(train, n_users=None) -> np.ndarray:
    """The popularity baseline: every user scores item j by its number of training
    positives (ties by index). Returns (n_users, n_items)."""
    counts = np.bincount(np.asarray(train.items), minlength=train.n_items).astype(np.float64)
    m = train.n_users if n_users is None else int(n_users)
    return np.broadcast_to(counts, (m, train.n_items)).copy()
