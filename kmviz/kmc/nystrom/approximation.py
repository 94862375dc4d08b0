"""The Nyström approximation ``T = C W^+ C^T``, its errors, and the Nystroem transformer.

Definition 1 and the error measures of Theorem 5.1, (3.51), (5.10) and (5.16) on dense
kernels; :class:`Nystroem`, scikit-learn's feature map with the landmark samplings of
:mod:`~kmviz.kmc.nystrom.landmarks` and the scores of :mod:`~kmviz.kmc.nystrom.scores`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.linalg as sla

from ..._base import BaseEstimator
from ..._params import RANDOM_STATE, Param
from ..._validation import check_random_state
from ...exceptions import DataValueError, NotFittedError
from ..rkhs import (_features, blas_threads, check_kernel, factor_threads, gaussian_kernel,
                       linear_kernel)
from .landmarks import approximate_ridge_leverage_scores, recursive_rls_sample, sample_distinct
from .ridge import default_alpha, default_alpha_of_kernel
from .scores import _eig_psd, ridge_leverage_scores_cholesky, sample_indices, sampling_probabilities

SAMPLINGS = ("uniform", "leverage", "approximate_leverage", "recursive")
KERNELS = ("rbf", "gaussian", "linear", "precomputed")


def _pinv_sqrt(W, rcond=1e-12):
    """``(V, keep)``: ``V = Q_k diag(lambda_k^-1/2)`` over eigenvalues above rcond * max, so
    ``V V^T = W^+`` (within the kept range)."""
    lam, Q = np.linalg.eigh(0.5 * (W + W.T))
    top = float(lam.max()) if lam.size else 0.0
    keep = lam > rcond * max(top, 1e-300)
    return Q[:, keep] / np.sqrt(lam[keep]), keep


def nystrom_approximation(K, landmarks, weights=None, *, rcond=1e-12) -> np.ndarray:
    """``T = C W^+ C^T`` with ``C = K[:, S] D`` and ``W = D K[S, S] D`` (dense, small n).

    ``weights`` (D, one per landmark, default 1) cancel in T when W is invertible on its range
    (the unregularized approximation depends only on the span of the landmark columns).
    """
    K = np.asarray(K, dtype=np.float64)
    S = np.asarray(landmarks, dtype=np.int64)
    d = np.ones(S.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    C = K[:, S] * d
    V, _ = _pinv_sqrt(K[np.ix_(S, S)] * np.outer(d, d), rcond)
    Phi = C @ V
    return Phi @ Phi.T


def residual_diagonal(K, landmarks, *, rcond=1e-12) -> np.ndarray:
    """``diag(K - T)`` (5.10): the squared RKHS distance of each kernel column to the span of
    the landmark columns, the per-point error bound."""
    K = np.asarray(K, dtype=np.float64)
    S = np.asarray(landmarks, dtype=np.int64)
    V, _ = _pinv_sqrt(K[np.ix_(S, S)], rcond)
    Phi = K[:, S] @ V
    return np.clip(np.diag(K) - np.einsum("ij,ij->i", Phi, Phi), 0.0, None)


def nystrom_errors(K, K_hat) -> dict:
    """Errors of a Nyström approximation, absolute and relative to K:

    ``trace`` = Tr(K - K_hat) (Theorem 5.1), ``frobenius`` = ||K - K_hat||_F (3.51),
    ``spectral`` = ||K - K_hat||_2 (5.16), and ``*_relative`` divided by Tr K, ||K||_F and
    ||K||_2.
    """
    K = np.asarray(K, dtype=np.float64)
    E = K - np.asarray(K_hat, dtype=np.float64)
    E = 0.5 * (E + E.T)
    tr, fro = float(np.trace(E)), float(np.linalg.norm(E))
    spec = float(np.max(np.abs(sla.eigvalsh(E)))) if E.size else 0.0
    kspec = float(np.max(np.abs(sla.eigvalsh(0.5 * (K + K.T))))) if K.size else 0.0
    return {"trace": tr, "frobenius": fro, "spectral": spec,
            "trace_relative": tr / float(np.trace(K)) if np.trace(K) else math.nan,
            "frobenius_relative": fro / float(np.linalg.norm(K)) if K.size else math.nan,
            "spectral_relative": spec / kspec if kspec else math.nan}



class Nystroem(BaseEstimator):
    """Nyström kernel feature map with leverage-score landmark sampling (scikit-learn API).

    ``transform(X)`` returns features Z with ``Z Z^T`` the Nyström approximation
    ``C W^+ C^T`` of the kernel, ``C = k(X, landmarks) D``, ``W = D k(landmarks, landmarks) D``.

    Parameters
    ----------
    kernel : {"rbf", "gaussian", "linear", "precomputed"} or callable, default="rbf"
        ``rbf`` = ``gaussian``: ``exp(-gamma ||x - y||^2)``; ``precomputed``: ``fit`` takes
        the n x n kernel matrix and ``transform`` rows of kernel values against the training
        points; a callable ``kernel(X, Y)`` returns the kernel matrix.
    gamma : float > 0, optional
        RBF width; default ``1 / n_features`` (scikit-learn's).
    n_components : int >= 1, default=100
        Landmarks: m distinct ones (``distinct=True``), else m draws.
    sampling : {"uniform", "leverage", "approximate_leverage", "recursive"}, default="uniform"
        ``uniform``: without replacement (scikit-learn's ``Nystroem``). ``leverage``: exact
        ridge leverage scores (the n x n kernel and one Cholesky,
        :func:`ridge_leverage_scores_cholesky`), drawn by ``p = l / sum l``
        (5.22) with weights ``1 / sqrt(s p)`` (§5.2.1). ``approximate_leverage``: the scores
        estimated from a uniform sketch of ``n_components`` points (O(n m^2)), then as
        ``leverage``. ``recursive``: recursive ridge-leverage sampling (Musco & Musco
        2017), m distinct landmarks, O(n m^2) time and O(n m) memory.
    alpha : float > 0, optional
        Ridge of the leverage scores; default: the tail rule ``(sum of the eigenvalues
        beyond the k largest) / k`` with ``k = ceil(m / (2 ln m))`` (:func:`default_alpha`;
        the kernel's eigenvalues for exact scores, the sketch's for approximate ones).
        Recursive sampling estimates it from its sample the same way.
    distinct : bool, default=True
        Leverage samplings: draw by p with replacement until m *distinct* landmarks
        (repeats discarded: numpy's successive sampling), so that every sampling has m
        landmarks. False: exactly m draws with replacement, the thesis's s-tuple of
        §5.2.1; repeated landmarks are kept (the approximation, which depends only on the
        span of the landmark columns, is the one of the distinct ones: the weights cancel
        and a repeat adds nothing) and ``component_indices_`` may hold fewer distinct
        points. On Boston at gamma 0.01, m = 200, this alone took the trace error from
        0.39 to 0.17 of uniform's.
    landmarks : array, optional
        User-chosen landmarks: integer indices into the training X, or points (a 2-D array
        with the training X's columns). Overrides ``sampling``.
    random_state : None, int or Generator

    Attributes
    ----------
    components_ : ndarray (m, t) or None
        The landmark points (None for a precomputed kernel).
    component_indices_ : ndarray of int (m,) or None
        Their indices in the training X (None for user-given points).
    component_weights_ : ndarray (m,)
        ``1 / sqrt(s p)`` for leverage sampling, 1 otherwise.
    normalization_ : ndarray (m, r)
        ``W^+1/2`` on the kept range: ``transform(X) = k(X, components) D normalization_``.
    leverage_scores_ : ndarray (n,) or None
        The (exact or estimated) ridge leverage scores used to sample.
    alpha_ : float or None
    effective_dimension_ : float or None
        ``sum(leverage_scores_)`` (exact scores: d_eff(alpha)).
    n_features_in_ : int
    """

    _parameter_constraints = {
        "kernel": Param(str, options=KERNELS, label="kernel"),
        "gamma": Param(float, low=0, closed="neither", none_ok=True, label="gamma"),
        "n_components": Param(int, low=1, label="landmarks"),
        "sampling": Param(str, options=SAMPLINGS, label="sampling"),
        "alpha": Param(float, low=0, closed="neither", none_ok=True, label="alpha"),
        "distinct": Param(bool, label="distinct landmarks"),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed"),
    }

    def __init__(self, kernel="rbf", *, gamma=None, n_components=100, sampling="uniform",
                 alpha=None, distinct=True, landmarks=None, random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.sampling = sampling
        self.alpha = alpha
        self.distinct = distinct
        self.landmarks = landmarks
        self.random_state = random_state

    # -- kernel evaluation --------------------------------------------------------------
    def _validate(self):
        owner = type(self).__name__
        out = {}
        for name, spec in self._parameter_constraints.items():
            value = getattr(self, name)
            out[name] = value if name == "kernel" and callable(value) else \
                spec.check(owner, name, value)
        return out

    def _k(self, X, Y):
        if callable(self.kernel):
            return np.asarray(self.kernel(X, Y), dtype=np.float64)
        if self.kernel in ("rbf", "gaussian"):
            return gaussian_kernel(X, Y, gamma=self._gamma)
        return linear_kernel(X, Y)

    def _k_diag(self, X):
        if callable(self.kernel):
            return np.array([float(self.kernel(x[None], x[None])[0, 0]) for x in X])
        if self.kernel in ("rbf", "gaussian"):
            return np.ones(X.shape[0])
        return np.einsum("ij,ij->i", X, X)

    # -- fit ------------------------------------------------------------------------------
    def fit(self, X, y=None):
        """Choose the landmarks from X (n x t, or the n x n kernel when precomputed)."""
        prm = self._validate()
        rng = check_random_state(self.random_state)
        pre = self.kernel == "precomputed"
        if pre:
            K = check_kernel(X, "X (precomputed kernel)")
            n = K.shape[0]
            X = None
            kblock = lambda r, c: K[np.ix_(r, c)]  # noqa: E731
            diag = np.diag(K).copy()
        else:
            X = _features(X, "X")
            n = X.shape[0]
            self._gamma = prm["gamma"] if prm["gamma"] is not None else 1.0 / X.shape[1]
            kblock = lambda r, c: self._k(X[r], X[c])  # noqa: E731
            diag = self._k_diag(X)
        self.n_features_in_ = n if pre else X.shape[1]
        m = prm["n_components"]
        if m > n and self.landmarks is None:
            warnings.warn(f"n_components={m} > n_samples={n}; n_components is set to "
                          f"n_samples.", UserWarning, stacklevel=2)
            m = n
        self.leverage_scores_ = None
        self.alpha_ = None
        self.effective_dimension_ = None
        weights = None
        points = None
        sampling = prm["sampling"]
        if self.landmarks is not None:
            lm = np.asarray(self.landmarks)
            if lm.ndim == 1 and np.issubdtype(lm.dtype, np.integer):
                if lm.size == 0 or lm.min() < 0 or lm.max() >= n:
                    raise DataValueError(f"landmarks holds indices outside 0..{n - 1}",
                                         expected="indices into the training X")
                idx = lm.astype(np.int64)
            else:
                if pre:
                    raise DataValueError("landmark points need a feature kernel; with "
                                         "kernel='precomputed' give landmark indices")
                points = _features(lm, "landmarks")
                if points.shape[1] != X.shape[1]:
                    raise DataValueError(f"landmarks has {points.shape[1]} columns",
                                         expected=f"{X.shape[1]}, as X")
                idx = None
            sampling = "given"
        elif sampling == "uniform":
            idx = rng.choice(n, m, replace=False).astype(np.int64)
        elif sampling == "leverage":
            Kfull = check_kernel(K if pre else self._k(X, X), "kernel matrix")
            # no eigendecomposition: the default alpha needs Tr K and the k largest
            # eigenvalues, the scores one Cholesky and a triangular inverse (at n = 5,000 on
            # the mixture: 7 s of CPU against 68 s for eigh, both on the loaded box)
            alpha = prm["alpha"] if prm["alpha"] is not None else \
                default_alpha_of_kernel(Kfull, m)
            try:
                lev = ridge_leverage_scores_cholesky(Kfull, alpha, overwrite=pre is False)
            except DataValueError:  # K + alpha I singular in rounding: the eigenvalues
                sig, Q = _eig_psd(Kfull)
                lev = (Q * Q) @ (sig / (sig + alpha))
            del Kfull
            idx, p = self._draw(lev, m, rng)
            weights = 1.0 / np.sqrt(m * p)
            self.leverage_scores_, self.alpha_ = lev, float(alpha)
            self.effective_dimension_ = float(lev.sum())
        elif sampling == "approximate_leverage":
            sketch = rng.choice(n, m, replace=False).astype(np.int64)
            w = np.full(m, math.sqrt(n / m))
            if prm["alpha"] is not None:
                alpha = prm["alpha"]
            else:  # the default rule on the sketch's spectrum, scaled to the whole set
                with blas_threads(factor_threads(m)):
                    ev = np.clip(sla.eigvalsh(kblock(sketch, sketch)), 0.0, None) * (n / m)
                alpha = default_alpha(ev, m)
            with blas_threads(factor_threads(m)):
                lev = approximate_ridge_leverage_scores(lambda S: kblock(np.arange(n), S),
                                                        diag, sketch, w, alpha)
            # true scores are <= 1; the sketch over-estimates the points it covers badly
            # (a far cluster gets 2-3 each where the exact score is 0.3), and uncapped they
            # draw most of the landmarks with replacement onto a few points
            lev = np.minimum(lev, 1.0)
            idx, p = self._draw(lev, m, rng)
            weights = 1.0 / np.sqrt(m * p)
            self.leverage_scores_, self.alpha_ = lev, float(alpha)
            self.effective_dimension_ = float(lev.sum())
        else:  # recursive
            # its LAPACK calls are on samples of about m points: one BLAS thread (on the busy
            # box a threaded OpenBLAS made a 2,000-point run take 3.4 s instead of 0.37 s)
            with blas_threads(factor_threads(m)):
                idx = recursive_rls_sample(n, m, kblock, diag, random_state=rng)
        self.sampling_ = sampling
        self.component_indices_ = idx
        if points is not None:
            self.components_ = points
            W = self._k(points, points)
            self._basis = points
        else:
            self.components_ = None if pre else X[idx]
            W = kblock(idx, idx)
            self._basis = self.components_
        d = np.ones(W.shape[0]) if weights is None else weights
        self.component_weights_ = d
        with blas_threads(factor_threads(W.shape[0])):
            V, _ = _pinv_sqrt(W * np.outer(d, d))
        self.normalization_ = V
        return self

    def _draw(self, scores, m, rng):
        """Landmarks by the scores (5.22) and their probabilities: m distinct ones, or m
        draws with replacement (``distinct=False``, the thesis's §5.2.1 tuple)."""
        p = sampling_probabilities(scores)
        if self.distinct:
            idx = sample_distinct(p, m, rng)
            return idx, p[idx]
        return sample_indices(p, m, replace=True, random_state=rng, probabilities=True)

    def _check_fitted(self):
        if not hasattr(self, "normalization_"):
            raise NotFittedError("This Nystroem instance is not fitted yet. Call 'fit' with "
                                 "appropriate arguments before using this estimator.")

    def transform(self, X):
        """Features ``k(X, landmarks) D normalization_`` (rows of kernel values against the
        training points when precomputed)."""
        self._check_fitted()
        if self.kernel == "precomputed":
            Kx = np.atleast_2d(np.asarray(X, dtype=np.float64))
            C = Kx[:, self.component_indices_]
        else:
            C = self._k(_features(X, "X"), self._basis)
        return (C * self.component_weights_) @ self.normalization_

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)

    def residual_diagonal(self, X, K_diag=None) -> np.ndarray:
        """``k(x, x) - ||phi(x)||^2`` per row of X: the per-point bound (5.10), O(n m)."""
        Z = self.transform(X)
        if K_diag is None:
            if self.kernel == "precomputed":
                raise ValueError("pass K_diag (the kernel's diagonal) with a precomputed kernel")
            K_diag = self._k_diag(_features(X, "X"))
        return np.clip(np.asarray(K_diag) - np.einsum("ij,ij->i", Z, Z), 0.0, None)

    def trace_error(self, X, K_diag=None, *, relative=True) -> float:
        """``Tr(K - K_hat)`` on X (Theorem 5.1), divided by ``Tr K`` when ``relative``."""
        if K_diag is None and self.kernel != "precomputed":
            K_diag = self._k_diag(_features(X, "X"))
        r = self.residual_diagonal(X, K_diag)
        tr = float(np.sum(K_diag))
        return float(r.sum()) / tr if relative and tr > 0 else float(r.sum())



__all__ = ["KERNELS", "Nystroem", "SAMPLINGS", "nystrom_approximation", "nystrom_errors",
           "residual_diagonal"]
