"""The stochastic all-pairs solvers: Sampling and SOGram, and their -diag variants (App. A).

Both estimate the full gradient (27) without bias from a small part of the data, and take
a fixed step ``delta`` (the paper: GD's most used step for the plain ones, 0.01 for the
-diag ones, which scale by AdaGrad's (51)). The default step of the plain ones is GD's
step shrunk by the measured noise of the estimate (:func:`default_step`).

**Sampling** (Krichene et al. 2019; paper Sec. 4.1): draw ``U^`` (m^ = ceil(rho m) rows)
and ``V^`` (n^ = ceil(rho n) columns) uniformly without replacement; the gradient of L
restricted to the block ``B = U^ x V^`` (every term of (27), observed pairs in B and the
all-pairs part over B) times ``m n / (m^ n^)`` is unbiased, since a pair is in B with
probability ``(m^ / m)(n^ / n)``. The regularizer's gradient is added unscaled.

**SOGram** (App. A.2-A.3): rewrite the all-pairs sum over pairs of observed pairs (46)
with ``abar_i = a_i / |O_i,:|`` and ``bbar_j = b_j / |O_:,j|``; draw two independent
subsets O^1, O^2 of O (rho |O| pairs each). O^2 gives Gramian estimates (61),
``P_2 = (|O| / |O^2|) sum_{O^2} abar_i p_i p_i^T`` and likewise Q_2, Phat_2, Qhat_2, which
SOGram averages over the steps (64), ``P_c' <- (1 - alpha) P_c' + alpha P_2`` (starting
from their values at the initial theta, not from 0 as in the paper); O^1 gives
the gradient (65), ``(|O| / |O^1|) [sum_{O^1} J_i^T (q_j X_ij + omega (Q_c' abar_i p_i -
Qhat_c'^T abar_i ptilde_i)); sum_{O^1} J_j^T (p_i X_ij + omega (P_c' bbar_j q_j -
Phat_c'^T bbar_j qtilde_j))] + lambda theta``. With alpha = 1 (no averaging) this is the
unbiased estimate (60). Rows or columns without any observed pair drop out of (46): their
all-pairs terms are not seen by SOGram.

One outer iteration is ``ceil(1 / rho)`` steps (about one pass over O for SOGram; rho is
at least :data:`MIN_SAMPLE_RATIO`, so at most 10,000 steps); the trace row's objective is
then evaluated on all pairs (its time is the row's ``objective_seconds``, outside the phase
times). A stop request (:func:`kmviz._jobs.stop_requested`) is seen after every step: the
iteration ends there with the steps taken so far (the row's ``n_steps``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..._base import Step
from ..._jobs import stop_requested
from ...pairs import ObservedPairs
from ..allpairs import AllPairsProblem
from ..towers import take_rows
from .newton import _objective_values


#: The smallest sample ratio rho: one outer iteration is ceil(1 / rho) steps, each with a
#: fixed cost besides its share of the data (about 0.3 ms on a 300 x 200 set), so rho =
#: 1e-9 would make one iteration a billion steps; 1e-4 bounds it at 10,000.
MIN_SAMPLE_RATIO = 1e-4


@dataclass
class StochasticState:
    settings: object
    scheme: str                     # "sogram" or "sampling"
    theta: np.ndarray
    rng: object
    learning_rate: float
    objective_row: dict = field(default_factory=dict)
    accumulator: np.ndarray | None = None
    grams: list | None = None       # SOGram's P_c', Q_c', Phat_c', Qhat_c'
    abar: np.ndarray | None = None
    bbar: np.ndarray | None = None
    iteration: int = 0
    steps: int = 0


def start(problem, theta, settings, rng, name="sogram"):
    scheme = name.replace("-diag", "")
    cfg = settings
    theta = np.array(theta, dtype=np.float64)
    st = StochasticState(cfg, scheme, theta, rng, 0.0)
    st.objective_row = _objective_values(problem, problem.evaluate(theta))
    if scheme == "sogram":
        st.abar, st.bbar, st.grams = _probe_state(problem, theta, cfg, scheme)
    rate = cfg.learning_rate
    if rate is None:
        rate = 0.01 if cfg.diag else default_step(problem, theta, cfg, scheme, rng)
    st.learning_rate = float(rate)
    if cfg.diag:
        st.accumulator = np.zeros(problem.n_params)
    return st


def _probe_state(problem, theta, settings, scheme):
    """SOGram's (abar, bbar, running Gramians at theta); None for Sampling."""
    if scheme != "sogram":
        return None
    p = problem.pairs
    rc, cc = p.row_counts(), p.col_counts()
    abar = np.divide(problem.a, rc, out=np.zeros_like(problem.a), where=rc > 0)
    bbar = np.divide(problem.b, cc, out=np.zeros_like(problem.b), where=cc > 0)
    # the running Gramians start at their values at theta_0 (what (61) estimates, rows and
    # columns without pairs left out) instead of at 0 as in the paper: from 0 the first
    # steps see no all-pairs term and a GD-sized step diverges
    ev = problem.evaluate(theta)
    ra, cb = (rc > 0) * problem.a, (cc > 0) * problem.b
    grams = [problem.gram(ev.P, ra), problem.gram(ev.Q, cb),
             problem.Pt.T @ (ra[:, None] * ev.P), problem.Qt.T @ (cb[:, None] * ev.Q)]
    return abar, bbar, grams


def _estimate(problem, theta, rng, cfg, probe, scheme):
    if scheme == "sogram":
        abar, bbar, grams = probe
        return sogram_gradient(problem, theta, rng, cfg.rho, grams, abar, bbar, cfg.alpha)
    return sampling_gradient(problem, theta, rng, cfg.rho)


def default_step(problem, theta, settings, scheme, rng, iterations=5, draws=8):
    """The default fixed step of plain SOGram / Sampling: GD's smallest step over its first
    ``iterations`` iterations from theta, divided by ``1 + r^2`` with r the relative error
    ``||g_est - g|| / ||g||`` of the stochastic gradient at theta (mean over ``draws``).

    The paper takes GD's most used step; with a noisy gradient a stable step shrinks with
    the noise (at GD's step both diverged on a 300 x 200 planted set, rho = 0.05, where
    r was about 4 for SOGram and 17 for Sampling)."""
    from . import gd

    cfg = replace(settings, diag=False)
    st = gd.start(problem, theta, cfg, None)
    g = problem.gradient(st.evaluation)
    steps = [gd.step(problem, st).values["step_size"] for _ in range(iterations)]
    steps = [x for x in steps if x > 0]
    if not steps:
        return 1e-8
    probe = _probe_state(problem, theta, settings, scheme)
    errors = [np.linalg.norm(_estimate(problem, theta, rng, settings, probe, scheme) - g)
              for _ in range(draws)]
    r = float(np.mean(errors)) / max(float(np.linalg.norm(g)), 1e-300)
    return min(steps) / (1.0 + r * r)


def steps_per_iteration(settings):
    return int(math.ceil(1.0 / settings.rho))


# ----------------------------------------------------------------------------- Sampling
def _block_rows(pairs, rows_sel):
    """Row-major positions of the pairs whose row is in ``rows_sel``."""
    starts = pairs.row_ptr[rows_sel]
    counts = pairs.row_ptr[rows_sel + 1] - starts
    total = int(counts.sum())
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return np.arange(total, dtype=np.int64) + offsets


def sampling_gradient(problem, theta, rng, rho):
    """An unbiased estimate of grad L from one block U^ x V^ (module docstring)."""
    p = problem.pairs
    m, n = p.n_rows, p.n_cols
    mh, nh = max(1, math.ceil(rho * m)), max(1, math.ceil(rho * n))
    Uh = np.sort(rng.choice(m, mh, replace=False))
    Vh = np.sort(rng.choice(n, nh, replace=False))
    col_local = np.full(n, -1, dtype=np.int64)
    col_local[Vh] = np.arange(nh)
    pos = _block_rows(p, Uh)
    pos = pos[col_local[p.cols[pos]] >= 0]
    sub_pairs = ObservedPairs(np.searchsorted(Uh, p.rows[pos]), col_local[p.cols[pos]], mh,
                              nh, p.labels[pos])
    sub = AllPairsProblem(sub_pairs, problem.fu, problem.fv, take_rows(problem.U, Uh),
                          take_rows(problem.V, Vh), problem.loss, problem.omega, 0.0,
                          problem.a[Uh], problem.b[Vh], problem.Pt[Uh], problem.Qt[Vh],
                          timer=problem.timer)
    ev = sub.evaluate(theta)
    Mu, Mv = sub.embedding_gradient(ev)
    return (m * n / (mh * nh)) * sub._pullback(ev, Mu, Mv) + problem.lam * theta


# ----------------------------------------------------------------------------- SOGram
def sogram_gradient(problem, theta, rng, rho, grams, abar, bbar, alpha):
    """SOGram's estimate (65); updates the running Gramians ``grams`` in place (64)."""
    p = problem.pairs
    size = max(1, math.ceil(rho * p.nnz))
    O1 = rng.choice(p.nnz, size, replace=False)
    O2 = rng.choice(p.nnz, size, replace=False)
    r1, c1, r2, c2 = p.rows[O1], p.cols[O1], p.rows[O2], p.cols[O2]
    users = np.unique(np.concatenate([r1, r2]))
    items = np.unique(np.concatenate([c1, c2]))
    tu, tv = problem.split(theta)
    Xu, Xv = take_rows(problem.U, users), take_rows(problem.V, items)
    cu, cv = {}, {}
    t = time.perf_counter()
    P = np.ascontiguousarray(problem.fu.forward(tu, Xu, cu), dtype=np.float64)
    Q = np.ascontiguousarray(problem.fv.forward(tv, Xv, cv), dtype=np.float64)
    t = problem._tick("tower_forward", t)
    lu1, lv1 = np.searchsorted(users, r1), np.searchsorted(items, c1)
    lu2, lv2 = np.searchsorted(users, r2), np.searchsorted(items, c2)
    scale2 = p.nnz / size
    P2, Q2 = P[lu2], Q[lv2]
    wa, wb = abar[r2][:, None], bbar[c2][:, None]
    estimates = (scale2 * (P2.T @ (wa * P2)), scale2 * (Q2.T @ (wb * Q2)),
                 scale2 * (problem.Pt[r2].T @ (wa * P2)), scale2 * (problem.Qt[c2].T @ (wb * Q2)))
    for g, e in zip(grams, estimates):
        g *= (1.0 - alpha)
        g += alpha * e
    Pc, Qc, Phat_c, Qhat_c = grams
    t = problem._tick("gramians", t)
    Pi, Qj = P[lu1], Q[lv1]
    Pti, Qtj = problem.Pt[r1], problem.Qt[c1]
    yhat = np.einsum("ek,ek->e", Pi, Qj)
    ytilde = np.einsum("ek,ek->e", Pti, Qtj)
    w = problem.omega * problem.a[r1] * problem.b[c1]
    X = _loss_d1(problem.loss, p.labels[O1], yhat) - w * (yhat - ytilde)
    om = problem.omega
    rows_u = Qj * X[:, None] + om * abar[r1][:, None] * (Pi @ Qc - Pti @ Qhat_c)
    rows_v = Pi * X[:, None] + om * bbar[c1][:, None] * (Qj @ Pc - Qtj @ Phat_c)
    Mu = np.zeros_like(P)
    Mv = np.zeros_like(Q)
    np.add.at(Mu, lu1, rows_u)
    np.add.at(Mv, lv1, rows_v)
    t = problem._tick("observed_pairs", t)
    scale1 = p.nnz / size
    g = np.concatenate([problem.fu.vjp(tu, Xu, cu, Mu), problem.fv.vjp(tv, Xv, cv, Mv)])
    problem._tick("vjp", t)
    return scale1 * g + problem.lam * theta


def _loss_d1(loss, y, s):
    if loss == "squared":
        return s - y
    z = y * s
    return -y / (1.0 + np.exp(np.clip(z, -700, 700)))


# ----------------------------------------------------------------------------- the loop
def step(problem, st) -> Step:
    cfg = st.settings
    st.iteration += 1
    planned = steps_per_iteration(cfg)
    norms, n_steps = 0.0, 0
    for _ in range(planned):
        if n_steps and stop_requested():  # Stop: end the iteration with the steps so far
            break
        n_steps += 1
        probe = (st.abar, st.bbar, st.grams) if st.scheme == "sogram" else None
        g = _estimate(problem, st.theta, st.rng, cfg, probe, st.scheme)
        norms += float(g @ g)
        if st.accumulator is not None:
            st.accumulator += g * g
            g = g / np.sqrt(cfg.mu + st.accumulator)
        st.theta = st.theta - st.learning_rate * g
        st.steps += 1
    t0 = time.perf_counter()
    timer, problem.timer = problem.timer, {}
    ev = problem.evaluate(st.theta)
    problem.timer = timer
    values = {"stochastic_grad_norm": math.sqrt(norms / n_steps), "step_size":
              st.learning_rate, "n_steps": n_steps, "objective_seconds":
              time.perf_counter() - t0}
    values.update(_objective_values(problem, ev))
    return Step(values)


def publish(st):
    return st.theta
