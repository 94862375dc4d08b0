"""Jacobi preconditioners for the Gauss-Newton CG (Alg. 3): the diagonal of G.

G = sum over all pairs of ``J_ij^T h_ij J_ij + lambda I`` with ``h_ij = c_ij`` on O plus
``omega a_i b_j`` on every pair (digest Sec. 1.4). A user-side parameter t moves only
``p_i``, so with ``e_it = d p_i / d theta_t`` (a k-vector)

    G_tt = sum_i e_it^T S_i e_it + lambda,
    S_i  = sum_{j in O_i} c_ij q_j q_j^T + omega a_i Q_c          (k x k, PSD)

and likewise on the item side with ``S'_j = sum_{i in O_j} c_ij p_i p_i^T + omega b_j P_c``.
The all-pairs part of S_i is the Gramian Q_c of the cache, so nothing here is O(mn):

- identity tower: ``e_it`` is a unit vector, ``G_tt = S_i[f, f]``, i.e. ``(C (Q o Q))_if +
  omega a_i Q_c[f, f]``, O(|O| k);
- linear tower ``P = X Theta``: ``e_it = X_ir e_f``, ``diag = (X o X)^T diag(S)``,
  O((|O| + nnz(X)) k);
- MLP: with ``B_i^l = d p_i / d z_i^l`` (h_l x k, z^l the pre-activation of layer l)
  ``G`` on weight ``W_l[r, h]`` is ``sum_i A_{l-1}[i, r]^2 T_l[i, h]`` and on bias
  ``b_l[h]`` is ``sum_i T_l[i, h]``, where ``T_l[i, h] = (B_i^l S_i B_i^l^T)[h, h]``;
  ``B^L = I`` and ``B^l = diag(sigma'(z^l)) W_{l+1} B^{l+1}``. Cost
  O(|O| k^2 + (m + n)(k^3 + k sum_l h_l h_{l+1})): about k / 2 backward passes, done in
  row chunks so memory stays O(chunk h k).

Where the exact diagonal is not available (a user-supplied tower, or a cluster problem
whose c_ij live on the workers) the tower's part of the diagonal is a per-block scalar:
its mean diagonal ``tr(G_bb) / |b|`` by Hutchinson probes ``E[z o G z] = diag(G)``
(Rademacher z), a few Gauss-Newton products shared by all such blocks.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ..._jit import JIT, PJIT
from .. import _kernels as K

#: Hutchinson probes of the per-block fallback.
N_PROBES = 4
#: Floats of one chunk's B^l (rows x h x k) at most.
CHUNK_FLOATS = 2_000_000


@njit(**JIT)
def _row_gram_body(i, lo, ptr, idx, perm, vals, E, out):
    k = E.shape[1]
    o = out[i - lo]
    for t in range(ptr[i], ptr[i + 1]):
        v = vals[perm[t]] if perm.shape[0] > 0 else vals[t]
        j = idx[t]
        for f in range(k):
            vf = v * E[j, f]
            for g in range(k):
                o[f, g] += vf * E[j, g]


@njit(**PJIT)
def _row_grams_par(lo, hi, ptr, idx, perm, vals, E, out):
    for i in prange(lo, hi):
        _row_gram_body(i, lo, ptr, idx, perm, vals, E, out)


@njit(**JIT)
def _row_grams_seq(lo, hi, ptr, idx, perm, vals, E, out):
    for i in range(lo, hi):
        _row_gram_body(i, lo, ptr, idx, perm, vals, E, out)


def _side(problem, ev, side):
    """(ptr, idx, perm, other embeddings, weights, other Gramian) of a side."""
    p = problem.pairs
    if side == "user":
        return p.row_ptr, p.cols, K._EMPTY, ev.Q, problem.a, ev.Qc
    return p.col_ptr, p.col_rows, p.col_perm, ev.P, problem.b, ev.Pc


def output_curvature(problem, ev, side, lo, hi):
    """``S_i`` (rows lo:hi, k x k each) of the user (or item) side at ``ev``."""
    ptr, idx, perm, E, w, gram = _side(problem, ev, side)
    k = E.shape[1]
    out = np.zeros((hi - lo, k, k))
    work = int(ptr[hi] - ptr[lo]) * k * k
    fn = _row_grams_par if work >= K.PARALLEL_MIN_WORK else _row_grams_seq
    fn(lo, hi, ptr, idx, perm, ev.cplus, np.ascontiguousarray(E), out)
    out += problem.omega * w[lo:hi, None, None] * gram[None]
    return out


def output_curvature_diag(problem, ev, side):
    """``diag(S_i)`` for every row of a side (rows x k): ``C (E o E) + omega w diag(gram)``."""
    ptr, idx, perm, E, w, gram = _side(problem, ev, side)
    sq = np.ascontiguousarray(E * E)
    rows = K.times_other(problem.pairs, ev.cplus, sq) if side == "user" else \
        K.transpose_times(problem.pairs, ev.cplus, sq)
    return rows + problem.omega * w[:, None] * np.diag(gram)[None, :]


def _square(X):
    return X.multiply(X).tocsr() if sp.issparse(X) else X * X


def _mlp_diagonal(problem, ev, side, tower, theta, X, cache):
    if "A" not in cache:
        tower.forward(theta, X, cache)
    params = tower.unpack(theta)
    n_layers = len(params)
    diag = np.zeros(tower.n_params)
    rows = X.shape[0]
    k = tower.k
    widest = max([k] + list(tower.hidden))
    chunk = max(1, CHUNK_FLOATS // (widest * k + k * k))
    for lo in range(0, rows, chunk):
        hi = min(rows, lo + chunk)
        S = output_curvature(problem, ev, side, lo, hi)
        T = np.einsum("icc->ic", S)                      # B^L = I
        B = None
        for layer in range(n_layers - 1, -1, -1):
            w0, w1, b1 = tower.offsets[layer]
            inp = X[lo:hi] if layer == 0 else cache["A"][layer - 1][lo:hi]
            diag[w0:w1] += np.asarray(_square(inp).T @ T).ravel()
            diag[w1:b1] += T.sum(axis=0)
            if layer == 0:
                break
            W_next = params[layer][0]                     # h_{layer} x h_{layer+1}
            dA = cache["dA"][layer - 1][lo:hi]
            B = dA[:, :, None] * (W_next[None] if B is None else np.matmul(W_next, B))
            T = np.einsum("ihc,ihc->ih", np.matmul(B, S), B)
    return diag


def tower_diagonal(problem, ev, side):
    """The exact diagonal of ``J^T H J`` on a tower's parameters, or None when it has no
    closed form here (a user-supplied tower, or c_ij not on this machine)."""
    if ev.cplus is None:
        return None
    tower = problem.fu if side == "user" else problem.fv
    X = problem.U if side == "user" else problem.V
    tu, tv = problem.split(ev.theta)
    theta, cache = (tu, ev.cache_u) if side == "user" else (tv, ev.cache_v)
    kind = getattr(tower, "kind", None)
    if kind == "identity" and X is None:
        return output_curvature_diag(problem, ev, side).ravel()
    if kind == "linear" and X is not None:
        Sd = output_curvature_diag(problem, ev, side)
        return np.asarray(_square(X).T @ Sd).ravel()
    if kind == "mlp" and X is not None and hasattr(tower, "offsets"):
        return _mlp_diagonal(problem, ev, side, tower, theta, X, cache)
    return None


def block_means(problem, ev, blocks, rng, probes=N_PROBES):
    """Hutchinson estimates of ``tr(G_bb) / |b|`` (without lambda) for the index ranges
    ``blocks`` of theta, from ``probes`` Gauss-Newton products with Rademacher vectors."""
    acc = np.zeros(len(blocks))
    for _ in range(probes):
        z = rng.choice((-1.0, 1.0), size=problem.n_params)
        zGz = z * (problem.gnvp(ev, z) - problem.lam * z)
        for b, (lo, hi) in enumerate(blocks):
            acc[b] += zGz[lo:hi].mean()
    return acc / probes


def gauss_newton_diagonal(problem, ev, rng=None):
    """``diag(G)`` (n_params,): exact for the built-in towers, per-tower Hutchinson means
    elsewhere (module docstring); floored at lambda (G >= lambda I)."""
    parts, missing = [], []
    for side, lo, hi in (("user", 0, problem.Du), ("item", problem.Du, problem.n_params)):
        d = tower_diagonal(problem, ev, side)
        if d is None:
            missing.append((lo, hi))
            d = np.zeros(hi - lo)
        parts.append(d)
    diag = np.concatenate(parts)
    if missing:
        rng = np.random.default_rng(0) if rng is None else rng
        for (lo, hi), mean in zip(missing, block_means(problem, ev, missing, rng)):
            diag[lo:hi] = mean
    return np.maximum(diag, 0.0) + problem.lam
