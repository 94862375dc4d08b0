"""Using a fitted one-class MF model: scores, top-k recommendations, the split of a score
over side features (:meth:`explain`) and ranking metrics (:meth:`evaluate`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..serving import FactorServing
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


class ServingMixin(FactorServing):
    """Scores, rankings, explanations and metrics of a fitted :class:`~kmviz.ocmf.OneClassMF`
    (index checks, ``predict``, ``recommend`` and the held-out rankings are the one-class
    families' shared :class:`~kmviz.serving.FactorServing`)."""

    # ------------------------------------------------------------------ prediction
    def score_items(self, users) -> np.ndarray:
        """Scores ``s_ij = b_i^T h_j`` of every item for the given users.

        Returns an array (len(users), n_items), one row per user (a 1-D array for a single
        int). Training positives are not masked (see :meth:`recommend`).
        """
        self._check_fitted()
        idx = self._indices(users)
        out = self.user_factors_[idx.reshape(-1)] @ self.item_factors_.T
        return out[0] if idx.ndim == 0 else out

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
        u = self._indices(np.int64(user) if isinstance(user, (int, np.integer))
                          else user).reshape(-1)
        i = self._indices(np.int64(item) if isinstance(item, (int, np.integer))
                          else item, "items").reshape(-1)
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

        _, _, _, top, relevant = self._held_out_rankings(ratings, max(EVAL_KS))
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
