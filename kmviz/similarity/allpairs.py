"""Function value, gradient and Gauss-Newton products over all m x n pairs (paper Sec. 2-3).

The model scores pair (i, j) by ``Yhat_ij = f(theta_u; u_i)^T g(theta_v; v_j) = p_i^T q_j``
and minimizes (4)-(7)

    L(theta) = sum_{(i,j) in O} l(Y_ij, Yhat_ij)
               + sum_{(i,j) not in O} 0.5 omega a_i b_j (Ytilde_ij - Yhat_ij)^2
               + 0.5 lambda ||theta||^2

with a convex loss l on the observed pairs O, rank-one weights ``a_i b_j`` and a low-rank
imputation ``Ytilde = Ptilde Qtilde^T`` on all other pairs. The split (10)-(11),
``L = L+ + omega L- + lambda Psi`` with L+ over O only and L- over all pairs, and the k x k
Gramians of the per-theta cache (Alg. 2)

    P_c = P^T A P,  Q_c = Q^T B Q,  Phat_c = Ptilde^T A P,  Qhat_c = Qtilde^T B Q,
    L- = 0.5 <Ptilde_c, Qtilde_c> - <Phat_c, Qhat_c> + 0.5 <P_c, Q_c>              (13), (53)

make every evaluation cost O(|O| k + (m + n) k^2 + tower passes), never O(mn):

- gradient (Alg. 1, (27)): ``[<J^u, M_u>; <J^v, M_v>] + lambda theta`` with
  ``M_u = X Q + omega A (P Q_c - Ptilde Qhat_c)`` and
  ``M_v = X^T P + omega B (Q P_c - Qtilde Phat_c)``;
- Gauss-Newton product (29)-(40): ``W, H`` = tower JVPs of d, ``W_c = W^T A P``,
  ``H_c = H^T B Q``, ``Z_ij = c_ij (w_i^T q_j + p_i^T h_j)`` on O and
  ``G d = [<J^u, Z Q + omega A (W Q_c + P H_c)>; <J^v, Z^T P + omega B (H P_c + Q W_c)>]
  + lambda d``.

The constant ``0.5 omega <Ptilde_c, Qtilde_c>`` (about 0.5 omega m n for Ytilde = -1) is kept
apart from the variable part (:attr:`Evaluation.f_var`) that the line searches compare, so
no digits are lost to it (digest Sec. 5.1 (f)).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..pairs import ObservedPairs, _f64
from . import _kernels as K

#: Re-exported: the pairs live in kmviz.pairs (shared with OCMF).
__all__ = ["AllPairsProblem", "Evaluation", "ObservedPairs", "PHASES", "constant_imputation"]

#: Phase names timed by :class:`AllPairsProblem` (the paper's cost terms (15), (28), (40)).
PHASES = ("tower_forward", "gramians", "observed_pairs", "vjp", "jvp", "dense_terms")


def constant_imputation(value, m, n):
    """Ptilde, Qtilde (ktilde = 1) with ``Ytilde = value`` everywhere; ktilde = 0 for 0."""
    if value == 0:
        return np.zeros((m, 0)), np.zeros((n, 0))
    return np.full((m, 1), float(value)), np.ones((n, 1))


@dataclass
class Evaluation:
    """The per-theta cache of Alg. 2: everything the gradient and CG reuse at theta."""

    theta: np.ndarray
    P: np.ndarray
    Q: np.ndarray
    Pc: np.ndarray
    Qc: np.ndarray
    Phat_c: np.ndarray
    Qhat_c: np.ndarray
    yhat: np.ndarray
    dplus: np.ndarray       # X_ij = dl+/dYhat on O (row-major)
    cplus: np.ndarray       # c_ij = d2l+/dYhat2 on O
    l_plus: float
    l_minus_var: float      # L- without 0.5 <Ptilde_c, Qtilde_c>
    reg: float
    f_var: float            # L+ + omega L-_var + lambda Psi (what line searches compare)
    cache_u: dict = field(default_factory=dict)
    cache_v: dict = field(default_factory=dict)
    pairs_key: object = None    # on a cluster: names the per-pair X, c the workers keep


class AllPairsProblem:
    """L, grad L and G d of the all-pairs objective for two towers (module docstring).

    Parameters
    ----------
    pairs : ObservedPairs
        O with labels Y_ij (+1 for one-class data).
    user_tower, item_tower : towers (:mod:`kmviz.similarity.towers`)
    U, V : tower inputs (dense or CSR, or None for identity towers)
    loss : {"logistic", "squared"}
    omega, lambda_ : float
    a, b : arrays (m,), (n,)
        Rank-one weights of the unobserved pairs.
    Ptilde, Qtilde : arrays (m, kt), (n, kt)
        The imputation ``Ytilde = Ptilde Qtilde^T`` (kt = 0: Ytilde = 0).
    timer : dict, optional
        Seconds per phase of :data:`PHASES`, accumulated.
    """

    def __init__(self, pairs, user_tower, item_tower, U, V, loss="logistic", omega=1.0,
                 lambda_=1.0, a=None, b=None, Ptilde=None, Qtilde=None, timer=None):
        if loss not in K.LOSS_CODES:
            raise ValueError(f"unknown loss {loss!r}; choose one of "
                             f"{', '.join(K.LOSS_CODES)}.")
        m, n = pairs.n_rows, pairs.n_cols
        self.pairs, self.loss, self.code = pairs, loss, K.LOSS_CODES[loss]
        self.fu, self.fv, self.U, self.V = user_tower, item_tower, U, V
        self.omega, self.lam = float(omega), float(lambda_)
        self.a = np.ones(m) if a is None else _f64(a)
        self.b = np.ones(n) if b is None else _f64(b)
        if self.a.shape != (m,) or self.b.shape != (n,):
            raise ValueError(f"weights a {self.a.shape} and b {self.b.shape} must have shapes "
                             f"({m},) and ({n},).")
        if Ptilde is None:
            Ptilde, Qtilde = constant_imputation(-1.0, m, n)
        self.Pt, self.Qt = _f64(Ptilde), _f64(Qtilde)
        if self.Pt.shape[0] != m or self.Qt.shape[0] != n or self.Pt.shape[1] != \
                self.Qt.shape[1]:
            raise ValueError(f"Ptilde {self.Pt.shape} and Qtilde {self.Qt.shape} must be "
                             f"({m}, kt) and ({n}, kt).")
        self.Pt_c = self.Pt.T @ (self.a[:, None] * self.Pt)
        self.Qt_c = self.Qt.T @ (self.b[:, None] * self.Qt)
        #: 0.5 omega <Ptilde_c, Qtilde_c>: the part of L that no variable changes
        self.constant = 0.5 * self.omega * float(np.sum(self.Pt_c * self.Qt_c))
        self.Du, self.Dv = int(user_tower.n_params), int(item_tower.n_params)
        self.n_params = self.Du + self.Dv
        self.timer = {} if timer is None else timer
        self.n_fun = self.n_grad = self.n_gnvp = 0

    # -- helpers --------------------------------------------------------------------
    def _tick(self, name, t0):
        t1 = time.perf_counter()
        self.timer[name] = self.timer.get(name, 0.0) + (t1 - t0)
        return t1

    def split(self, theta):
        return theta[:self.Du], theta[self.Du:]

    def init(self, rng):
        return np.concatenate([self.fu.init(rng), self.fv.init(rng)])

    def gram(self, E, w):
        """``E^T diag(w) E``; constant weights (the default a = b = 1) go to BLAS's
        syrk-shaped ``E^T E``: half the flops and no temporary."""
        if w.size and w[0] == w[-1] and np.all(w == w[0]):
            return w[0] * (E.T @ E)
        return E.T @ (E * w[:, None])

    # -- the O(|O| k) passes over the observed pairs (a cluster runs them as block tasks,
    # kmviz.similarity._dist) --------------------------------------------------------------
    def _pair_terms(self, P, Q):
        """(yhat, X, c on O; L+) at the embeddings P, Q."""
        return K.pair_terms(self.pairs, P, Q, self.a, self.b, self.Pt, self.Qt, self.omega,
                            self.code)

    def _observed_gradient(self, ev):
        """``(X Q, X^T P)`` at ``ev``."""
        return (K.times_other(self.pairs, ev.dplus, ev.Q),
                K.transpose_times(self.pairs, ev.dplus, ev.P))

    def _observed_gn(self, ev, W, H):
        """``(Z Q, Z^T P)`` of the Gauss-Newton product at ``ev`` along (W, H)."""
        z, ZQ = K.gn_pairs(self.pairs, ev.cplus, ev.P, ev.Q, W, H)
        return ZQ, K.transpose_times(self.pairs, z, ev.P)

    # -- Alg. 2: the function value and the cache ----------------------------------------
    def evaluate(self, theta) -> Evaluation:
        theta = _f64(theta)
        self.n_fun += 1
        tu, tv = self.split(theta)
        cu, cv = {}, {}
        t = time.perf_counter()
        P = _f64(self.fu.forward(tu, self.U, cu))
        Q = _f64(self.fv.forward(tv, self.V, cv))
        t = self._tick("tower_forward", t)
        Pc, Qc = self.gram(P, self.a), self.gram(Q, self.b)
        Phat_c = self.Pt.T @ (self.a[:, None] * P)
        Qhat_c = self.Qt.T @ (self.b[:, None] * Q)
        t = self._tick("gramians", t)
        yhat, dplus, cplus, l_plus = self._pair_terms(P, Q)
        self._tick("observed_pairs", t)
        l_minus_var = -float(np.sum(Phat_c * Qhat_c)) + 0.5 * float(np.sum(Pc * Qc))
        reg = 0.5 * self.lam * float(theta @ theta)
        f_var = l_plus + self.omega * l_minus_var + reg
        return Evaluation(theta, P, Q, Pc, Qc, Phat_c, Qhat_c, yhat, dplus, cplus, l_plus,
                          l_minus_var, reg, f_var, cu, cv)

    def objective(self, ev: Evaluation) -> float:
        return ev.f_var + self.constant

    def l_minus(self, ev: Evaluation) -> float:
        return ev.l_minus_var + self.constant / self.omega if self.omega else ev.l_minus_var

    # -- Alg. 1: the gradient ---------------------------------------------------------
    def embedding_gradient(self, ev: Evaluation):
        """``(M_u, M_v)`` of (27): dL/dP and dL/dQ without the regularizer."""
        t = time.perf_counter()
        XQ, XtP = self._observed_gradient(ev)
        t = self._tick("observed_pairs", t)
        om = self.omega
        Mu = XQ + om * self.a[:, None] * (ev.P @ ev.Qc - self.Pt @ ev.Qhat_c)
        Mv = XtP + om * self.b[:, None] * (ev.Q @ ev.Pc - self.Qt @ ev.Phat_c)
        self._tick("dense_terms", t)
        return Mu, Mv

    def gradient(self, ev: Evaluation) -> np.ndarray:
        self.n_grad += 1
        Mu, Mv = self.embedding_gradient(ev)
        return self._pullback(ev, Mu, Mv) + self.lam * ev.theta

    def _pullback(self, ev, Mu, Mv):
        tu, tv = self.split(ev.theta)
        t = time.perf_counter()
        g = np.concatenate([self.fu.vjp(tu, self.U, ev.cache_u, Mu),
                            self.fv.vjp(tv, self.V, ev.cache_v, Mv)])
        self._tick("vjp", t)
        return g

    # -- (29)-(40): the Gauss-Newton product ---------------------------------------------
    def gnvp(self, ev: Evaluation, d) -> np.ndarray:
        self.n_gnvp += 1
        d = _f64(d)
        tu, tv = self.split(ev.theta)
        du, dv = self.split(d)
        t = time.perf_counter()
        W = _f64(self.fu.jvp(tu, self.U, ev.cache_u, du))
        H = _f64(self.fv.jvp(tv, self.V, ev.cache_v, dv))
        t = self._tick("jvp", t)
        Wc = W.T @ (self.a[:, None] * ev.P)
        Hc = H.T @ (self.b[:, None] * ev.Q)
        t = self._tick("gramians", t)
        ZQ, ZtP = self._observed_gn(ev, W, H)
        t = self._tick("observed_pairs", t)
        om = self.omega
        Nu = ZQ + om * self.a[:, None] * (W @ ev.Qc + ev.P @ Hc)
        Nv = ZtP + om * self.b[:, None] * (H @ ev.Pc + ev.Q @ Wc)
        self._tick("dense_terms", t)
        return self._pullback(ev, Nu, Nv) + self.lam * d
