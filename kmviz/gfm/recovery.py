"""Recovery error of a gFM against a known truth, computed from low-rank factors.

The paper's quantities (Sec. 4, Lemma 11): ``beta_t = ||w* - w||``, ``gamma_t = ||M* - M||``,
``eps_t = beta_t + gamma_t`` and ``alpha_t = tan theta(U^(t), U*)``. Here ``gamma`` is
reported in the Frobenius norm (``err_M``, and ``eps = err_w + err_M``) and in the spectral
norm of the paper (``err_M_spec``, ``eps_spec``). With ``M* = U* diag(lambda*) U*^T`` and
``M = (U V^T + V U^T)/2``, ``M* - M = B C B^T`` for ``B = [U*, U, V]`` (d x 3k) and a
3k x 3k block matrix C; a QR of B turns both norms into those of a 3k x 3k matrix, so no
d x d matrix is formed (O(dk^2)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Truth:
    """A planted gFM ``y = x^T w + x^T M x`` with ``M = U diag(lam) U^T``.

    Attributes
    ----------
    w : ndarray (d,)
    U : ndarray (d, r), orthonormal columns, sorted by ``|lam|`` descending
    lam : ndarray (r,)
    intercept : float
    """

    w: np.ndarray
    U: np.ndarray
    lam: np.ndarray
    intercept: float = 0.0

    @property
    def d(self) -> int:
        return self.U.shape[0]

    @property
    def rank(self) -> int:
        return int(np.count_nonzero(self.lam))

    @property
    def M(self) -> np.ndarray:
        """The dense d x d M* (O(d^2): tests, small-d figures)."""
        return (self.U * self.lam) @ self.U.T

    @property
    def w_norm(self) -> float:
        return float(np.linalg.norm(self.w))

    @property
    def M_fro(self) -> float:
        return float(np.linalg.norm(self.lam))

    @property
    def M_spec(self) -> float:
        return float(np.max(np.abs(self.lam))) if self.lam.size else 0.0

    def top(self, k: int) -> "Truth":
        """The best rank-k part M*_k (the reference of the noisy analysis, Sec. 4.1)."""
        return Truth(self.w, self.U[:, :k], self.lam[:k], self.intercept)


def as_truth(truth, d: int | None = None) -> Truth:
    """A :class:`Truth` from a Truth, an object with ``.truth`` (a synthetic problem),
    ``(w_star, M_star)`` with a dense symmetric ``M_star`` (eigendecomposed: O(d^3), for
    oracles and small d), or ``(w_star, (U_star, lambda_star))``."""
    if isinstance(truth, Truth):
        out = truth
    elif hasattr(truth, "truth") and isinstance(truth.truth, Truth):
        out = truth.truth
    elif isinstance(truth, (tuple, list)) and len(truth) in (2, 3):
        w = np.asarray(truth[0], dtype=np.float64).ravel()
        M = truth[1]
        b = float(truth[2]) if len(truth) == 3 else 0.0
        if isinstance(M, (tuple, list)) and len(M) == 2:
            U = np.asarray(M[0], dtype=np.float64)
            lam = np.asarray(M[1], dtype=np.float64).ravel()
            if U.ndim != 2 or U.shape[1] != lam.shape[0]:
                raise ValueError(f"truth's factors must be (U_star (d, r), lambda_star (r,)); "
                                 f"got shapes {U.shape} and {lam.shape}.")
            Q, R = np.linalg.qr(U)  # accept any factor: M* = U diag(lam) U^T
            C = (R * lam) @ R.T
            lam, E = np.linalg.eigh(0.5 * (C + C.T))
            U = Q @ E
        else:
            M = np.asarray(M, dtype=np.float64)
            if M.ndim != 2 or M.shape[0] != M.shape[1]:
                raise ValueError(f"truth's M_star must be a square (d, d) matrix; got shape "
                                 f"{M.shape}.")
            lam, U = np.linalg.eigh(0.5 * (M + M.T))
            keep = np.abs(lam) > 1e-12 * max(1.0, float(np.max(np.abs(lam), initial=0.0)))
            lam, U = lam[keep], U[:, keep]
        order = np.argsort(-np.abs(lam), kind="stable")
        out = Truth(w, np.ascontiguousarray(U[:, order]), lam[order], b)
    else:
        raise TypeError("truth must be (w_star, M_star), (w_star, (U_star, lambda_star)), a "
                        f"kmviz.gfm.Truth or a synthetic problem; got {type(truth).__name__}.")
    if d is not None and (out.w.shape[0] != d or out.U.shape[0] != d):
        raise ValueError(f"truth has dimension {out.w.shape[0]} but the model has d={d} "
                         "features; pass the ground truth of the same features.")
    return out


def difference_eigenvalues(truth: Truth, U, V) -> np.ndarray:
    """The nonzero eigenvalues of ``M* - (U V^T + V U^T)/2`` (at most r + 2k of them)."""
    k = U.shape[1]
    r = truth.U.shape[1]
    B = np.hstack([truth.U, U, V])
    C = np.zeros((r + 2 * k, r + 2 * k))
    C[np.arange(r), np.arange(r)] = truth.lam
    C[r:r + k, r + k:] = -0.5 * np.eye(k)
    C[r + k:, r:r + k] = -0.5 * np.eye(k)
    R = np.linalg.qr(B, mode="r")
    return np.linalg.eigvalsh(R @ C @ R.T)


def tan_theta(U, U_star) -> float:
    """tan of the largest principal angle between span(U) and span(U*) (both orthonormal).

    ``cos theta = sigma_min(U*^T U)`` (Zhu & Knyazev, as in the paper), so
    ``tan theta = sqrt(1 - sigma_min^2) / sigma_min``; inf for orthogonal subspaces. When the
    ranks differ the angle is that of the smaller subspace inside the larger.
    """
    s = np.linalg.svd(U_star.T @ U, compute_uv=False)
    s_min = float(min(1.0, s.min())) if s.size else 0.0
    if s_min <= 0.0:
        return float("inf")
    return float(np.sqrt(max(0.0, 1.0 - s_min * s_min)) / s_min)


def recovery_errors(truth: Truth, w, U, V, *, basis=None) -> dict:
    """The paper's error quantities of a model (w, M = (U V^T + V U^T)/2) against ``truth``.

    Parameters
    ----------
    basis : ndarray (d, k), optional
        Orthonormal basis whose angle to U* is reported (default: an orthonormal basis of
        span(U)).

    Returns
    -------
    dict
        ``err_w`` (beta_t), ``err_M`` (``||M* - M||_F``), ``err_M_spec`` (gamma_t, spectral),
        ``eps`` (``err_w + err_M``), ``eps_spec`` (the paper's eps_t), ``rel_err``
        (``eps / (||w*|| + ||M*||_F)``) and ``tan_theta`` (alpha_t, against the top-k
        eigenvectors of M*).
    """
    ev = difference_eigenvalues(truth, U, V)
    err_w = float(np.linalg.norm(truth.w - w))
    err_M = float(np.sqrt(np.sum(ev * ev)))
    err_spec = float(np.max(np.abs(ev))) if ev.size else 0.0
    scale = truth.w_norm + truth.M_fro
    k = U.shape[1]
    if basis is None:
        basis = np.linalg.qr(U)[0]
    return {
        "err_w": err_w,
        "err_M": err_M,
        "err_M_spec": err_spec,
        "eps": err_w + err_M,
        "eps_spec": err_w + err_spec,
        "rel_err": (err_w + err_M) / scale if scale > 0 else float("nan"),
        "tan_theta": tan_theta(basis, truth.U[:, :k]),
    }
