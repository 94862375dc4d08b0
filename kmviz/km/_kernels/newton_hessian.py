"""The generalized Hessian of the dual h_gamma (14) for the semismooth Newton method
(``newton.py``): formed (dense loops, GEMMs, one-sided approximations) or applied matrix-free
by preconditioned CG."""

import math

import numpy as np
from numba import njit

from kmviz._jit import JIT

from .eigen import SMALL_N
from .common import SIDE_ALL, SIDE_POS

# Newton systems with all pairs of C(u) known are solved matrix-free by PCG from this n on
# (``_newton_pcg``); below it the Hessian is formed and Cholesky-factored (cheap at small n,
# and exact). Measured D = 100, ML100K warm (BCD iteration 2, 600 items scaled to 1682):
# Newton time outside the EVDs 5.2 s -> 0.7 s per BCD iteration, ~4 CG steps per Newton
# step, Newton steps per item 5.42 -> 5.43 (eta 1e-2; 1e-4: 5.1 CG steps, 5.42), same h(u*).
NEWTON_CG_N = 48
NEWTON_CG_MAX = 200
NEWTON_CG_ETA = 1e-2  # relative CG residual, capped by ||g|| (superlinear near u*)


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
