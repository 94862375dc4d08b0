"""Numba kernels of the Kolmogorov model's continuous side: the per-item statistics of the
binary QP (4) and the per-user simplex QP (3), solved by Frank-Wolfe.

Every kernel works on raw CSR/CSC arrays (``indptr, indices, data``) and writes only to its
``out_*`` arguments. Plain-NumPy twins (``_*_reference``) sit at the end of the module; the
tests pin kernel == reference.

Frank-Wolfe variants (``variant`` code)
---------------------------------------
0 ``plain``: the classic step toward the best vertex, exact line search.
1 ``away``: Wolfe's away steps added (move away from the worst active vertex when that
  direction is steeper).
2 ``pairwise``: move mass from the worst active vertex to the best vertex.

The simplex QP has an exact line search in closed form: along a direction ``d``,
``f(theta + t d) = f(theta) + t g^T d + t^2 d^T Q d`` with ``g = 2 (Q theta - w)``, so
``t* = -g^T d / (2 d^T Q d)``, clipped to the feasible step range. Plain FW converges only
sublinearly once the optimum sits on a face of the simplex (the usual case here: most users
end with a sparse theta), zig-zagging toward the face. Measured on MovieLens 100K (all
100k ratings, D=8, random binary psi, Dirichlet warm start, cap 1000 steps): to a relative
gap of 1e-7, plain FW hit the cap for 680 of 943 users; away steps needed 41 steps on average
(max 111); pairwise FW 29 on average (max 71), about 4 ms for all users. ``pairwise`` is
therefore the default.

Stopping rule: the Frank-Wolfe duality gap ``g^T theta - min_k g_k`` bounds
``f(theta) - f*`` from above for a convex f. A user stops when that gap is at most
``tol * max(rho_u, tiny)``, where ``rho_u = sum_i p_ui^2`` is the user's loss of the all-zero
prediction, the natural scale of the user's objective; or after ``max_iter`` steps.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..._jit import JIT, run_rows

#: Ratings per pass of ``build_item_stats`` over an item's S_i.
BUILD_BLOCK = 8
#: Kernels whose sums must keep their written order: ``JIT`` without reassociation.
JIT_ORDERED = dict(JIT, fastmath={"contract", "arcp"})

FW_VARIANTS = {"plain": 0, "away": 1, "pairwise": 2}


# ----------------------------------------------------------------------------- BQP side
@njit(**JIT_ORDERED)
def build_item_stats_rows(lo, hi, indptr, indices, p, theta, out_S, out_v, out_rho):
    """``build_item_stats`` for the items lo..hi-1 (serial; see ``kmviz._jit.run_rows``)."""
    D = theta.shape[1]
    t = np.empty((BUILD_BLOCK, D))
    tcol = np.empty(BUILD_BLOCK)
    for i in range(lo, hi):
        # accumulate in local arrays with the full square: the contiguous inner loop
        # vectorizes and nothing is written to out_S per rating (2-3x faster than the
        # upper triangle accumulated in place). BUILD_BLOCK ratings per pass over S: each
        # row of S is loaded and stored once per eight rank-one terms instead of once per
        # term, and the eight theta rows are gathered together (issue 36: the pass was
        # bound by those loads and stores at D = 20; 1M ratings, one thread: 4 per pass
        # 0.64-0.72x the former time, 8: 0.56-0.76x, 16: 0.57-0.70x). Compiled
        # without reassociation (JIT_ORDERED), so every sum keeps the rating order of the
        # one-at-a-time loop: the same S_i, v_i, rho_i to the bit. (The BQP's randomization
        # on items with few ratings turns a one-ulp change of S_i into other samples.)
        S = np.zeros((D, D))
        v = np.zeros(D)
        rho = 0.0
        k0, k1 = indptr[i], indptr[i + 1]
        k = k0
        while k + BUILD_BLOCK <= k1:
            for r in range(BUILD_BLOCK):
                u = indices[k + r]
                for a in range(D):
                    t[r, a] = theta[u, a]
            # each sum term by term in rating order, as one rating at a time adds them
            for r in range(BUILD_BLOCK):
                rho += p[k + r] * p[k + r]
            for a in range(D):
                for r in range(BUILD_BLOCK):
                    tcol[r] = t[r, a]
                x = v[a]
                for r in range(BUILD_BLOCK):
                    x += tcol[r] * p[k + r]
                v[a] = x
                Sa = S[a]
                for b in range(D):
                    x = Sa[b]
                    for r in range(BUILD_BLOCK):
                        x += tcol[r] * t[r, b]
                    Sa[b] = x
            k += BUILD_BLOCK
        for kk in range(k, k1):
            u = indices[kk]
            pu = p[kk]
            rho += pu * pu
            t0 = t[0]
            for a in range(D):
                t0[a] = theta[u, a]
            for a in range(D):
                ta = t0[a]
                v[a] += ta * pu
                Sa = S[a]
                for b in range(D):
                    Sa[b] += ta * t0[b]
        # S_i from its upper triangle, so it is symmetric bit for bit whatever the
        # compiler contracted in the vector body and the tail (the psi step trusts that)
        for a in range(D):
            out_v[i, a] = v[a]
            for b in range(a, D):
                out_S[i, a, b] = S[a, b]
                out_S[i, b, a] = S[a, b]
        out_rho[i] = rho


def build_item_stats(indptr, indices, p, theta, out_S, out_v, out_rho):
    """S_i = sum_{u in U_i} theta_u theta_u^T, v_i = sum theta_u p_ui, rho_i = sum p_ui^2
    (eq. (4)) for every item, from the CSC arrays of the training probabilities (row blocks
    on Numba's thread count)."""
    run_rows(build_item_stats_rows, indptr.shape[0] - 1, indptr, indices, p, theta, out_S,
             out_v, out_rho)


@njit(**JIT)
def predict_pairs_rows(lo, hi, users, items, theta, psi, out):
    """``predict_pairs`` for the pairs lo..hi-1."""
    D = theta.shape[1]
    for k in range(lo, hi):
        s = 0.0
        u = users[k]
        i = items[k]
        for a in range(D):
            s += theta[u, a] * psi[i, a]
        out[k] = s


def predict_pairs(users, items, theta, psi, out):
    """out[k] = theta[users[k]]^T psi[items[k]] (eq. (5))."""
    run_rows(predict_pairs_rows, users.shape[0], users, items, theta, psi, out)


#: Pairs per partial sum of ``squared_error``: the sum's order is fixed by this, not by the
#: thread count, so the objective is the same on any number of threads.
SSE_CHUNK = 1 << 16


@njit(**JIT)
def squared_error_rows(lo, hi, users, items, p, theta, psi, out):
    """``squared_error``'s partial sums for the chunks lo..hi-1 (SSE_CHUNK pairs each)."""
    D = theta.shape[1]
    n = users.shape[0]
    for c in range(lo, hi):
        acc = 0.0
        for k in range(c * SSE_CHUNK, min((c + 1) * SSE_CHUNK, n)):
            u = users[k]
            i = items[k]
            s = 0.0
            for a in range(D):
                s += theta[u, a] * psi[i, a]
            r = s - p[k]
            acc += r * r
        out[c] = acc


def squared_error(users, items, p, theta, psi):
    """sum_k (theta[users[k]]^T psi[items[k]] - p[k])^2 (eq. (2) without regularizers), in
    one threaded pass without a prediction array (issue 36: at 25M ratings the prediction,
    its difference to p and the squares were three 200 MB arrays)."""
    n_chunks = (users.shape[0] + SSE_CHUNK - 1) // SSE_CHUNK
    out = np.zeros(n_chunks)
    run_rows(squared_error_rows, n_chunks, users, items, p, theta, psi, out)
    return float(out.sum())


# ----------------------------------------------------------------------------- LCQP side
@njit(inline="always", **JIT)
def _fw_user(Q, w, theta, q, g, tol_abs, max_iter, variant):
    """Frank-Wolfe on min theta^T Q theta - 2 theta^T w over the simplex, in place.

    ``q`` holds Q theta and is kept up to date in O(D) per step. Returns (steps, final gap).
    """
    D = theta.shape[0]
    for a in range(D):
        s = 0.0
        for b in range(D):
            s += Q[a, b] * theta[b]
        q[a] = s
    it = 0
    gap = 0.0
    while True:
        # gradient, best vertex k, worst active vertex j, FW gap
        gtheta = 0.0
        k = 0
        j = -1
        for a in range(D):
            g[a] = 2.0 * (q[a] - w[a])
            gtheta += g[a] * theta[a]
            if g[a] < g[k]:
                k = a
            if theta[a] > 0.0 and (j < 0 or g[a] > g[j]):
                j = a
        gap = gtheta - g[k]
        if gap <= tol_abs or it >= max_iter:
            break
        it += 1
        if variant == 2 or (variant == 1 and j >= 0 and g[j] - gtheta > gap):
            if variant == 2:
                # pairwise: d = e_k - e_j, t in [0, theta_j]
                gd = g[k] - g[j]
                curv = Q[k, k] + Q[j, j] - 2.0 * Q[k, j]
                tmax = theta[j]
                if gd >= 0.0:
                    break  # only when k == j, i.e. the gap is zero up to rounding
                t = tmax
                if curv > 0.0:
                    t = min(-gd / (2.0 * curv), tmax)
                theta[k] += t
                if t == tmax:
                    theta[j] = 0.0
                else:
                    theta[j] -= t
                for a in range(D):
                    q[a] += t * (Q[a, k] - Q[a, j])
            else:
                # away step: d = theta - e_j, t in [0, theta_j / (1 - theta_j)]
                tj = theta[j]
                gd = gtheta - g[j]
                # d^T Q d = theta^T Q theta - 2 q_j + Q_jj
                tQt = 0.0
                for a in range(D):
                    tQt += theta[a] * q[a]
                curv = tQt - 2.0 * q[j] + Q[j, j]
                tmax = tj / (1.0 - tj) if tj < 1.0 else 1e300
                t = tmax
                if curv > 0.0:
                    t = min(-gd / (2.0 * curv), tmax)
                for a in range(D):
                    theta[a] *= 1.0 + t
                    q[a] = (1.0 + t) * q[a] - t * Q[a, j]
                if t == tmax:
                    theta[j] = 0.0
                else:
                    theta[j] -= t
        else:
            # plain FW: d = e_k - theta, t in [0, 1]
            tQt = 0.0
            for a in range(D):
                tQt += theta[a] * q[a]
            curv = Q[k, k] - 2.0 * q[k] + tQt
            t = 1.0
            if curv > 0.0:
                t = min(gap / (2.0 * curv), 1.0)
            for a in range(D):
                theta[a] *= 1.0 - t
                q[a] = (1.0 - t) * q[a] + t * Q[a, k]
            theta[k] += t
    return it, gap


@njit(**JIT)
def item_supports(psi):
    """Each item's support (the events a with psi[i, a] != 0) as CSR arrays (ptr, idx)."""
    n_items, D = psi.shape
    s_ptr = np.zeros(n_items + 1, dtype=np.int64)
    for i in range(n_items):
        c = 0
        for a in range(D):
            if psi[i, a] != 0.0:
                c += 1
        s_ptr[i + 1] = s_ptr[i] + c
    s_idx = np.empty(s_ptr[n_items], dtype=np.int64)
    for i in range(n_items):
        c = s_ptr[i]
        for a in range(D):
            if psi[i, a] != 0.0:
                s_idx[c] = a
                c += 1
    return s_ptr, s_idx


@intrinsic
def _popcount(typingctx, x):
    """LLVM ``llvm.ctpop.i64``: the number of set bits of a uint64 (popcnt on x86)."""
    if x != types.uint64:
        return None
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(64)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.ctpop.i64")
        return builder.call(fn, args)

    return sig, codegen


#: How ``fw_users`` counts Q_u = sum_i psi_i psi_i^T: 0 the cheaper of the two per user,
#: 1 the pairs of each rated item's support, 2 popcounts of per-event bitsets.
Q_AUTO, Q_PAIRS, Q_BITSETS = 0, 1, 2


@njit(**JIT)
def _count_pairs_bitsets(lo, hi, indices, s_ptr, s_idx, D, Q):
    """Upper triangle of Q = sum_i psi_i psi_i^T over the ratings lo..hi-1 by bitsets: bit
    r of event a's set marks that the r-th rated item has a in its support, and Q[a, b] is
    the popcount of the AND of the two sets. Q holds integer counts, so this is Q to the
    bit whatever the order (issue 36: at D = 20, 210 x ceil(n_u / 64) popcounts instead of
    ~55 scattered additions per rating)."""
    n_words = (hi - lo + 63) // 64
    bits = np.zeros((D, n_words), dtype=np.uint64)
    for kk in range(lo, hi):
        r = kk - lo
        word = r >> 6
        bit = np.uint64(1) << np.uint64(r & 63)
        i = indices[kk]
        for x in range(s_ptr[i], s_ptr[i + 1]):
            a = s_idx[x]
            bits[a, word] |= bit
    for a in range(D):
        for b in range(a, D):
            c = np.uint64(0)
            for t in range(n_words):
                c += _popcount(bits[a, t] & bits[b, t])
            Q[a, b] = float(c)


@njit(**JIT)
def fw_users_rows(lo, hi, indptr, indices, p, psi, s_ptr, s_idx, lam, tol, max_iter, variant,
                  out_theta, out_gap, out_n_iter, out_obj, q_mode=Q_AUTO):
    """``fw_users`` for the users lo..hi-1 (serial; see ``kmviz._jit.run_rows``)."""
    D = psi.shape[1]
    pairs_bitsets = D * (D + 1) // 2
    for u in range(lo, hi):
        if indptr[u + 1] == indptr[u]:
            out_gap[u] = 0.0
            out_n_iter[u] = 0
            out_obj[u] = 0.0
            continue
        Q = np.zeros((D, D))
        w = np.zeros(D)
        q = np.empty(D)
        g = np.empty(D)
        rho = 0.0
        n_words = (indptr[u + 1] - indptr[u] + 63) // 64
        cost_pairs = 0
        for kk in range(indptr[u], indptr[u + 1]):
            i = indices[kk]
            pu = p[kk]
            rho += pu * pu
            s0, s1 = s_ptr[i], s_ptr[i + 1]
            cost_pairs += (s1 - s0) * (s1 - s0 + 1) // 2
            for x in range(s0, s1):
                w[s_idx[x]] += pu
        if q_mode == Q_BITSETS or (q_mode == Q_AUTO and 2 * pairs_bitsets * n_words
                                   < cost_pairs):
            _count_pairs_bitsets(indptr[u], indptr[u + 1], indices, s_ptr, s_idx, D, Q)
        else:
            for kk in range(indptr[u], indptr[u + 1]):
                i = indices[kk]
                s0, s1 = s_ptr[i], s_ptr[i + 1]
                for x in range(s0, s1):
                    a = s_idx[x]
                    for y in range(x, s1):
                        Q[a, s_idx[y]] += 1.0
        for a in range(D):
            Q[a, a] += lam
            for b in range(a + 1, D):
                Q[b, a] = Q[a, b]
        theta = out_theta[u]
        scale = rho if rho > 1e-300 else 1e-300
        it, gap = _fw_user(Q, w, theta, q, g, tol * scale, max_iter, variant)
        out_gap[u] = gap / scale
        out_n_iter[u] = it
        # objective: theta^T Q theta - 2 theta^T w + rho, with q = Q theta after the steps
        obj = rho
        for a in range(D):
            obj += theta[a] * (q[a] - 2.0 * w[a])
        out_obj[u] = obj


def fw_users(indptr, indices, p, psi, lam, tol, max_iter, variant, out_theta, out_gap,
             out_n_iter, out_obj, q_mode=Q_AUTO):
    """Solve the LCQP (3) (+ lam ||theta||^2) for every user with at least one rating.

    ``out_theta`` holds the warm start on entry and the solution on exit; users without
    ratings are left untouched. ``out_obj[u]`` is the user's regularized loss
    ``sum_i (theta^T psi_i - p_ui)^2 + lam ||theta||^2`` at the solution. Row blocks of
    users on Numba's thread count.
    """
    # each item's support as a list of its events (CSR), so building Q_u adds only the pairs
    # of events of a rated item's support instead of testing all D^2 / 2 pairs (3-4x faster
    # at D = 20, the same sums in the same order)
    # (q_mode: how Q_u's integer counts are made, see Q_AUTO; every mode gives the same Q)
    s_ptr, s_idx = item_supports(psi)
    run_rows(fw_users_rows, indptr.shape[0] - 1, indptr, indices, p, psi, s_ptr, s_idx,
             float(lam), float(tol), int(max_iter), int(variant), out_theta, out_gap,
             out_n_iter, out_obj, int(q_mode))


# ----------------------------------------------------------------------------- references
def _build_item_stats_reference(indptr, indices, p, theta):
    """Plain-NumPy twin of :func:`build_item_stats`; returns (S, v, rho)."""
    n_items, D = indptr.shape[0] - 1, theta.shape[1]
    S = np.zeros((n_items, D, D))
    v = np.zeros((n_items, D))
    rho = np.zeros(n_items)
    for i in range(n_items):
        sl = slice(indptr[i], indptr[i + 1])
        T = theta[indices[sl]]
        S[i] = T.T @ T
        v[i] = T.T @ p[sl]
        rho[i] = p[sl] @ p[sl]
    return S, v, rho


def _fw_reference(Q, w, theta0, *, tol=1e-7, max_iter=1000, variant="pairwise", scale=1.0):
    """Plain-NumPy Frank-Wolfe for one simplex QP ``min theta^T Q theta - 2 theta^T w``.

    Same steps and stopping rule as the kernel (gap <= tol * scale); returns
    (theta, n_steps, gap).
    """
    code = FW_VARIANTS[variant]
    theta = np.array(theta0, dtype=float)
    D = theta.size
    it = 0
    while True:
        g = 2.0 * (Q @ theta - w)
        k = int(np.argmin(g))
        active = np.flatnonzero(theta > 0)
        j = int(active[np.argmax(g[active])])
        gap = g @ theta - g[k]
        if gap <= tol * scale or it >= max_iter:
            return theta, it, gap
        it += 1
        use_away = code == 1 and g[j] - g @ theta > gap
        if code == 2:
            d = -np.eye(D)[j]
            d[k] += 1.0
            tmax = theta[j]
        elif use_away:
            d = theta - np.eye(D)[j]
            tmax = theta[j] / (1.0 - theta[j]) if theta[j] < 1.0 else np.inf
        else:
            d = np.eye(D)[k] - theta
            tmax = 1.0
        curv = d @ Q @ d
        gd = g @ d
        if gd >= 0.0:
            return theta, it - 1, gap
        t = tmax if curv <= 0.0 else min(-gd / (2.0 * curv), tmax)
        new = theta + t * d
        if t == tmax and code != 0:
            new[j] = 0.0
        theta = np.maximum(new, 0.0) if code != 0 else new


def _user_qp_reference(psi, items, p, lam):
    """Q_u (+ lam I), w_u and rho_u of one user from its rated items and probabilities."""
    P = psi[items]
    return P.T @ P + lam * np.eye(psi.shape[1]), P.T @ p, float(p @ p)
