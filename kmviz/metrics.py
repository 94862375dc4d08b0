"""Accuracy and ranking metrics, each defined exactly in its docstring.

Rating prediction
    :func:`rmse`, and the Kolmogorov-model paper's normalized RMSE in the two forms of its
    Section V-B: :func:`nrmse_probability` (RMSE of probabilities p = r / r_max, used there for
    KM and NNM) and :func:`nrmse_ratings` (RMSE / (r_max - r_min), used there for MF and SVD++).

One-class / top-k recommendation
    :func:`rank_items` turns a score matrix into per-user ranked lists, leaving out each user's
    training positives. :func:`precision_at_k`, :func:`recall_at_k`, :func:`ndcg_at_k` and
    :func:`map_at_k` score such lists against the held-out positives; :func:`ranking_metrics`
    does both steps for several k at once.

Conventions shared by the ranking metrics
    * ``recommended[u]`` is user u's ranked list, best first; only its first k entries count.
      A list shorter than k (a user with fewer than k candidate items) is padded with misses;
      the integer -1 marks such padding. An item may appear at most once in a list.
    * ``relevant[u]`` is the set of user u's held-out positives.
    * Users with no held-out positive are left out of the average (their recall, nDCG and AP
      would be 0/0). With ``per_user=True`` they get NaN. If no user has a held-out positive
      the metric is undefined and a ``ValueError`` is raised.
    * Relevance is binary: an item is a hit (gain 1) or not (gain 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = [
    "rmse",
    "nrmse_probability",
    "nrmse_ratings",
    "rank_items",
    "precision_at_k",
    "recall_at_k",
    "ndcg_at_k",
    "map_at_k",
    "capped_precision_at_k",
    "ranking_metrics",
]

# Probabilities computed in floating point (a simplex-weighted sum of 0/1 values) can leave
# [0, 1] by a few ulps; that is rounding, not a wrong scale.
_PROBABILITY_SLACK = 1e-9


# --------------------------------------------------------------------------------------------
# rating prediction
# --------------------------------------------------------------------------------------------
def _paired(name_true, y_true, name_pred, y_pred):
    """Validate two equally shaped, non-empty, finite float arrays and return them flat."""
    try:
        a = np.asarray(y_true, dtype=np.float64)
        b = np.asarray(y_pred, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name_true} and {name_pred} must be numeric arrays.") from None
    if a.shape != b.shape:
        raise ValueError(
            f"{name_true} and {name_pred} must have the same shape; got {a.shape} and {b.shape}."
        )
    if a.size == 0:
        raise ValueError(f"{name_true} and {name_pred} are empty; need at least one value.")
    for name, arr in ((name_true, a), (name_pred, b)):
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(
                f"{name} holds {int(bad.sum())} NaN or infinite value(s); "
                "metrics need finite numbers."
            )
    return a.ravel(), b.ravel()


def rmse(y_true, y_pred) -> float:
    """Root-mean-square error.

    ``RMSE = sqrt( (1/n) * sum_i (y_true[i] - y_pred[i])**2 )`` over all n entries.

    Parameters
    ----------
    y_true, y_pred : array-like of float
        Observed and predicted values, same shape, at least one entry, all finite.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On a shape mismatch, empty input, or NaN / infinite values.
    """
    a, b = _paired("y_true", y_true, "y_pred", y_pred)
    return float(np.sqrt(np.mean((a - b) ** 2)))


def nrmse_probability(p_true, p_pred) -> float:
    """Normalized RMSE on probabilities, as the KM paper reports it for KM and NNM.

    The paper (Section V-B) maps each rating r to the probability ``p = r / r_max`` and
    reports the RMSE of the predicted probabilities::

        NRMSE = sqrt( (1/n) * sum_i (p_true[i] - p_pred[i])**2 )

    Both inputs must therefore already be probabilities in [0, 1].

    Parameters
    ----------
    p_true, p_pred : array-like of float
        Observed and predicted probabilities, same shape, in [0, 1].

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On a shape mismatch, empty input, NaN, or values outside [0, 1] (divide ratings by
        r_max first, and clip predictions that are not probabilities).

    See Also
    --------
    nrmse_ratings : the form used for rating-scale models.
    """
    a, b = _paired("p_true", p_true, "p_pred", p_pred)
    for name, arr in (("p_true", a), ("p_pred", b)):
        lo, hi = float(arr.min()), float(arr.max())
        if lo < -_PROBABILITY_SLACK or hi > 1.0 + _PROBABILITY_SLACK:
            raise ValueError(
                f"{name} must hold probabilities in [0, 1]; got values in [{lo:g}, {hi:g}]. "
                "Divide ratings by r_max first, or use nrmse_ratings for rating-scale values."
            )
    return float(np.sqrt(np.mean((a - b) ** 2)))


def nrmse_ratings(r_true, r_pred, r_min: float, r_max: float) -> float:
    """Normalized RMSE on the rating scale, as the KM paper reports it for MF and SVD++.

    ``NRMSE = RMSE(r_true, r_pred) / (r_max - r_min)``. Predictions are not clipped to the
    scale: an out-of-range prediction counts with its full error.

    Parameters
    ----------
    r_true, r_pred : array-like of float
        Observed and predicted ratings, same shape, at least one entry, all finite.
    r_min, r_max : float
        The rating scale, ``r_min < r_max`` (for MovieLens 1 and 5).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On a shape mismatch, empty input, NaN, or an empty scale.
    """
    a, b = _paired("r_true", r_true, "r_pred", r_pred)
    lo, hi = float(r_min), float(r_max)
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"the rating scale needs finite r_min < r_max; got [{lo:g}, {hi:g}].")
    return float(np.sqrt(np.mean((a - b) ** 2))) / (hi - lo)


# --------------------------------------------------------------------------------------------
# top-k ranking
# --------------------------------------------------------------------------------------------
def _row_sets(name, rows, n_rows=None) -> list[set]:
    """Per-user item sets from a sparse/dense 0-1 matrix or a sequence of collections."""
    if sp.issparse(rows):
        m = sp.csr_matrix(rows)
        m.eliminate_zeros()
        return [set(m.indices[m.indptr[u]:m.indptr[u + 1]].tolist()) for u in range(m.shape[0])]
    if isinstance(rows, np.ndarray) and rows.ndim == 2:
        # A 2-D array is an indicator matrix; lists of item ids must be given as lists.
        if rows.dtype.kind not in "biuf":
            raise ValueError(f"{name} as a 2-D array must be a 0/1 indicator matrix; "
                             f"got dtype {rows.dtype}.")
        return [set(np.flatnonzero(r).tolist()) for r in rows]
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise ValueError(
            f"{name} must be a sequence with one collection of items per user, a boolean "
            f"matrix or a scipy.sparse matrix; got {type(rows).__name__}."
        )
    out = []
    for u, r in enumerate(rows):
        if r is None:
            out.append(set())
            continue
        if isinstance(r, (str, bytes)) or not isinstance(r, Iterable):
            raise ValueError(
                f"{name}[{u}] must be a collection of item ids; got {type(r).__name__}."
            )
        out.append(set(r))
    return out


def _ranked_lists(recommended, k) -> list[list]:
    """Validate per-user ranked lists and cut each to its first k entries."""
    if isinstance(recommended, np.ndarray):
        if recommended.ndim != 2:
            raise ValueError(
                "recommended must be a 2-D array (n_users, n_ranked) or a sequence of lists; "
                f"got an array of shape {recommended.shape}."
            )
        if recommended.dtype.kind == "f" and np.isnan(recommended).any():
            raise ValueError("recommended holds NaN; ranked lists must hold item ids.")
    elif isinstance(recommended, (str, bytes)) or not isinstance(recommended, Iterable):
        raise ValueError(
            "recommended must be a sequence with one ranked list per user; "
            f"got {type(recommended).__name__}."
        )
    out = []
    for u, r in enumerate(recommended):
        if isinstance(r, (str, bytes)) or not isinstance(r, Iterable):
            raise ValueError(f"recommended[{u}] must be a ranked list of item ids; got {r!r}.")
        top = list(r)[:k]
        if any(x != x for x in top):  # only NaN differs from itself
            raise ValueError(f"recommended[{u}] holds NaN; ranked lists must hold item ids.")
        top = [x for x in top if not _is_padding(x)]
        if len(set(top)) != len(top):
            raise ValueError(
                f"recommended[{u}] lists an item twice in its top {k}; a ranking holds each "
                "item at most once."
            )
        out.append(top)
    return out


def _is_padding(x) -> bool:
    """-1 fills the rows of users with fewer than k candidates (see :func:`rank_items`)."""
    return isinstance(x, (Integral, np.integer)) and not isinstance(x, bool) and x == -1


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (Integral, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive int; got {k!r}.")
    return int(k)


def _per_user(recommended, relevant, k, per_user, score) -> float | np.ndarray:
    """Apply ``score(top_k_list, relevant_set, k)`` per user; average over users with positives."""
    k = _check_k(k)
    lists = _ranked_lists(recommended, k)
    sets = _row_sets("relevant", relevant)
    if len(lists) != len(sets):
        raise ValueError(
            f"recommended has {len(lists)} users but relevant has {len(sets)}; "
            "give one ranked list and one set of held-out positives per user."
        )
    if not lists:
        raise ValueError("recommended and relevant are empty; need at least one user.")
    values = np.full(len(lists), np.nan)
    for u, (top, rel) in enumerate(zip(lists, sets)):
        if rel:
            values[u] = score(top, rel, k)
    if per_user:
        return values
    if np.isnan(values).all():
        raise ValueError(
            "no user has a held-out positive, so the metric is undefined; check the split."
        )
    return float(np.nanmean(values))


def precision_at_k(recommended, relevant, k: int, *, per_user: bool = False):
    """Precision at k: the share of the top k that are held-out positives.

    For a user u with ranked list L_u and held-out positives R_u::

        P@k(u) = |L_u[:k] ∩ R_u| / k

    The denominator is always k, also when |R_u| < k or when L_u is shorter than k, so P@k
    of a perfect ranking is min(1, |R_u| / k). The reported value is the mean of P@k(u) over
    users with |R_u| >= 1.

    Parameters
    ----------
    recommended : sequence of sequences, or 2-D int array
        ``recommended[u]`` is user u's ranked item list, best first (see :func:`rank_items`).
    relevant : sequence of collections, 2-D array, or scipy.sparse matrix
        ``relevant[u]`` holds user u's held-out positives. A 2-D array or sparse matrix is
        read as an indicator matrix (n_users, n_items): the nonzeros of row u.
    k : int
        Cut-off, at least 1.
    per_user : bool, default=False
        Return the per-user values (NaN for users without held-out positives) instead of
        their mean.

    Returns
    -------
    float or ndarray of shape (n_users,)

    Raises
    ------
    ValueError
        If k < 1, the two inputs have different numbers of users, there are no users, a list
        repeats an item or holds NaN, or no user has a held-out positive.
    """
    return _per_user(recommended, relevant, k, per_user,
                     lambda top, rel, k: sum(x in rel for x in top) / k)


def recall_at_k(recommended, relevant, k: int, *, per_user: bool = False):
    """Recall at k: the share of a user's held-out positives found in the top k.

    ``R@k(u) = |L_u[:k] ∩ R_u| / |R_u|``. The denominator is |R_u|, not min(k, |R_u|), so a
    user with more than k positives cannot reach recall 1. The reported value is the mean
    over users with |R_u| >= 1. Parameters, returns and errors as in :func:`precision_at_k`.
    """
    return _per_user(recommended, relevant, k, per_user,
                     lambda top, rel, k: sum(x in rel for x in top) / len(rel))


def ndcg_at_k(recommended, relevant, k: int, *, per_user: bool = False):
    """Normalized discounted cumulative gain at k, with binary gains.

    With rel_r = 1 if the item at rank r (1-based) is a held-out positive, else 0::

        DCG@k(u)  = sum_{r=1..k} rel_r / log2(r + 1)
        IDCG@k(u) = sum_{r=1..min(k, |R_u|)} 1 / log2(r + 1)
        nDCG@k(u) = DCG@k(u) / IDCG@k(u)

    IDCG is the DCG of a ranking that puts all positives first, so nDCG lies in [0, 1] and
    equals 1 exactly when the top min(k, |R_u|) are all positives. The log base cancels in
    the ratio (the OCMF paper writes log(r + 1)). nDCG@1 equals P@1. The reported value is
    the mean over users with |R_u| >= 1. Parameters, returns and errors as in
    :func:`precision_at_k`.
    """
    def score(top, rel, k):
        dcg = sum(1.0 / math.log2(r + 2) for r, x in enumerate(top) if x in rel)
        idcg = sum(1.0 / math.log2(r + 2) for r in range(min(k, len(rel))))
        return dcg / idcg

    return _per_user(recommended, relevant, k, per_user, score)


def map_at_k(recommended, relevant, k: int, *, per_user: bool = False):
    """Mean average precision at k.

    Average precision of user u, with rel_r and P@r as above::

        AP@k(u) = (1 / min(k, |R_u|)) * sum_{r=1..k} rel_r * P@r(u)

    that is, the precision at each rank where a positive is found, summed and divided by the
    most hits the top k can hold. AP@k is 1 exactly when the top min(k, |R_u|) are all
    positives. MAP@k is the mean of AP@k(u) over users with |R_u| >= 1.

    Note that the extreme-similarity paper's "MAP@5" is a different quantity, the mean of
    P@K over K = 1..5; compute it as the mean of :func:`precision_at_k` over those K.
    Parameters, returns and errors as in :func:`precision_at_k`.
    """
    def score(top, rel, k):
        hits, total = 0, 0.0
        for r, x in enumerate(top, start=1):
            if x in rel:
                hits += 1
                total += hits / r
        return total / min(k, len(rel))

    return _per_user(recommended, relevant, k, per_user, score)


def capped_precision_at_k(recommended, relevant, k: int, *, per_user: bool = False):
    """Precision at k as the ``implicit`` library computes it (its ``precision``).

    ``implicit.evaluation.ranking_metrics_at_k`` divides by min(k, |R_u|) instead of k and
    pools the users before dividing::

        capped P@k = sum_u |L_u[:k] ∩ R_u| / sum_u min(k, |R_u|)

    over users with |R_u| >= 1. A perfect ranking scores 1 even for users with fewer than k
    held-out positives, and the value can rise with k (implicit issue #713), so it is NOT
    comparable with :func:`precision_at_k` (LightFM's and the OCMF paper's convention, the
    one kmviz reports as "p@k"); it is here to line numbers up with implicit's.

    With ``per_user=True`` the per-user ratios ``|L_u[:k] ∩ R_u| / min(k, |R_u|)`` are
    returned (NaN for users without held-out positives); their mean is not the pooled value.
    Parameters, returns and errors as in :func:`precision_at_k`.
    """
    hits = _per_user(recommended, relevant, k, True,
                     lambda top, rel, k: float(sum(x in rel for x in top)))
    caps = _per_user(recommended, relevant, k, True, lambda top, rel, k: float(min(k, len(rel))))
    if per_user:
        return hits / caps
    if np.isnan(caps).all():
        raise ValueError(
            "no user has a held-out positive, so the metric is undefined; check the split."
        )
    ok = ~np.isnan(caps)
    return float(hits[ok].sum() / caps[ok].sum())


def rank_items(scores, k: int, *, exclude=None) -> np.ndarray:
    """Per-user top-k item indices from a score matrix, leaving out excluded items.

    Parameters
    ----------
    scores : array-like of float, shape (n_users, n_items)
        Predicted preference; higher is better.
    k : int
        How many items to return per user, at least 1.
    exclude : 2-D array, scipy.sparse matrix, or sequence of collections, optional
        Items never to recommend to each user, normally the training positives: the
        nonzeros of row u of an indicator matrix, or the item indices in ``exclude[u]``.

    Returns
    -------
    ndarray of int64, shape (n_users, min(k, n_items))
        ``out[u]`` lists item indices best first. Ties go to the lower item index. Where a
        user has fewer than k candidate items the row is padded with -1, which never
        matches a positive and so counts as a miss.

    Raises
    ------
    ValueError
        If scores is not a non-empty 2-D finite array, k < 1, or exclude does not match the
        shape of scores.
    """
    k = _check_k(k)
    if sp.issparse(scores):
        scores = scores.toarray()
    try:
        # A copy, because excluded entries are overwritten with -inf below.
        s = np.array(scores, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise ValueError("scores must be a numeric 2-D array (n_users, n_items).") from None
    if s.ndim != 2 or s.size == 0:
        raise ValueError(
            f"scores must be a non-empty 2-D array (n_users, n_items); got shape {s.shape}."
        )
    bad = ~np.isfinite(s)
    if bad.any():
        raise ValueError(f"scores holds {int(bad.sum())} NaN or infinite value(s).")
    n_users, n_items = s.shape
    if exclude is not None:
        if sp.issparse(exclude) or isinstance(exclude, np.ndarray):
            if exclude.shape != s.shape:
                raise ValueError(
                    f"exclude has shape {exclude.shape} but scores has shape {s.shape}."
                )
        sets = _row_sets("exclude", exclude)
        if len(sets) != n_users:
            raise ValueError(f"exclude has {len(sets)} users but scores has {n_users}.")
        for u, items in enumerate(sets):
            if items:
                idx = np.fromiter(items, dtype=np.int64)
                outside = idx[(idx < 0) | (idx >= n_items)]
                if outside.size:
                    raise ValueError(
                        f"exclude[{u}] holds item index {int(outside[0])} outside "
                        f"0..{n_items - 1}."
                    )
                s[u, idx] = -np.inf
    k_eff = min(k, n_items)
    # A stable sort of -score keeps the lower index first among ties, so rankings are
    # reproducible across platforms.
    order = np.argsort(-s, axis=1, kind="stable")[:, :k_eff]
    out = order.astype(np.int64)
    out[np.take_along_axis(s, order, axis=1) == -np.inf] = -1
    return out


def ranking_metrics(scores, relevant, ks: Sequence[int] = (1, 3, 5), *, exclude=None) -> dict:
    """Precision, recall, nDCG and MAP at several cut-offs, from a score matrix.

    Ranks with :func:`rank_items` (``exclude`` removes the training positives) once, at the
    largest k, and scores the prefixes.

    Returns
    -------
    dict
        Flat keys ``"precision@k"``, ``"recall@k"``, ``"ndcg@k"``, ``"map@k"`` for each k,
        plus ``"n_users_evaluated"`` (users with at least one held-out positive).
    """
    ks = [_check_k(k) for k in ks]
    if not ks:
        raise ValueError("ks is empty; give at least one cut-off.")
    ranked = rank_items(scores, max(ks), exclude=exclude)
    sets = _row_sets("relevant", relevant)
    out = {}
    for k in ks:
        out[f"precision@{k}"] = precision_at_k(ranked, sets, k)
        out[f"recall@{k}"] = recall_at_k(ranked, sets, k)
        out[f"ndcg@{k}"] = ndcg_at_k(ranked, sets, k)
        out[f"map@{k}"] = map_at_k(ranked, sets, k)
    out["n_users_evaluated"] = sum(1 for r in sets if r)
    return out
