"""Algorithm 1 of Lin & Ye (NIPS 2016), One-Pass gFM, one mini-batch at a time.

The model is ``y = b + z^T w + z^T M z`` with ``M = (U V^T + V U^T)/2`` (eq. (1); the
intercept b is ours, see below) and z the standardized features. The state is O(kd):
w (d), U (d x k, orthonormal), V (d x k) and b. Each batch is used once:

- :func:`initialize` (t = 0, line 2): ``w = 0, V = 0`` and U the top-k eigenvectors by
  magnitude of ``H_1 - h_2/2 I = (1/2n) A'(y) - (1/2n)(1^T y) I``, by Lanczos
  (``scipy.sparse.linalg.eigsh`` on a LinearOperator of matrix-vector products);
- :func:`update` (t >= 1, lines 4-8) on a FRESH batch, with the residual
  ``r = y - b - Z w - A(M)`` of the current model and
  ``H_1 = (1/2n) A'(r), h_2 = (1/n) 1^T r, h_3 = (1/n) Z^T r``:
  ``U_hat = (H_1 - h_2/2 I + M) U`` (one noisy power step), ``U_new = QR(U_hat)``,
  ``w_new = w + h_3``, ``V_new = (H_1 - h_2/2 I + M) U_new``.

By the moment identities of x ~ N(0, I) (Theorem 4, Lemmas 5-9),
``H_1 - h_2/2 I + M ≈ M*`` and ``h_3 + w ≈ w*`` up to O(delta eps_t), hence the linear rate.
Reading of the printed algorithm (digest, Part B3): the statistics of step t use the batch
X^(t) and the model of step t-1; Lemma 10's ``+ tr(.) I`` in H_1 is ``+ tr(.)/2 I``.

Intercept (``fit_intercept=True``, not in the paper): a constant c in the residual shifts
both ``H_1`` and ``h_2/2 I`` by about c/2 and cancels in ``H_1 - h_2/2 I``, so M and w are
learned as before; ``h_2 ≈ (b* - b) + tr(M* - M)`` then gives
``b_new = b + h_2 - (tr M_new - tr M)``. The initialization centres y on its batch mean
(``b = mean(y)``). With ``fit_intercept=False`` and no standardization the steps are exactly
Algorithm 1.

Each step reads its batch twice (statistics, then ``H_1 U_new`` for V); the initialization
reads its batch once per Lanczos matrix-vector product (about 10-20 of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import eigh, qr
from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh

from ..exceptions import InvalidParameterError, NumericalError
from .operators import (
    ChunkedBatch,
    Standardizer,
    batch_targets,
    residual_pass,
    weighted_pass,
)

#: Relative accuracy asked of the Lanczos initialization (eigsh ``tol``). The analysis only
#: needs U^(0) to O(delta) (Lemma 12), and the batch's own statistical error (delta ~
#: sqrt(k d / n), 0.1-0.5 at n = 10-20 k d) is far larger. Measured at d = 1,000, k = 3,
#: n = 30,000: tol = 1e-3 with a Krylov space of 12 takes 13 products (tol = 1e-6 with
#: eigsh's default 20: 21 products) and moves tan theta(U^(0), U*) by 1e-5.
INIT_TOL = 1e-3
#: Krylov space of the Lanczos initialization (ARPACK's ncv), at least 2k + 2.
INIT_NCV = 12


@dataclass
class OnePassState:
    """The O(kd) state of Algorithm 1 (standardized coordinates).

    Attributes
    ----------
    w : ndarray (d,)
        First-order coefficients w^(t).
    U : ndarray (d, k)
        Orthonormal U^(t) (the power iterate).
    V : ndarray (d, k)
        V^(t); the model's M^(t) = (U V^T + V U^T)/2.
    b : float
        Intercept (0 unless ``fit_intercept``).
    std : Standardizer
        The feature scaling, fixed at initialization.
    fit_intercept : bool
    n_batches : int
        Batches consumed (the initialization batch counts; the paper's t is n_batches - 1).
    n_seen : int
        Instances consumed.
    """

    w: np.ndarray
    U: np.ndarray
    V: np.ndarray
    b: float
    std: Standardizer
    fit_intercept: bool
    n_batches: int = 0
    n_seen: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return self.U.shape[1]

    @property
    def d(self) -> int:
        return self.U.shape[0]

    def M_apply(self, Z: np.ndarray) -> np.ndarray:
        """``M Z = (U (V^T Z) + V (U^T Z)) / 2`` in O(dk m)."""
        return 0.5 * (self.U @ (self.V.T @ Z) + self.V @ (self.U.T @ Z))

    def trace_M(self) -> float:
        """``tr(M) = sum_q u_q^T v_q``."""
        return float(np.einsum("ij,ij->", self.U, self.V))

    def copy(self) -> "OnePassState":
        return OnePassState(self.w.copy(), self.U.copy(), self.V.copy(), float(self.b),
                            self.std, self.fit_intercept, self.n_batches, self.n_seen,
                            dict(self.extra))


def _top_k_by_magnitude(op_apply, d, k, rng, tol=INIT_TOL):
    """Top-k eigenpairs by |eigenvalue| of the symmetric operator ``op_apply`` (d x d).

    Lanczos (ARPACK's implicitly restarted Lanczos through eigsh, which="LM") on a
    LinearOperator; for tiny d (ARPACK needs k < d and a Krylov space of 2k + 1 < d) the
    operator is applied to the identity in one block product instead.
    Returns (eigenvalues, eigenvectors, number of operator applications).
    """
    count = [0]

    def matmat(Z):
        count[0] += Z.shape[1] if Z.ndim == 2 else 1
        return op_apply(Z)

    if d <= 2 * k + 1:
        H = matmat(np.eye(d))
        vals, vecs = eigh(0.5 * (H + H.T))
    else:
        op = LinearOperator((d, d), matvec=lambda v: matmat(v.reshape(-1, 1)).ravel(),
                            matmat=matmat, dtype=np.float64)
        v0 = rng.standard_normal(d)
        ncv = min(d, max(2 * k + 2, INIT_NCV))
        try:
            vals, vecs = eigsh(op, k=k, which="LM", v0=v0, tol=tol, ncv=ncv)
        except ArpackError as exc:
            raise NumericalError(
                f"the Lanczos initialization of the rank-{k} factors failed ({exc}). Fix: "
                "use larger batches (batch_size), a lower rank, or standardize=True.") from None
    order = np.argsort(-np.abs(vals), kind="stable")[:k]
    return vals[order], np.ascontiguousarray(vecs[:, order]), count[0]


def initialize(batch: ChunkedBatch, rank: int, *, std: Standardizer | None = None,
               standardize: bool = True, fit_intercept: bool = True, rng=None,
               engine: str = "auto", check: bool = True):
    """Line 2 of Algorithm 1 on the first batch: ``w = 0, V = 0, U = top-k eigvecs``.

    Parameters
    ----------
    batch : ChunkedBatch
        The initialization batch (batch 0); it is read once per Lanczos product.
    rank : int
        k.
    std : Standardizer, optional
        A fixed feature scaling; by default estimated from this batch when ``standardize``,
        else the identity.
    fit_intercept : bool
        Centre y on its batch mean (b^(0) = mean y) instead of the paper's b = 0.
    rng : numpy Generator
        Draws the Lanczos start vector.

    Returns
    -------
    state : OnePassState
    info : dict
        ``n`` (rows), ``rmse`` and ``objective`` of the residual the step used
        (``y - b^(0)``), ``h2``, ``n_matvec``, ``ritz_max``/``ritz_min`` (the Ritz values).
    """
    rng = np.random.default_rng(rng)
    y, d = batch_targets(batch, check=check)
    n = y.shape[0]
    if n < rank:
        raise ValueError(f"the first batch has {n} rows, fewer than rank={rank}; use batches "
                         f"of at least rank rows (batch_size >= rank).")
    if rank > d:
        raise ValueError(f"rank={rank} exceeds the number of features d={d}; choose rank <= d.")
    if std is None:
        std = _standardizer_of(batch) if standardize else Standardizer.identity(d)
    b0 = float(y.mean()) if fit_intercept else 0.0
    r = y - b0
    h2 = float(r.mean())
    if n == 1 and fit_intercept:  # y - mean(y) = 0: a zero moment operator, nothing to learn
        raise InvalidParameterError(
            "GeneralizedFM: a first batch of 1 row, centred on its own mean by "
            "fit_intercept, leaves a zero residual, so the factors cannot be initialized. "
            "Fix: use batch_size of at least 2 (hundreds in practice), or "
            "fit_intercept=False.")

    def op_apply(Z):
        return weighted_pass(batch, r, Z, std, engine) / (2.0 * n) - 0.5 * h2 * Z

    if not np.any(r) and d > 2 * rank + 1:
        # a zero moment operator (every target equal): ARPACK cannot start from it, and any
        # orthonormal U is an eigenbasis; later batches move it
        U, vals, n_mv = qr(rng.standard_normal((d, rank)), mode="economic")[0], \
            np.zeros(rank), 0
    else:
        vals, U, n_mv = _top_k_by_magnitude(op_apply, d, rank, rng)
    state = OnePassState(w=np.zeros(d), U=U, V=np.zeros((d, rank)), b=b0, std=std,
                         fit_intercept=bool(fit_intercept), n_batches=1, n_seen=n)
    mse = float(np.mean(r * r))
    info = {"n": n, "objective": 0.5 * mse, "rmse": float(np.sqrt(mse)), "h2": h2,
            "h3_norm": 0.0, "n_matvec": n_mv, "ritz_max": float(np.max(vals)),
            "ritz_min": float(np.min(vals))}
    return state, info


def _standardizer_of(batch: ChunkedBatch) -> Standardizer:
    """Column means and standard deviations over all chunks of a batch."""
    return Standardizer.from_chunks(Xc for Xc, _ in batch)


def update(state: OnePassState, batch: ChunkedBatch, *, engine: str = "auto",
           check: bool = True, timer=None) -> dict:
    """Lines 4-8 of Algorithm 1 on a fresh batch; updates ``state`` in place.

    ``timer(name)``, if given, is a context manager timing the phases "residual" (the
    statistics pass), "qr" (power step and QR, O(dk^2)) and "v_update" (the second pass).

    Returns
    -------
    dict
        ``n``, ``objective`` (``||r||^2 / 2n``: eq. (3)'s loss on the fresh batch under the
        model before the step), ``rmse`` (``||r|| / sqrt(n)``), ``h2`` and ``h3_norm``.
    """
    import contextlib

    phase = timer or (lambda name: contextlib.nullcontext())
    U, V, w = state.U, state.V, state.w
    with phase("residual"):
        r, S = residual_pass(batch, U, V, w, state.b, state.std, engine, check=check)
    n = r.shape[0]
    if n < state.rank:
        raise ValueError(f"the batch has {n} rows, fewer than rank={state.rank}; use batches "
                         f"of at least rank rows (batch_size >= rank).")
    with phase("qr"):
        h2 = float(r.mean())
        h3 = S[:, 0] / n
        H1U = S[:, 1:] / (2.0 * n)
        # U_hat = (H_1 - h_2/2 I + M) U: one noisy power step (line 5)
        U_hat = H1U - 0.5 * h2 * U + state.M_apply(U)
        U_new = qr(U_hat, mode="economic")[0]
    with phase("v_update"):
        # V_new = (H_1 - h_2/2 I + M) U_new (line 8): H_1 U_new needs a second pass
        H1U_new = weighted_pass(batch, r, U_new, state.std, engine) / (2.0 * n)
        V_new = H1U_new - 0.5 * h2 * U_new + state.M_apply(U_new)
    tr_old = state.trace_M()
    state.U = np.ascontiguousarray(U_new)
    state.V = np.ascontiguousarray(V_new)
    state.w = w + h3  # line 7
    if state.fit_intercept:
        state.b = float(state.b + h2 - (state.trace_M() - tr_old))
    state.n_batches += 1
    state.n_seen += n
    mse = float(np.mean(r * r))
    return {"n": n, "objective": 0.5 * mse, "rmse": float(np.sqrt(mse)), "h2": h2,
            "h3_norm": float(np.linalg.norm(h3))}
