"""All m x n pairs of a dot-product model, in O(|Omega| k + (m + n) k^2), never O(mn).

The model scores pair (i, j) by ``s_ij = p_i . q_j`` with embeddings P (m x k) and Q (n x k).
Over ALL pairs the loss is

    L(P, Q) = sum_{(i,j) in Omega} l(y_ij, s_ij)
              + sum_{(i,j) not in Omega} a_i b_j (a_bar - s_ij)^2                  (OCMF (2)-(3))

with a convex loss l on the observed set Omega, and on every other pair a squared loss toward
the constant ``a_bar`` weighted by the rank-one weights ``a_i b_j`` (the OCMF paper's
``p_i q_j``; a constant rho by default). The split of eqs. (6)-(7) pretends every pair is an
unobserved one and corrects the observed pairs:

    L = L+ + L-,   L+ = sum_{Omega} [l(y_ij, s_ij) - a_i b_j (a_bar - s_ij)^2]     O(|Omega| k)
                   L- = sum_{all i, j} a_i b_j (a_bar - s_ij)^2
                      = a_bar^2 (sum a)(sum b) - 2 a_bar (a^T P)(Q^T b) + <P^T A P, Q^T B Q>
                                                                                   O((m + n) k^2)

with A = diag(a), B = diag(b) (kept as vectors). The Gramians ``P_c = P^T A P`` and
``Q_c = Q^T B Q`` (k x k) carry every m x n sum. The constant ``a_bar^2 (sum a)(sum b)``
(about rho m n) is kept apart (:attr:`AllPairsLoss.constant`): it does not change gradients
or Hessians, and adding it to a small L+ would lose digits.

Derivatives in EMBEDDING space (an m x k or n x k matrix; a model maps them back to its own
variables by the adjoint of its embedding map: ``X^T G`` for the linear ``P = X W`` of OCMF,
a vector-Jacobian product for a network, as in the extreme-similarity paper, Sec. 3):

    dL/dP = D+ Q + 2 A (P Q_c - a_bar 1 (Q^T b)^T)       D+_ij = l+'_ij on Omega   (OCMF (14))
    dL/dQ = D+^T P + 2 B (Q P_c - a_bar 1 (P^T a)^T)

Second order, with ``l+''_ij = l''(y_ij, s_ij) - 2 a_i b_j`` on Omega:

- one block (Q fixed, the alternating methods of OCMF): the exact Hessian of the block,
  ``H_P N = U+ Q + 2 A N Q_c`` with ``U+_ij = l+''_ij (n_i . q_j)``                (OCMF (15));
- both blocks (the Gauss-Newton matrix of the extreme-similarity paper, (31)-(40)): for a
  direction (dP, dQ), ``z_ij = l+''_ij (dp_i . q_j + p_i . dq_j)`` on Omega and
  ``G_P = Z Q + 2 A (dP Q_c + P H_c)``, ``G_Q = Z^T P + 2 B (dQ P_c + Q W_c)`` with
  ``W_c = dP^T A P``, ``H_c = dQ^T B Q``.

:class:`BlockTerms` serves the alternating (block) methods, :class:`AllPairsLoss` the joint
ones. The observed-pair sums run in Numba kernels (:mod:`kmviz.ocmf._kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..pairs import ObservedPairs, _f64, weighted_gram
from . import _kernels as K
from .losses import LOSS_CODES

_LOSS_NAMES = {code: name for name, code in LOSS_CODES.items()}


# ----------------------------------------------------------------------------- one block
class BlockTerms:
    """The all-pairs loss as a function of ONE side's embedding E, the other side's O fixed.

    Built by :meth:`AllPairsLoss.block`. "Rows" are the varying side (users in the W-step,
    items in the H-step); ``pairs`` is read in that side's major order. All methods work in
    embedding space (rows x k).

    Methods
    -------
    value(E) -> (l_plus, l_minus_var)
        L+ and L- without the constant; caches the pair scores for :meth:`gradient`.
    gradient(E) -> rows x k
        dL/dE; caches ``l+''`` on Omega for :meth:`hvp`.
    hvp(N) -> rows x k
        The block Hessian (exact: scores are linear in E) times N, at the last gradient point.
    """

    def __init__(self, row_ptr, idx, labels, w_rows, w_other, a_bar, code, O,
                 dtype=np.float64):
        self.row_ptr, self.idx, self.labels = row_ptr, idx, labels
        self.w, self.wo = _f64(w_rows), _f64(w_other)
        self.a_bar, self.code = float(a_bar), int(code)
        self.O = _f64(O)
        # precision of the two passes TRON repeats (value + gradient, Hessian-vector): the
        # float32 twins read O, E and N in single precision and return double results
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32):
            raise ValueError(f"dtype must be float64 or float32; got {self.dtype}")
        self._Ok = self.O if self.dtype == np.float64 else self.O.astype(self.dtype)
        self.k = self.O.shape[1]
        self.n_rows = row_ptr.shape[0] - 1
        self.nnz = idx.shape[0]
        # the Gramian of the fixed side: every m x n sum goes through it
        self.Oc = weighted_gram(self.O, self.wo)          # O^T B O, k x k
        self.oc_diag = None         # O_c's diagonal when O_c is diagonal (rotate)
        self.ov = self.O.T @ self.wo                        # O^T b, k
        self.scores = np.empty(self.nnz)
        self.d2 = np.empty(self.nnz)          # l+'' at the last gradient point (for hvp)
        # l+'' of the last value pass (a trial point until gradient() accepts it)
        self._d2_trial = np.empty(self.nnz)
        self._trial_valid = False
        self._row = np.empty(self.n_rows)
        # the value pass also leaves D+ O and the rows' Hessian diagonal of its point
        self._G_trial = self._D_trial = None
        self._diag_rows = None       # hess_diag_rows' observed part at the gradient point
        self._EOc = (None, None)     # (E, E O_c): shared by L-'s value and its gradient
        self._w2 = None

    def rotate(self, V, eigenbasis=False) -> None:
        """Re-express the fixed side in the orthonormal basis V (k x k): ``O <- O V``,
        ``O_c <- V^T O_c V``, ``O^T b <- V^T O^T b``. Scores ``e_i . o_j`` are unchanged
        for embeddings rotated the same way (``E V``), so the block problem in ``W V`` has
        the same values, and gradients and Hessian products rotated by V. With V the
        eigenvectors of O_c, the all-pairs part ``2 a_i O_c`` of every row's k x k Hessian
        block becomes diagonal: a Jacobi preconditioner then sees it exactly
        (:class:`kmviz.ocmf.problem.BlockProblem`, ``basis="eig"``). ``eigenbasis=True``
        says V holds O_c's eigenvectors: O_c is then stored as the exact diagonal."""
        V = _f64(V)
        self.O = _f64(self.O @ V)
        self._Ok = self.O if self.dtype == np.float64 else self.O.astype(self.dtype)
        Oc = V.T @ self.Oc @ V
        if eigenbasis:
            # V diagonalizes O_c: the off-diagonal entries left are rounding (about 1e-16
            # ||O_c||); dropping them makes every ``A O_c`` an O(rows k) column scaling
            self.oc_diag = np.ascontiguousarray(np.diag(Oc))
            self.Oc = np.diag(self.oc_diag)
        else:
            self.Oc = 0.5 * (Oc + Oc.T)
            self.oc_diag = None
        self.ov = V.T @ self.ov
        self._EOc = (None, None)

    def times_oc(self, A) -> np.ndarray:
        """``A O_c`` (a new array): a column scaling once O_c is diagonal (:meth:`rotate`
        to its eigenbasis), else a (rows x k) (k x k) product."""
        if self.oc_diag is not None:
            return A * self.oc_diag
        return A @ self.Oc

    # -- value -----------------------------------------------------------------------
    def _e_oc(self, E) -> np.ndarray:
        """``E O_c`` (rows x k), computed once per point for L-'s value and gradient."""
        if self._EOc[0] is not E:
            self._EOc = (E, self.times_oc(E))
        return self._EOc[1]

    def l_minus_var(self, E) -> float:
        """``<E^T A E, O_c> - 2 a_bar (a^T E) . (O^T b)``: L- without its constant.

        Computed as ``sum_i a_i e_i . (E O_c)_i``, sharing ``E O_c`` with
        :meth:`gradient_dense` at the same E (one pass over E when O_c is diagonal)."""
        if self.oc_diag is not None:
            return self.l_minus_var_and_sumsq(E)[0]
        EOc = self._e_oc(E)
        rowq = np.einsum("ij,ij->i", E, EOc)
        return float(self.w @ rowq) - 2.0 * self.a_bar * float((self.w @ E) @ self.ov)

    def l_minus_var_and_sumsq(self, E):
        """``(l_minus_var(E), ||E||_F^2)`` in one pass over E (O_c diagonal only)."""
        E = _f64(E)
        quad, wE, sq = K.diag_quadratic_parts(E, self.w, self.oc_diag)
        return quad - 2.0 * self.a_bar * float(wE @ self.ov), sq

    def add_gradient_dense(self, E, G, lam=0.0) -> np.ndarray:
        """``G += gradient_dense(E) + 2 lam E`` in place (one pass when O_c is diagonal)."""
        if self.oc_diag is not None:
            K.add_dense_gradient_diag(G, _f64(E), self.w, self.oc_diag, self.ov,
                                      self.a_bar, float(lam))
        else:
            G += self.gradient_dense(E)
            if lam:
                G += (2.0 * lam) * E
        return G

    def l_plus(self, E, want_diag=True) -> float:
        """L+ at E; fills :attr:`scores` and, in the same pass over the pairs, D+ O, the
        rows' Hessian diagonal (unless ``want_diag`` is False: :meth:`hess_diag_rows` then
        makes a pass of its own if asked) and l+'' of this point for
        :meth:`gradient_observed`."""
        self._G_trial = np.empty((self.n_rows, self.k), dtype=self.dtype)
        D = np.empty((self.n_rows if want_diag else 0, self.k), dtype=self.dtype)
        K.observed_value_gradient(self.row_ptr, self.idx, self.labels,
                                  np.ascontiguousarray(E, dtype=self.dtype), self._Ok,
                                  self.w, self.wo, self.a_bar, self.code, self.scores,
                                  self._d2_trial, self._G_trial, D, self._row, want_diag)
        self._D_trial = D if want_diag else None
        self._trial_valid = True
        return float(self._row.sum())

    def value(self, E):
        return self.l_plus(E), self.l_minus_var(E)

    def l_plus_shifted(self, s0, ds, alpha) -> float:
        """L+ at the pair scores ``s0 + alpha ds`` (O(|Omega|): scores are linear)."""
        K.observed_value_shifted(self.row_ptr, self.idx, self.labels, s0, ds, float(alpha),
                                 self.w, self.wo, self.a_bar, self.code, self._row)
        return float(self._row.sum())

    def line_start(self, dE):
        """``(s0, ds)`` for a line search along the embedding direction dE: the pair scores
        at the last point and ``dE``'s (handles that :meth:`l_plus_shifted` and
        :meth:`move_scores` take; arrays here, tokens on a cluster)."""
        return self.scores.copy(), self.pair_scores(dE)

    def move_scores(self, s0, ds, alpha):
        """Move the pair scores to ``s0 + alpha ds`` (a line search accepted alpha)."""
        self.set_scores(s0 + alpha * ds)

    def set_scores(self, scores):
        """Set the pair scores directly (a line search moved along a direction)."""
        self.scores[:] = scores
        self._trial_valid = False
        self._G_trial = self._D_trial = None

    def pair_scores(self, E, out=None):
        out = np.empty(self.nnz) if out is None else out
        K.pair_scores(self.row_ptr, self.idx, _f64(E), self.O, out)
        return out

    # -- first order -------------------------------------------------------------------
    def gradient_observed(self, scores=None) -> np.ndarray:
        """D+ O (rows x k) at the cached pair scores (or the given ones); makes that point's
        l+'' the one :meth:`hvp_observed` uses."""
        if scores is None and self._trial_valid:
            G = _f64(self._G_trial) if self.dtype == np.float64 else \
                self._G_trial.astype(np.float64)
            self._diag_rows = self._D_trial
            self.d2, self._d2_trial = self._d2_trial, self.d2
            self._G_trial = self._D_trial = None
            self._trial_valid = False
            return G
        G = np.empty((self.n_rows, self.k))
        K.observed_gradient(self.row_ptr, self.idx, self.labels,
                            self.scores if scores is None else scores, self.O, self.w,
                            self.wo, self.a_bar, self.code, G, self.d2)
        self._diag_rows = None
        return G

    def gradient_at_zero(self) -> np.ndarray:
        """dL/dE at E = 0 (all scores 0), without a value pass: for TRON's reference norm."""
        from .losses import numpy_loss

        rows = np.repeat(np.arange(self.n_rows), np.diff(self.row_ptr))
        _, d1, _ = numpy_loss(_LOSS_NAMES[self.code], self.labels, 0.0)
        coef = d1 + 2.0 * self.a_bar * self.w[rows] * self.wo[self.idx]
        G = np.empty((self.n_rows, self.k))
        K.rows_combine(self.row_ptr, self.idx, np.ascontiguousarray(coef), self.O, G)
        G -= 2.0 * self.a_bar * (self.w[:, None] * self.ov[None, :])
        return G

    def gradient_dense(self, E) -> np.ndarray:
        """``2 A (E O_c - a_bar 1 (O^T b)^T)``: the gradient of L- (rows x k)."""
        G = self._e_oc(E) - self.a_bar * self.ov[None, :]
        G *= 2.0 * self.w[:, None]
        return G

    def gradient(self, E) -> np.ndarray:
        """dL/dE at E (recomputes the scores)."""
        self.l_plus(E)
        return self.gradient_observed() + self.gradient_dense(E)

    # -- second order ------------------------------------------------------------------
    def hvp_observed(self, N) -> np.ndarray:
        """U+ O with ``U+_ij = l+''_ij (n_i . o_j)`` (at the last gradient point)."""
        U = np.empty((self.n_rows, self.k))
        K.observed_hvp(self.row_ptr, self.idx, _f64(N), self.O, self.d2, U)
        return U

    def hvp_dense(self, N) -> np.ndarray:
        """``2 A N O_c``: L-'s part of the block Hessian times N."""
        return 2.0 * (self.w[:, None] * self.times_oc(N))

    def hvp(self, N) -> np.ndarray:
        """The block Hessian times N: ``U+ O + 2 A N O_c``, the dense part added inside the
        pair kernel (no m x k temporaries)."""
        N = _f64(N)
        U = np.empty((self.n_rows, self.k), dtype=self.dtype)
        if self._w2 is None:
            self._w2 = 2.0 * self.w
        K.observed_hvp(self.row_ptr, self.idx, np.ascontiguousarray(N, dtype=self.dtype),
                       self._Ok, self.d2, U,
                       base=np.ascontiguousarray(self.times_oc(N), dtype=self.dtype),
                       base_w=self._w2)
        return U if self.dtype == np.float64 else U.astype(np.float64)

    def hess_diag_rows(self) -> np.ndarray:
        """``R[i, f] = sum_j l+''_ij o_jf^2 + 2 a_i (O_c)_ff`` (rows x k): the diagonal of
        row i's k x k Hessian block (at the last gradient point), for a Jacobi
        preconditioner. Nonnegative: the all-pairs part bounds the negative l+''."""
        R = np.multiply.outer(2.0 * self.w, np.diag(self.Oc))
        if self._diag_rows is not None:    # left by the value pass of this point
            R += self._diag_rows
        else:
            D = np.empty((self.n_rows, self.k))
            K.observed_hess_diag(self.row_ptr, self.idx, self.O, self.d2, D)
            R += D
        return R


# ----------------------------------------------------------------------------- both sides
@dataclass
class AllPairsValue:
    """L = l_plus + l_minus_var + constant (see the module docstring)."""

    l_plus: float
    l_minus_var: float
    constant: float

    @property
    def l_minus(self) -> float:
        return self.l_minus_var + self.constant

    @property
    def total(self) -> float:
        return self.l_plus + self.l_minus


class AllPairsLoss:
    """The all-pairs loss ``L(P, Q)`` of a dot-product model (module docstring).

    Parameters
    ----------
    pairs : ObservedPairs
        Omega with its labels.
    loss : {"squared", "logistic", "squared_hinge"}
        l on Omega (:mod:`kmviz.ocmf.losses`).
    a, b : array-like, shape (m,) and (n,)
        Rank-one weights of the unobserved pairs (OCMF's p and q).
    a_bar : float
        The value unobserved pairs are pulled toward (OCMF's a-bar; -1 or 0 in the paper).

    Both-side methods (:meth:`value`, :meth:`gradients`, :meth:`gauss_newton`) serve joint
    methods such as a Gauss-Newton over two towers; :meth:`block` serves alternating ones.
    """

    def __init__(self, pairs: ObservedPairs, loss: str, a, b, a_bar: float):
        if loss not in LOSS_CODES:
            raise ValueError(f"unknown loss {loss!r}; choose one of {', '.join(LOSS_CODES)}")
        self.pairs = pairs
        self.loss = loss
        self.code = LOSS_CODES[loss]
        self.a, self.b = _f64(a), _f64(b)
        if self.a.shape != (pairs.n_rows,) or self.b.shape != (pairs.n_cols,):
            raise ValueError(f"weights a {self.a.shape} and b {self.b.shape} must match the "
                             f"pairs' shape ({pairs.n_rows}, {pairs.n_cols}).")
        self.a_bar = float(a_bar)
        self.labels_t = np.ascontiguousarray(pairs.labels[pairs.col_perm])
        self._d2 = None

    @property
    def constant(self) -> float:
        """``a_bar^2 (sum a)(sum b)``: the part of L- that depends on no variable."""
        return self.a_bar ** 2 * float(self.a.sum()) * float(self.b.sum())

    def block(self, side: str, other, dtype=np.float64) -> BlockTerms:
        """Terms with ``side`` ("rows" = P varies, "cols" = Q varies) and ``other`` fixed;
        ``dtype`` is the precision of the repeated pair passes (:class:`BlockTerms`)."""
        p = self.pairs
        if side == "rows":
            return BlockTerms(p.row_ptr, p.cols, p.labels, self.a, self.b, self.a_bar,
                              self.code, other, dtype)
        if side == "cols":
            return BlockTerms(p.col_ptr, p.col_rows, self.labels_t, self.b, self.a,
                              self.a_bar, self.code, other, dtype)
        raise ValueError(f"side must be 'rows' or 'cols'; got {side!r}")

    # -- joint -------------------------------------------------------------------------
    def value(self, P, Q) -> AllPairsValue:
        P, Q = _f64(P), _f64(Q)
        rows = self.block("rows", Q)
        return AllPairsValue(rows.l_plus(P), rows.l_minus_var(P), self.constant)

    def gradients(self, P, Q):
        """``(dL/dP, dL/dQ)``; caches ``l+''`` on Omega for :meth:`gauss_newton`."""
        P, Q = _f64(P), _f64(Q)
        p = self.pairs
        rows = self.block("rows", Q)
        rows.l_plus(P)
        GP = rows.gradient_observed() + rows.gradient_dense(P)
        # D+ in row-major order: l+' = (G row sums are not enough), recompute per pair
        dplus = np.empty(p.nnz)
        self._dplus_and_d2(rows.scores, dplus)
        GQ = np.empty_like(Q)
        K.rows_combine(p.col_ptr, p.col_rows, dplus, P, GQ, perm=p.col_perm)
        Pc = weighted_gram(P, self.a)
        GQ += 2.0 * (self.b[:, None] * (Q @ Pc - self.a_bar * (P.T @ self.a)[None, :]))
        return GP, GQ

    def _dplus_and_d2(self, scores, dplus):
        from .losses import numpy_loss

        p = self.pairs
        _, d1, d2 = numpy_loss(self.loss, p.labels, scores)
        c = self.a[p.rows] * self.b[p.cols]
        dplus[:] = d1 - 2.0 * c * (scores - self.a_bar)
        self._d2 = d2 - 2.0 * c

    def gauss_newton(self, P, Q, dP, dQ):
        """The Gauss-Newton matrix at (P, Q) times (dP, dQ), after :meth:`gradients`."""
        if self._d2 is None:
            raise RuntimeError("call gradients(P, Q) before gauss_newton")
        P, Q, dP, dQ = _f64(P), _f64(Q), _f64(dP), _f64(dQ)
        p = self.pairs
        z = np.empty(p.nnz)
        GP = np.empty_like(P)
        K.observed_joint_gn(p.row_ptr, p.cols, P, Q, dP, dQ, self._d2, z, GP)
        GQ = np.empty_like(Q)
        K.rows_combine(p.col_ptr, p.col_rows, z, P, GQ, perm=p.col_perm)
        Pc, Qc = weighted_gram(P, self.a), weighted_gram(Q, self.b)
        Wc = dP.T @ (P * self.a[:, None])   # dP^T A P
        Hc = dQ.T @ (Q * self.b[:, None])   # dQ^T B Q
        GP += 2.0 * (self.a[:, None] * (dP @ Qc + P @ Hc))
        GQ += 2.0 * (self.b[:, None] * (dQ @ Pc + Q @ Wc))
        return GP, GQ
