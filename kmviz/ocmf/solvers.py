"""Inner solvers of a convex block: TRON (trust-region Newton-CG) and gradient descent.

:func:`tron` follows LIBLINEAR's ``tron.cpp`` (Lin, Weng & Keerthi 2008; OCMF paper Alg. 4-5,
eqs. (1.14)-(1.18)) with its constants, which the paper leaves open:

    eta0 = 1e-4, eta1 = 0.25, eta2 = 0.75; sigma1 = 0.25, sigma2 = 0.5, sigma3 = 4;
    CG stops at ||r|| <= xi ||g||, xi = 0.1 (in the preconditioned norm); the block stops when
    ||g|| <= eps ||g(0)||, LIBLINEAR's gradient at w = 0 (``gnorm0="zero"``; the OCMF
    estimator uses ``"start"``, the gradient where the warm-started block begins).

It is LIBLINEAR's current TRON (since 2.20): CG preconditioned by ``M = (1 - a) I + a
diag(H)`` with a = 0.01, recomputed at every Newton iterate, the trust region measured in
the M-norm, the first radius ``sqrt(g^T M g)`` cut to ``||s||_M`` after the first step, and
the radius multiplied by sigma3 after a very successful step that reached the boundary.
Without ``diag_hessian`` on the problem (or ``precondition=False``) M = I, which is the
paper's Alg. 4-5 (and LIBLINEAR before 2.20). The preconditioner matters for OCMF with side
features: a dense feature column is shared by every user, so its curvature is about m times
an identity column's and plain CG needs tens of steps. ``pcg_alpha`` replaces LIBLINEAR's
a = 0.01 (a = 1: plain Jacobi); OCMF's estimator uses a = 1 on blocks rotated so that the
all-pairs part of their Hessian is diagonal (:class:`kmviz.ocmf.problem.BlockProblem`,
``basis="eig"``), which cuts CG from 4-8 steps per Newton step to 1-3 on MovieLens.

Two deliberate readings (see the digest's errata): the predicted reduction is LIBLINEAR's
``prered = -1/2 (g^T s - s^T r)`` (the paper prints the r-term with the wrong sign after a
boundary stop), and a step is accepted only when ``actred > eta0 prered`` AND ``actred > 0``,
so an accepted step never raises the objective (LIBLINEAR tests ``prered <= 0`` only after
accepting).

:func:`gradient_descent` is Alg. 6: direction -g, Armijo backtracking ``phi(alpha) <= sigma
alpha g^T d`` with beta = 0.5, sigma = 0.01 (ours; the paper gives no values), trials in
O(|Omega+|) through :meth:`kmviz.ocmf.problem.BlockProblem.line_search`. The first trial step
is the previous accepted one, doubled every 5 iterations (the extreme-similarity paper's
warm start, Sec. 6.1.3), 1 at the start.

Both return a :class:`SolverResult` with the counts the trace reports.

:data:`REGISTRY` (``solver=`` name -> :class:`TronSolver` / :class:`GDSolver`) holds the
two as :class:`kmviz.solver.Solver` objects over the fit state
(:class:`kmviz.ocmf._state.OCMFState`): one step of either is an outer iteration of the
estimator, a W-step then an H-step (:class:`AlternatingSolver`), each a block solved by the
unchecked cores ``_tron`` / :func:`gradient_descent`; the public :func:`tron` checks its
arguments, then runs the same core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._base import Step
from ._kernels import cg_advance, cg_curvature, cg_direction, cg_start
from .problem import BlockProblem

ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0
CG_XI = 0.1
PCG_ALPHA = 0.01
GD_BETA, GD_SIGMA, GD_MAX_BACKTRACK = 0.5, 0.01, 50


@dataclass
class SolverResult:
    """What one block solve did.

    ``steps`` holds one dict per Newton (or GD) iteration tried: the objective before it
    (``f``), gradient norm, trust radius, CG steps, whether CG hit the boundary, predicted and
    actual reduction, accepted or not, and the objective after (``f_new``).
    """

    x: np.ndarray
    f: float
    parts: dict
    gnorm: float
    gnorm0: float
    delta: float = math.nan
    n_iter: int = 0
    n_rejected: int = 0
    n_cg: int = 0
    n_backtrack: int = 0
    step_size: float = math.nan
    stop: str = ""
    steps: list = field(default_factory=list)


def _norm(v) -> float:
    return float(np.sqrt(np.dot(v, v)))


def _gnorm_at_zero(problem, n) -> float:
    """||grad(0)||: the problem's own shortcut when it has one, else fun + grad at 0."""
    shortcut = getattr(problem, "grad_norm_at_zero", None)
    if shortcut is not None:
        return float(shortcut())
    zero = np.zeros(n)
    problem.fun(zero)
    return _norm(problem.grad(zero))


def _trpcg(problem, delta, g, M, max_cg):
    """Preconditioned truncated CG for min g^T s + 1/2 s^T H s, ||s||_M <= delta
    (LIBLINEAR's trpcg; M = 1 gives its older trcg).

    ||s + alpha d||_M^2 is expanded as ``sMs + 2 alpha sMd + alpha^2 dMd``; the dot products
    and vector updates of a step are fused passes (:mod:`kmviz.ocmf._kernels`, ``cg_*``).
    Returns ``(s, r, steps, boundary, ||s||_M^2)``."""
    n = g.shape[0]
    s, inv_m, r, z, d = (np.empty(n) for _ in range(5))
    zTr = cg_start(np.ascontiguousarray(g, dtype=np.float64),
                   np.ascontiguousarray(M, dtype=np.float64), s, inv_m, r, z, d)
    cgtol = CG_XI * math.sqrt(zTr)
    sMs = 0.0
    cg_iter = 0
    boundary = False
    while cg_iter < max_cg:
        if math.sqrt(zTr) <= cgtol:
            break
        cg_iter += 1
        Hd = np.ascontiguousarray(problem.hess_vec(d), dtype=np.float64)
        dHd, sMd, dMd = cg_curvature(s, d, Hd, M)
        alpha = zTr / dHd if dHd > 0 else math.inf
        sMs_try = sMs + 2.0 * alpha * sMd + alpha * alpha * dMd \
            if math.isfinite(alpha) else math.inf
        if not sMs_try <= delta * delta:
            # step to the boundary along d: tau >= 0 with ||s + tau d||_M = delta
            dsq = delta * delta
            rad = math.sqrt(max(sMd * sMd + dMd * (dsq - sMs), 0.0))
            tau = (dsq - sMs) / (sMd + rad) if sMd >= 0 else (rad - sMd) / dMd
            cg_advance(s, d, r, Hd, inv_m, tau, z)
            sMs = sMs + 2.0 * tau * sMd + tau * tau * dMd   # = delta^2 up to rounding
            boundary = True
            break
        znew = cg_advance(s, d, r, Hd, inv_m, alpha, z)
        sMs = sMs_try
        cg_direction(d, z, znew / zTr)
        zTr = znew
    return s, r, cg_iter, boundary, max(sMs, 0.0)


def tron(problem, x0, *, eps=0.01, max_iter=5, max_cg=None, gnorm0="zero",
         precondition=True, pcg_alpha=PCG_ALPHA) -> SolverResult:
    """Trust-region Newton with (preconditioned) CG on ``problem``.

    Parameters
    ----------
    problem : object
        ``fun(x) -> float``, ``grad(x) -> array`` (after ``fun(x)``), ``hess_vec(v)`` (at
        the last gradient point), a ``parts`` dict describing the last ``fun``; optionally
        ``diag_hessian()`` (the Hessian's diagonal at the last gradient point) and
        ``grad_norm_at_zero()``.
    x0 : ndarray
        Start (warm start: the block's current value).
    eps : float
        Stop when ``||g|| <= eps * gnorm0``.
    max_iter : int
        Newton iterations (accepted steps) at most.
    max_cg : int, optional
        CG steps per Newton iteration at most (default: the dimension).
    gnorm0 : float, "zero" or "start", default="zero"
        The reference gradient norm: at x = 0 (LIBLINEAR), at x0 (a warm start's own
        progress), or a given number.
    precondition : bool, default=True
        Use the problem's diagonal preconditioner when it has one.
    pcg_alpha : float, default=0.01
        The weight a of ``M = (1 - a) I + a diag(H)``: LIBLINEAR's 0.01 by default; 1 is
        plain Jacobi, the better choice when the Hessian is nearly diagonal (OCMF's blocks
        in the eigenbasis of the fixed side's Gramian, ``BlockProblem(basis="eig")``).
    """
    _check_pcg_alpha(pcg_alpha)
    return _tron(problem, x0, eps=eps, max_iter=max_iter, max_cg=max_cg, gnorm0=gnorm0,
                 precondition=precondition, pcg_alpha=pcg_alpha)


def _check_pcg_alpha(pcg_alpha):
    if not 0.0 < pcg_alpha <= 1.0:
        raise ValueError(f"pcg_alpha must lie in (0, 1]; got {pcg_alpha!r}")


def _tron(problem, x0, *, eps, max_iter, max_cg, gnorm0, precondition, pcg_alpha):
    """:func:`tron` without its argument checks (the fit loop's core: checked once, at the
    fit's start)."""
    n = x0.shape[0]
    max_cg = n if max_cg is None else int(max_cg)
    if gnorm0 is None or gnorm0 == "zero":
        gnorm0 = _gnorm_at_zero(problem, n)
    diag = getattr(problem, "diag_hessian", None) if precondition else None
    x = np.array(x0, dtype=np.float64)
    f = problem.fun(x)
    parts = dict(problem.parts)
    g = problem.grad(x)
    gnorm = _norm(g)
    if gnorm0 == "start":
        gnorm0 = gnorm
    res = SolverResult(x=x, f=f, parts=parts, gnorm=gnorm, gnorm0=gnorm0)
    if gnorm <= eps * gnorm0:
        res.stop = "tolerance"
        return res
    stop = "max_iter"
    delta = math.nan
    while res.n_iter < max_iter:
        if diag is not None:
            M = np.array(diag(), dtype=np.float64)   # (1 - a) + a diag(H), in place
            if pcg_alpha != 1.0:
                M *= pcg_alpha
                M += 1.0 - pcg_alpha
            elif not M.min() > 0.0:   # plain Jacobi: a zero, negative or NaN entry -> 1
                M[~(M > 0.0)] = 1.0
        else:
            M = np.ones(n)
        if res.n_iter == 0 and not res.steps:
            delta = math.sqrt(float(np.dot(g, M * g)))
        s, r, cg_iter, boundary, sMs = _trpcg(problem, delta, g, M, max_cg)
        res.n_cg += cg_iter
        x_new = x + s
        gs = float(np.dot(g, s))
        prered = -0.5 * (gs - float(np.dot(s, r)))
        f_new = problem.fun(x_new)
        actred = f - f_new
        snorm = math.sqrt(sMs)
        step = {"f": f, "gnorm": gnorm, "delta": delta, "cg_iter": cg_iter,
                "boundary": boundary, "snorm": snorm, "prered": prered, "actred": actred,
                "f_new": f_new}
        if res.n_iter == 0:  # LIBLINEAR: "if (iter == 1) delta = min(delta, sMnorm)"
            delta = min(delta, snorm)
        denom = f_new - f - gs
        alpha = SIGMA3 if denom <= 0 else max(SIGMA1, -0.5 * (gs / denom))
        if actred < ETA0 * prered:
            delta = min(alpha * snorm, SIGMA2 * delta)
        elif actred < ETA1 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
        elif actred < ETA2 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
        elif boundary:
            delta = SIGMA3 * delta
        else:
            delta = max(delta, min(alpha * snorm, SIGMA3 * delta))
        accepted = actred > ETA0 * prered and actred > 0
        step["accepted"] = accepted
        res.steps.append(step)
        if accepted:
            res.n_iter += 1
            x, f = x_new, f_new
            parts = dict(problem.parts)
            g = problem.grad(x)
            gnorm = _norm(g)
            if gnorm <= eps * gnorm0:
                stop = "tolerance"
                break
        else:
            res.n_rejected += 1
        if f < -1.0e32:
            stop = "unbounded"
            break
        if prered <= 0:
            stop = "no_predicted_decrease"
            break
        if abs(actred) <= 1.0e-12 * abs(f) and abs(prered) <= 1.0e-12 * abs(f):
            stop = "no_progress"
            break
        if not delta > 0 or res.n_rejected > 50:
            stop = "trust_region_collapsed"
            break
    res.x, res.f, res.parts, res.gnorm, res.delta, res.stop = x, f, parts, gnorm, delta, stop
    return res


def gradient_descent(problem, x0, *, eps=0.01, max_iter=5, gnorm0="zero",
                     alpha0=1.0) -> SolverResult:
    """Gradient descent with Armijo backtracking (OCMF Supp-1.4, Alg. 6); ``gnorm0`` as in
    :func:`tron`."""
    n = x0.shape[0]
    if gnorm0 is None or gnorm0 == "zero":
        gnorm0 = _gnorm_at_zero(problem, n)
    x = np.array(x0, dtype=np.float64)
    f = problem.fun(x)
    g = problem.grad(x)
    gnorm = _norm(g)
    if gnorm0 == "start":
        gnorm0 = gnorm
    res = SolverResult(x=x, f=f, parts=dict(problem.parts), gnorm=gnorm, gnorm0=gnorm0)
    if gnorm <= eps * gnorm0:
        res.stop = "tolerance"
        return res
    alpha_init = float(alpha0)
    stop = "max_iter"
    it = 0
    while it < max_iter:
        it += 1
        d = -g
        ls = problem.line_search(x, d)
        slope = -gnorm * gnorm
        alpha = alpha_init
        accepted = False
        dec = math.nan
        for _ in range(GD_MAX_BACKTRACK):
            dec = ls.decrease(alpha)
            if dec <= GD_SIGMA * alpha * slope and dec <= 0:
                accepted = True
                break
            alpha *= GD_BETA
        res.n_backtrack += ls.n_trials
        res.steps.append({"f": f, "gnorm": gnorm, "alpha": alpha, "trials": ls.n_trials,
                          "accepted": accepted, "f_new": f + dec if accepted else f})
        if not accepted:
            res.n_rejected += 1
            stop = "line_search_failed"
            break
        x = ls.accept(alpha)
        f = f + dec
        res.n_iter += 1
        res.step_size = alpha
        g = problem.grad(x)
        gnorm = _norm(g)
        alpha_init = alpha * 2.0 if it % 5 == 0 else alpha
        if gnorm <= eps * gnorm0:
            stop = "tolerance"
            break
    res.x, res.f, res.parts, res.gnorm, res.stop = x, f, dict(problem.parts), gnorm, stop
    return res


class AlternatingSolver:
    """One outer iteration of :class:`~kmviz.ocmf.OneClassMF`: a W-step (users vary, items
    fixed), then an H-step, each a convex block (:class:`kmviz.ocmf.problem.BlockProblem`)
    solved by :meth:`solve_block`; the trace row holds the objective at (W, H), its parts
    and each block's counts, and ``state.inner`` one tuple per inner iteration."""

    key = ""
    #: the block's basis (``BlockProblem(basis=...)``): None, W's own.
    uses_basis = False

    def start(self, state, rng) -> None:
        """The initial W and W_2 (``init_scale`` times N(0, 1))."""
        k = state.prm["k"]
        state.Wu = rng.normal(0.0, state.prm["init_scale"], size=(state.X.d, k))
        state.Wv = rng.normal(0.0, state.prm["init_scale"], size=(state.Z.d, k))

    def solve_block(self, state, problem, x0, back=True) -> SolverResult:  # pragma: no cover
        raise NotImplementedError

    def block_values(self, block, res) -> dict:  # pragma: no cover
        raise NotImplementedError

    def name(self, state) -> str:
        return f"ocmf.{self.key}"

    def step(self, st, trace, it) -> Step:
        prm = st.prm
        dist = st.dist if st.on_cluster else None

        def terms(side, O, timer):
            if dist is None:
                return st.loss.block(side, O, prm["dtype"])
            return dist.block(side, O, prm["dtype"], timer)

        row = {}
        # W-step: users vary, items fixed
        timer_w = {}
        Q = st.Z.apply(st.Wv)
        basis = st.tron_basis if self.uses_basis else None
        prob_w = BlockProblem(terms("rows", Q, timer_w), st.X, prm["lambda_w"],
                              st.L, st.lam_graph, prm["small_d"], timer_w, basis)
        res_w = self.solve_block(st, prob_w, st.Wu.ravel())
        st.Wu = res_w.x.reshape(st.X.d, prm["k"])
        # H-step: items vary, users fixed
        timer_h = {}
        P = st.X.apply(st.Wu)
        prob_h = BlockProblem(terms("cols", P, timer_h), st.Z, prm["lambda_h"],
                              None, 0.0, prm["small_d"], timer_h, basis)
        res_h = self.solve_block(st, prob_h, st.Wv.ravel(), back=False)
        if prob_h.V is not None:
            # both sides move to the H block's basis: a common rotation of W and W_2 leaves
            # every score, the objective and its regularizers as they are, and saves the
            # item side's (d_2 x k) (k x k) product back
            st.Wu = st.Wu @ prob_h.V
        st.Wv = res_h.x.reshape(st.Z.d, prm["k"])
        for name in st.timer_phases:
            for block, timer in (("w", timer_w), ("h", timer_h)):
                if name in timer:
                    trace.add_time(f"{block}_{name}", timer[name])
        # the objective at (W, H): the H block's parts + the W terms that block held fixed
        with trace.phase("objective"):
            parts = res_h.parts
            reg_w = prm["lambda_w"] * float(np.sum(st.Wu * st.Wu))
            reg_graph = 0.0
            if st.L is not None:
                reg_graph = st.lam_graph * float(np.sum(P * (st.L @ P)))
            l_minus = parts["l_minus_var"] + st.loss.constant
            objective = parts["l_plus"] + l_minus + reg_w + reg_graph + parts["reg"]
        row.update(objective=objective, l_plus=parts["l_plus"], l_minus=l_minus, reg_w=reg_w,
                   reg_graph=reg_graph, reg_h=parts["reg"])
        for block, res in (("w", res_w), ("h", res_h)):
            row[f"{block}_grad_norm"] = res.gnorm
            row[f"{block}_grad_ratio"] = res.gnorm / res.gnorm0 if res.gnorm0 > 0 else 0.0
            row[f"n_{block}_newton"] = res.n_iter
            row[f"n_{block}_rejected"] = res.n_rejected
            row[f"{block}_stop"] = res.stop
            row.update(self.block_values(block, res))
            for s, step in enumerate(res.steps, start=1):
                st.inner.append((it, 0 if block == "w" else 1, s, step.get("f", math.nan),
                                 step.get("gnorm", math.nan), step.get("delta", math.nan),
                                 step.get("cg_iter", 0), float(step.get("boundary", False)),
                                 step.get("prered", math.nan), step.get("actred", math.nan),
                                 float(step["accepted"]), step.get("f_new", math.nan),
                                 step.get("alpha", math.nan), step.get("trials", 0)))
        row["n_fun"] = prob_w.n_fun + prob_h.n_fun
        row["n_grad"] = prob_w.n_grad + prob_h.n_grad
        row["n_hess_vec"] = prob_w.n_hv + prob_h.n_hv
        return Step(row)

    def publish(self, st) -> dict:
        """W, W_2 and the inner iterations so far (one row per tuple of ``st.inner``)."""
        return {"W_user": st.Wu, "W_item": st.Wv, "inner": st.inner}


class TronSolver(AlternatingSolver):
    """Both blocks by TRON (:func:`tron`), in the eigenbasis of the fixed side's Gramian
    (``state.tron_basis``) with the preconditioner weight ``state.tron_pcg_alpha``."""

    key = "tron"
    uses_basis = True

    def start(self, state, rng) -> None:
        _check_pcg_alpha(state.tron_pcg_alpha)  # once: the blocks run the unchecked core
        super().start(state, rng)

    def solve_block(self, st, problem, x0, back=True) -> SolverResult:
        prm = st.prm
        res = _tron(problem, problem.to_inner(x0), eps=prm["inner_tol"],
                    max_iter=prm["inner_max_iter"], max_cg=st.max_cg, gnorm0="start",
                    precondition=True, pcg_alpha=st.tron_pcg_alpha)
        if back:     # else res.x stays in the problem's basis (problem.V)
            res.x = problem.from_inner(res.x).ravel()
        return res

    def block_values(self, block, res) -> dict:
        return {f"{block}_trust_radius": res.delta, f"n_{block}_cg": res.n_cg}


class GDSolver(AlternatingSolver):
    """Both blocks by gradient descent with Armijo backtracking (:func:`gradient_descent`)."""

    key = "gd"

    def solve_block(self, st, problem, x0, back=True) -> SolverResult:
        prm = st.prm
        return gradient_descent(problem, x0, eps=prm["inner_tol"],
                                max_iter=prm["inner_max_iter"], gnorm0="start")

    def block_values(self, block, res) -> dict:
        return {f"n_{block}_backtrack": res.n_backtrack, f"{block}_step_size": res.step_size}


#: ``solver=`` name -> its :class:`kmviz.solver.Solver`.
REGISTRY = {"tron": TronSolver(), "gd": GDSolver()}
