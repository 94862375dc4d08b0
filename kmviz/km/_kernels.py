"""Numba kernels of the binary QP (4): dual gradient descent (paper Algs. 1 and 2, plus a
Barzilai-Borwein variant), the modified Lanczos method (Alg. 5), randomization (Alg. 3), exact
enumeration and branch-and-bound.

Every kernel is an array-in/array-out function; per-item outputs only. The plain-NumPy twins
live in ``_reference.py``. Codes shared with ``bqp.py``:

- method: 0 = "gd" (Alg. 1), 1 = "enhanced" (Alg. 2), 2 = "fast" (Alg. 2 + BB steps)
- evd: 0 = exact (``_eigen.eigh_into``: own QL solver, LAPACK above DENSE_N), 1 = Lanczos
  (Alg. 5 with the threshold of eq. (20))
- phase: 0 = I-A, 1 = I-B, 2 = II-A, 3 = II-B
- ``stats`` row: see the ``ST_*`` indices below.
"""

import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from kmviz._jit import JIT, PJIT

from ._eigen import (SMALL_N, cholesky_solve, eigh_into, lanczos_side_capped,
                     lanczos_step, psd_cholesky, ritz_vector, tridiag_eig)

GD, ENHANCED, FAST = 0, 1, 2
EVD_EXACT, EVD_LANCZOS = 0, 1
PHASE_IA, PHASE_IB, PHASE_IIA, PHASE_IIB = 0, 1, 2, 3

# per-item statistics written by the dual solver and the randomization
ST_N_EVD = 0  # EVDs or Lanczos runs (line-search evaluations and the one at u* included)
ST_LZ_M = 1  # sum of Lanczos dimensions m
ST_LZ_BETA = 2  # sum of final beta_{m+1}
ST_LZ_N = 3  # number of Lanczos runs
ST_EVD_CYC = 4  # cycles spent inside dense eigh calls
ST_ALL_CYC = 5  # cycles of the whole per-item dual solve (or randomization)
ST_N_ITER = 6
ST_STATUS = 7  # 0 = iteration cap, 1 = converged, 2 = line search failed
ST_H = 8  # h_gamma at the returned u
ST_LZ_CYC = 9  # cycles inside Lanczos runs (Alg. 5 or certified; their tridiagonal EVD too)
# ST_PH_CYC + phase: cycles of the dual iterations labelled with that phase (I-A ... II-B),
# EVD / Lanczos cycles excluded; set-up before the first iteration goes to the first one's
# label, the final stopping test to the label of the returned u
ST_PH_CYC = 10
ST_CG_ITER = 14  # CG steps of the matrix-free Newton systems (``_newton_pcg``)
N_STATS = 15

MAX_BACKTRACK = 60


@intrinsic
def _read_cycles(typingctx):
    """LLVM ``llvm.readcyclecounter`` (rdtsc on x86); 0 where the target has no counter."""
    sig = types.uint64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


@njit(**JIT)
def _charge_phase(stats, phase, c_mark, e_mark):
    """Add the cycles since c_mark, less the EVD/Lanczos cycles since e_mark, to ``phase``.

    Returns the new marks (now, EVD + Lanczos cycles so far), so consecutive charges tile the
    solve without overlap.
    """
    now = _read_cycles()
    e_now = stats[ST_EVD_CYC] + stats[ST_LZ_CYC]
    stats[ST_PH_CYC + phase] += float(now - c_mark) - (e_now - e_mark)
    return now, e_now


@njit(**JIT)
def read_cycle_counter():
    """Current value of the CPU cycle counter (calibrated against perf_counter in bqp.py)."""
    return _read_cycles()


# ----------------------------------------------------------------------------- basics


@njit(**JIT)
def homogenize(S, v, out_A):
    """A of eq. (10): [[0, a^T/2], [a/2, A0]] with A0 = S/4 and a = S^T 1 / 2 - v (eq. (8))."""
    D = S.shape[0]
    out_A[0, 0] = 0.0
    for j in range(D):
        s = 0.0
        for k in range(D):
            s += S[k, j]
        half_a = 0.5 * (0.5 * s - v[j])
        out_A[0, j + 1] = half_a
        out_A[j + 1, 0] = half_a
        for k in range(D):
            out_A[j + 1, k + 1] = 0.25 * S[j, k]


@njit(**JIT)
def bqp_objective(S, v, psi):
    """psi^T S psi - 2 psi^T v of the BQP (4) (rho_i dropped)."""
    D = S.shape[0]
    f = 0.0
    for j in range(D):
        if psi[j] != 0.0:
            f -= 2.0 * v[j]
            for k in range(D):
                if psi[k] != 0.0:
                    f += S[j, k]
    return f


@njit(**JIT)
def _all_equal(u):
    for j in range(1, u.shape[0]):
        if u[j] != u[0]:
            return False
    return True


@njit(**JIT)
def lanczos_start(n, out_p):
    """Deterministic unit start vector: ones plus a small aperiodic perturbation.

    The ones vector alone can be orthogonal to eigenvectors of structured C(u); the sine
    term makes the overlap with every eigenvector non-zero in practice.
    """
    s = 0.0
    for i in range(n):
        out_p[i] = 1.0 + 0.25 * math.sin(1.0 + 1.618033988749895 * i)
        s += out_p[i] * out_p[i]
    s = math.sqrt(s)
    for i in range(n):
        out_p[i] /= s


# ----------------------------------------------------------------------------- Lanczos


@njit(**JIT)
def lanczos_threshold(C, a):
    """delta of eq. (20) from the trace bounds of Lemma 3; 0 when D < 2 (ln D <= 0).

    With delta = 0 Lanczos runs to the full dimension D + 1 (exact, and cheap for D = 1).
    """
    n = C.shape[0]
    D = n - 1
    tr = 0.0
    tr2 = 0.0
    l1 = 0.0
    for i in range(n):
        tr += C[i, i]
        for j in range(n):
            tr2 += C[i, j] * C[i, j]
            l1 += abs(C[i, j])
    if D < 2:
        return 0.0
    mu = tr / n
    var = max(tr2 / n - mu * mu, 0.0)
    s_ub = mu + math.sqrt(var * D)
    s_lb = mu + math.sqrt(var / D)
    s_mink = l1 / n
    return ((s_ub - s_lb) + s_mink) / (a * D * math.log(D))


@njit(**JIT)
def lanczos_tridiag(C, p1, delta, out_alpha, out_beta, out_P):
    """Alg. 5 with full reorthogonalization; returns m.

    out_alpha[:m] is the diagonal of H_m, out_beta[:m-1] its off-diagonal and
    out_beta[m-1] = beta_{m+1}, the stopping quantity (<= delta, or m = D + 1).
    Row j of out_P holds p_{j+1} (P_m^T, rows for contiguous access).
    """
    n = C.shape[0]
    w = np.empty(n)
    for i in range(n):
        out_P[0, i] = p1[i]
    m = n
    for j in range(n):
        alpha, beta = lanczos_step(C, 1.0, out_P, j, out_beta[j - 1] if j > 0 else 0.0, w)
        out_alpha[j] = alpha
        out_beta[j] = beta
        if beta <= delta or j == n - 1 or beta == 0.0:
            m = j + 1
            break
        for i in range(n):
            out_P[j + 1, i] = w[i] / beta
    return m


@njit(**JIT)
def lanczos_positive_pairs(C, p1, delta, out_w, out_V, work_P, work_alpha, work_beta):
    """Ritz pairs (15) of C with positive Ritz value, written to out_w[:k], out_V[:, :k].

    Returns (k, m, beta_{m+1}).
    """
    n = C.shape[0]
    m = lanczos_tridiag(C, p1, delta, work_alpha, work_beta, work_P)
    theta = np.empty(m)
    Q = np.empty((m, m))
    tridiag_eig(work_alpha, work_beta, m, theta, Q, np.empty(m))
    k = 0
    for r in range(m):
        if theta[r] > 0.0:
            out_w[k] = theta[r]
            ritz_vector(work_P, Q, r, m, out_V, k)
            k += 1
    return k, m, work_beta[m - 1]


# ----------------------------------------------------------------------------- dual


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


@njit(**JIT)
def _positive_spectrum(negA, u, evd, a, p1, C, out_w, out_V, work_P, work_alpha, work_beta, stats):
    """Positive eigen (or Ritz) pairs of C(u) = -A - diag(u); counts one EVD; returns k."""
    n = negA.shape[0]
    for i in range(n):
        for j in range(n):
            C[i, j] = negA[i, j]
        C[i, i] -= u[i]
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
def _evaluate(u, method, phase1, negA, wA, VA, gamma, evd, a, p1, C, out_w, out_V,
              work_P, work_alpha, work_beta, stats):
    """h_gamma(u) of (14) with the EVD elimination of Alg. 2; returns (h, phase, k).

    The positive pairs of C(u) are left in out_w[:k], out_V[:, :k] for the gradient (13).
    Method "gd" always decomposes C(u) (Alg. 1) but still reports Alg. 2's phase label.
    """
    n = u.shape[0]
    phase = _phase_label(u, phase1, wA[n - 1], True)
    k = 0
    if method == GD or phase == PHASE_IIB:
        k = _positive_spectrum(negA, u, evd, a, p1, C, out_w, out_V, work_P, work_alpha,
                               work_beta, stats)
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
    return h + 0.5 * gamma * pen, phase, k


@njit(**JIT)
def _gradient(n, gamma, w, V, k, out_g):
    """Gradient (13) of h: 1 - gamma diag(Pi_+(C(u)))."""
    for i in range(n):
        s = 0.0
        for j in range(k):
            s += w[j] * V[i, j] * V[i, j]
        out_g[i] = 1.0 - gamma * s


@njit(**JIT)
def dual_value_grad(S, v, u, gamma, out_g):
    """h_gamma(u) of (14) and its gradient (13) by a full EVD of C(u)."""
    negA, C, w, V, P, al, be, p1 = _spectrum_workspace(S, v)
    k = _positive_spectrum(negA, u, EVD_EXACT, 1.0, p1, C, w, V, P, al, be, np.zeros(N_STATS))
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
def dual_solve_item(S, v, u, gamma, eps, max_iter, method, evd, a, initial_step,
                    c_armijo, shrink, nm_window, ls_restart, t_first,
                    out_phase, stats, traj_h, traj_u, traj_step, traj_phase, traj_nevd):
    """Minimize h_gamma (14) from u (overwritten with the solution); Algs. 1/2 or BB.

    Line search (all methods): backtracking with shrink factor ``shrink`` until
    h(u - t g) <= ref - c_armijo t ||g||^2, ref = h(u) (Algs. 1, 2) or the max of the last
    ``nm_window`` accepted values (fast). Trial t: Algs. 1, 2 start from the previous accepted
    step (``t_first`` at i = 0; 1 every iteration if ``ls_restart``); fast starts from the BB1
    step s^T s / s^T y. The spectrum computed at the accepted trial point is reused for the
    next gradient, so an accepted step costs no extra EVD. Stop when ||t g|| <= eps.
    Trajectory arrays (length max_iter + 1, or 0 to skip) receive h, u, step, phase and the
    cumulative EVD count at every iterate.
    """
    c_start = _read_cycles()
    e_start = stats[ST_EVD_CYC] + stats[ST_LZ_CYC]
    D = S.shape[0]
    n = D + 1
    negA, C, w, V, P, al, be, p1 = _spectrum_workspace(S, v)
    g = np.empty(n)
    g_old = np.empty(n)
    u_trial = np.empty(n)
    u_old = np.empty(n)
    hist = np.full(max(nm_window, 1), -np.inf)
    record = traj_h.shape[0] > 0

    # EVD of -A once per item (eigenvalues for phases I-A/I-B and the Weyl test)
    c0 = _read_cycles()
    wA = np.empty(n)
    VA = np.empty((n, n))
    eigh_into(negA, wA, VA, al)
    stats[ST_EVD_CYC] += float(_read_cycles() - c0)
    stats[ST_N_EVD] += 1.0

    phase1 = _all_equal(u)
    h, phase, k = _evaluate(u, method, phase1, negA, wA, VA, gamma, evd, a, p1, C, w, V,
                            P, al, be, stats)
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
        if it == 0 and initial_step and phase == PHASE_IA:
            # Sec. IV-A: t0 > u0 - lambda_max(-A); the margin (D+1)/gamma puts the top
            # eigenvalue of C(u1) where gamma * lambda * |v|^2 ~ 1 for a spread eigenvector.
            t = u[0] - wA[n - 1] + n / gamma
            forced = True
        elif ls_restart and method != FAST:
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
            h_trial, phase_trial, k = _evaluate(u_trial, method, phase1, negA, wA, VA, gamma,
                                                evd, a, p1, C, w, V, P, al, be, stats)
            if forced or h_trial <= ref - c_armijo * t * gg:
                accepted = True
                break
            t *= shrink
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
def dual_solve_batch(S, v, u, gamma, eps, max_iter, method, evd, a, initial_step,
                     c_armijo, shrink, nm_window, ls_restart, t_first, out_phase, out_stats):
    """dual_solve_item for every item in parallel; u (n_items, D+1) is overwritten."""
    for i in prange(S.shape[0]):
        e1 = np.empty(0)
        e2 = np.empty((0, 0))
        e3 = np.empty(0, dtype=np.int64)
        dual_solve_item(S[i], v[i], u[i], gamma, eps, max_iter, method, evd, a, initial_step,
                        c_armijo, shrink, nm_window, ls_restart, t_first[i],
                        out_phase[i], out_stats[i], e1, e2, e1, e3, e1)


# ----------------------------------------------------------------------------- Alg. 3


@njit(**JIT)
def randomize_from_pairs(S, v, w, V, k, gamma, xi, psi_prev, has_prev, out_psi):
    """Alg. 3 from the positive pairs (w[:k], V[:, :k]) of Pi_+(C(u*)); returns (obj, improved).

    Samples x~ = sign(L xi_l) with L = V_+ sqrt(gamma Lambda_+) (column j of L uses xi_l[j]),
    plus the deterministic rounding of X*'s first column, are mapped to psi via
    x^ = x~(1) x~(2:) and ranked by the true objective (4); the incumbent psi_prev is kept
    unless a candidate is strictly better. sign(0) = +1.
    """
    D = S.shape[0]
    n = D + 1
    L = np.empty(k)
    for j in range(k):
        L[j] = math.sqrt(gamma * w[j])
    xt = np.empty(n)
    cand = np.empty(D)
    best = np.inf
    n_rand = xi.shape[0]
    for l in range(n_rand + 1):
        if l < n_rand:
            for i in range(n):
                s = 0.0
                for j in range(k):
                    s += V[i, j] * L[j] * xi[l, j]
                xt[i] = s
        else:
            # X*(:, 1) = gamma sum_j w_j V(1, j) V(:, j)
            for i in range(n):
                s = 0.0
                for j in range(k):
                    s += w[j] * V[0, j] * V[i, j]
                xt[i] = s
        s0 = 1.0 if xt[0] >= 0.0 else -1.0
        for i in range(D):
            x = s0 if xt[i + 1] >= 0.0 else -s0
            cand[i] = 0.5 * (x + 1.0)
        f = bqp_objective(S, v, cand)
        if f < best:
            best = f
            for i in range(D):
                out_psi[i] = cand[i]
    improved = True
    if has_prev:
        f_prev = bqp_objective(S, v, psi_prev)
        if not best < f_prev:
            improved = False
            best = f_prev
            for i in range(D):
                out_psi[i] = psi_prev[i]
    return best, improved


@njit(**JIT)
def randomize_item(S, v, u, gamma, evd, a, xi, psi_prev, has_prev, out_psi, stats):
    """Decompose C(u*) (one EVD / Lanczos run, counted) then Alg. 3; returns (obj, improved)."""
    c_start = _read_cycles()
    D = S.shape[0]
    n = D + 1
    negA, C, w, V, P, al, be, p1 = _spectrum_workspace(S, v)
    k = _positive_spectrum(negA, u, evd, a, p1, C, w, V, P, al, be, stats)
    f, improved = randomize_from_pairs(S, v, w, V, k, gamma, xi, psi_prev, has_prev, out_psi)
    stats[ST_ALL_CYC] += float(_read_cycles() - c_start)
    return f, improved


@njit(**PJIT)
def randomize_batch(S, v, u, gamma, evd, a, xi, psi_prev, has_prev, out_psi, out_obj,
                    out_improved, out_stats):
    """randomize_item for every item in parallel."""
    for i in prange(S.shape[0]):
        f, imp = randomize_item(S[i], v[i], u[i], gamma, evd, a, xi[i], psi_prev[i], has_prev,
                                out_psi[i], out_stats[i])
        out_obj[i] = f
        out_improved[i] = imp


# ----------------------------------------------------------------------------- exact / B&B


@njit(**JIT)
def enumerate_bqp(S, v, out_psi):
    """Exact minimum of (4) over all 2^D psi in Gray-code order (O(D) per candidate).

    Flipping psi_k on changes the objective by S_kk + 2 (S psi)_k - 2 v_k. Ties keep the
    first minimizer in Gray order; the returned objective is recomputed from scratch.
    """
    D = S.shape[0]
    psi = np.zeros(D)
    r = np.zeros(D)
    f = 0.0
    best = 0.0
    code = 0
    best_code = 0
    total = 1 << D
    for step in range(1, total):
        kbit = 0
        while (step >> kbit) & 1 == 0:
            kbit += 1
        if psi[kbit] == 0.0:
            f += S[kbit, kbit] + 2.0 * r[kbit] - 2.0 * v[kbit]
            psi[kbit] = 1.0
            for i in range(D):
                r[i] += S[i, kbit]
        else:
            for i in range(D):
                r[i] -= S[i, kbit]
            f -= S[kbit, kbit] + 2.0 * r[kbit] - 2.0 * v[kbit]
            psi[kbit] = 0.0
        code ^= 1 << kbit
        if f < best:
            best = f
            best_code = code
    for i in range(D):
        out_psi[i] = 1.0 if (best_code >> i) & 1 else 0.0
    return bqp_objective(S, v, out_psi)


@njit(**PJIT)
def enumerate_batch(S, v, out_psi, out_obj):
    """enumerate_bqp for every item in parallel."""
    for i in prange(S.shape[0]):
        out_obj[i] = enumerate_bqp(S[i], v[i], out_psi[i])


@njit(**JIT)
def bnb_bqp(S, v, psi0, out_psi):
    """Depth-first branch-and-bound for (4) from the incumbent psi0; returns (obj, n_nodes).

    Lower bound at a node (variables F fixed, R free, r = S psi_F):
        f(psi) = f(psi_F) + sum_{k in R} psi_k c_k + sum_{k != l in R} S_kl psi_k psi_l,
        c_k = S_kk - 2 v_k + 2 r_k.
    Since psi_l in {0, 1}, S_kl psi_k psi_l >= min(0, S_kl) psi_k, so the pair sum is
    >= sum_k psi_k n_k with n_k = sum_{l in R, l != k} min(0, S_kl); and
    psi_k (c_k + n_k) >= min(0, c_k + n_k). Hence
        f(psi) >= f(psi_F) + sum_{k in R} min(0, c_k + n_k)
    for every completion: a valid bound, so pruning nodes with bound >= incumbent never
    discards a strictly better solution.
    """
    D = S.shape[0]
    has_neg = False
    for i in range(D):
        for j in range(D):
            if i != j and S[i, j] < 0.0:
                has_neg = True
    best = bqp_objective(S, v, psi0)
    for i in range(D):
        out_psi[i] = psi0[i]
    # branch first on variables with the largest |linear coefficient|
    key = np.empty(D)
    for i in range(D):
        key[i] = -abs(S[i, i] - 2.0 * v[i])
    order = np.argsort(key)
    val = np.zeros(D)
    r = np.zeros(D)
    fdep = np.zeros(D + 1)
    choice = np.zeros(D, dtype=np.int64)
    tried = np.zeros(D, dtype=np.int64)
    n_nodes = 0
    depth = 0
    while depth >= 0:
        if depth == D:
            if fdep[D] < best - 1e-12:
                best = fdep[D]
                for i in range(D):
                    out_psi[i] = val[i]
            depth -= 1
            continue
        kv = order[depth]
        st = tried[depth]
        if st == 0:
            n_nodes += 1
            lb = fdep[depth]
            for idx in range(depth, D):
                kk = order[idx]
                ck = S[kk, kk] - 2.0 * v[kk] + 2.0 * r[kk]
                if has_neg:
                    for idx2 in range(depth, D):
                        ll = order[idx2]
                        if ll != kk and S[kk, ll] < 0.0:
                            ck += S[kk, ll]
                if ck < 0.0:
                    lb += ck
            if lb >= best - 1e-12:
                depth -= 1
                continue
            first = 1 if S[kv, kv] - 2.0 * v[kv] + 2.0 * r[kv] < 0.0 else 0
            choice[depth] = first
            tried[depth] = 1
        elif st == 1:
            if choice[depth] == 1:
                for i in range(D):
                    r[i] -= S[i, kv]
            val[kv] = 0.0
            choice[depth] = 1 - choice[depth]
            tried[depth] = 2
        else:
            if choice[depth] == 1:
                for i in range(D):
                    r[i] -= S[i, kv]
            val[kv] = 0.0
            tried[depth] = 0
            depth -= 1
            continue
        if choice[depth] == 1:
            fdep[depth + 1] = fdep[depth] + S[kv, kv] + 2.0 * r[kv] - 2.0 * v[kv]
            for i in range(D):
                r[i] += S[i, kv]
            val[kv] = 1.0
        else:
            fdep[depth + 1] = fdep[depth]
        depth += 1
    return bqp_objective(S, v, out_psi), n_nodes


@njit(**PJIT)
def bnb_batch(S, v, psi0, out_psi, out_obj, out_nodes):
    """bnb_bqp for every item in parallel."""
    for i in prange(S.shape[0]):
        f, nn = bnb_bqp(S[i], v[i], psi0[i], out_psi[i])
        out_obj[i] = f
        out_nodes[i] = nn


# ----------------------------------------------------------------------------- "fast": Newton
#
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

SIDE_ALL, SIDE_POS, SIDE_NEG = 0, 1, -1
LZ_PAPER, LZ_CERTIFIED = 0, 1
NEWTON = 3
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
# Newton systems with all pairs of C(u) known are solved matrix-free by PCG from this n on
# (``_newton_pcg``); below it the Hessian is formed and Cholesky-factored (cheap at small n,
# and exact). Measured D = 100, ML100K warm (BCD iteration 2, 600 items scaled to 1682):
# Newton time outside the EVDs 5.2 s -> 0.7 s per BCD iteration, ~4 CG steps per Newton
# step, Newton steps per item 5.42 -> 5.43 (eta 1e-2; 1e-4: 5.1 CG steps, 5.42), same h(u*).
NEWTON_CG_N = 48
NEWTON_CG_MAX = 200
NEWTON_CG_ETA = 1e-2  # relative CG residual, capped by ||g|| (superlinear near u*)


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
def _split_sides(w, V, k):
    """The first k eigenpairs (w, V) split by sign: (V_+, lambda_+, r_+, V_-, lambda_-, r_-),
    eigenvectors as contiguous columns (arrays keep at least one column when a side is empty)."""
    n = V.shape[0]
    rp = 0
    for i in range(k):
        if w[i] > 0.0:
            rp += 1
    rn = k - rp
    Vp = np.empty((n, max(rp, 1)))
    Vn = np.empty((n, max(rn, 1)))
    lp = np.empty(max(rp, 1))
    ln = np.empty(max(rn, 1))
    ip = 0
    ineg = 0
    for i in range(k):
        if w[i] > 0.0:
            lp[ip] = w[i]
            for a in range(n):
                Vp[a, ip] = V[a, i]
            ip += 1
        else:
            ln[ineg] = w[i]
            for a in range(n):
                Vn[a, ineg] = V[a, i]
            ineg += 1
    return Vp, lp, rp, Vn, ln, rn


@njit(**JIT)
def _newton_matrix_all(w, V, k, out_M):
    """Exact P o P + 2 sum_{i+, j-} tau_ij z_ij z_ij^T (unscaled, full matrix) by two GEMMs.

    P = V_+ V_+^T (or I - V_- V_-^T, whichever side is smaller). The mixed term is one GEMM
    (Z o tau) Z^T with Z[:, (i, j)] = V(:, i) o V(:, j), 2 n^2 r_+ r_- flops; the former
    triangular loops did the same flops with strided column access and cost ~1.8 ms per
    Newton step at D = 100 (r_- ~ 8 on warm MovieLens items), more than the EVD itself.
    """
    n = V.shape[0]
    Vp, lp, rp, Vn, ln, rn = _split_sides(w, V, k)
    if rp == 0:
        for a in range(n):
            for b in range(n):
                out_M[a, b] = 0.0
        return
    if rn <= rp:
        if rn > 0:
            Pm = -np.dot(Vn, Vn.T)
        else:
            Pm = np.zeros((n, n))
        for a in range(n):
            Pm[a, a] += 1.0
    else:
        Pm = np.dot(Vp, Vp.T)
    for a in range(n):
        for b in range(n):
            out_M[a, b] = Pm[a, b] * Pm[a, b]
    if rn == 0:
        return
    K = rp * rn
    Z = np.empty((n, K))
    Zt = np.empty((n, K))
    tau = np.empty(K)
    c = 0
    for i in range(rp):
        for j in range(rn):
            tau[c] = 2.0 * lp[i] / (lp[i] - ln[j])
            c += 1
    for a in range(n):
        c = 0
        for i in range(rp):
            x = Vp[a, i]
            for j in range(rn):
                z = x * Vn[a, j]
                Z[a, c] = z
                Zt[a, c] = tau[c] * z
                c += 1
    Mx = np.dot(Zt, Z.T)
    for a in range(n):
        for b in range(n):
            out_M[a, b] += Mx[a, b]


@njit(**JIT)
def _newton_pcg(gamma, w, V, k, mu, g, out_d, max_cg):
    """Solve (M + mu I) d = -g matrix-free by Jacobi-preconditioned CG; returns CG steps.

    M = gamma [P o P + 2 sum_{i+, j-} tau_ij z_ij z_ij^T] is ``_newton_matrix_all``'s exact
    generalized Hessian (all pairs of C(u) known). A product costs the n x n (P o P) x plus
    two GEMMs with the r_+ x r_- block, M x = gamma [(P o P) x + 2 diag(V_+ (tau o
    (V_+^T diag(x) V_-)) V_-^T)], about 4 n r_+ r_- + 2 n^2 flops against 2 n^2 r_+ r_- to
    form M (D = 100 warm: ~0.3 vs 15 Mflop, so ~50 CG steps still win). Inexact Newton
    (Qi & Sun's PCG): stop at ||r|| <= eta ||g||, eta = min(1e-2, ||g||), so the steps near
    u* are Newton steps to second order; out_d starts at 0.
    """
    n = V.shape[0]
    Vp, lp, rp, Vn, ln, rn = _split_sides(w, V, k)
    # P o P (scaled by gamma) and the Jacobi preconditioner diag(M) + mu
    PP = np.zeros((n, n))
    if rp > 0:
        if rn <= rp:
            if rn > 0:
                PP = -np.dot(Vn, Vn.T)
            for a in range(n):
                PP[a, a] += 1.0
        else:
            PP = np.dot(Vp, Vp.T)
        for a in range(n):
            for b in range(n):
                PP[a, b] = gamma * PP[a, b] * PP[a, b]
    mix = rp > 0 and rn > 0
    tau = np.empty((max(rp, 1), max(rn, 1)))  # gamma * 2 tau_ij
    for i in range(rp):
        for j in range(rn):
            tau[i, j] = 2.0 * gamma * lp[i] / (lp[i] - ln[j])
    prec = np.empty(n)
    for a in range(n):
        s = PP[a, a] + mu
        if mix:
            for i in range(rp):
                t = 0.0
                for j in range(rn):
                    t += tau[i, j] * Vn[a, j] * Vn[a, j]
                s += Vp[a, i] * Vp[a, i] * t
        prec[a] = 1.0 / s
    r = np.empty(n)
    z = np.empty(n)
    p = np.empty(n)
    q = np.empty(n)
    Xn = np.empty((n, max(rn, 1)))
    gn = 0.0
    for a in range(n):
        out_d[a] = 0.0
        r[a] = -g[a]
        gn += g[a] * g[a]
    gn = math.sqrt(gn)
    tol = min(NEWTON_CG_ETA, gn) * gn
    rz = 0.0
    for a in range(n):
        z[a] = prec[a] * r[a]
        p[a] = z[a]
        rz += r[a] * z[a]
    it = 0
    while it < max_cg:
        rr = 0.0
        for a in range(n):
            rr += r[a] * r[a]
        if math.sqrt(rr) <= tol:
            break
        # q = (M + mu I) p
        for a in range(n):
            s = mu * p[a]
            for b in range(n):
                s += PP[a, b] * p[b]
            q[a] = s
        if mix:
            for a in range(n):
                for j in range(rn):
                    Xn[a, j] = p[a] * Vn[a, j]
            B = np.dot(Vp.T, Xn)
            for i in range(rp):
                for j in range(rn):
                    B[i, j] *= tau[i, j]
            Y = np.dot(Vp, B)
            for a in range(n):
                s = 0.0
                for j in range(rn):
                    s += Y[a, j] * Vn[a, j]
                q[a] += s
        pq = 0.0
        for a in range(n):
            pq += p[a] * q[a]
        if not pq > 0.0:
            break
        alpha = rz / pq
        for a in range(n):
            out_d[a] += alpha * p[a]
            r[a] -= alpha * q[a]
        rz_new = 0.0
        for a in range(n):
            z[a] = prec[a] * r[a]
            rz_new += r[a] * z[a]
        beta = rz_new / rz
        rz = rz_new
        for a in range(n):
            p[a] = z[a] + beta * p[a]
        it += 1
    return it


@njit(**JIT)
def _newton_matrix_small(w, V, k, out_M, work_Vt, work_z):
    """``_newton_matrix_all`` for n <= SMALL_N by direct loops, without allocation.

    At n = 9 the two GEMMs and their temporaries cost more than the flops (1.20 us per
    Newton step, against 0.76 us for these loops); ``work_Vt`` holds V^T so that the pair
    products run over contiguous rows; work_z is a length-n buffer. out_M is overwritten.
    """
    n = V.shape[0]
    Vt = work_Vt
    rp = 0
    for i in range(k):
        if w[i] > 0.0:
            rp += 1
        for a in range(n):
            Vt[i, a] = V[a, i]
    if rp > 0:
        # P o P with P = V_+ V_+^T, or I - V_- V_-^T when the negative side is smaller
        pos = rp <= k - rp
        for a in range(n):
            for b in range(a + 1):
                x = 0.0
                for i in range(k):
                    if (w[i] > 0.0) == pos:
                        x += Vt[i, a] * Vt[i, b]
                if not pos:
                    x = (1.0 if a == b else 0.0) - x
                out_M[a, b] = x * x
                out_M[b, a] = x * x
        # 2 sum_{i+, j-} tau_ij z_ij z_ij^T, z_ij = V(:, i) o V(:, j)
        z = work_z
        for i in range(k):
            if w[i] <= 0.0:
                continue
            for j in range(k):
                if w[j] > 0.0:
                    continue
                tau = 2.0 * w[i] / (w[i] - w[j])
                for a in range(n):
                    z[a] = Vt[i, a] * Vt[j, a]
                for a in range(n):
                    za = tau * z[a]
                    for b in range(n):
                        out_M[a, b] += za * z[b]
    else:
        for a in range(n):
            for b in range(n):
                out_M[a, b] = 0.0


@njit(**JIT)
def _newton_matrix(C, gamma, w, V, k, side, out_M, work_P, work_T):
    """Generalized Hessian gamma * diag o J_{Pi_+} o diag of h at u (Clarke Jacobian of Pi_+).

    With z_ij = V(:, i) o V(:, j) and Omega_ij = (l_i^+ - l_j^+) / (l_i - l_j):
    M = gamma sum_ij Omega_ij z_ij z_ij^T = gamma [P o P + 2 sum_{i+, j-} tau_ij z_ij z_ij^T],
    P = V_+ V_+^T, tau_ij = l_i / (l_i - l_j). SIDE_ALL uses it exactly (O(n^2 r_+ r_-)).
    With one side only, the other side's eigenvalues are replaced by their mean (from the
    trace), which keeps M positive semidefinite (a Schur product of PSD matrices) and exact
    on the computed side; it only changes the Newton direction, never the dual or its
    optimum. SIDE_NEG uses the complement form M = gamma [I - Q o Q - 2 (I - Q) o
    (V_- K V_-^T)], Q = V_- V_-^T, K = diag(-l_i / (lbar_+ - l_i)).
    """
    n = C.shape[0]
    P = work_P
    if side == SIDE_ALL:  # both write all of out_M
        if n <= SMALL_N:
            _newton_matrix_small(w, V, k, out_M, work_T, P[0])
        else:
            _newton_matrix_all(w, V, k, out_M)
    else:
        for a in range(n):
            for b in range(n):
                out_M[a, b] = 0.0
                P[a, b] = 0.0
        tr = 0.0
        for a in range(n):
            tr += C[a, a]
        rest = tr
        for i in range(k):
            rest -= w[i]
        # mean eigenvalue of the side not computed (clamped to its sign)
        lbar = rest / max(n - k, 1)
        if side == SIDE_POS:
            lbar = min(lbar, 0.0)
        else:
            lbar = max(lbar, 1e-300)
        for i in range(k):
            for a in range(n):
                for b in range(a + 1):
                    P[a, b] += V[a, i] * V[b, i]
        T = work_T  # V diag(weight) V^T
        for a in range(n):
            for b in range(a + 1):
                T[a, b] = 0.0
        for i in range(k):
            if side == SIDE_POS:
                wt = w[i] / (w[i] - lbar) if w[i] > 0.0 else 0.0
            else:
                wt = -w[i] / (lbar - w[i]) if w[i] < 0.0 else 0.0
            for a in range(n):
                va = wt * V[a, i]
                for b in range(a + 1):
                    T[a, b] += va * V[b, i]
        for a in range(n):
            for b in range(a + 1):
                comp = (1.0 if a == b else 0.0) - P[a, b]
                if side == SIDE_POS:
                    out_M[a, b] = P[a, b] * P[a, b] + 2.0 * comp * T[a, b]
                else:
                    out_M[a, b] = ((1.0 if a == b else 0.0) - P[a, b] * P[a, b]
                                   - 2.0 * comp * T[a, b])
    for a in range(n):
        for b in range(a + 1):
            out_M[a, b] *= gamma
            out_M[b, a] = out_M[a, b]


@njit(**JIT)
def _ssn_spectrum(negA, u, evd, lz_rule, a, side_pref, w_prev, V_prev, k_prev, side_prev, C,
                  out_w, out_V, ws, wm, stats, lz_dense):
    """Spectral data of C(u) = -A - diag(u) at a phase II-B point; returns (k, side).

    evd exact: all pairs (``eigh_into``). Lanczos, certified rule: the pairs on side_pref,
    warm-started from the previous pairs on that side, at most max(LZ_DENSE_N, n /
    LZ_CAP_DIV) steps; an uncertified run sets lz_dense[0] and the item uses the dense EVD
    from then on (also set by ``newton_solve_item`` after LZ_SWITCH_ITER one-sided steps). Lanczos, paper rule: Alg. 5 with the
    threshold (20), positive Ritz pairs.
    """
    n = negA.shape[0]
    for i in range(n):
        for j in range(n):
            C[i, j] = negA[i, j]
        C[i, i] -= u[i]
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
def _ssn_eval(u, phase1, negA, wA, VA, gamma, evd, lz_rule, a, side_pref, w_prev, V_prev,
              k_prev, side_prev, C, out_w, out_V, out_g, ws, wm, stats, lz_dense):
    """h, gradient and spectral data at u with Alg. 2's EVD elimination; (h, phase, k, side)."""
    n = u.shape[0]
    phase = _phase_label(u, phase1, wA[n - 1], True)
    k = 0
    side = SIDE_POS
    if phase == PHASE_IIB:
        k, side = _ssn_spectrum(negA, u, evd, lz_rule, a, side_pref, w_prev, V_prev, k_prev,
                                side_prev, C, out_w, out_V, ws, wm, stats, lz_dense)
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
    h = _side_h_grad(u, C, gamma, out_w, out_V, k, side, out_g)
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


@njit(**JIT)
def newton_solve_item(S, v, u, gamma, eps, max_iter, evd, lz_rule, a, initial_step,
                      c_armijo, shrink, out_phase, stats, out_w, out_V, out_C):
    """Minimize h_gamma (14) from u (overwritten) by semismooth Newton; returns (k, side).

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
    if phase1 or n <= SMALL_N:
        eigh_into(negA, wA, VA, ws[0])
    else:
        # warm start near u*: the split of C(u) at 0 is interior to its eigenvalue cluster,
        # where a certified Lanczos run hits its cap (see LZ_CAP_DIV) and only adds to the
        # dense EVD (measured D = 100, ML100K warm: +0.34 s per BCD iteration)
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
    if phase1 or n <= SMALL_N:
        stats[ST_EVD_CYC] += float(_read_cycles() - c0)
        stats[ST_N_EVD] += 1.0

    w = out_w
    V = out_V
    C = out_C
    n_iter = 0
    ph_run = -1  # label the cycles since c_mark go to (-1: that of the first iterate)
    if phase1 and initial_step and max_iter > 0:
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
    h, phase, k, side = _ssn_eval(u, phase1, negA, wA, VA, gamma, evd, lz_rule, a, side_pref,
                                  w, V, 0, SIDE_ALL, C, w, V, g, ws, wm, stats, lz_dense)
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
            h_t, ph_t, k_t, side_t = _ssn_eval(u_trial, phase1, negA, wA, VA, gamma, evd,
                                               lz_rule, a, side_pref, w, V, k, side, Ct, wt,
                                               Vt, gt, ws, wm, stats, lz_dense)
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
                h2, ph2, k2, side2 = _ssn_eval(u_trial, phase1, negA, wA, VA, gamma, evd,
                                               lz_rule, a, side_pref, wt, Vt, k_t, side_t, C,
                                               w, V, g, ws, wm, stats, lz_dense)
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


@njit(**JIT)
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


@njit(**PJIT)
def newton_randomize_batch(S, v, u, gamma, eps, max_iter, evd, lz_rule, a, initial_step,
                           c_armijo, shrink, xi, psi_prev, has_prev, out_psi, out_obj,
                           out_improved, out_phase, out_st_dual, out_st_rand):
    """"fast" per item in parallel: Newton dual solve, then Alg. 3 from the same spectrum.

    Fusing the two reuses the decomposition at u* for the randomization (one EVD per item
    fewer than a separate randomization pass).
    """
    for i in prange(S.shape[0]):
        n = S.shape[1] + 1
        w = np.empty(n)
        V = np.empty((n, n))
        C = np.empty((n, n))
        k, side = newton_solve_item(S[i], v[i], u[i], gamma, eps, max_iter, evd, lz_rule, a,
                                    initial_step, c_armijo, shrink, out_phase[i],
                                    out_st_dual[i], w, V, C)
        c0 = _read_cycles()
        wp = np.empty(n)
        Vp = np.empty((n, n))
        kp = positive_factor(w, V, k, side, C, wp, Vp)
        f, imp = randomize_from_pairs(S[i], v[i], wp, Vp, kp, gamma, xi[i], psi_prev[i],
                                      has_prev, out_psi[i])
        out_obj[i] = f
        out_improved[i] = imp
        out_st_rand[i, ST_ALL_CYC] += float(_read_cycles() - c0)
