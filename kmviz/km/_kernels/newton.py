"""The "fast" method's default variant: semismooth Newton on the dual h_gamma (14), fused
with the randomization (Alg. 3) from the same spectrum."""

import math

import numpy as np
from numba import njit

from kmviz._jit import JIT, run_rows

from .eigen import SMALL_N, cholesky_solve, eigh_into, lanczos_side_capped, psd_cholesky
from .common import (EVD_EXACT, LZ_PAPER, MAX_BACKTRACK, PHASE_IB, PHASE_IIA, PHASE_IIB,
                     SIDE_ALL, SIDE_NEG, SIDE_POS, ST_ALL_CYC, ST_CG_ITER, ST_EVD_CYC, ST_H,
                     ST_LZ_BETA, ST_LZ_CYC, ST_LZ_M, ST_LZ_N, ST_N_EVD, ST_N_ITER, ST_STATUS,
                     _all_equal, _charge_phase, _read_cycles, homogenize, lanczos_start)
from .dual import _keep_positive_pairs, _phase_label, _shifted_into, _side_h_grad
from .lanczos import lanczos_positive_pairs, lanczos_threshold
from .newton_hessian import NEWTON_CG_MAX, NEWTON_CG_N, _newton_matrix, _newton_pcg
from .randomize import randomize_from_pairs

# The "fast" method minimizes the same dual h_gamma (14) by a semismooth Newton method (the
# nearest-correlation-matrix method of Qi & Sun, 2006, which is exactly this problem: (11) is
# min 1/(2 gamma) ||X + gamma A||_F^2 s.t. diag(X) = 1, X >= 0). Why: with gradient steps the
# dual is badly conditioned on popular items (large S, so C(u) has eigenvalues of size ~tr S/4
# next to positive ones of size ~(D+1)/gamma); on MovieLens 100K at D = 8 a cold BB run needed
# median 54 / mean 355 iterations with 5% of the items at the 5,000 cap, and ~30 iterations
# warm. Newton needs ~10 cold and ~6 warm (quadratic convergence). Same dual, same optimum.
#
# Spectral data at an iterate ("side"):
#   SIDE_ALL  all n eigenpairs of C(u) (exact EVD, or phase I-B: lambda(-A) - u, V of -A),
#   SIDE_POS  the eigenpairs with lambda > 0 only (certified Lanczos / Alg. 5),
#   SIDE_NEG  the eigenpairs with lambda < 0 only: Pi_+(C) = C - Pi_-(C), so when X* is near
#             full rank (D = 100: 1-2 negative eigenvalues) only the few negative pairs are
#             computed.

LZ_DENSE_N = 16  # certified rule: dense EVD up to this n (see _ssn_spectrum)
LZ_TOL_REL = 1e-10  # Ritz residual tolerance of the certified rule, relative to max |C_ij|
# Certified rule: a run that has not certified after n / LZ_CAP_DIV steps (at least
# LZ_DENSE_N) stops and the item switches to the dense EVD for the rest of its dual solve.
# Measured on MovieLens 100K, D = 100, warm (BCD iteration 2): C(u*) has a dense cluster of
# eigenvalues in about [-0.1, 0.1] on both sides of 0 (trace X* = n forces mean lambda_+ ~
# 1/gamma) with median 8 (up to 64) negative ones, so the split at 0 is interior and needs
# m ~ n (mean m 41, 92 runs per item); a capped run wastes at most ~1/4 of one EVD.
LZ_CAP_DIV = 4
# Certified rule: after this many Newton steps on one-sided spectra the item switches to the
# dense EVD. The one-sided Hessian (other side's eigenvalues replaced by their mean) gives
# poor steps when lambda_+ is spread (cold D = 100: median 24, max 1428 Newton steps vs 7
# exact; keeping the 8 smallest lambda_+ exactly did not help, measured), so the cheap runs
# pay only for the first few steps.
LZ_SWITCH_ITER = 6


@njit(inline="always", **JIT)
def _ssn_spectrum_exact(u, out, work, stats):
    """``_ssn_spectrum`` with evd exact: all pairs of C(u) by ``eigh_into``; (n, SIDE_ALL).

    The same operations as ``_ssn_spectrum``'s exact branch, without its Lanczos code: a fit
    with the default EVD then never compiles the Lanczos kernels (see ``_ssn_eval``).
    """
    C, out_w, out_V = out[0], out[1], out[2]
    negA, ws = work[0], work[3]
    n = negA.shape[0]
    _shifted_into(C, negA, u)
    c0 = _read_cycles()
    eigh_into(C, out_w, out_V, ws[0])
    stats[ST_EVD_CYC] += float(_read_cycles() - c0)
    stats[ST_N_EVD] += 1.0
    return n, SIDE_ALL


@njit(inline="always", **JIT)
def _ssn_spectrum(u, opts, side_pref, prev, out, work, stats):
    """Spectral data of C(u) = -A - diag(u) at a phase II-B point; returns (k, side).

    prev: the spectral data (w, V, k, side) at the previous point; out: (C, w, V, g), C(u)
    and the pairs are written there (g is ``_ssn_eval``'s); work: ``newton_solve_item``'s
    (negA, wA, VA, ws, wm, lz_dense). evd exact: all pairs (``eigh_into``). Lanczos,
    certified rule: the pairs on side_pref, warm-started from the previous pairs on that
    side, at most max(LZ_DENSE_N, n / LZ_CAP_DIV) steps; an uncertified run sets
    lz_dense[0] and the item uses the dense EVD from then on (also set by
    ``newton_solve_item`` after LZ_SWITCH_ITER one-sided steps). Lanczos, paper rule:
    Alg. 5 with the threshold (20), positive Ritz pairs.
    """
    evd, lz_rule, a = opts.evd, opts.lz_rule, opts.a
    w_prev, V_prev, k_prev, side_prev = prev
    C, out_w, out_V = out[0], out[1], out[2]
    negA, ws, wm, lz_dense = work[0], work[3], work[4], work[5]
    n = negA.shape[0]
    _shifted_into(C, negA, u)
    c0 = _read_cycles()
    side = SIDE_ALL
    k = n
    lz = False  # the cycles since c0 are a Lanczos run's (else a dense EVD's)
    if evd == EVD_EXACT:
        eigh_into(C, out_w, out_V, ws[0])
    elif lz_rule == LZ_PAPER:
        lz = True
        delta = lanczos_threshold(C, a)
        p1 = ws[1]
        lanczos_start(n, p1)
        k, m, beta = lanczos_positive_pairs(C, p1, delta, out_w, out_V, wm[0], ws[2], ws[3])
        side = SIDE_POS
        stats[ST_LZ_M] += m
        stats[ST_LZ_BETA] += beta
        stats[ST_LZ_N] += 1.0
    elif n <= LZ_DENSE_N or lz_dense[0] != 0:
        # lz_dense: a capped run of this item did not certify (see LZ_CAP_DIV).
        # small matrices: a certified Lanczos run needs m ~ n steps and its one-sided
        # Hessian is poor (measured at D = 8: 181 vs 16 EVDs per item), while the dense
        # solver is ~2.5 us at n = 9; the exact pairs are what the certified rule would return
        eigh_into(C, out_w, out_V, ws[0])
    else:
        lz = True
        sign = 1.0 if side_pref == SIDE_POS else -1.0
        p1 = ws[1]
        lanczos_start(n, p1)
        # warm start: the previous pairs on this side dominate the start vector; the fixed
        # perturbation keeps a component along every other eigenvector
        if side_prev == side_pref and k_prev > 0:
            s = 0.0
            for i in range(n):
                x = 1e-3 * p1[i]
                for j in range(k_prev):
                    x += abs(w_prev[j]) * V_prev[i, j]
                p1[i] = x
                s += x * x
            s = math.sqrt(s)
            for i in range(n):
                p1[i] /= s
        scale = 0.0
        for i in range(n):
            for j in range(n):
                scale = max(scale, abs(C[i, j]))
        k, m, beta = lanczos_side_capped(C, sign, p1, LZ_TOL_REL * max(scale, 1e-300), out_w,
                                         out_V, wm[0], ws[2], ws[3], ws[4], wm[1], ws[0],
                                         ws[5], wm[2], max(LZ_DENSE_N, n // LZ_CAP_DIV))
        stats[ST_LZ_M] += m
        stats[ST_LZ_BETA] += beta
        stats[ST_LZ_N] += 1.0
        side = side_pref
        if k == -2:
            lz_dense[0] = 1
        if k < 0:  # not certified (cap, or inertia not matched at an invariant subspace)
            c1 = _read_cycles()
            stats[ST_LZ_CYC] += float(c1 - c0)
            c0 = c1
            lz = False
            eigh_into(C, out_w, out_V, ws[0])
            k = n
            side = SIDE_ALL
    cyc = float(_read_cycles() - c0)
    if lz:
        stats[ST_LZ_CYC] += cyc
    else:
        stats[ST_EVD_CYC] += cyc
    stats[ST_N_EVD] += 1.0
    return k, side


@njit(**JIT)
def _ssn_eval(u, phase1, opts, side_pref, prev, out, work, stats, lanczos):
    """h, gradient and spectral data at u with Alg. 2's EVD elimination; (h, phase, k, side).

    Arguments as for ``_ssn_spectrum``; the gradient goes to out's g. ``lanczos`` None: evd
    is exact (``_ssn_spectrum_exact``); Numba prunes the other branch before typing, so the
    Lanczos kernels are compiled only for fits that use them (``lanczos`` True).
    """
    C, out_w, out_V, out_g = out
    negA, wA, VA = work[0], work[1], work[2]
    n = u.shape[0]
    phase = _phase_label(u, phase1, wA[n - 1], True)
    k = 0
    side = SIDE_POS
    if phase == PHASE_IIB:
        if lanczos is None:
            k, side = _ssn_spectrum_exact(u, out, work, stats)
        else:
            k, side = _ssn_spectrum(u, opts, side_pref, prev, out, work, stats)
    elif phase == PHASE_IB:
        c = u[0]
        for j in range(n):
            out_w[j] = wA[j] - c
            for i in range(n):
                out_V[i, j] = VA[i, j]
        k = n
        side = SIDE_ALL
    if side == SIDE_NEG:
        for i in range(n):
            for j in range(n):
                C[i, j] = negA[i, j]
            C[i, i] -= u[i]
    h = _side_h_grad(u, C, opts.gamma, out_w, out_V, k, side, out_g)
    return h, phase, k, side


@njit(**JIT)
def _phase1_minimizer(wA, gamma):
    """argmin_c of h(c 1) = n c + gamma/2 sum_j max(wA_j - c, 0)^2 (phase I, no EVD).

    h' = n - gamma sum_{wA_j > c} (wA_j - c) is piecewise linear and increasing; wA ascending.
    """
    n = wA.shape[0]
    s = 0.0
    for kk in range(1, n + 1):
        s += wA[n - kk]
        c = (s - n / gamma) / kk
        lo = wA[n - kk - 1] if kk < n else -np.inf
        if c >= lo:
            return c
    return (s - n / gamma) / n


@njit(inline="always", **JIT)
def newton_solve_item(S, v, u, opts, out_phase, stats, out_w, out_V, out_C, lanczos):
    """Minimize h_gamma (14) from u (overwritten) by semismooth Newton; returns (k, side).

    opts: ``DualOptions`` (method NEWTON; nm_window and ls_restart unused); out_phase:
    iterations per phase (4,); stats: the ``ST_*`` row; lanczos: None when opts.evd is exact,
    else True (see ``_ssn_eval``).

    Cold start (all u_i equal, ``initial_step``): the exact minimizer of h along the ones
    direction from the eigenvalues of -A (phase I, no EVD; the Sec. IV-A idea taken to its
    end). Each iteration: d solves (M + mu I) d = -g, M the generalized Hessian
    (``_newton_matrix``; matrix-free PCG, ``_newton_pcg``, when all pairs are known and
    n >= NEWTON_CG_N), mu = gamma min(||g||, 1e-3) (+1e-10 gamma), so steps are Newton
    steps near u*; Armijo backtracking on h from t = 1. If t = 1 is accepted with an almost
    linear decrease (> 0.9 of the first-order prediction, a direction where h is linear, e.g.
    a coordinate with no positive-eigenvector weight), t is doubled while h keeps decreasing.
    Stop when the Newton step ||d|| <= eps (before evaluating the trial point, so the last
    spectrum is the one at the returned u), or ||t d|| <= eps after a step. The spectral data
    at the returned u are left in out_w[:k], out_V[:, :k] (side as in ``_ssn_spectrum``), and
    C(u) in out_C when side is SIDE_NEG, for the randomization.
    """
    c_start = _read_cycles()
    e_start = stats[ST_EVD_CYC] + stats[ST_LZ_CYC]
    gamma, eps, max_iter = opts.gamma, opts.eps, opts.max_iter
    c_armijo, shrink = opts.c_armijo, opts.shrink
    D = S.shape[0]
    n = D + 1
    A = np.empty((n, n))
    homogenize(S, v, A)
    negA = -A
    wt = np.empty(n)
    Vt = np.empty((n, n))
    Ct = np.empty((n, n))
    g = np.empty(n)
    gt = np.empty(n)
    d = np.empty(n)
    u_trial = np.empty(n)
    M = np.empty((n, n))
    ws = np.empty((6, n))
    wm = np.empty((3, n, n))
    wA = np.empty(n)
    VA = np.empty((n, n))
    lz_dense = np.zeros(1, dtype=np.int64)
    phase1 = _all_equal(u)
    c0 = _read_cycles()
    # the EVD of -A is needed on cold starts (phase I: its pairs are C(u)'s) and, for small
    # n with Lanczos, for the side choice below; warm starts with exact EVDs only use
    # lambda_max(-A) in the II-A test, where the bound below is as sound (issue 36: one EVD
    # of ~8 per item and BCD iteration at D = 20, every later iterate the same)
    exact_A = phase1 or (n <= SMALL_N and (lanczos is not None or not opts.warm_bound))
    if exact_A:
        eigh_into(negA, wA, VA, ws[0])
    else:
        # warm start near u*: the split of C(u) at 0 is interior to its eigenvalue cluster,
        # where a certified Lanczos run hits its cap (see LZ_CAP_DIV) and only adds to the
        # dense EVD (measured D = 100, ML100K warm: +0.34 s per BCD iteration)
        if n > SMALL_N:
            lz_dense[0] = 1
        # off phase I, lambda(-A) only enters the Weyl test of phase II-A (VA and the side
        # choice are unused with dense EVDs), and an upper bound keeps that test sound: the
        # Gershgorin bound, O(n^2), instead of eigvalsh (~45% of a full EVD at n = 101, one
        # per item and BCD iteration). A bound above lambda_max only labels fewer points
        # II-A; near u* C(u) has positive eigenvalues, so none is lost there.
        bound = -np.inf
        for i in range(n):
            r = negA[i, i]
            for j in range(n):
                if j != i:
                    r += abs(negA[i, j])
            bound = max(bound, r)
        for i in range(n):
            wA[i] = bound
    if exact_A:
        stats[ST_EVD_CYC] += float(_read_cycles() - c0)
        stats[ST_N_EVD] += 1.0
    work = (negA, wA, VA, ws, wm, lz_dense)

    w = out_w
    V = out_V
    C = out_C
    n_iter = 0
    ph_run = -1  # label the cycles since c_mark go to (-1: that of the first iterate)
    if phase1 and opts.initial_step and max_iter > 0:
        ph_run = _phase_label(u, True, wA[n - 1], True)
        out_phase[ph_run] += 1
        c = _phase1_minimizer(wA, gamma)
        for j in range(n):
            u[j] = c
        n_iter = 1
    # side with fewer eigenpairs, from the spectrum of C(u) at phase I (lambda(-A) - u_0)
    npos = 0
    for j in range(n):
        if wA[j] - u[0] > 0.0:
            npos += 1
    side_pref = SIDE_POS if npos <= n - npos else SIDE_NEG
    h, phase, k, side = _ssn_eval(u, phase1, opts, side_pref,
                                  (w, V, np.int64(0), np.int64(SIDE_ALL)),
                                  (C, w, V, g), work, stats, lanczos)
    if ph_run < 0:
        ph_run = phase
    c_mark = c_start
    e_mark = e_start
    status = 0
    while n_iter < max_iter:
        # the previous step (set-up and phase-I step at the first) is charged to its label
        c_mark, e_mark = _charge_phase(stats, ph_run, c_mark, e_mark)
        ph_run = phase
        gn = 0.0
        for j in range(n):
            gn += g[j] * g[j]
        gn = math.sqrt(gn)
        mu = gamma * (1e-10 + min(gn, 1e-3))
        if side == SIDE_ALL and n >= NEWTON_CG_N:
            stats[ST_CG_ITER] += _newton_pcg(gamma, w, V, k, mu, g, d, NEWTON_CG_MAX)
        else:
            _newton_matrix(C, gamma, w, V, k, side, M, wm[0], wm[1])
            for j in range(n):
                M[j, j] += mu
            for j in range(n):
                gt[j] = -g[j]
            for _ in range(30):
                if cholesky_solve(M, gt, d, wm[0]) == 0:
                    break
                for j in range(n):  # not numerically PD: more regularization
                    M[j, j] += 10.0 * mu
                mu *= 11.0
        dn = 0.0
        gd = 0.0
        for j in range(n):
            dn += d[j] * d[j]
            gd += g[j] * d[j]
        dn = math.sqrt(dn)
        if dn <= eps:
            status = 1
            break
        out_phase[phase] += 1
        n_iter += 1
        # side for the trial spectra: the smaller one at the current point
        if side != SIDE_ALL:
            side_pref = side if k <= n - k else -side
        else:
            npos = 0
            for j in range(k):
                if w[j] > 0.0:
                    npos += 1
            side_pref = SIDE_POS if npos <= n - npos else SIDE_NEG
        t = 1.0
        accepted = False
        h_t = h
        for _ in range(MAX_BACKTRACK):
            for j in range(n):
                u_trial[j] = u[j] + t * d[j]
            h_t, ph_t, k_t, side_t = _ssn_eval(u_trial, phase1, opts, side_pref,
                                               (w, V, k, side), (Ct, wt, Vt, gt), work, stats,
                                               lanczos)
            if h_t <= h + c_armijo * t * gd:
                accepted = True
                break
            t *= shrink
        if not accepted:
            status = 2
            break
        if t == 1.0 and h - h_t > 0.9 * (-gd):
            # nearly linear along d: expand (each trial is one more evaluation)
            for _ in range(40):
                for j in range(n):
                    u_trial[j] = u[j] + 2.0 * t * d[j]
                h2, ph2, k2, side2 = _ssn_eval(u_trial, phase1, opts, side_pref,
                                               (wt, Vt, k_t, side_t), (C, w, V, g), work,
                                               stats, lanczos)
                if h2 <= h_t + c_armijo * t * gd:
                    t *= 2.0
                    h_t, ph_t, k_t, side_t = h2, ph2, k2, side2
                    for i in range(n):
                        gt[i] = g[i]
                        wt[i] = w[i]
                        for j in range(n):
                            Vt[i, j] = V[i, j]
                            Ct[i, j] = C[i, j]
                else:
                    break
        for j in range(n):
            u[j] += t * d[j]
        h = h_t
        phase = ph_t
        k = k_t
        side = side_t
        for i in range(n):
            g[i] = gt[i]
            w[i] = wt[i]
            for j in range(n):
                V[i, j] = Vt[i, j]
                C[i, j] = Ct[i, j]
        if phase1 and phase >= PHASE_IIA:
            phase1 = False
        if side != SIDE_ALL and n_iter >= LZ_SWITCH_ITER:
            lz_dense[0] = 1
        if t * dn <= eps:
            status = 1
            break
    stats[ST_N_ITER] = n_iter
    stats[ST_STATUS] = status
    stats[ST_H] = h
    _charge_phase(stats, ph_run, c_mark, e_mark)
    stats[ST_ALL_CYC] += float(_read_cycles() - c_start)
    return k, side


@njit(inline="always", **JIT)
def positive_factor(w, V, k, side, C, out_w, out_V):
    """Pairs (out_w[:k'], out_V[:, :k']) with sum_j w_j v_j v_j^T = Pi_+(C(u)) for Alg. 3.

    SIDE_ALL / SIDE_POS: the positive eigenpairs (L = V_+ sqrt(gamma Lambda_+), the paper's
    factor). SIDE_NEG: Pi_+(C) = C - V_- Lambda_- V_-^T is formed and factored by a PSD
    Cholesky, Pi_+ = L L^T, returned as pairs (1, L(:, j)): any factor of X* gives the same
    Gaussian sample distribution, and no second EVD is needed. Returns k'.
    """
    n = C.shape[0]
    if side == SIDE_NEG:
        X = np.empty((n, n))
        for i in range(n):
            for j in range(n):
                s = C[i, j]
                for r in range(k):
                    s -= w[r] * V[i, r] * V[j, r]
                X[i, j] = s
        psd_cholesky(X, out_V)
        for j in range(n):
            out_w[j] = 1.0
        return n
    return _keep_positive_pairs(w, V, k, out_w, out_V)


@njit(**JIT)
def newton_randomize_rows(lo, hi, S, v, u, opts, xi, psi_prev, has_prev, out_psi, out_obj,
                          out_improved, out_phase, out_st_dual, out_st_rand, lanczos):
    """"fast" for the items lo..hi-1: Newton dual solve, then Alg. 3 from the same spectrum.

    Fusing the two reuses the decomposition at u* for the randomization (one EVD per item
    fewer than a separate randomization pass). opts: ``DualOptions``; out_*: the fields of
    ``BatchOutputs``, in its order (``*outputs``); lanczos: None when opts.evd is exact, else
    True (the Lanczos code is compiled only then, see ``_ssn_eval``). Serial:
    ``newton_randomize_batch`` runs it on row blocks in threads (a ``parallel=True`` twin
    compiled 3x slower, see ``kmviz._jit``).
    """
    n = S.shape[1] + 1
    for i in range(lo, hi):
        w = np.empty(n)
        V = np.empty((n, n))
        C = np.empty((n, n))
        k, side = newton_solve_item(S[i], v[i], u[i], opts, out_phase[i], out_st_dual[i], w, V,
                                    C, lanczos)
        c0 = _read_cycles()
        wp = np.empty(n)
        Vp = np.empty((n, n))
        kp = positive_factor(w, V, k, side, C, wp, Vp)
        f, imp = randomize_from_pairs(S[i], v[i], wp, Vp, kp, opts.gamma, xi[i], psi_prev[i],
                                      has_prev, out_psi[i])
        out_obj[i] = f
        out_improved[i] = imp
        out_st_rand[i, ST_ALL_CYC] += float(_read_cycles() - c0)


def newton_randomize_batch(S, v, u, opts, xi, psi_prev, has_prev, out_psi, out_obj,
                           out_improved, out_phase, out_st_dual, out_st_rand):
    """``newton_randomize_rows`` on every item, row blocks on Numba's thread count."""
    lanczos = None if opts.evd == EVD_EXACT else True
    run_rows(newton_randomize_rows, S.shape[0], S, v, u, opts, xi, psi_prev, has_prev,
             out_psi, out_obj, out_improved, out_phase, out_st_dual, out_st_rand, lanczos)
