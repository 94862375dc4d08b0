"""One block of OCMF's alternating minimization as a smooth convex problem in W.

With the other side's embedding fixed (O, n_other x k), one side's variables W (d x k) give
the embeddings ``E = X W`` and the block objective (OCMF eq. (2), the constant of L- left out)

    g(W) = L+(XW) + L-_var(XW) + lambda ||W||_F^2 + lambda_graph tr((XW)^T L (XW))

where ``lambda_graph = lambda_w lambda_g`` on the user side (the paper's R(W) =
tr(W^T W + lambda_g W^T X^T L X W), scaled by lambda_w) and 0 on the item side. The paper's
Algorithms 1-3 give value, gradient and Hessian-vector product in

    O(nnz(X) k + |Omega+| k + nnz(L) k + m k^2 + d k)

through :class:`kmviz.ocmf.allpairs.BlockTerms` (embedding space) and the adjoint ``X^T``:

    G  = X^T [ D+ O + 2 A (E O_c - a_bar 1 kv^T) + 2 lambda_graph L E ] + 2 lambda W       (14)
    Hs = X^T [ U+ O + 2 A N O_c + 2 lambda_graph L N ] + 2 lambda S,   N = X S          (15)

The small-d variant (Supp-1.2, used when ``d^2 + d k < m k`` and X is not the identity)
replaces the m x k products of L- by the d x d matrix ``M_bar = X^T A X`` (computed once):
``G = X^T (D+ O + 2 lambda_graph L E) + 2 M_bar W O_c + 2 lambda W - 2 a_bar d kv^T`` (the
supplement prints ``2 M_bar W`` without the trailing ``O_c``: an erratum) and
``Hs = X^T (U+ O + 2 lambda_graph L N) + 2 M_bar S O_c + 2 lambda S``.

Gradient descent's line search (Supp-1.4, Alg. 6) uses that the scores are linear in W:
along a direction Delta, ``g(W + alpha Delta) - g(W) = L+(s + alpha ds) - L+(s) + alpha Val1 +
alpha^2 Val2`` with O(|Omega+|) work per trial (:meth:`BlockProblem.line_search`).
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np

from ..exceptions import NumericalError
from .allpairs import BlockTerms
from .features import SideMatrix

PHASES = ("precompute", "function", "gradient", "hessian_vector", "line_search")


class BlockProblem:
    """The block objective g(W) (module docstring) with the TRON interface.

    ``fun(x)``, ``grad(x)`` (after ``fun`` at the same x), ``hess_vec(v)`` (at the last
    gradient point) take and return flat arrays of length ``d * k`` (W row-major).

    Parameters
    ----------
    terms : BlockTerms
        The all-pairs terms of this side (other side fixed).
    side : SideMatrix
        X of this side.
    lam : float
        lambda (lambda_w or lambda_h).
    graph : scipy.sparse matrix or None
        The Laplacian L of this side's graph.
    lam_graph : float
        lambda_w lambda_g.
    small_d : {"auto", "on", "off"}
        Whether to use the small-d variant; "auto" follows the paper's rule.
    timer : dict, optional
        Seconds per phase (:data:`PHASES`) are added to it.
    basis : {None, "eig"}, default=None
        The variables the solver sees. None: W itself. "eig": ``W V`` with V the
        eigenvectors of the fixed side's Gramian O_c (``terms`` is rotated in place,
        :meth:`BlockTerms.rotate`): the same objective (scores ``(X W V) . (O V)_j`` are the
        same numbers), gradient and Hessian rotated by V, and the all-pairs part of every
        row's Hessian block ``2 a_i O_c`` diagonal, so that the Jacobi preconditioner of
        :func:`kmviz.ocmf.solvers.tron` (``pcg_alpha=1``) captures it: CG then needs 1-3 steps
        per Newton iteration on MovieLens where 4-8 were needed in W's own basis. Map with
        :meth:`to_inner` / :meth:`from_inner`; ``fun``, ``grad``, ``hess_vec`` and
        ``embedding`` take and return the inner (rotated) variables.
    """

    def __init__(self, terms: BlockTerms, side: SideMatrix, lam, graph=None, lam_graph=0.0,
                 small_d="auto", timer=None, basis=None):
        self.timer = {} if timer is None else timer
        with self._phase("precompute"):
            if basis not in (None, "eig"):
                raise ValueError(f"basis must be None or 'eig'; got {basis!r}")
            self.V = None
            if basis == "eig":
                try:
                    if not np.isfinite(terms.Oc).all():  # the iterates overflowed
                        raise np.linalg.LinAlgError
                    _, self.V = np.linalg.eigh(terms.Oc)
                except np.linalg.LinAlgError:
                    raise NumericalError(
                        "the other side's factors are no longer finite (their k x k Gram "
                        "matrix has no eigendecomposition). Fix: rescale the side features, "
                        "lower rho or init_scale, or raise lambda_w / lambda_h.") from None
                terms.rotate(self.V, eigenbasis=True)
            self.terms = terms
            self.side = side
            self.lam = float(lam)
            self.graph = graph if (graph is not None and lam_graph > 0) else None
            self.lam_graph = float(lam_graph) if self.graph is not None else 0.0
            self.k = terms.k
            self.d = side.d
            m = side.n_rows
            if small_d == "on":
                use = not side.pure_identity
            elif small_d == "off":
                use = False
            else:
                use = (not side.pure_identity) and (self.d * self.d + self.d * self.k
                                                    < m * self.k)
            self.small_d = bool(use)
            if self.small_d:
                self.Mbar = side.weighted_gram(terms.w)          # X^T A X, d x d
                self.xa = side.weighted_colsum(terms.w)          # X^T a, d
            self._graph_diag = (side.laplacian_diag(self.graph)
                                if self.graph is not None else None)
            self._fused_dense = (side.pure_identity and not self.small_d
                                 and terms.oc_diag is not None)
        self.n_fun = self.n_grad = self.n_hv = 0
        self._x = None
        self._E = None
        self.parts = {}

    @contextmanager
    def _phase(self, name):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timer[name] = self.timer.get(name, 0.0) + time.perf_counter() - t0

    @property
    def size(self) -> int:
        return self.d * self.k

    def _mat(self, x):
        return np.asarray(x, dtype=np.float64).reshape(self.d, self.k)

    def to_inner(self, W) -> np.ndarray:
        """The solver's flat variables of W (d x k): ``W V`` with ``basis="eig"``."""
        W = self._mat(W)
        return (W if self.V is None else W @ self.V).ravel()

    def from_inner(self, x) -> np.ndarray:
        """W (d x k) from the solver's flat variables (inverse of :meth:`to_inner`)."""
        Wi = self._mat(x)
        return Wi.copy() if self.V is None else Wi @ self.V.T

    def embedding(self, x) -> np.ndarray:
        return self.side.apply(self._mat(x))

    # X = I (the paper's plain one-class MF): E = W and X^T G = G, without copies. The
    # arrays handed out are fresh or views of TRON's own iterates, which it never mutates.
    def _apply(self, W):
        return W if self.side.pure_identity else self.side.apply(W)

    def _adjoint(self, G):
        return G if self.side.pure_identity else self.side.adjoint(G)

    # -- value -----------------------------------------------------------------------------
    def _l_minus_var(self, W, E):
        t = self.terms
        if self.small_d:
            WtMW = W.T @ (self.Mbar @ W)
            return float(np.sum(WtMW * t.Oc)) - 2.0 * t.a_bar * float((self.xa @ W) @ t.ov)
        return t.l_minus_var(E)

    def fun(self, x) -> float:
        """g(W) without the constant of L-; caches E, the pair scores and ``parts``."""
        with self._phase("function"):
            self.n_fun += 1
            W = self._mat(x)
            E = self._apply(W)
            # the Hessian diagonal (TRON's preconditioner) in the same pass at the block's
            # first point only: later points are trial steps, and the block mostly ends at
            # its first accepted one (diag_hessian makes a pass of its own if it does not)
            lp = self.terms.l_plus(E, want_diag=self.n_fun == 1)
            if self._fused_dense:
                lm, sq = self.terms.l_minus_var_and_sumsq(E)    # E is W
                reg = self.lam * sq
            else:
                lm = self._l_minus_var(W, E)
                reg = self.lam * float(np.sum(W * W))
            gr = 0.0
            if self.graph is not None:
                gr = self.lam_graph * float(np.sum(E * (self.graph @ E)))
            self._x, self._E = x, E
            self.parts = {"l_plus": lp, "l_minus_var": lm, "reg": reg, "graph": gr}
            return lp + lm + reg + gr

    # -- gradient --------------------------------------------------------------------------
    def grad(self, x) -> np.ndarray:
        """The gradient (14) at x; reuses the scores of ``fun(x)`` and caches l+''."""
        if self._x is not x:
            self.fun(x)
        with self._phase("gradient"):
            self.n_grad += 1
            t = self.terms
            W = self._mat(x)
            E = self._E
            G_emb = t.gradient_observed()
            if self.graph is not None:
                G_emb += (2.0 * self.lam_graph) * (self.graph @ E)
            if self._fused_dense:   # X = I, O_c diagonal: L- and the L2 term in one pass
                return t.add_gradient_dense(E, G_emb, self.lam).ravel()
            if self.small_d:
                G = self.side.adjoint(G_emb)
                G += 2.0 * t.times_oc(self.Mbar @ W) - 2.0 * t.a_bar * np.outer(self.xa, t.ov)
            else:
                G_emb += t.gradient_dense(E)
                G = self._adjoint(G_emb)
            G += (2.0 * self.lam) * W
            return G.ravel()

    def grad_norm_at_zero(self) -> float:
        """||grad g(0)||, TRON's reference norm (LIBLINEAR's), in one sparse product."""
        with self._phase("gradient"):
            G = self.side.adjoint(self.terms.gradient_at_zero())
            return float(np.sqrt(np.sum(G * G)))

    # -- Hessian-vector --------------------------------------------------------------------
    def hess_vec(self, v) -> np.ndarray:
        """The block Hessian (15) times v, at the last gradient point."""
        with self._phase("hessian_vector"):
            self.n_hv += 1
            t = self.terms
            S = self._mat(v)
            N = self._apply(S)
            U = t.hvp_observed(N) if self.small_d else t.hvp(N)
            if self.graph is not None:
                U += (2.0 * self.lam_graph) * (self.graph @ N)
            if self.small_d:
                H = self.side.adjoint(U)
                H += 2.0 * t.times_oc(self.Mbar @ S)
            else:
                H = self._adjoint(U)
            H += (2.0 * self.lam) * S
            return H.ravel()

    def diag_hessian(self) -> np.ndarray:
        """The diagonal of the block Hessian at the last gradient point (d * k), for TRON's
        Jacobi preconditioner: ``(X o X)^T R + 2 lambda_graph diag(X^T L X) + 2 lambda``."""
        with self._phase("hessian_vector"):
            R = self.terms.hess_diag_rows()      # a fresh array: updated in place below
            D = R if self.side.pure_identity else self.side.adjoint_squares(R)
            if self._graph_diag is not None:
                D += (2.0 * self.lam_graph) * self._graph_diag[:, None]
            D += 2.0 * self.lam
            return D.ravel()

    # -- line search (gradient descent) ----------------------------------------------------
    def line_search(self, x, direction) -> "LineSearch":
        """The cheap trial function along ``direction`` from x (after ``fun(x)``)."""
        if self._x is not x:
            self.fun(x)
        with self._phase("line_search"):
            return LineSearch(self, x, direction)


class LineSearch:
    """``phi(alpha) = g(W + alpha Delta) - g(W)`` in O(|Omega+|) per trial (Supp-1.4)."""

    def __init__(self, problem: BlockProblem, x, direction):
        p = problem
        t = p.terms
        self.p = p
        self.x = x
        self.dx = np.asarray(direction, dtype=np.float64)
        W, D = p._mat(x), p._mat(self.dx)
        E = p._E
        dE = p.side.apply(D)
        self.dE = dE
        self.s0, self.ds = t.line_start(dE)
        self.lp0 = p.parts["l_plus"]
        # the quadratic part Q(W) = L-_var + lambda ||W||^2 + lambda_graph tr(E^T L E):
        # Q(W + a D) - Q(W) = a Val1 + a^2 Val2
        if p.small_d:
            MD = p.Mbar @ D
            val1 = float(np.sum((2.0 * (p.Mbar @ W) @ t.Oc) * D)) \
                - 2.0 * t.a_bar * float((p.xa @ D) @ t.ov)
            val2 = float(np.sum((D.T @ MD) * t.Oc))
        else:
            val1 = float(np.sum(t.gradient_dense(E) * dE))
            val2 = float(np.sum((dE.T @ (dE * t.w[:, None])) * t.Oc))
        val1 += 2.0 * p.lam * float(np.sum(W * D))
        val2 += p.lam * float(np.sum(D * D))
        if p.graph is not None:
            LdE = p.graph @ dE
            val1 += 2.0 * p.lam_graph * float(np.sum(E * LdE))
            val2 += p.lam_graph * float(np.sum(dE * LdE))
        self.val1, self.val2 = val1, val2
        self.n_trials = 0
        self._lp = None

    def decrease(self, alpha) -> float:
        """``g(W + alpha Delta) - g(W)``."""
        with self.p._phase("line_search"):
            self.n_trials += 1
            lp = self.p.terms.l_plus_shifted(self.s0, self.ds, alpha)
            self._lp = (alpha, lp)
            return (lp - self.lp0) + alpha * self.val1 + alpha * alpha * self.val2

    def accept(self, alpha):
        """Move the problem to ``W + alpha Delta`` (caches updated without a new pass)."""
        p = self.p
        with p._phase("line_search"):
            x_new = self.x + alpha * self.dx
            W = p._mat(x_new)
            E = p._E + alpha * self.dE
            p.terms.move_scores(self.s0, self.ds, alpha)
            lp = self._lp[1] if self._lp is not None and self._lp[0] == alpha else \
                p.terms.l_plus_shifted(self.s0, self.ds, alpha)
            p._x, p._E = x_new, E
            gr = 0.0
            if p.graph is not None:
                gr = p.lam_graph * float(np.sum(E * (p.graph @ E)))
            p.parts = {"l_plus": lp, "l_minus_var": p._l_minus_var(W, E),
                       "reg": p.lam * float(np.sum(W * W)), "graph": gr}
            return x_new
