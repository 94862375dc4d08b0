"""The dual h_gamma (14) of the binary QP and its gradient methods: Alg. 1 ("gd"), Alg. 2
("enhanced") and Alg. 2 with Barzilai-Borwein steps ("fast", BB variant)."""

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from kmviz._jit import JIT, PJIT

from .eigen import eigh_into
from .common import (EVD_EXACT, FAST, GD, MAX_BACKTRACK, N_STATS, PHASE_IA, PHASE_IB,
                     PHASE_IIA, PHASE_IIB, SIDE_NEG, SIDE_POS, ST_ALL_CYC, ST_EVD_CYC, ST_H,
                     ST_LZ_BETA, ST_LZ_CYC, ST_LZ_M, ST_LZ_N, ST_N_EVD, ST_N_ITER, ST_STATUS,
                     _all_equal, _charge_phase, _read_cycles, homogenize, lanczos_start)
from .lanczos import lanczos_positive_pairs, lanczos_threshold


class Trajectory(NamedTuple):
    """Per-iterate record of ``dual_solve_item``: arrays of length max_iter + 1 (``u``: rows
    of length D + 1), or of length 0 to record nothing."""

    h: np.ndarray  # h_gamma at the iterate
    u: np.ndarray  # the iterate
    step: np.ndarray  # accepted step t (NaN at the last iterate)
    phase: np.ndarray  # int64, the phase label of Alg. 2
    n_evd: np.ndarray  # cumulative EVD count

    @classmethod
    def allocate(cls, max_iter, n):
        """A record for at most max_iter iterations of an n = D + 1 dual."""
        return cls(np.full(max_iter + 1, np.nan), np.full((max_iter + 1, n), np.nan),
                   np.full(max_iter + 1, np.nan), np.zeros(max_iter + 1, dtype=np.int64),
                   np.zeros(max_iter + 1))

    @classmethod
    def skip(cls):
        """An empty record: the solve records nothing."""
        return cls(np.empty(0), np.empty((0, 0)), np.empty(0), np.empty(0, dtype=np.int64),
                   np.empty(0))


@njit(**JIT)
def _keep_positive_pairs(w, V, k, out_w, out_V):
    """The pairs of (w[:k], V[:, :k]) with w_j > 0, in order, to out_w / out_V; returns their
    count. out_* may be w / V themselves (the copy only moves columns left)."""
    n = V.shape[0]
    kk = 0
    for j in range(k):
        if w[j] > 0.0:
            out_w[kk] = w[j]
            for i in range(n):
                out_V[i, kk] = V[i, j]
            kk += 1
    return kk


@njit(inline="always", **JIT)
def _shifted_into(C, negA, u):
    """C(u) = -A - diag(u) written into ``C`` from ``negA`` = -A (both n x n)."""
    n = negA.shape[0]
    for i in range(n):
        for j in range(n):
            C[i, j] = negA[i, j]
        C[i, i] -= u[i]


@njit(**JIT)
def _positive_spectrum(u, evd, a, work, stats):
    """Positive eigen (or Ritz) pairs of C(u) = -A - diag(u); counts one EVD; returns k.

    ``work`` is ``_spectrum_workspace``'s tuple; the pairs go to its w[:k], V[:, :k].
    """
    negA, C, out_w, out_V, work_P, work_alpha, work_beta, p1 = work
    n = negA.shape[0]
    _shifted_into(C, negA, u)
    c0 = _read_cycles()
    k = 0
    if evd == EVD_EXACT:
        eigh_into(C, out_w, out_V, work_alpha)
        k = _keep_positive_pairs(out_w, out_V, n, out_w, out_V)
    else:
        delta = lanczos_threshold(C, a)
        k, m, beta = lanczos_positive_pairs(
            C, p1, delta, out_w, out_V, work_P, work_alpha, work_beta
        )
        stats[ST_LZ_M] += m
        stats[ST_LZ_BETA] += beta
        stats[ST_LZ_N] += 1.0
    cyc = float(_read_cycles() - c0)
    if evd == EVD_EXACT:
        stats[ST_EVD_CYC] += cyc
    else:
        stats[ST_LZ_CYC] += cyc
    stats[ST_N_EVD] += 1.0
    return k


@njit(**JIT)
def _phase_label(u, phase1, wA_max, check_equal):
    """The sub-phase Alg. 2 is in at u (phase I only while every u_i has been all-equal)."""
    if phase1 and (not check_equal or _all_equal(u)):
        if wA_max - u[0] > 0.0:
            return PHASE_IB
        return PHASE_IA
    mx = -u[0]
    for j in range(1, u.shape[0]):
        if -u[j] > mx:
            mx = -u[j]
    # Weyl (step 11): lambda_max(C(u)) <= lambda_max(-A) + max(-u)
    if wA_max + mx <= 0.0:
        return PHASE_IIA
    return PHASE_IIB


@njit(**JIT)
def _evaluate(u, phase1, wA, VA, opts, work, stats):
    """h_gamma(u) of (14) with the EVD elimination of Alg. 2; returns (h, phase, k).

    wA, VA: the eigenpairs of -A. The positive pairs of C(u) are left in work's w[:k],
    V[:, :k] (``_spectrum_workspace``) for the gradient (13). Method "gd" always decomposes
    C(u) (Alg. 1) but still reports Alg. 2's phase label.
    """
    out_w, out_V = work[2], work[3]
    n = u.shape[0]
    phase = _phase_label(u, phase1, wA[n - 1], True)
    k = 0
    if opts.method == GD or phase == PHASE_IIB:
        k = _positive_spectrum(u, opts.evd, opts.a, work, stats)
    elif phase == PHASE_IB:
        # EVD eliminated: lambda(C(u)) = lambda(-A) - u, eigenvectors of -A (step 4)
        c = u[0]
        for j in range(n):
            if wA[j] - c > 0.0:
                out_w[k] = wA[j] - c
                for i in range(n):
                    out_V[i, k] = VA[i, j]
                k += 1
    # I-A, II-A: Pi_+(C(u)) = 0, no EVD
    h = 0.0
    for j in range(n):
        h += u[j]
    pen = 0.0
    for j in range(k):
        pen += out_w[j] * out_w[j]
    return h + 0.5 * opts.gamma * pen, phase, k


@njit(**JIT)
def _gradient(n, gamma, w, V, k, out_g):
    """Gradient (13) of h: 1 - gamma diag(Pi_+(C(u)))."""
    for i in range(n):
        s = 0.0
        for j in range(k):
            s += w[j] * V[i, j] * V[i, j]
        out_g[i] = 1.0 - gamma * s


@njit(**JIT)
def _side_h_grad(u, C, gamma, w, V, k, side, out_g):
    """h_gamma(u) (14) and its gradient (13) from the spectral data of C(u) on ``side``."""
    n = u.shape[0]
    h = 0.0
    for j in range(n):
        h += u[j]
    pen = 0.0
    if side == SIDE_NEG:
        # ||Pi_+(C)||^2 = ||C||^2 - ||Pi_-(C)||^2, diag(Pi_+) = diag(C) - diag(Pi_-)
        for i in range(n):
            for j in range(n):
                pen += C[i, j] * C[i, j]
        for j in range(k):
            pen -= w[j] * w[j]
        for i in range(n):
            s = C[i, i]
            for j in range(k):
                s -= w[j] * V[i, j] * V[i, j]
            out_g[i] = 1.0 - gamma * s
    else:
        for j in range(k):
            if w[j] > 0.0:
                pen += w[j] * w[j]
        for i in range(n):
            s = 0.0
            for j in range(k):
                if w[j] > 0.0:
                    s += w[j] * V[i, j] * V[i, j]
            out_g[i] = 1.0 - gamma * s
    return h + 0.5 * gamma * max(pen, 0.0)


@njit(**JIT)
def dual_value_grad(S, v, u, gamma, out_g):
    """h_gamma(u) of (14) and its gradient (13) by a full EVD of C(u)."""
    work = _spectrum_workspace(S, v)
    k = _positive_spectrum(u, EVD_EXACT, 1.0, work, np.zeros(N_STATS))
    negA, C, w, V, P, al, be, p1 = work
    return _side_h_grad(u, C, gamma, w, V, k, SIDE_POS, out_g)


@njit(**JIT)
def _spectrum_workspace(S, v):
    """-A of the homogenized BQP (10) and the scratch that ``_positive_spectrum`` works in:
    (negA, C, w, V, P, alpha, beta, p1), p1 the Lanczos start vector."""
    n = S.shape[0] + 1
    A = np.empty((n, n))
    homogenize(S, v, A)
    p1 = np.empty(n)
    lanczos_start(n, p1)
    return (-A, np.empty((n, n)), np.empty(n), np.empty((n, n)), np.empty((n, n)),
            np.empty(n), np.empty(n), p1)


@njit(**JIT)
def dual_solve_item(S, v, u, t_first, opts, out_phase, stats, traj):
    """Minimize h_gamma (14) from u (overwritten with the solution); Algs. 1/2 or BB.

    opts: ``DualOptions`` (method GD, ENHANCED or FAST); t_first: the first trial step;
    out_phase: iterations per phase (4,); stats: the ``ST_*`` row; traj: a ``Trajectory``.

    Line search (all methods): backtracking with shrink factor ``shrink`` until
    h(u - t g) <= ref - c_armijo t ||g||^2, ref = h(u) (Algs. 1, 2) or the max of the last
    ``nm_window`` accepted values (fast). Trial t: Algs. 1, 2 start from the previous accepted
    step (``t_first`` at i = 0; 1 every iteration if ``ls_restart``); fast starts from the BB1
    step s^T s / s^T y. The spectrum computed at the accepted trial point is reused for the
    next gradient, so an accepted step costs no extra EVD. Stop when ||t g|| <= eps.
    The trajectory's arrays (length max_iter + 1, or 0 to skip) receive h, u, step, phase
    and the cumulative EVD count at every iterate.
    """
    c_start = _read_cycles()
    e_start = stats[ST_EVD_CYC] + stats[ST_LZ_CYC]
    gamma, eps, max_iter, method = opts.gamma, opts.eps, opts.max_iter, opts.method
    traj_h, traj_u, traj_step, traj_phase, traj_nevd = traj
    D = S.shape[0]
    n = D + 1
    work = _spectrum_workspace(S, v)
    negA, C, w, V, P, al, be, p1 = work
    g = np.empty(n)
    g_old = np.empty(n)
    u_trial = np.empty(n)
    u_old = np.empty(n)
    hist = np.full(max(opts.nm_window, 1), -np.inf)
    record = traj_h.shape[0] > 0

    # EVD of -A once per item (eigenvalues for phases I-A/I-B and the Weyl test)
    c0 = _read_cycles()
    wA = np.empty(n)
    VA = np.empty((n, n))
    eigh_into(negA, wA, VA, al)
    stats[ST_EVD_CYC] += float(_read_cycles() - c0)
    stats[ST_N_EVD] += 1.0

    phase1 = _all_equal(u)
    h, phase, k = _evaluate(u, phase1, wA, VA, opts, work, stats)
    _gradient(n, gamma, w, V, k, g)
    hist[0] = h
    t = t_first
    status = 0
    n_iter = 0
    c_mark = c_start
    e_mark = e_start
    ph_run = phase  # label the cycles since c_mark are charged to
    for it in range(max_iter):
        c_mark, e_mark = _charge_phase(stats, ph_run, c_mark, e_mark)
        ph_run = phase
        out_phase[phase] += 1
        gg = 0.0
        for j in range(n):
            gg += g[j] * g[j]
        if record:
            traj_h[it] = h
            traj_phase[it] = phase
            traj_nevd[it] = stats[ST_N_EVD]
            for j in range(n):
                traj_u[it, j] = u[j]
        forced = False
        if it == 0 and opts.initial_step and phase == PHASE_IA:
            # Sec. IV-A: t0 > u0 - lambda_max(-A); the margin (D+1)/gamma puts the top
            # eigenvalue of C(u1) where gamma * lambda * |v|^2 ~ 1 for a spread eigenvector.
            t = u[0] - wA[n - 1] + n / gamma
            forced = True
        elif opts.ls_restart and method != FAST:
            t = 1.0
        ref = h
        if method == FAST:
            for j in range(hist.shape[0]):
                if hist[j] > ref:
                    ref = hist[j]
        accepted = False
        h_trial = h
        for _ in range(MAX_BACKTRACK):
            for j in range(n):
                u_trial[j] = u[j] - t * g[j]
            h_trial, phase_trial, k = _evaluate(u_trial, phase1, wA, VA, opts, work, stats)
            if forced or h_trial <= ref - opts.c_armijo * t * gg:
                accepted = True
                break
            t *= opts.shrink
        if not accepted:
            status = 2
            break
        if record:
            traj_step[it] = t
        for j in range(n):
            u_old[j] = u[j]
            g_old[j] = g[j]
            u[j] = u_trial[j]
        h = h_trial
        phase = phase_trial
        if phase1 and phase >= PHASE_IIA:
            phase1 = False  # irreversible: phase II never returns to phase I
        _gradient(n, gamma, w, V, k, g)
        n_iter += 1
        step_norm = t * math.sqrt(gg)
        if method == FAST:
            hist[n_iter % hist.shape[0]] = h
            sy = 0.0
            ss = 0.0
            for j in range(n):
                s_j = u[j] - u_old[j]
                sy += s_j * (g[j] - g_old[j])
                ss += s_j * s_j
            if sy > 0.0:
                t = min(max(ss / sy, 1e-12), 1e12)
            else:
                t = min(2.0 * t, 1e12)  # linear region (phase I-A / II-A): expand
        if step_norm <= eps:
            status = 1
            break
    if record:
        traj_h[n_iter] = h
        traj_phase[n_iter] = phase
        traj_nevd[n_iter] = stats[ST_N_EVD]
        traj_step[n_iter] = np.nan
        for j in range(n):
            traj_u[n_iter, j] = u[j]
    stats[ST_N_ITER] = n_iter
    stats[ST_STATUS] = status
    stats[ST_H] = h
    _charge_phase(stats, ph_run, c_mark, e_mark)
    stats[ST_ALL_CYC] += float(_read_cycles() - c_start)
    return n_iter


@njit(**PJIT)
def dual_solve_batch(S, v, u, t_first, opts, out_phase, out_stats):
    """dual_solve_item for every item in parallel; u (n_items, D+1) is overwritten.

    out_phase, out_stats: ``BatchOutputs.phase`` and ``.st_dual``.
    Outputs are separate arguments, not a tuple: Numba drops writes made in a ``prange``
    loop to arrays taken from a tuple argument (numba issues #7135, #10338).
    """
    for i in prange(S.shape[0]):
        e1 = np.empty(0)
        no_record = Trajectory(e1, np.empty((0, 0)), e1, np.empty(0, dtype=np.int64), e1)
        dual_solve_item(S[i], v[i], u[i], t_first[i], opts, out_phase[i], out_stats[i],
                        no_record)
