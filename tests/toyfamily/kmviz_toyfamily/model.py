"""The toy estimator: a global mean and ridge-regularized user and item biases."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kmviz._base import IterativeEstimator, Step
from kmviz._params import RANDOM_STATE, Param


@dataclass
class _State:
    users: np.ndarray
    items: np.ndarray
    values: np.ndarray
    mean: float
    user_bias: np.ndarray
    item_bias: np.ndarray
    reg: float


class BiasedMean(IterativeEstimator):
    """rating ≈ μ + b_u + c_i, by alternating ridge updates of b and c.

    Each iteration sets every user bias, then every item bias, to its exact minimizer of
    ``sum (r - μ - b_u - c_i)^2 + reg (|b|^2 + |c|^2)`` given the other, so the objective
    never rises.

    Parameters
    ----------
    reg : float, default=1.0
        Ridge penalty on the biases.
    max_iter : int, default=10
        Alternating iterations at most.
    tol : float, default=1e-6
        Stop when the objective's relative decrease falls below tol (0: never).
    random_state : int or None, default=None
        Seed of the small random start of the item biases.

    Attributes
    ----------
    mean_ : float
    user_bias_, item_bias_ : ndarray
    trace_ : kmviz.trace.Trace
    n_iter_ : int
    """

    _parameter_constraints = {
        "reg": Param(float, low=0.0, high=1e12, label="reg", help="Ridge penalty on the biases."),
        "max_iter": Param(int, low=1, high=100_000, form_high=100, label="max iterations",
                          help="Alternating iterations at most."),
        "tol": Param(float, low=0.0, high=1.0, label="tol",
                     help="Stop when the objective's relative decrease falls below tol."),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed",
                              help="Seed of the random start of the item biases."),
    }
    score_metric = "-rmse"

    def __init__(self, reg=1.0, max_iter=10, tol=1e-6, random_state=None):
        self.reg = reg
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    # -- the loop -------------------------------------------------------------------------
    def _memory_estimate(self, params, ratings):
        """Bytes of the work arrays: the ratings and the two bias vectors."""
        return {"ratings and biases": 8 * (4 * int(ratings.n_ratings) + int(ratings.n_users)
                                           + int(ratings.n_items))}

    def _fit_start(self, ratings, params, *, validation=None):
        values = np.asarray(ratings.values, dtype=np.float64)
        if values.size == 0 or not np.isfinite(values).all():
            raise ValueError("BiasedMean.fit: the ratings must be non-empty and finite.")
        rng = np.random.default_rng(params["random_state"])
        return _State(users=np.asarray(ratings.users), items=np.asarray(ratings.items),
                      values=values, mean=float(values.mean()),
                      user_bias=np.zeros(ratings.n_users),
                      item_bias=rng.normal(0.0, 0.01, ratings.n_items), reg=params["reg"])

    @staticmethod
    def _solve(index, residual, n, reg):
        return np.bincount(index, residual, n) / (np.bincount(index, None, n) + reg + 1e-12)

    def _fit_step(self, st, trace, iteration):
        with trace.phase("users"):
            st.user_bias = self._solve(st.users, st.values - st.mean - st.item_bias[st.items],
                                       st.user_bias.size, st.reg)
        with trace.phase("items"):
            st.item_bias = self._solve(st.items, st.values - st.mean - st.user_bias[st.users],
                                       st.item_bias.size, st.reg)
        err = st.values - st.mean - st.user_bias[st.users] - st.item_bias[st.items]
        objective = float(err @ err + st.reg * (st.user_bias @ st.user_bias
                                                + st.item_bias @ st.item_bias))
        return Step({"objective": objective, "train_rmse": math.sqrt(float(err @ err)
                                                                     / err.size)})

    def _fit_publish(self, st, n_iter, trace):
        self._set(st.mean, st.user_bias, st.item_bias, n_iter, trace)

    def _set(self, mean, user_bias, item_bias, n_iter, trace):
        self.mean_ = float(mean)
        self.user_bias_ = np.array(user_bias, dtype=np.float64)
        self.item_bias_ = np.array(item_bias, dtype=np.float64)
        self.n_iter_ = int(n_iter)
        self.trace_ = trace

    # -- use ------------------------------------------------------------------------------
    def predict(self, users, items) -> np.ndarray:
        self._check_fitted()
        return self.mean_ + self.user_bias_[np.asarray(users)] + \
            self.item_bias_[np.asarray(items)]

    def evaluate(self, ratings) -> dict:
        """``{"rmse": ..., "mae": ...}`` on ``ratings`` (same index space)."""
        self._check_fitted()
        err = self.predict(ratings.users, ratings.items) - np.asarray(ratings.values)
        return {"rmse": math.sqrt(float(np.mean(err * err))),
                "mae": float(np.mean(np.abs(err)))}

    # -- run format -----------------------------------------------------------------------
    def _fitted_arrays(self) -> dict:
        self._check_fitted()
        return {"mean": np.array([self.mean_]), "user_bias": self.user_bias_,
                "item_bias": self.item_bias_}

    @classmethod
    def _from_fitted_arrays(cls, arrays, params, trace, train=None):
        model = cls(**params)
        model._validate_params()
        model._set(float(np.asarray(arrays["mean"]).ravel()[0]), arrays["user_bias"],
                   arrays["item_bias"], trace.n_iter, trace)
        return model
