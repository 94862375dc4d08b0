"""Serving a fitted one-class factor model, shared by the families that score a pair
(u, j) as ``p_u . q_j`` and learn from positives only (one-class MF and similarity learning
are two).

A family mixes :class:`FactorServing` into its estimator ahead of
:class:`~kmviz._base.IterativeEstimator` and, once fitted, holds ``user_factors_`` (m x k),
``item_factors_`` (n x k), the CSR of each user's training positives (``_seen_ptr``,
``_seen_idx``) and the ``threshold`` parameter. It gets the checks of the interactions it is
given, index checks, pair scores, top-k recommendations that leave out the training
positives (:mod:`kmviz.ranking`'s Numba kernel, never the users x items score matrix) and
the rankings a held-out evaluation measures (:meth:`FactorServing._held_out_rankings`). The
metrics themselves, and ``score_items``' shape, stay the family's own.
"""

from __future__ import annotations

import numpy as np

from .exceptions import EmptyDataError


class FactorServing:
    """Scores and top-k rankings of a fitted ``p_u . q_j`` model (see the module)."""

    # ------------------------------------------------------------------ input checks
    @staticmethod
    def _check_interactions(ratings, what="interactions"):
        for attr in ("users", "items", "values", "n_users", "n_items"):
            if not hasattr(ratings, attr):
                raise TypeError(f"{what} must be a kmviz.data.Ratings; got "
                                f"{type(ratings).__name__} (no {attr!r}).")

    @staticmethod
    def _positives(ratings, threshold):
        """(users, items) of the positives of ``ratings``: every entry, or those with a
        value >= ``threshold`` when it is set."""
        users = np.asarray(ratings.users, dtype=np.int64)
        items = np.asarray(ratings.items, dtype=np.int64)
        if threshold is not None:
            keep = np.asarray(ratings.values, dtype=np.float64) >= threshold
            users, items = users[keep], items[keep]
        return users, items

    def _indices(self, values, what="users"):
        """``values`` as int64 indices of the same shape, checked against the fitted
        ``what`` ("users" or "items")."""
        arr = np.asarray(values)
        n = self.user_factors_.shape[0] if what == "users" else self.item_factors_.shape[0]
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{what} must be integer indices; got dtype {arr.dtype}.")
        flat = arr.reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= n):
            bad = int(flat[(flat < 0) | (flat >= n)][0])
            raise ValueError(f"{what[:-1]} index {bad} is out of range; the model was fitted "
                             f"on {n} {what} (indices 0..{n - 1}).")
        return arr.astype(np.int64)

    # ------------------------------------------------------------------ prediction
    def predict(self, users, items) -> np.ndarray:
        """Scores ``p_u . q_j`` of (user, item) pairs, broadcast together (an array of the
        broadcast shape, 0-d for one pair)."""
        self._check_fitted()
        u, i = np.broadcast_arrays(self._indices(users, "users"),
                                   self._indices(items, "items"))
        return np.asarray(np.einsum("...k,...k->...", self.user_factors_[u],
                                    self.item_factors_[i]))

    def _top(self, users, k, drop=None, exclude_seen=True):
        """Top-k item indices of each of ``users`` (1-D), the training positives left out
        (but the pairs whose key ``user * n_items + item`` is in ``drop``)."""
        from . import ranking

        ptr = ex = None
        if exclude_seen:
            ptr, ex = ranking.exclusion(self._seen_ptr, self._seen_idx, users,
                                        self.item_factors_.shape[0], drop)
        return ranking.top_items(self.user_factors_[users], self.item_factors_, k, ptr, ex)[0]

    def recommend(self, users, k=10, exclude_seen=True) -> np.ndarray:
        """The top-k item indices per user, best first (ties: lower index first).

        Parameters
        ----------
        users : int or array of int
        k : int, default=10
        exclude_seen : bool, default=True
            Leave out each user's training positives.

        Returns
        -------
        ndarray of int64, (len(users), min(k, n_items)), or 1-D for one int user; -1 pads a
        row when fewer than k items are left.
        """
        self._check_fitted()
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive int; got {k!r}.")
        idx = self._indices(users, "users")
        out = self._top(idx.reshape(-1), k, exclude_seen=exclude_seen)
        return out[0] if idx.ndim == 0 else out

    # ------------------------------------------------------------------ evaluation
    def _held_out_rankings(self, ratings, k):
        """What ``evaluate`` measures on held-out interactions (same index space).

        Every entry of ``ratings`` (those >= ``threshold`` when it is set) is a held-out
        positive. Returns ``(users, items, eval_users, top, relevant)``: the positives
        sorted by (user, item); the users with at least one; their top-``k`` items, ranked
        leaving out each user's TRAINING positives except the pairs evaluated (so the
        training set itself measures the fit); and each such user's set of held-out items.
        """
        self._check_fitted()
        self._check_interactions(ratings, "ratings")
        m, n = self.user_factors_.shape[0], self.item_factors_.shape[0]
        if (int(ratings.n_users), int(ratings.n_items)) != (m, n):
            raise ValueError(f"ratings have shape ({ratings.n_users}, {ratings.n_items}) but "
                             f"the model was fitted on ({m}, {n}).")
        users, items = self._positives(ratings, self.threshold)
        if users.size == 0:
            raise EmptyDataError("the ratings to evaluate hold no positives",
                                 expected="at least one held-out positive")
        order = np.lexsort((items, users))
        users, items = users[order], items[order]
        eval_users, start = np.unique(users, return_index=True)
        top = self._top(eval_users, k, drop=users * n + items)
        bounds = np.append(start, users.size)
        relevant = [set(items[bounds[r]:bounds[r + 1]].tolist())
                    for r in range(eval_users.size)]
        return users, items, eval_users, top, relevant
