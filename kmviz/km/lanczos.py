"""Approximate EVD of the dual matrix C(u) by the modified Lanczos method (paper Alg. 5).

``lanczos`` runs Alg. 5 with full reorthogonalization and the stopping threshold delta of
eq. (20); ``lanczos_diagnostics`` runs it for every Krylov dimension m = 1..D+1 and sets the
measured Ritz errors beside the bounds of Lemmas 2 and 3 (paper Fig. 6).

Start vector: the normalized ones vector plus a small deterministic aperiodic perturbation
(``1 + 0.25 sin(1 + 1.618 i)``), so runs are reproducible and the start has a non-zero
component along every eigenvector of the structured matrices C(u) met in practice.

D = 1: eq. (20) divides by D ln D = 0. kmviz then sets delta = 0, i.e. Lanczos runs to the
full dimension m = 2, which is exact and costs next to nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kmviz._validation import check_number

from . import _kernels as K


@dataclass
class LanczosResult:
    """Ritz pairs (15) of one Lanczos run.

    Attributes
    ----------
    ritz_values : ndarray of shape (m,)
        Eigenvalues theta_i of H_m, ascending.
    ritz_vectors : ndarray of shape (D+1, m)
        P_m q_i.
    m : int
        Krylov dimension at termination.
    beta : float
        beta_{m+1}, the residual bound of Lemma 2.
    delta : float
        The threshold used (eq. (20) unless given).
    alpha, beta_all : ndarray
        Diagonal and off-diagonal (with beta_{m+1} last) of H_m.
    """

    ritz_values: np.ndarray
    ritz_vectors: np.ndarray
    m: int
    beta: float
    delta: float
    alpha: np.ndarray
    beta_all: np.ndarray


def _check_symmetric(C, owner):
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or C.shape[0] < 1:
        raise ValueError(f"{owner}: C must be a square 2-D matrix; got shape {C.shape}.")
    if not np.all(np.isfinite(C)):
        raise ValueError(f"{owner}: C contains NaN or infinite values.")
    scale = max(1.0, float(np.abs(C).max()))
    if np.abs(C - C.T).max() > 1e-10 * scale:
        raise ValueError(f"{owner}: C must be symmetric.")
    return np.ascontiguousarray(0.5 * (C + C.T))


def _ritz_pairs(alpha, beta, P):
    """Ritz values theta (ascending), Ritz vectors P Q and eigenvectors Q of the m x m
    H_m = tridiag(beta[:m-1], alpha, beta[:m-1]); P holds p_1..p_m as columns (eq. (15))."""
    m = alpha.shape[0]
    H = np.diag(alpha) + np.diag(beta[: m - 1], 1) + np.diag(beta[: m - 1], -1)
    theta, Q = np.linalg.eigh(H)
    return theta, P @ Q, Q


def _threshold_terms(C, a):
    """delta of eq. (20) with the trace bounds sigma_UB, sigma_LB, sigma_Minkowski of Lemma 3.

    The same quantities as ``kernels.lanczos_threshold``, which returns delta only.
    """
    n = C.shape[0]
    D = n - 1
    tr = np.trace(C)
    tr2 = np.trace(C @ C)
    mu = tr / n
    var = max(tr2 / n - mu**2, 0.0)
    s_ub = mu + math.sqrt(var * D)
    s_lb = mu + (math.sqrt(var / D) if D > 0 else 0.0)
    s_mink = np.abs(C).sum() / n
    delta = 0.0 if D < 2 else ((s_ub - s_lb) + s_mink) / (a * D * math.log(D))
    return {"sigma_UB": s_ub, "sigma_LB": s_lb, "sigma_Minkowski": s_mink, "delta": delta}


def lanczos(C, *, a=1.0, delta=None, start=None) -> LanczosResult:
    """Approximate EVD of a symmetric matrix by Alg. 5 with full reorthogonalization.

    Parameters
    ----------
    C : array of shape (n, n)
        Symmetric matrix (the dual matrix C(u) of Lemma 1 in kmviz).
    a : float, default=1.0
        Control parameter a > 0 of the threshold (20); larger a means a smaller delta.
    delta : float, optional
        Threshold on beta_{m+1}; overrides (20). ``delta=0`` runs to m = n.
    start : array of shape (n,), optional
        Start vector p_1 (normalized here); default: ones plus a deterministic perturbation.

    References
    ----------
    Alg. 5, eqs. (15), (20).
    """
    C = _check_symmetric(C, "lanczos")
    a = check_number("lanczos", "a", a, low=0, closed="neither")
    n = C.shape[0]
    if delta is None:
        delta = float(K.lanczos_threshold(C, a))
    p1 = np.empty(n)
    if start is None:
        K.lanczos_start(n, p1)
    else:
        p1[:] = np.asarray(start, dtype=np.float64)
        p1 /= np.linalg.norm(p1)
    alpha = np.empty(n)
    beta = np.empty(n)
    P = np.empty((n, n))
    m = int(K.lanczos_tridiag(C, p1, float(delta), alpha, beta, P))
    theta, Y, _ = _ritz_pairs(alpha[:m], beta[:m], P[:m].T)
    return LanczosResult(theta, Y, m, float(beta[m - 1]), float(delta), alpha[:m].copy(),
                         beta[:m].copy())


def lanczos_diagnostics(C, a=1.0):
    """Ritz errors and the bounds of Lemmas 2-3 for every Krylov dimension m = 1..n.

    Each Ritz value is matched to its nearest true eigenvalue (``numpy.linalg.eigh``), as in
    the paper's proof of (18). Per m the returned dict holds arrays of length n:

    - ``m``, ``beta`` (beta_{m+1}),
    - ``max_err`` = max_i |lambda - lambda_hat_i|, ``min_err`` = min_i |...| (nearest match),
    - ``dominant_err``: nearest-eigenvalue error of the largest Ritz value, and ``top_err`` =
      lambda_max - theta_max (>= 0 by interlacing; not covered by Lemma 2),
    - ``beta_q_dominant`` = beta_{m+1} |q_i(m)| for the largest Ritz value (bound (18) on its
      error), ``beta_q_max`` / ``beta_q_min`` = max / min over i of beta_{m+1} |q_i(m)|,
    - ``residual_max`` = max_i ||C v_i - theta_i v_i|| (bound (16): <= beta),
    - ``lemma3_bound`` = 2m((sigma_UB - sigma_LB) + sigma_Minkowski) of (19),

    and the scalars ``sigma_UB``, ``sigma_LB``, ``sigma_Minkowski``, ``delta`` (eq. (20),
    0 for D = 1), ``m_threshold`` (first m with beta_{m+1} <= delta) and ``eigenvalues``;
    plus the Ritz values of every T_m as flat arrays ``ritz_m`` (the m of each value) and
    ``ritz_values``.
    """
    C = _check_symmetric(C, "lanczos_diagnostics")
    a = check_number("lanczos_diagnostics", "a", a, low=0, closed="neither")
    n = C.shape[0]
    lam = np.linalg.eigvalsh(C)
    thr = _threshold_terms(C, a)
    p1 = np.empty(n)
    K.lanczos_start(n, p1)
    alpha = np.empty(n)
    beta = np.empty(n)
    P = np.empty((n, n))
    m_full = int(K.lanczos_tridiag(C, p1, 0.0, alpha, beta, P))
    cols = {k: np.full(n, np.nan) for k in (
        "beta", "max_err", "min_err", "dominant_err", "top_err", "beta_q_dominant", "beta_q_max",
        "beta_q_min", "residual_max", "lemma3_bound")}
    ritz_m, ritz_values = [], []
    for m in range(1, m_full + 1):
        theta, Y, Q = _ritz_pairs(alpha[:m], beta[:m], P[:m].T)
        ritz_m.append(np.full(m, m))
        ritz_values.append(theta)
        b = beta[m - 1]
        err = np.abs(theta[:, None] - lam[None, :]).min(axis=1)
        bq = b * np.abs(Q[m - 1, :])
        res = np.linalg.norm(C @ Y - Y * theta, axis=0)
        i = m - 1
        cols["beta"][i] = b
        cols["max_err"][i] = err.max()
        cols["min_err"][i] = err.min()
        cols["dominant_err"][i] = err[-1]
        cols["top_err"][i] = lam[-1] - theta[-1]
        cols["beta_q_dominant"][i] = bq[-1]
        cols["beta_q_max"][i] = bq.max()
        cols["beta_q_min"][i] = bq.min()
        cols["residual_max"][i] = res.max()
        cols["lemma3_bound"][i] = 2 * m * (
            (thr["sigma_UB"] - thr["sigma_LB"]) + thr["sigma_Minkowski"])
    hit = np.flatnonzero(cols["beta"][:m_full] <= thr["delta"])
    out = {"m": np.arange(1, n + 1)}
    out.update(cols)
    out.update(thr)
    out["m_threshold"] = int(hit[0] + 1) if hit.size else m_full
    out["eigenvalues"] = lam
    out["ritz_m"] = np.concatenate(ritz_m)
    out["ritz_values"] = np.concatenate(ritz_values)
    return out
