"""``Ratings.from_arrays``: triplets with arbitrary ids validated into a
:class:`~kmviz.data.Ratings` (values, scale, ids, duplicates). :class:`Ratings` takes the
function as its classmethod; import it from :mod:`kmviz.data.ratings`."""

from __future__ import annotations

import numpy as np

from .._validation import check_option
from ..exceptions import DataValueError, DuplicateRatingsError, EmptyDataError
from ._ids import _align_features, _align_names, _count_distinct, _factorize, _id_array, _show
from ._scale import MAX_ABS_VALUE, _scale_tolerance, rating_scale

DUPLICATE_POLICIES = ("error", "mean", "first", "last")


def from_arrays(cls, users, items, values=None, *, r_min=None, r_max=None,
                duplicates="error", user_names=None, item_names=None,
                user_features=None, item_features=None, user_graph=None, item_graph=None,
                user_ids=None, item_ids=None, implicit=None, name="ratings", source="",
                line_numbers=None, min_users=2, min_items=2):
    """Validate triplets with arbitrary ids and build a Ratings.

    Parameters
    ----------
    users, items : array-like or pandas.Categorical, shape (n,)
        User and item ids of any hashable, sortable type (ints or strings). A
        ``Categorical`` (codes into distinct ids, as the loaders build for text ids) is
        used without expanding it.
    values : array-like of float, shape (n,), or None
        Ratings. None means one-class (0/1 interaction) data: every value is 1. Values
        of magnitude above :data:`MAX_ABS_VALUE` (1e12) are refused.
    r_min, r_max : float, optional
        The rating scale. Defaults to the observed min and max (``[0, 1]`` for one-class
        data). Values outside a given scale are rejected, except values within a
        rounding error of a bound (:data:`SCALE_TOLERANCE` relative, e.g. 1 + 2.2e-16 on
        [0, 1]), which are clipped to it (counted in ``info["clipped_to_scale"]``).
    duplicates : {"error", "mean", "first", "last"}, default="error"
        What to do when a (user, item) pair occurs more than once: refuse (the message
        gives the count and the first repeated pair), or keep the mean / first / last
        value. The number merged is stored in ``info["duplicates_merged"]``.
    user_names, item_names : mapping or sequence, optional
        Display names, either aligned with ``user_ids``/``item_ids`` or a mapping id->name.
    user_features, item_features : DataFrame, optional
        Side information indexed by the original ids (rows for unseen ids are dropped;
        ids without a row get NaN).
    user_ids, item_ids : sequence, optional
        The full id universe (so users/items without ratings keep an index). By default,
        the sorted distinct ids that occur.
    line_numbers : array-like of int, optional
        File line of each triplet, used in error messages.
    min_users, min_items : int, default=2
        Fewest distinct users/items accepted; a factorization needs at least two.

    Raises
    ------
    EmptyDataError, DataValueError, DuplicateRatingsError
    """
    check_option("Ratings.from_arrays", "duplicates", duplicates, DUPLICATE_POLICIES)
    users = _id_array(users)
    items = _id_array(items)
    n = users.shape[0] if users.ndim == 1 else -1
    if users.ndim != 1 or items.ndim != 1 or items.shape[0] != n:
        raise DataValueError(
            f"users and items must be 1-D arrays of equal length; got shapes "
            f"{users.shape} and {items.shape}")
    where = source or None
    if n == 0:
        raise EmptyDataError("no ratings found", path=where,
                             expected="at least one (user, item, value) row",
                             fix="check that the file is not empty and the columns are right")
    implicit = values is None if implicit is None else bool(implicit)
    if values is None:
        values = np.ones(n, dtype=np.float64)
    else:
        try:
            values = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataValueError("rating values are not numbers", path=where,
                                 expected="numeric values") from None
        if values.shape != (n,):
            raise DataValueError(f"values has shape {values.shape} but there are {n} "
                                 f"(user, item) pairs", path=where)
    lines = None if line_numbers is None else np.asarray(line_numbers)

    def line_of(k):
        return None if lines is None else int(lines[k])

    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DataValueError(
            f"rating value {_show(values[k])} is not a finite number "
            f"({int(bad.sum())} such values in all)", path=where, line=line_of(k),
            expected="finite numbers", fix="remove or fill the missing ratings")
    huge = np.abs(values) > MAX_ABS_VALUE
    if huge.any():
        k = int(np.flatnonzero(huge)[0])
        raise DataValueError(
            f"rating value {values[k]:g} is too large in magnitude "
            f"({int(huge.sum())} such values in all)", path=where, line=line_of(k),
            expected=f"values between {-MAX_ABS_VALUE:g} and {MAX_ABS_VALUE:g}",
            fix="check the value column and its units (a timestamp or an id column "
                "chosen as the rating?)")
    lo, hi = rating_scale(r_min, r_max, values.min(), values.max(), implicit, where)
    out = (values < lo) | (values > hi)
    n_clipped = 0
    if out.any():
        # a rounding error beyond a bound (1 + 2.2e-16 on [0, 1]) is clipped, not refused
        tol = _scale_tolerance(lo, hi)
        far = (values < lo - tol) | (values > hi + tol)
        if far.any():
            k = int(np.flatnonzero(far)[0])
            raise DataValueError(
                f"rating {values[k]:g} lies outside the declared scale [{lo:g}, {hi:g}] "
                f"({int(far.sum())} such values in all)", path=where, line=line_of(k),
                expected=f"values in [{lo:g}, {hi:g}]",
                fix="correct the values or declare a wider scale (r_min/r_max)")
        n_clipped = int(out.sum())
        values = np.clip(values, lo, hi)
    del out

    uid, u = _factorize(users, user_ids, "user", where)
    iid, i = _factorize(items, item_ids, "item", where)
    n_with = _count_distinct(u, len(uid))
    if n_with < min_users:
        raise EmptyDataError(f"only {n_with} distinct user(s) have ratings",
                             path=where, expected=f"at least {min_users} users",
                             fix="a factorization needs several users; check the user column")
    n_with = _count_distinct(i, len(iid))
    if n_with < min_items:
        raise EmptyDataError(f"only {n_with} distinct item(s) have ratings",
                             path=where, expected=f"at least {min_items} items",
                             fix="a factorization needs several items; check the item column")

    info = {"clipped_to_scale": n_clipped} if n_clipped else {}
    key = u.astype(np.int64) * len(iid) + i
    if key.shape[0] < 2 or bool(np.all(key[1:] > key[:-1])):
        # in (user, item) order already, no pair repeated (generated sets, sorted
        # files): no sort and no reordered copies; values copied, never frozen in
        # the caller's array
        del key
        values = np.array(values, dtype=np.float64)
    else:
        order = np.argsort(key, kind="stable")
        ks = key[order]
        del key
        dup = np.flatnonzero(ks[1:] == ks[:-1])
        if dup.size:
            n_dup = int(dup.size)
            first = int(order[dup[0] + 1])
            if duplicates == "error":
                raise DuplicateRatingsError(
                    f"{n_dup} repeated (user, item) pair(s), first user "
                    f"{_show(users[first])} / item {_show(items[first])}", path=where,
                    line=line_of(first),
                    expected="each (user, item) pair at most once",
                    fix="pass duplicates='mean', 'first' or 'last' to merge them")
            starts = np.concatenate([[0], np.flatnonzero(ks[1:] != ks[:-1]) + 1])
            if duplicates == "mean":
                sums = np.add.reduceat(values[order], starts)
                counts = np.diff(np.concatenate([starts, [len(ks)]]))
                keep_vals = sums / counts
                keep = order[starts]
            elif duplicates == "first":
                keep = order[starts]
                keep_vals = values[keep]
            else:  # last
                ends = np.concatenate([starts[1:], [len(ks)]]) - 1
                keep = order[ends]
                keep_vals = values[keep]
            u, i, values = u[keep], i[keep], keep_vals
            info["duplicates_merged"] = n_dup
            info["duplicate_policy"] = duplicates
        else:
            u, i, values = u[order], i[order], values[order]

    return cls(
        u, i, values, n_users=len(uid), n_items=len(iid), r_min=lo, r_max=hi,
        user_ids=uid, item_ids=iid,
        user_names=_align_names(user_names, uid), item_names=_align_names(item_names, iid),
        user_features=_align_features(user_features, uid),
        item_features=_align_features(item_features, iid),
        user_graph=user_graph, item_graph=item_graph, implicit=implicit, name=name,
        source=source, info=info,
    )
