"""Regression data for the gFM: features X (n x d, rows are instances) and targets y.

:class:`RegressionData` is what :class:`~kmviz.gfm.GeneralizedFM` fits and evaluates;
:func:`as_regression` accepts the looser forms (an ``(X, y)`` tuple, a synthetic problem).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .operators import check_rows


@dataclass(frozen=True)
class RegressionData:
    """Features and targets of a regression problem.

    Attributes
    ----------
    X : ndarray or scipy.sparse matrix, shape (n_samples, n_features)
        One instance per ROW (the paper's X is its transpose).
    y : ndarray, shape (n_samples,)
    feature_names : tuple of str, optional
        Names of the columns of X (for interaction tables).
    name : str
    """

    X: object
    y: np.ndarray
    feature_names: tuple | None = None
    name: str = "regression"

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def checked(self, what="X") -> "RegressionData":
        """A copy with X as float64 (C-order or CSR) and y checked (ValueError otherwise)."""
        X, y = check_rows(self.X, self.y, what=what)
        if self.feature_names is not None and len(self.feature_names) != X.shape[1]:
            raise ValueError(f"feature_names has {len(self.feature_names)} names but X has "
                             f"{X.shape[1]} columns.")
        return RegressionData(X, y, self.feature_names, self.name)

    def rows(self, start: int, stop: int) -> "RegressionData":
        return RegressionData(self.X[start:stop], self.y[start:stop], self.feature_names,
                              self.name)

    def split(self, test_size: float = 0.2, *, random_state=None):
        """``(train, test)`` by a random permutation of the rows."""
        rng = np.random.default_rng(random_state)
        order = rng.permutation(self.n_samples)
        n_test = int(round(test_size * self.n_samples))
        te, tr = np.sort(order[:n_test]), np.sort(order[n_test:])
        return (RegressionData(self.X[tr], self.y[tr], self.feature_names, self.name),
                RegressionData(self.X[te], self.y[te], self.feature_names, self.name))


def as_regression(data, y=None, *, what="X") -> RegressionData:
    """:class:`RegressionData` from ``(X, y)`` arrays, an ``(X, y)`` tuple, a RegressionData or
    any object with ``X`` and ``y`` attributes (a :class:`~kmviz.gfm.synthetic.GFMProblem`).
    A pandas DataFrame X gives its column names as ``feature_names``."""
    if isinstance(data, RegressionData):
        if y is not None:
            raise TypeError("y is given twice: inside the RegressionData and as y.")
        return data
    if y is None:
        if isinstance(data, (tuple, list)) and len(data) == 2:
            return RegressionData(data[0], data[1])
        if hasattr(data, "X") and hasattr(data, "y"):
            return RegressionData(data.X, data.y, getattr(data, "feature_names", None),
                                  getattr(data, "name", "regression"))
        raise TypeError(
            f"expected regression data: X and y arrays, an (X, y) tuple or a "
            f"kmviz.gfm.RegressionData; got {type(data).__name__} without y.")
    names = tuple(str(c) for c in data.columns) if hasattr(data, "columns") else None
    return RegressionData(data, y, names)
