"""Ratings as regression data: the classic factorization-machine design (Rendle, 2010).

Each rating (u, i, r) becomes one row ``x = [e_u, e_i, f_u, g_i]`` with target r: a one-hot
block for the user, one for the item, then the user's and the item's side features
(``Ratings.user_features`` / ``item_features``: numeric columns as they are, missing values
replaced by the column mean of the training ratings, other columns one-hot encoded). The
second-order term ``x^T M x`` then holds the user-item interactions ``M_ui`` (the
factorization-machine analogue of ``<p_u, q_i>``), user-feature x item interactions and so
on, and the first-order term the user and item biases.

X is sparse (CSR, about 2 + n_side nonzeros per row), so
``GeneralizedFM(standardize=True)`` standardizes it implicitly, without densifying.

Caveat measured on MovieLens (bench notes): the one-pass method's moment identities assume
``x ~ N(0, I)``; one-hot columns are far from Gaussian (a column with frequency p has
kurtosis ~ 1/p after standardization), so the initialization and the power steps are biased.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .data import RegressionData


def _side_frame(frame: pd.DataFrame | None, columns=None) -> pd.DataFrame:
    """Side features as float columns: numeric kept, others one-hot; ``columns`` aligns."""
    if frame is None or frame.shape[1] == 0:
        return pd.DataFrame(index=range(0))
    num = frame.select_dtypes(include=[np.number, bool]).astype(np.float64)
    other = frame.drop(columns=num.columns)
    if other.shape[1]:
        num = pd.concat([num, pd.get_dummies(other.astype(str), dtype=np.float64)], axis=1)
    if columns is not None:
        num = num.reindex(columns=list(columns), fill_value=0.0)
    return num


class RatingsDesign:
    """Map a :class:`kmviz.data.Ratings` to :class:`RegressionData` (one row per rating).

    Parameters
    ----------
    users, items : bool, default=True
        Include the one-hot user / item blocks.
    user_features, item_features : bool, default=True
        Include the side features, when the ratings have them.

    Attributes (after :meth:`fit`)
    ------------------------------
    n_users_, n_items_ : int
    user_columns_, item_columns_ : list of str
        Side-feature columns (after one-hot encoding of non-numeric ones).
    user_fill_, item_fill_ : ndarray
        Values replacing missing side features (training column means).
    """

    def __init__(self, *, users=True, items=True, user_features=True, item_features=True):
        self.users = users
        self.items = items
        self.user_features = user_features
        self.item_features = item_features

    def fit(self, ratings) -> "RatingsDesign":
        self.n_users_, self.n_items_ = int(ratings.n_users), int(ratings.n_items)
        self.user_columns_, self.user_fill_ = self._side_spec(
            ratings.user_features if self.user_features else None, ratings.users)
        self.item_columns_, self.item_fill_ = self._side_spec(
            ratings.item_features if self.item_features else None, ratings.items)
        # the encoded side features of every id, kept so that ratings without them (a run
        # reopened from its arrays) get the same rows
        self.user_side_ = self._encoded(ratings.user_features, self.user_columns_,
                                        self.user_fill_, self.n_users_)
        self.item_side_ = self._encoded(ratings.item_features, self.item_columns_,
                                        self.item_fill_, self.n_items_)
        return self

    @staticmethod
    def _encoded(frame, columns, fill, n_ids):
        if not columns:
            return np.zeros((n_ids, 0))
        side = _side_frame(frame, columns).to_numpy(np.float64)
        return np.where(np.isnan(side), fill[None, :], side)

    @staticmethod
    def _side_spec(frame, index):
        side = _side_frame(frame)
        if side.shape[1] == 0:
            return [], np.zeros(0)
        values = side.to_numpy(np.float64)[np.asarray(index)]
        with np.errstate(all="ignore"):
            fill = np.nanmean(values, axis=0) if values.size else np.zeros(side.shape[1])
        return [str(c) for c in side.columns], np.nan_to_num(fill)

    @property
    def n_features(self) -> int:
        return (self.n_users_ * bool(self.users) + self.n_items_ * bool(self.items)
                + len(self.user_columns_) + len(self.item_columns_))

    def feature_names(self, ratings=None) -> list:
        """``user=<id>``, ``item=<name or id>``, ``user:<column>``, ``item:<column>``."""
        names = []
        if self.users:
            ids = ratings.user_ids if ratings is not None else range(self.n_users_)
            names += [f"user={u}" for u in ids]
        if self.items:
            if ratings is not None and ratings.item_names is not None:
                labels = [n if n is not None else i for n, i in
                          zip(ratings.item_names, ratings.item_ids)]
            elif ratings is not None:
                labels = list(ratings.item_ids)
            else:
                labels = range(self.n_items_)
            names += [f"item={x}" for x in labels]
        names += [f"user:{c}" for c in self.user_columns_]
        names += [f"item:{c}" for c in self.item_columns_]
        return names

    def transform(self, ratings) -> RegressionData:
        """The sparse design of ``ratings`` (same index space as the fitted ratings)."""
        if (int(ratings.n_users), int(ratings.n_items)) != (self.n_users_, self.n_items_):
            raise ValueError(
                f"ratings have shape ({ratings.n_users}, {ratings.n_items}) but the design was "
                f"fitted on ({self.n_users_}, {self.n_items_}); split one Ratings so the parts "
                "share the index space.")
        n = int(len(ratings.values))
        rows = np.arange(n)
        blocks = []
        if self.users:
            blocks.append(sp.csr_matrix((np.ones(n), (rows, np.asarray(ratings.users))),
                                        shape=(n, self.n_users_)))
        if self.items:
            blocks.append(sp.csr_matrix((np.ones(n), (rows, np.asarray(ratings.items))),
                                        shape=(n, self.n_items_)))
        for frame, columns, fill, index, kept in (
                (ratings.user_features, self.user_columns_, self.user_fill_, ratings.users,
                 getattr(self, "user_side_", None)),
                (ratings.item_features, self.item_columns_, self.item_fill_, ratings.items,
                 getattr(self, "item_side_", None))):
            if not columns:
                continue
            if frame is None or frame.shape[1] == 0:
                # ratings without their side features (a reopened run): the fitted ones
                side = kept if kept is not None and kept.shape[1] == len(columns) else \
                    np.broadcast_to(fill, (int(np.max(index, initial=0)) + 1, fill.size))
            else:
                side = self._encoded(frame, columns, fill, None)
            blocks.append(sp.csr_matrix(side[np.asarray(index)]))
        if not blocks:
            raise ValueError("the design has no columns: enable users, items or side features.")
        X = sp.hstack(blocks, format="csr")
        return RegressionData(X, np.asarray(ratings.values, dtype=np.float64),
                              tuple(self.feature_names(ratings)), getattr(ratings, "name", ""))

    def fit_transform(self, ratings) -> RegressionData:
        return self.fit(ratings).transform(ratings)

    # -------------------------------------------------------------------- persistence
    def to_arrays(self, prefix: str = "design_") -> dict:
        """Plain arrays (no pickle) that :meth:`from_arrays` reads back."""
        return {f"{prefix}shape": np.array([self.n_users_, self.n_items_], dtype=np.int64),
                f"{prefix}flags": np.array([self.users, self.items, self.user_features,
                                            self.item_features], dtype=bool),
                f"{prefix}user_columns": np.array(self.user_columns_, dtype=str),
                f"{prefix}item_columns": np.array(self.item_columns_, dtype=str),
                f"{prefix}user_fill": np.asarray(self.user_fill_, dtype=np.float64),
                f"{prefix}item_fill": np.asarray(self.item_fill_, dtype=np.float64),
                f"{prefix}user_side": np.asarray(self.user_side_, dtype=np.float64),
                f"{prefix}item_side": np.asarray(self.item_side_, dtype=np.float64)}

    @classmethod
    def from_arrays(cls, arrays, prefix: str = "design_") -> "RatingsDesign":
        flags = [bool(x) for x in np.asarray(arrays[f"{prefix}flags"])]
        design = cls(users=flags[0], items=flags[1], user_features=flags[2],
                     item_features=flags[3])
        design.n_users_, design.n_items_ = (int(x) for x in arrays[f"{prefix}shape"])
        design.user_columns_ = [str(c) for c in np.asarray(arrays[f"{prefix}user_columns"])]
        design.item_columns_ = [str(c) for c in np.asarray(arrays[f"{prefix}item_columns"])]
        design.user_fill_ = np.asarray(arrays[f"{prefix}user_fill"], dtype=np.float64)
        design.item_fill_ = np.asarray(arrays[f"{prefix}item_fill"], dtype=np.float64)
        for side in ("user", "item"):  # absent from runs saved before they were kept
            key = f"{prefix}{side}_side"
            setattr(design, f"{side}_side_", np.asarray(arrays[key], dtype=np.float64)
                    if key in arrays else None)
        return design


def is_ratings(obj) -> bool:
    """True for a kmviz.data.Ratings (duck-typed, so kmviz.gfm does not import kmviz.data)."""
    return all(hasattr(obj, a) for a in ("users", "items", "values", "n_users", "n_items"))
