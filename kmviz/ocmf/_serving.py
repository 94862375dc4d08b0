"""Using a fitted one-class MF model: scores, top-k recommendations, the split of a score
over side features (:meth:`explain`) and ranking metrics (:meth:`evaluate`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import ranking
from ..exceptions import EmptyDataError
from .features import SideMatrix

#: The cut-offs ``evaluate`` reports.
EVAL_KS = (1, 3, 5)


@dataclass
class Explanation:
    """A score split into side-feature terms (:meth:`OneClassMF.explain`).

    ``score = sum(user_terms.contribution) = sum(item_terms.contribution)``: the user split is
    ``s_ij = sum_f x_if (W h_j)_f`` over the columns of the user's row of X (its identity
    column, shown as one "identity" row, and its features), the item split the same over
    the item's row of Z. ``rule`` says how an entity without data was embedded.
    """

    user: int
    item: int
    score: float
    user_terms: pd.DataFrame
    item_terms: pd.DataFrame
    user_rule: str
    item_rule: str




class ServingMixin:
    """Scores, rankings, explanations and metrics of a fitted :class:`~kmviz.ocmf.OneClassMF`."""

    # ------------------------------------------------------------------ prediction
    def _user_indices(self, users, what="users"):
        arr = np.asarray(users)
        scalar = arr.ndim == 0
        arr = arr.reshape(-1)
        n = self.user_factors_.shape[0] if what == "users" else self.item_factors_.shape[0]
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{what} must be integer indices; got dtype {arr.dtype}.")
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            bad = int(arr[(arr < 0) | (arr >= n)][0])
            raise ValueError(f"{what[:-1]} index {bad} is out of range; the model was fitted "
                             f"on {n} {what} (indices 0..{n - 1}).")
        return arr.astype(np.int64), scalar

    def score_items(self, users) -> np.ndarray:
        """Scores ``s_ij = b_i^T h_j`` of every item for the given users.

        Returns an array (len(users), n_items), one row per user (a 1-D array for a single
        int). Training positives are not masked (see :meth:`recommend`).
        """
        self._check_fitted()
        idx, scalar = self._user_indices(users)
        out = self.user_factors_[idx] @ self.item_factors_.T
        return out[0] if scalar else out

    def predict(self, users, items) -> np.ndarray:
        """Scores of (user, item) pairs, broadcast together."""
        self._check_fitted()
        u, _ = self._user_indices(users)
        i, _ = self._user_indices(items, "items")
        shape = np.broadcast_shapes(np.shape(users), np.shape(items))
        u, i = np.broadcast_arrays(u.reshape(np.shape(users)), i.reshape(np.shape(items)))
        return np.einsum("nk,nk->n", self.user_factors_[u.ravel()],
                         self.item_factors_[i.ravel()]).reshape(shape)

    def _exclusion(self, users, drop=None):
        """CSR (over ``users``) of the training positives, minus the pairs in ``drop``."""
        return ranking.exclusion(self._seen_ptr, self._seen_idx, users,
                                 self.item_factors_.shape[0], drop)

    def _top_k(self, users, k, excl_ptr, excl_idx):
        """Top-k items per user of ``users`` (Numba, no n_users x n_items matrix)."""
        return ranking.top_items(self.user_factors_[users], self.item_factors_, k, excl_ptr,
                                 excl_idx)

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
        idx, scalar = self._user_indices(users)
        if exclude_seen:
            ptr, ex = self._exclusion(idx)
        else:
            ptr, ex = np.zeros(idx.size + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
        out, _ = self._top_k(idx, k, ptr, ex)
        return out[0] if scalar else out

    # ------------------------------------------------------------------ explanation
    def explain(self, user, item) -> Explanation:
        """Split ``s_ij`` over the user's and the item's side-feature columns.

        User side: ``s_ij = sum_f x_if (W h_j)_f`` over the nonzero columns f of x_i (the
        identity column reported as "identity"); item side: ``s_ij = sum_g z_jg (W_2 b_i)_g``.
        Each table has columns ``feature``, ``value`` (x_if), ``contribution``, sorted by
        |contribution|; the contributions sum to the score. A user (item) embedded by the
        mean rule (no positives, no features) has one row "mean of known users (items)".
        """
        self._check_fitted()
        u, _ = self._user_indices(np.int64(user) if isinstance(user, (int, np.integer))
                                  else user)
        i, _ = self._user_indices(np.int64(item) if isinstance(item, (int, np.integer))
                                  else item, "items")
        if u.size != 1 or i.size != 1:
            raise ValueError("explain takes one user and one item index.")
        u, i = int(u[0]), int(i[0])
        b, h = self.user_factors_[u], self.item_factors_[i]
        score = float(b @ h)
        ut, urule = _terms(self.user_side_, self.W_user_, u, h, self._user_mean_rule[u],
                           self._user_mean, "users", self.known_users_[u])
        it, irule = _terms(self.item_side_, self.W_item_, i, b, self._item_mean_rule[i],
                           self._item_mean, "items", self.known_items_[i])
        return Explanation(u, i, score, ut, it, urule, irule)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, ratings) -> dict:
        """Ranking metrics on held-out interactions (same index space), stated in
        :mod:`kmviz.metrics`.

        Every entry of ``ratings`` (those >= ``threshold`` when it is set) is a held-out
        positive. For each user with at least one, the items are ranked by score leaving
        out the user's TRAINING positives (except the pairs being evaluated, so evaluating
        the training set itself measures the fit); the metrics are averaged over those users:
        ``precision_at_{1,3,5}`` (hits / k, LightFM's convention), ``ndcg_at_{1,3,5}``,
        ``recall_at_5`` and ``capped_precision_at_5`` (hits / min(k, |positives|) pooled over
        users: implicit's "precision").
        """
        from .. import metrics

        self._check_fitted()
        self._check_interactions(ratings, "ratings")
        n_users, n_items = self.user_factors_.shape[0], self.item_factors_.shape[0]
        if (int(ratings.n_users), int(ratings.n_items)) != (n_users, n_items):
            raise ValueError(f"ratings have shape ({ratings.n_users}, {ratings.n_items}) but "
                             f"the model was fitted on ({n_users}, {n_items}).")
        thr = self.threshold
        users, items = self._positives(ratings, thr, "ratings")
        if users.size == 0:
            raise EmptyDataError("the ratings to evaluate hold no positives",
                                 expected="at least one held-out positive")
        order = np.lexsort((items, users))
        users, items = users[order], items[order]
        eval_users, start = np.unique(users, return_index=True)
        keys = users * n_items + items
        ptr, ex = self._exclusion(eval_users, drop=keys)
        top, _ = self._top_k(eval_users, max(EVAL_KS), ptr, ex)
        bounds = np.append(start, users.size)
        relevant = [set(items[bounds[r]:bounds[r + 1]].tolist())
                    for r in range(eval_users.size)]
        out = {}
        for k in EVAL_KS:
            out[f"precision_at_{k}"] = metrics.precision_at_k(top, relevant, k)
        for k in EVAL_KS:
            out[f"ndcg_at_{k}"] = metrics.ndcg_at_k(top, relevant, k)
        out["recall_at_5"] = metrics.recall_at_k(top, relevant, 5)
        out["capped_precision_at_5"] = metrics.capped_precision_at_k(top, relevant, 5)
        return out

# ----------------------------------------------------------------------------- helpers
def _embed(side: SideMatrix, W, known):
    """``E = X W`` with the mean rule for rows without data: (E, mean-rule mask, mean)."""
    E = side.apply(W)
    empty = side.empty_rows()
    ref = known & ~empty
    mean = E[ref].mean(axis=0) if ref.any() else np.zeros(E.shape[1])
    E[empty] = mean
    return np.ascontiguousarray(E), empty, mean


def _terms(side: SideMatrix, W, row, other, mean_rule, mean, plural, known):
    """Per-column contributions ``x_rf (W other)_f`` of one row, as a DataFrame."""
    if mean_rule:
        return (pd.DataFrame({"feature": [f"mean of known {plural}"], "value": [1.0],
                              "contribution": [float(mean @ other)]}),
                f"no positives and no features: the mean embedding of the known {plural}")
    cols, vals = side.row_terms(row)
    proj = W[cols] @ other if cols.size else np.zeros(0)
    contrib = vals * proj
    names = [side.column_name(int(c)) for c in cols]
    df = pd.DataFrame({"feature": names, "value": vals, "contribution": contrib})
    df = df.reindex(df["contribution"].abs().sort_values(ascending=False, kind="stable")
                    .index).reset_index(drop=True)
    has_id = side.n_identity and np.any(side.identity_rows == row)
    if has_id and not known:
        rule = "identity fitted without positives" + (" and features" if side.n_features
                                                      else "")
    elif has_id:
        rule = "identity and features" if side.n_features else "identity"
    else:
        rule = "features only" + ("" if known else " (no positives)")
    return df, rule
