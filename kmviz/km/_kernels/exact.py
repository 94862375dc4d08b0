"""Exact solvers of the binary QP (4): enumeration (Gray code) and branch-and-bound."""

import numpy as np
from numba import njit, prange

from kmviz._jit import JIT, PJIT

from .common import bqp_objective


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
