"""The validated, immutable ratings container every model family consumes.

A :class:`Ratings` holds observed (user, item, value) triplets in a contiguous index space
(users 0..n_users-1, items 0..n_items-1), the original ids, the rating scale
[r_min, r_max], optional names and side information, and CSR/CSC views. Splits keep the
index space, so a model trained on ``train`` predicts ``test`` pairs directly.

The validation of raw triplets (:meth:`Ratings.from_arrays`) is ``_from_arrays.py``'s and
the rating scale's checks ``_scale.py``'s; their names are imported from here.
"""

from __future__ import annotations

import hashlib
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._validation import check_number, check_option, check_random_state
from ..exceptions import EmptyDataError
from ._from_arrays import DUPLICATE_POLICIES, from_arrays  # noqa: F401 - the first re-exported
from ._ids import _factorize  # noqa: F401 - re-exported: kmviz.data.ratings.<name> keeps working
from ._scale import (  # noqa: F401 - re-exported: kmviz.data.ratings.<name> keeps working
    MAX_ABS_VALUE, SCALE_TOLERANCE, _scale_tolerance, check_ratings_finite, rating_scale)

#: How a dataset can be cut into parts: random ratings, a share of each user's ratings, or
#: whole users / whole items held out (cold start).
SPLIT_KINDS = ("random", "user", "cold_users", "cold_items")
#: Entries hashed at a time by :meth:`Ratings.fingerprint` (bounds its temporary memory).
_HASH_BLOCK = 1 << 18


def index_dtype(n_users, n_items):
    """The dtype of a Ratings' user and item indices: int32 while both counts fit in it."""
    return np.int32 if max(int(n_users), int(n_items)) <= np.iinfo(np.int32).max \
        else np.int64


def _frozen(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _check_nouns(nouns) -> tuple[str, str]:
    """``(row noun, column noun)`` as two non-empty strings, else a clear ValueError."""
    try:
        row, column = (str(n).strip() for n in nouns)
    except (TypeError, ValueError):
        raise ValueError(f"nouns must be two words (row, column), such as ('user', 'item'); "
                         f"got {nouns!r}.") from None
    if not row or not column:
        raise ValueError(f"nouns must be two non-empty words (row, column); got {nouns!r}.")
    return row, column


class Ratings:
    """Observed entries of a user x item matrix, with ids, scale and side information.

    Build one with :meth:`from_arrays` or a loader in :mod:`kmviz.data`; the constructor is
    internal and assumes validated input.

    Attributes
    ----------
    users, items : ndarray of int32, shape (n_ratings,)
        Contiguous user and item indices (int32: 4 bytes a rating each, a third less
        memory per dataset and split than int64; int64 only past 2^31 - 1 users or items).
        Products such as ``users * n_items`` need ``astype(np.int64)`` first, and Numba
        kernels take them as int64 (cast at the call).
    values : ndarray of float64, shape (n_ratings,)
        Rating values (1.0 for one-class/implicit data).
    n_users, n_items, n_ratings : int
    r_min, r_max : float
        The rating scale. ``r_min == r_max`` never happens: one-class data uses [0, 1].
    user_ids, item_ids : ndarray
        Original ids; ``user_ids[k]`` is the id of user index ``k``.
    user_names, item_names : ndarray of str or None
        Display names (for example movie titles), aligned with indices.
    user_features, item_features : DataFrame or None
        Side information, one row per user/item index.
    user_graph, item_graph : scipy.sparse.csr_matrix or None
        Similarity graphs between users or items (square, aligned with indices).
    implicit : bool
        True for 0/1 interaction data (values are all 1; absent pairs are unknown).
    name, source : str
        A short label and where the data came from (path or catalogue name).
    info : dict
        Loader notes, for example ``{"duplicates_merged": 3}``.
    nouns : (str, str)
        What one row and one column are called in this dataset, singular ("user", "item"
        by default; "country", "year" for Gapminder; "tract", "target" for Boston): the
        app's charts and sentences use them. Set by the catalogue entry that loads it.
    """

    def __init__(self, users, items, values, *, n_users, n_items, r_min, r_max,
                 user_ids=None, item_ids=None, user_names=None, item_names=None,
                 user_features=None, item_features=None, user_graph=None, item_graph=None,
                 implicit=False, name="ratings", source="", info=None,
                 nouns=("user", "item")):
        index = index_dtype(n_users, n_items)
        self.users = _frozen(np.asarray(users, dtype=index))
        self.items = _frozen(np.asarray(items, dtype=index))
        self.values = _frozen(np.asarray(values, dtype=np.float64))
        self.n_users = int(n_users)
        self.n_items = int(n_items)
        self.r_min = float(r_min)
        self.r_max = float(r_max)
        self.user_ids = _frozen(np.arange(n_users) if user_ids is None else np.asarray(user_ids))
        self.item_ids = _frozen(np.arange(n_items) if item_ids is None else np.asarray(item_ids))
        self.user_names = None if user_names is None else _frozen(np.asarray(user_names, dtype=object))
        self.item_names = None if item_names is None else _frozen(np.asarray(item_names, dtype=object))
        self.user_features = user_features
        self.item_features = item_features
        self.user_graph = user_graph
        self.item_graph = item_graph
        self.implicit = bool(implicit)
        self.name = str(name)
        self.source = str(source)
        self.info = dict(info or {})
        self.nouns = _check_nouns(nouns)

    # ------------------------------------------------------------------ construction
    from_arrays = classmethod(from_arrays)  # validation of the triplets: _from_arrays.py

    def _replace_entries(self, users, items, values, **changes):
        """A Ratings with the same index space and metadata but other entries."""
        kw = dict(
            n_users=self.n_users, n_items=self.n_items, r_min=self.r_min, r_max=self.r_max,
            user_ids=self.user_ids, item_ids=self.item_ids, user_names=self.user_names,
            item_names=self.item_names, user_features=self.user_features,
            item_features=self.item_features, user_graph=self.user_graph,
            item_graph=self.item_graph, implicit=self.implicit, name=self.name,
            source=self.source, info=dict(self.info), nouns=self.nouns,
        )
        kw.update(changes)
        return Ratings(users, items, values, **kw)

    def subset(self, index, *, name=None) -> "Ratings":
        """The ratings at positions ``index`` (bool mask or int array), same index space."""
        index = np.asarray(index)
        return self._replace_entries(self.users[index], self.items[index], self.values[index],
                                     name=self.name if name is None else name)

    def binarize(self, threshold, *, name=None) -> "Ratings":
        """One-class data: the entries with value >= ``threshold`` as positives (value 1).

        The other entries are dropped (they become unlabeled, like every pair never rated),
        which is the OCMF paper's conversion of MovieLens with ``threshold=4``. The index
        space, ids, names, side information and graphs are kept, so a model trained on the
        result scores the same users and items; the scale becomes [0, 1] and
        ``implicit`` True. ``info`` records the threshold and how many entries were kept.

        Raises
        ------
        InvalidParameterError
            If threshold is not a finite number.
        EmptyDataError
            If no entry reaches the threshold.
        """
        threshold = check_number("Ratings.binarize", "threshold", threshold)
        keep = self.values >= threshold
        n_keep = int(keep.sum())
        if n_keep == 0:
            raise EmptyDataError(
                f"no rating of {self.name!r} is >= {threshold:g} (values lie in "
                f"[{float(self.values.min()):g}, {float(self.values.max()):g}])",
                expected="at least one entry at or above the threshold",
                fix="lower the threshold")
        info = dict(self.info)
        info.update(binarized_threshold=float(threshold), binarized_kept=n_keep,
                    binarized_dropped=self.n_ratings - n_keep)
        return self._replace_entries(
            self.users[keep], self.items[keep], np.ones(n_keep), r_min=0.0, r_max=1.0,
            implicit=True, info=info,
            name=f"{self.name} (r >= {threshold:g})" if name is None else name)

    # ------------------------------------------------------------------ views
    @property
    def n_ratings(self) -> int:
        return int(self.values.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_users, self.n_items)

    @property
    def density(self) -> float:
        return self.n_ratings / float(self.n_users * self.n_items)

    @cached_property
    def csr(self) -> sp.csr_matrix:
        """Users x items CSR matrix of the values (sorted indices)."""
        m = sp.csr_matrix((self.values, (self.users, self.items)), shape=self.shape)
        m.sort_indices()
        return m

    @cached_property
    def csc(self) -> sp.csc_matrix:
        """Users x items CSC matrix of the values (sorted indices)."""
        m = self.csr.tocsc()
        m.sort_indices()
        return m

    def user_counts(self) -> np.ndarray:
        return np.bincount(self.users, minlength=self.n_users)

    def item_counts(self) -> np.ndarray:
        return np.bincount(self.items, minlength=self.n_items)

    def item_label(self, i: int) -> str:
        """A display label for item index ``i``: its name if known, else its id (a text id
        such as "Espresso" as it is, a number as "item 42")."""
        if self.item_names is not None and self.item_names[i] is not None:
            return str(self.item_names[i])
        return _id_label("item", self.item_ids[i])

    def user_label(self, u: int) -> str:
        if self.user_names is not None and self.user_names[u] is not None:
            return str(self.user_names[u])
        return _id_label("user", self.user_ids[u])

    def to_frame(self, *, labels=True, limit=None) -> pd.DataFrame:
        """The triplets as a DataFrame with original ids (and item names when known);
        ``limit``: only the first ``limit`` of them (a preview builds no full table)."""
        n = self.n_ratings if limit is None else max(0, min(int(limit), self.n_ratings))
        users, items = self.users[:n], self.items[:n]
        df = pd.DataFrame({"user": self.user_ids[users], "item": self.item_ids[items],
                           "value": self.values[:n]})
        if labels and self.item_names is not None:
            df["item_name"] = self.item_names[items]
        return df

    def describe(self) -> dict:
        """Counts, density, scale and side information present, as a flat dict."""
        return {
            "name": self.name,
            "source": self.source,
            "n_users": self.n_users,
            "n_items": self.n_items,
            "n_ratings": self.n_ratings,
            "density": self.density,
            "r_min": self.r_min,
            "r_max": self.r_max,
            "implicit": self.implicit,
            "item_names": self.item_names is not None,
            "user_names": self.user_names is not None,
            "user_features": None if self.user_features is None else list(self.user_features.columns),
            "item_features": None if self.item_features is None else list(self.item_features.columns),
            "user_graph": self.user_graph is not None,
            "item_graph": self.item_graph is not None,
            **{f"info_{k}": v for k, v in self.info.items()},
        }

    def fingerprint(self) -> str:
        """A SHA-256 of the entries and scale: equal data gives an equal fingerprint.

        Computed once (the entries are read-only) and in blocks, as int64 indices and
        float64 values whatever the stored types, so it never copies the whole arrays and
        stays the fingerprint saved runs were checked against."""
        found = self.__dict__.get("_fingerprint")
        if found is not None:
            return found
        h = hashlib.sha256()
        for a, dtype in ((self.users, np.int64), (self.items, np.int64),
                         (self.values, np.float64)):
            for start in range(0, a.shape[0], _HASH_BLOCK):
                h.update(np.ascontiguousarray(a[start:start + _HASH_BLOCK], dtype=dtype))
        h.update(np.array([self.n_users, self.n_items], dtype=np.int64).tobytes())
        h.update(np.array([self.r_min, self.r_max], dtype=np.float64).tobytes())
        self.__dict__["_fingerprint"] = out = h.hexdigest()[:16]
        return out

    def __repr__(self) -> str:
        kind = "interactions" if self.implicit else f"ratings in [{self.r_min:g}, {self.r_max:g}]"
        return (f"Ratings({self.name!r}: {self.n_users} users x {self.n_items} items, "
                f"{self.n_ratings} {kind})")

    def __len__(self) -> int:
        return self.n_ratings

    # ------------------------------------------------------------------ splits
    def split(self, test_size=0.2, *, random_state=None) -> tuple["Ratings", "Ratings"]:
        """Random hold-out: ``test_size`` of the ratings go to test, the rest to train.

        Both parts keep the full index space; the same ``random_state`` gives the same split.
        """
        test_size = check_number("Ratings.split", "test_size", test_size, low=0.0, high=1.0,
                                 closed="neither")
        rng = check_random_state(random_state)
        n_test = int(round(test_size * self.n_ratings))
        if n_test == 0 or n_test == self.n_ratings:
            raise EmptyDataError(
                f"test_size={test_size} of {self.n_ratings} ratings leaves an empty part",
                expected="a fraction that puts at least one rating on each side")
        perm = rng.permutation(self.n_ratings)
        mask = np.zeros(self.n_ratings, dtype=bool)
        mask[perm[:n_test]] = True
        return self.subset(~mask, name=f"{self.name} (train)"), self.subset(mask, name=f"{self.name} (test)")

    def split_per_user(self, test_size=0.2, *, random_state=None, min_train=1):
        """Per-user hold-out: each user keeps at least ``min_train`` ratings in train and
        sends about ``test_size`` of the rest to test."""
        test_size = check_number("Ratings.split_per_user", "test_size", test_size, low=0.0,
                                 high=1.0, closed="neither")
        rng = check_random_state(random_state)
        mask = np.zeros(self.n_ratings, dtype=bool)
        order = np.argsort(self.users, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(self.user_counts())])
        for u in range(self.n_users):
            idx = order[bounds[u]:bounds[u + 1]]
            k = min(int(round(test_size * idx.size)), idx.size - min_train)
            if k > 0:
                mask[rng.choice(idx, size=k, replace=False)] = True
        if not mask.any():
            raise EmptyDataError("the per-user split put no rating in the test part",
                                 expected="users with more than min_train ratings")
        return self.subset(~mask, name=f"{self.name} (train)"), self.subset(mask, name=f"{self.name} (test)")

    def split_cold(self, test_size=0.2, *, axis="users", random_state=None):
        """Cold-start hold-out: ``test_size`` of the users (or items) that have ratings send
        every rating to test, so the model never sees them in training.

        Only models that predict from side information (kernels, features) can score the
        held-out part; the others say so. At least two users (items) stay in training.
        """
        check_option("Ratings.split_cold", "axis", axis, ("users", "items"))
        test_size = check_number("Ratings.split_cold", "test_size", test_size, low=0.0,
                                 high=1.0, closed="neither")
        rng = check_random_state(random_state)
        ids = np.asarray(self.users if axis == "users" else self.items)
        present = np.unique(ids)
        k = min(int(round(test_size * present.size)), present.size - 2)
        if k < 1:
            raise EmptyDataError(
                f"a cold-start split of {test_size:g} of the {present.size} {axis} with "
                "ratings holds out none of them",
                expected=f"a fraction that holds out at least one of the {axis} and leaves two")
        cold = rng.choice(present, size=k, replace=False)
        mask = np.isin(ids, cold)
        return (self.subset(~mask, name=f"{self.name} (train)"),
                self.subset(mask, name=f"{self.name} (test)"))

    def _splitter(self, by):
        if by == "random":
            return self.split
        if by == "user":
            return self.split_per_user
        axis = by.removeprefix("cold_")
        return lambda size, random_state=None: self.split_cold(size, axis=axis,
                                                                random_state=random_state)

    def train_val_test(self, val_size=0.1, test_size=0.2, *, by="random", random_state=None):
        """Three disjoint parts: train, validation, test (``by`` in :data:`SPLIT_KINDS`)."""
        check_option("Ratings.train_val_test", "by", by, SPLIT_KINDS)
        rng = check_random_state(random_state)
        rest, test = self._splitter(by)(test_size, random_state=rng)
        frac = val_size / (1.0 - test_size)
        train, val = rest._splitter(by)(frac, random_state=rng)
        return (train._replace_entries(train.users, train.items, train.values, name=f"{self.name} (train)"),
                val._replace_entries(val.users, val.items, val.values, name=f"{self.name} (validation)"),
                test)


def _id_label(kind: str, value) -> str:
    """``"item 42"`` for a numeric id, the text itself for a text id that is not a number."""
    text = str(value)
    if isinstance(value, str) and text.strip() and not text.strip().lstrip("+-").isdigit():
        return text
    return f"{kind} {text}"
