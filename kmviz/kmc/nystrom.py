"""Ridge leverage scores, the Nyström approximation and landmark sampling (thesis Ch. 5).

Ridge leverage scores (5.21): for a PSD kernel ``K = Q diag(sigma) Q^T`` and ``alpha > 0``,
``l_i = sum_j sigma_j / (sigma_j + alpha) Q_ij^2 = (K (K + alpha I)^-1)_ii``; they sum to the
effective dimension ``d_eff(alpha) = sum_j sigma_j / (sigma_j + alpha)``. Sampling column i
with probability ``p_i = l_i / sum l`` (5.22) favours the points that "stick out".

For a Kronecker kernel ``K_f = K_col ⊗ K_row`` (NL x NL) the exact scores need no NL x NL
eigendecomposition (digest §5.2, verified there): with ``K_row = Q_r diag(s_r) Q_r^T`` and
``K_col = Q_c diag(s_c) Q_c^T``, the N x L map of scores is

    Lev = (Q_r ∘ Q_r) Wgt (Q_c ∘ Q_c)^T,   Wgt_ab = s_r[a] s_c[b] / (s_r[a] s_c[b] + alpha)

in O(N^3 + L^3 + N^2 L + N L^2): :func:`kron_ridge_leverage_scores`. The thesis's cheaper
approximation (5.23)-(5.24) is the outer product of the two factors' own scores with
``alpha_row = alpha_col = sqrt(alpha)``: :func:`approximate_kron_leverage_scores`.

Nyström: with landmark columns S (possibly weighted, ``S_k = e_{i_k} / sqrt(s p_{i_k})``),
``T = K S^T (S K S^T)^+ S K`` (Definition 1); Theorem 5.1 bounds the total reconstruction
error by ``||f||_H Tr(K - T)``, and (5.10) the error at point x by ``(K - T)_xx``.
:class:`Nystroem` is scikit-learn's transformer (``fit`` / ``transform``, ``components_``,
``component_indices_``) with landmark sampling ``"uniform"``, ``"leverage"`` (exact ridge
leverage scores, with replacement, weights ``1 / sqrt(s p)``), ``"approximate_leverage"``
(scores estimated from a uniform Nyström sketch, then the same) and ``"recursive"`` (recursive
ridge-leverage sampling of Musco and Musco, NeurIPS 2017, which never forms the n x n kernel),
or user-given ``landmarks``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.linalg as sla

from .._base import BaseEstimator
from .._params import RANDOM_STATE, Param
from .._validation import check_number, check_random_state
from ..exceptions import DataValueError, NotFittedError
from .kernels import (_features, blas_threads, check_kernel, factor_threads, gaussian_kernel,
                      linear_kernel)

SAMPLINGS = ("uniform", "leverage", "approximate_leverage", "recursive")
KERNELS = ("rbf", "gaussian", "linear", "precomputed")


# ----------------------------------------------------------------------------- scores
def _alpha(alpha, owner="ridge_leverage_scores"):
    return check_number(owner, "alpha", alpha, low=0.0, closed="neither")


def _eig_psd(K):
    K = np.asarray(K, dtype=np.float64)
    with blas_threads(factor_threads(K.shape[0])):  # see kernels.factor_threads
        sig, Q = np.linalg.eigh(K)
    return np.clip(sig, 0.0, None), Q


def ridge_leverage_scores(K, alpha) -> np.ndarray:
    """``diag(K (K + alpha I)^-1)`` (5.21) of a PSD kernel K, by its eigendecomposition."""
    alpha = _alpha(alpha)
    sig, Q = _eig_psd(check_kernel(K, "K"))
    return (Q * Q) @ (sig / (sig + alpha))


def ridge_leverage_scores_cholesky(K, alpha, *, dtype=np.float64, overwrite=False):
    """Exact ridge leverage scores without an eigendecomposition, for large n.

    ``l_i = (K (K + alpha I)^-1)_ii = 1 - alpha ((K + alpha I)^-1)_ii``, and with the
    Cholesky factor ``K + alpha I = L L^T`` the diagonal of the inverse is the squared column
    norms of ``L^-1``: one Cholesky and one triangular inverse (LAPACK ``potrf`` and
    ``trtri``, about ``2 n^3 / 3`` flops in place, against roughly ``9 n^3`` for ``eigh``
    with vectors). ``dtype=np.float32`` halves the memory (1.6 GB at n = 20,000); it loses
    the scores that are small next to ``n eps ||K|| / alpha`` (measured on the mixture at
    n = 5,000, alpha the default for m = 100: largest error 4e-7 against the smallest score
    2e-3). ``overwrite=True`` lets a K of that dtype be destroyed instead of copied.
    """
    alpha = _alpha(alpha, "ridge_leverage_scores_cholesky")
    K = np.asarray(K)
    if overwrite and K.dtype == dtype and K.flags.c_contiguous:
        A = K.T  # Fortran order without a copy (a symmetric K: the same matrix)
    else:
        A = np.array(K, dtype=dtype, order="F")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise DataValueError(f"K has shape {A.shape}", expected="a square kernel matrix")
    n = A.shape[0]
    A[np.diag_indices(n)] += dtype(alpha)
    potrf, trtri = sla.lapack.get_lapack_funcs(("potrf", "trtri"), (A,))
    with blas_threads(factor_threads(n)):
        c, info = potrf(A, lower=1, overwrite_a=1, clean=1)
        if info != 0:
            raise DataValueError("K + alpha I is not positive definite in "
                                 f"{np.dtype(dtype).name} (Cholesky pivot {info})",
                                 expected="a PSD kernel, or float64, or a larger alpha")
        Linv, info = trtri(c, lower=1, overwrite_c=1)
        inv_diag = np.einsum("ij,ij->j", Linv, Linv, dtype=np.float64)
    return np.clip(1.0 - alpha * inv_diag, 0.0, 1.0)


def top_eigenvalues(K, k) -> np.ndarray:
    """The k largest eigenvalues of a symmetric K (descending): ``eigvalsh`` for n <= 2,000,
    else Lanczos (``scipy.sparse.linalg.eigsh``, products with K only)."""
    K = np.asarray(K)
    n = K.shape[0]
    k = max(1, min(int(k), n))
    if n <= 2000 or k >= n // 2:
        with blas_threads(factor_threads(n)):
            ev = sla.eigvalsh(K, subset_by_index=[n - k, n - 1])
    else:
        from scipy.sparse.linalg import eigsh

        ev = eigsh(K, k=k, which="LA", return_eigenvectors=False, tol=1e-10)
    return np.sort(np.clip(ev, 0.0, None))[::-1]


def default_alpha_of_kernel(K, m) -> float:
    """:func:`default_alpha` of a kernel matrix without its whole spectrum: the tail rule
    needs only ``Tr K`` and the k largest eigenvalues, ``(Tr K - their sum) / k`` with
    ``k = ceil(m / (2 ln m))`` (:func:`top_eigenvalues`)."""
    k = _k_of(m)
    top = top_eigenvalues(K, k)
    tail = max(float(np.trace(K)) - float(top.sum()), 0.0)
    return max(tail / k, 1e-12 * float(top[0]) if top.size else 1e-12)


def effective_dimension(K=None, alpha=1.0, *, eigenvalues=None) -> float:
    """``d_eff(alpha) = Tr(K (K + alpha I)^-1) = sum_j sigma_j / (sigma_j + alpha)``."""
    alpha = _alpha(alpha, "effective_dimension")
    if eigenvalues is None:
        eigenvalues = sla.eigvalsh(check_kernel(K, "K"))
    sig = np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None)
    return float(np.sum(sig / (sig + alpha)))


def kron_ridge_leverage_scores(row_kernel, col_kernel, alpha) -> np.ndarray:
    """Exact ridge leverage scores of ``K_f = col_kernel ⊗ row_kernel``, as an N x L map.

    Entry (i, j) is the score of entry (i, j) of the matrix, i.e. of column ``i + j N`` of K_f
    (vec stacks columns). Equal to ``diag(K_f (K_f + alpha I)^-1)`` without forming K_f:
    ``(Q_r ∘ Q_r) Wgt (Q_c ∘ Q_c)^T`` (module notes), O(N^3 + L^3 + N^2 L + N L^2). The map
    sums to :func:`kron_effective_dimension`.
    """
    alpha = _alpha(alpha, "kron_ridge_leverage_scores")
    sr, Qr = _eig_psd(check_kernel(row_kernel, "row_kernel"))
    sc, Qc = _eig_psd(check_kernel(col_kernel, "col_kernel"))
    P = np.outer(sr, sc)
    return (Qr * Qr) @ (P / (P + alpha)) @ (Qc * Qc).T


def kron_effective_dimension(row_kernel, col_kernel, alpha) -> float:
    """``d_eff`` of ``col_kernel ⊗ row_kernel``:
    ``sum_ab s_r[a] s_c[b] / (s_r[a] s_c[b] + alpha)``."""
    alpha = _alpha(alpha, "kron_effective_dimension")
    sr = np.clip(sla.eigvalsh(check_kernel(row_kernel, "row_kernel")), 0.0, None)
    sc = np.clip(sla.eigvalsh(check_kernel(col_kernel, "col_kernel")), 0.0, None)
    P = np.outer(sr, sc)
    return float(np.sum(P / (P + alpha)))


def approximate_kron_leverage_scores(row_kernel, col_kernel, alpha, *, alpha_row=None,
                                     alpha_col=None) -> np.ndarray:
    """The thesis's approximation (5.23): ``l~ = l_col ⊗ l_row`` as an N x L map.

    ``l_row = diag(K_row (K_row + alpha_row I)^-1)``, likewise ``l_col``; by default
    ``alpha_row = alpha_col = sqrt(alpha)``, as in the thesis's experiments (§6.4 of the
    digest). O(N^3 + L^3). In general no choice of the two alphas reproduces the exact scores.
    """
    alpha = _alpha(alpha, "approximate_kron_leverage_scores")
    a_r = math.sqrt(alpha) if alpha_row is None else _alpha(alpha_row)
    a_c = math.sqrt(alpha) if alpha_col is None else _alpha(alpha_col)
    return np.outer(ridge_leverage_scores(row_kernel, a_r),
                    ridge_leverage_scores(col_kernel, a_c))


def sampling_probabilities(scores) -> np.ndarray:
    """``p = scores / sum(scores)`` (5.22), same shape; refuses negative or all-zero scores."""
    sc = np.asarray(scores, dtype=np.float64)
    if (sc < 0).any() or not np.isfinite(sc).all():
        raise DataValueError("leverage scores must be finite and non-negative")
    total = float(sc.sum())
    if total <= 0:
        raise DataValueError("the leverage scores sum to 0", expected="a positive sum")
    return sc / total


def sample_entries(scores, s, *, replace=True, random_state=None):
    """Draw s entries of an N x L score map (uniform scores: uniform sampling).

    Returns ``(rows, cols, p)``: the drawn entries and their probabilities ``p_k`` (5.22).
    With ``replace=True`` (the thesis's §5.2.1) an entry may be drawn more than once; the
    weighted sampling matrix ``S_k = e_k / sqrt(s p_k)`` is the binary one with a per-sample
    ridge ``mu s p_k`` in KKMCEX (:func:`kmviz.kmc.krr.weighted_ridge`).
    """
    p2 = sampling_probabilities(scores)
    if p2.ndim != 2:
        raise DataValueError(f"scores has shape {p2.shape}", expected="an N x L map")
    N = p2.shape[0]
    p = p2.ravel(order="F")
    idx, pk = sample_indices(p, s, replace=replace, random_state=random_state,
                             probabilities=True)
    return idx % N, idx // N, pk


def sample_indices(scores, s, *, replace=True, random_state=None, probabilities=False):
    """Draw s indices with probabilities proportional to ``scores`` (1-D); returns
    ``(indices, p[indices])``."""
    p = np.asarray(scores, dtype=np.float64) if probabilities else sampling_probabilities(scores)
    n = p.shape[0]
    s = check_number("sample_indices", "s", s, kind=int, low=1,
                     high=None if replace else int(np.count_nonzero(p)))
    rng = check_random_state(random_state)
    idx = rng.choice(n, size=s, replace=replace, p=p)
    return idx.astype(np.int64), p[idx]


# ----------------------------------------------------------------------------- Nyström
def _pinv_sqrt(W, rcond=1e-12):
    """``(V, keep)``: ``V = Q_k diag(lambda_k^-1/2)`` over eigenvalues above rcond * max, so
    ``V V^T = W^+`` (within the kept range)."""
    lam, Q = np.linalg.eigh(0.5 * (W + W.T))
    top = float(lam.max()) if lam.size else 0.0
    keep = lam > rcond * max(top, 1e-300)
    return Q[:, keep] / np.sqrt(lam[keep]), keep


def nystrom_approximation(K, landmarks, weights=None, *, rcond=1e-12) -> np.ndarray:
    """``T = C W^+ C^T`` with ``C = K[:, S] D`` and ``W = D K[S, S] D`` (dense, small n).

    ``weights`` (D, one per landmark, default 1) cancel in T when W is invertible on its range
    (the unregularized approximation depends only on the span of the landmark columns).
    """
    K = np.asarray(K, dtype=np.float64)
    S = np.asarray(landmarks, dtype=np.int64)
    d = np.ones(S.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    C = K[:, S] * d
    V, _ = _pinv_sqrt(K[np.ix_(S, S)] * np.outer(d, d), rcond)
    Phi = C @ V
    return Phi @ Phi.T


def residual_diagonal(K, landmarks, *, rcond=1e-12) -> np.ndarray:
    """``diag(K - T)`` (5.10): the squared RKHS distance of each kernel column to the span of
    the landmark columns, the per-point error bound."""
    K = np.asarray(K, dtype=np.float64)
    S = np.asarray(landmarks, dtype=np.int64)
    V, _ = _pinv_sqrt(K[np.ix_(S, S)], rcond)
    Phi = K[:, S] @ V
    return np.clip(np.diag(K) - np.einsum("ij,ij->i", Phi, Phi), 0.0, None)


def nystrom_errors(K, K_hat) -> dict:
    """Errors of a Nyström approximation, absolute and relative to K:

    ``trace`` = Tr(K - K_hat) (Theorem 5.1), ``frobenius`` = ||K - K_hat||_F (3.51),
    ``spectral`` = ||K - K_hat||_2 (5.16), and ``*_relative`` divided by Tr K, ||K||_F and
    ||K||_2.
    """
    K = np.asarray(K, dtype=np.float64)
    E = K - np.asarray(K_hat, dtype=np.float64)
    E = 0.5 * (E + E.T)
    tr, fro = float(np.trace(E)), float(np.linalg.norm(E))
    spec = float(np.max(np.abs(sla.eigvalsh(E)))) if E.size else 0.0
    kspec = float(np.max(np.abs(sla.eigvalsh(0.5 * (K + K.T))))) if K.size else 0.0
    return {"trace": tr, "frobenius": fro, "spectral": spec,
            "trace_relative": tr / float(np.trace(K)) if np.trace(K) else math.nan,
            "frobenius_relative": fro / float(np.linalg.norm(K)) if K.size else math.nan,
            "spectral_relative": spec / kspec if kspec else math.nan}


def tail_alpha(eigenvalues, k) -> float:
    """``(sum of the eigenvalues beyond the k largest) / k``: Musco and Musco's ridge for
    sampling about k log k columns (then ``d_eff(alpha) <= 2k``); at least 1e-12 of the
    largest eigenvalue."""
    sig = np.sort(np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None))[::-1]
    k = max(1, int(k))
    tail = float(sig[k:].sum()) if k < sig.shape[0] else 0.0
    return max(tail / k, 1e-12 * float(sig[0]) if sig.size else 1e-12)


def alpha_for_dimension(eigenvalues, d) -> float:
    """The ridge alpha with ``d_eff(alpha) = sum_j sigma_j / (sigma_j + alpha) = d``.

    ``d_eff`` falls from the number of positive eigenvalues (alpha -> 0) to 0, so a
    bisection in log alpha finds it (to 1e-10 relative); at least 1e-12 of the largest
    eigenvalue (when d is not below the rank).
    """
    sig = np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None)
    top = float(sig.max()) if sig.size else 0.0
    floor = 1e-12 * max(top, 1e-300)
    if top <= 0 or d >= np.count_nonzero(sig):
        return floor
    lo, hi = math.log(floor), math.log(max(float(sig.sum()), top) * 1e6)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if float(np.sum(sig / (sig + math.exp(mid)))) > d:
            lo = mid
        else:
            hi = mid
    return max(math.exp(0.5 * (lo + hi)), floor)


def _k_of(m) -> int:
    """The k of the default ridge for m landmarks: ``ceil(m / (2 ln m))`` (1 below m = 3)."""
    m = int(m)
    if m < 3:
        return 1
    return max(1, math.ceil(m / (2.0 * math.log(m))))


def default_alpha(eigenvalues, m) -> float:
    """The default leverage ridge for m landmarks: Musco and Musco's tail rule
    ``tail_alpha(eigenvalues, k)`` with ``k = ceil(m / (2 ln m))``.

    Their lambda = (eigenvalue tail beyond k) / k comes with m = O(k log k) samples; their
    code takes k = m / (4 ln m). Measured by bench/kmc_nystrom.py (mean trace error over 10
    draws of m distinct landmarks relative to uniform's, same seeds; the mixture, Boston
    and digits; 3 widths x m in 20..200): k = m / 4 gains most where the scores are far
    from uniform but loses up to 13 % at m = 20, where it leaves the bulk of the data with
    too few landmarks; k = m / (4 ln m) loses at most 6 % but keeps half the gains (digits
    at gamma 0.002, m = 200: 0.75); k = m / (2 ln m): at most 6 % lost (Boston at gamma 0.2,
    m = 20, nearly uniform scores), digits 0.68, the far-cluster mixture 0.83 / 0.02 at
    m = 20 / 50. A fixed ratio d_eff(alpha) = m / 7 (:func:`alpha_for_dimension`) did no
    better: the same 6 % on Boston, and 1.11 / 0.17 on the mixture at m = 20 / 50 (its
    flatter scores miss the far cluster more often at small m).
    """
    return tail_alpha(eigenvalues, _k_of(m))


def sample_distinct(p, m, rng) -> np.ndarray:
    """m distinct indices drawn by p: draws with replacement, repeats discarded, until m
    distinct ones (successive sampling, numpy's ``choice(replace=False, p=p)``).

    A repeated landmark adds nothing to a Nyström approximation (``T`` depends only on the
    span of the selected columns), so drawing with replacement and keeping duplicates
    spends landmarks for nothing where the scores are nearly uniform. Points with p = 0
    are drawn last, uniformly, if fewer than m have p > 0.
    """
    p = np.asarray(p, dtype=np.float64)
    n = p.shape[0]
    m = min(int(m), n)
    nz = int(np.count_nonzero(p))
    if nz < m:
        p = p + (p.sum() if p.sum() > 0 else 1.0) * 1e-12 / n
    return rng.choice(n, m, replace=False, p=p / p.sum()).astype(np.int64)


def approximate_ridge_leverage_scores(kernel_block, diag, sample, weights, alpha):
    """Ridge leverage scores of every point from a weighted Nyström sketch (Musco & Musco):

    ``l~_i = (k_ii - k_iS (K_SS + alpha diag(w^-2))^-1 k_Si) / alpha`` with the sketch S and
    its weights w (``1 / sqrt(p)``); ``kernel_block(S)`` returns ``K[:, S]`` (n x |S|).
    """
    KS = kernel_block(sample)
    SKS = KS[sample]
    A = SKS + np.diag(alpha / (weights ** 2))
    try:
        R = sla.cho_solve(sla.cho_factor(A, lower=True, check_finite=False), KS.T,
                          check_finite=False)
    except np.linalg.LinAlgError:
        R = np.linalg.lstsq(A, KS.T, rcond=None)[0]
    return np.clip(diag - np.einsum("ij,ji->i", KS, R), 0.0, None) / alpha


def recursive_rls_sample(n, s, kernel_block, diag, *, random_state=None, accelerated=False,
                         return_scores=False, oversample=None, refine_top=True,
                         top_oversample=3.0, top_lambda="sketch"):
    """Recursive ridge-leverage-score sampling (Musco & Musco 2017, their ``recursiveNystrom``).

    Nested uniform halvings ``n = n_0 > n_1 > ... > n_L`` (``n_L <= s``, L =
    ``ceil(log2(n / s))``) of one random permutation; the smallest set is the first sample
    (uniform, weights 1). Then for l = L-1 down to 0: the ridge leverage scores of the
    ``n_l`` points are estimated from the weighted sample of the level below
    (:func:`approximate_ridge_leverage_scores`: ``(k_ii - k_iS (K_SS + lambda W^-2)^-1
    k_Si) / lambda``), with lambda the :func:`default_alpha` of the weighted sample's
    spectrum ``W K_SS W``; on the intermediate levels each point is kept independently with probability
    ``q_i = min(1, ln(s) l~_i)`` and weight ``1 / sqrt(q_i)``; the top level draws s
    distinct landmarks by the scores (:func:`sample_distinct`). Only n x (sample size)
    kernel blocks are formed: O(n s^2) time, O(n s) memory.

    Differences from the authors' code: lambda by the exact-leverage default's rule
    (:func:`default_alpha`: the tail rule with k = s / (2 ln s), on the weighted sample's
    spectrum) instead of k = s / (4 ln s); and ``refine_top``: the top level runs twice,
    the first pass sampling like an intermediate level (a weighted sample of the whole
    set) and the second re-estimating every score from it before the s landmarks are
    drawn. The authors' top-level scores come from a sample of half the set; on the
    mixture at n = 5,000, m = 100 (8 draws) their trace error was 1.30 times exact
    leverage's, 1.08 with the second pass (0.06 -> 0.07 s; exact: 36 s). And
    ``top_oversample``: that sample of the whole set is drawn with 3 times the usual
    oversampling, so the final scores come from about 3x more points (the cost of that
    pass grows about 9x, O(n (3 s)^2), still far below the exact scores). On the mixture at
    n = 5,000, m = 100, gamma = 0.5, 120 draws each against 120 exact-leverage draws
    (the Cholesky scores), the mean trace error was 1.059, 1.007 and 0.999 times exact's
    (standard error about 3 %) with factors 1, 2 and 3, at 0.11, 0.15 and 0.27 s CPU
    (the exact path: 2 s CPU for the scores of the 5,000 x 5,000 kernel, plus the kernel).

    Parameters
    ----------
    n, s : int
        Points and landmarks.
    kernel_block : callable
        ``kernel_block(rows, cols)`` returns ``K[rows][:, cols]``.
    diag : ndarray (n,)
        ``diag(K)``.
    return_scores : bool, default=False
        Also return the top level's estimated scores (in the points' order) and its lambda.
    refine_top : bool, default=True
        Re-estimate the top level's scores from a sample of the whole set (above).
    oversample : float, optional
        The intermediate levels' factor on the scores (default ``ln s``, the authors'). On
        the mixture at n = 2,000, m = 100 (10 draws each) 1, 2 and 4 times ``ln s`` gave
        1.07, 1.01 and 1.08 times the exact-leverage error: within the draws' noise.
    top_oversample : float, default=3.0
        Extra factor on ``oversample`` for the first pass of the top level (with
        ``refine_top``): the sample the final scores are estimated from (above).
    top_lambda : {"sketch", "trace"}, default="sketch"
        The final pass's lambda: the tail rule on the weighted sample's spectrum
        (``"sketch"``, as on every level) or ``(Tr K - the sample's k largest eigenvalues)
        / k``, the exact default's own formula with the known trace (``"trace"``: a larger
        lambda, flatter scores; on the mixture at n = 5,000, m = 100, 40 draws, 1.05 times
        the exact-leverage error against 1.02 for "sketch" at factor 1, 1.03 against 0.94
        at factor 3).

    Returns
    -------
    ndarray of int (s,): the landmarks; with ``return_scores``, ``(landmarks, scores,
    lambda)``.
    """
    if top_lambda not in ("sketch", "trace"):
        raise DataValueError(f"top_lambda={top_lambda!r}", expected="'sketch' or 'trace'")
    rng = check_random_state(random_state)
    s = min(int(s), n)
    s_level = math.ceil(math.sqrt((n * s + s ** 3) / (4 * n))) if accelerated else s
    if oversample is None:
        oversample = max(math.log(max(s_level, 2)), 1.0)
    n_levels = max(0, math.ceil(math.log(n / s_level) / math.log(2))) if n > s_level else 0
    perm = rng.permutation(n)
    sizes = [n]
    for _ in range(n_levels):
        sizes.append(math.ceil(sizes[-1] / 2))
    samp = np.arange(sizes[-1])
    if n_levels == 0:  # s >= n: every point
        idx = perm[:s].astype(np.int64)
        return (idx, np.ones(n), math.nan) if return_scores else idx
    r_ind = perm[samp]
    weights = np.ones(r_ind.shape[0])
    floor = 1e-12 * max(float(np.max(diag)), 1e-300)
    # the top level twice (refine_top): its first pass samples like an intermediate level,
    # and the second re-estimates the scores from that sample of the whole set
    plan = list(range(n_levels - 1, -1, -1)) + ([0] if refine_top else [])
    for step, level in enumerate(plan):
        final = step == len(plan) - 1
        cur = perm[:sizes[level]]
        KS = kernel_block(cur, r_ind)
        SKS = KS[samp]
        # the default rule on the weighted sample's spectrum, as the authors do, unscaled:
        # it estimates the spectrum of the level below (half this level's), so lambda is
        # about half the exact default's; scaling it by the size ratio took the error on
        # the mixture (m = 100) from 0.96-1.07 to 1.16-1.49 times exact leverage's
        Wd = SKS * np.outer(weights, weights)
        ev = np.clip(sla.eigvalsh(0.5 * (Wd + Wd.T)), 0.0, None)
        if final and top_lambda == "trace" and level == 0:
            # the exact default's own estimate: Tr K is known (its diagonal), and the
            # sample of the whole set gives the k largest eigenvalues
            k = _k_of(s_level)
            top = np.sort(ev)[::-1][:k]
            lam = max((float(diag.sum()) - float(top.sum())) / k, floor)
        else:
            lam = max(default_alpha(ev, s_level), floor)
        A = SKS + np.diag(lam / weights ** 2)
        try:
            R = sla.cho_solve(sla.cho_factor(A, lower=True, check_finite=False), KS.T,
                              check_finite=False)
        except np.linalg.LinAlgError:
            R = np.linalg.lstsq(A, KS.T, rcond=None)[0]
        levs = np.clip(diag[cur] - np.einsum("ij,ji->i", KS, R), 0.0, None) / lam
        if not final:
            factor = oversample * (top_oversample if refine_top and level == 0 else 1.0)
            q = np.minimum(1.0, factor * levs)
            samp = np.flatnonzero(rng.random(sizes[level]) < q)
            if samp.size == 0:  # (rare) nothing kept: a uniform sample of s_level
                q = np.full(sizes[level], s_level / sizes[level])
                samp = rng.choice(sizes[level], min(s_level, sizes[level]), replace=False)
            weights = np.sqrt(1.0 / q[samp])
        else:
            samp = sample_distinct(np.minimum(1.0, levs), s, rng)
        r_ind = perm[samp]
    if return_scores:
        scores = np.empty(n)
        scores[perm] = levs
        return r_ind.astype(np.int64), scores, lam
    return r_ind.astype(np.int64)


class Nystroem(BaseEstimator):
    """Nyström kernel feature map with leverage-score landmark sampling (scikit-learn API).

    ``transform(X)`` returns features Z with ``Z Z^T`` the Nyström approximation
    ``C W^+ C^T`` of the kernel, ``C = k(X, landmarks) D``, ``W = D k(landmarks, landmarks) D``.

    Parameters
    ----------
    kernel : {"rbf", "gaussian", "linear", "precomputed"} or callable, default="rbf"
        ``rbf`` = ``gaussian``: ``exp(-gamma ||x - y||^2)``; ``precomputed``: ``fit`` takes
        the n x n kernel matrix and ``transform`` rows of kernel values against the training
        points; a callable ``kernel(X, Y)`` returns the kernel matrix.
    gamma : float > 0, optional
        RBF width; default ``1 / n_features`` (scikit-learn's).
    n_components : int >= 1, default=100
        Landmarks: m distinct ones (``distinct=True``), else m draws.
    sampling : {"uniform", "leverage", "approximate_leverage", "recursive"}, default="uniform"
        ``uniform``: without replacement (scikit-learn's ``Nystroem``). ``leverage``: exact
        ridge leverage scores (the n x n kernel and one Cholesky,
        :func:`ridge_leverage_scores_cholesky`), drawn by ``p = l / sum l``
        (5.22) with weights ``1 / sqrt(s p)`` (§5.2.1). ``approximate_leverage``: the scores
        estimated from a uniform sketch of ``n_components`` points (O(n m^2)), then as
        ``leverage``. ``recursive``: recursive ridge-leverage sampling (Musco & Musco
        2017), m distinct landmarks, O(n m^2) time and O(n m) memory.
    alpha : float > 0, optional
        Ridge of the leverage scores; default: the tail rule ``(sum of the eigenvalues
        beyond the k largest) / k`` with ``k = ceil(m / (2 ln m))`` (:func:`default_alpha`;
        the kernel's eigenvalues for exact scores, the sketch's for approximate ones).
        Recursive sampling estimates it from its sample the same way.
    distinct : bool, default=True
        Leverage samplings: draw by p with replacement until m *distinct* landmarks
        (repeats discarded: numpy's successive sampling), so that every sampling has m
        landmarks. False: exactly m draws with replacement, the thesis's s-tuple of
        §5.2.1; repeated landmarks are kept (the approximation, which depends only on the
        span of the landmark columns, is the one of the distinct ones: the weights cancel
        and a repeat adds nothing) and ``component_indices_`` may hold fewer distinct
        points. On Boston at gamma 0.01, m = 200, this alone took the trace error from
        0.39 to 0.17 of uniform's.
    landmarks : array, optional
        User-chosen landmarks: integer indices into the training X, or points (a 2-D array
        with the training X's columns). Overrides ``sampling``.
    random_state : None, int or Generator

    Attributes
    ----------
    components_ : ndarray (m, t) or None
        The landmark points (None for a precomputed kernel).
    component_indices_ : ndarray of int (m,) or None
        Their indices in the training X (None for user-given points).
    component_weights_ : ndarray (m,)
        ``1 / sqrt(s p)`` for leverage sampling, 1 otherwise.
    normalization_ : ndarray (m, r)
        ``W^+1/2`` on the kept range: ``transform(X) = k(X, components) D normalization_``.
    leverage_scores_ : ndarray (n,) or None
        The (exact or estimated) ridge leverage scores used to sample.
    alpha_ : float or None
    effective_dimension_ : float or None
        ``sum(leverage_scores_)`` (exact scores: d_eff(alpha)).
    n_features_in_ : int
    """

    _parameter_constraints = {
        "kernel": Param(str, options=KERNELS, label="kernel"),
        "gamma": Param(float, low=0, closed="neither", none_ok=True, label="gamma"),
        "n_components": Param(int, low=1, label="landmarks"),
        "sampling": Param(str, options=SAMPLINGS, label="sampling"),
        "alpha": Param(float, low=0, closed="neither", none_ok=True, label="alpha"),
        "distinct": Param(bool, label="distinct landmarks"),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed"),
    }

    def __init__(self, kernel="rbf", *, gamma=None, n_components=100, sampling="uniform",
                 alpha=None, distinct=True, landmarks=None, random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.sampling = sampling
        self.alpha = alpha
        self.distinct = distinct
        self.landmarks = landmarks
        self.random_state = random_state

    # -- kernel evaluation --------------------------------------------------------------
    def _validate(self):
        owner = type(self).__name__
        out = {}
        for name, spec in self._parameter_constraints.items():
            value = getattr(self, name)
            out[name] = value if name == "kernel" and callable(value) else \
                spec.check(owner, name, value)
        return out

    def _k(self, X, Y):
        if callable(self.kernel):
            return np.asarray(self.kernel(X, Y), dtype=np.float64)
        if self.kernel in ("rbf", "gaussian"):
            return gaussian_kernel(X, Y, gamma=self._gamma)
        return linear_kernel(X, Y)

    def _k_diag(self, X):
        if callable(self.kernel):
            return np.array([float(self.kernel(x[None], x[None])[0, 0]) for x in X])
        if self.kernel in ("rbf", "gaussian"):
            return np.ones(X.shape[0])
        return np.einsum("ij,ij->i", X, X)

    # -- fit ------------------------------------------------------------------------------
    def fit(self, X, y=None):
        """Choose the landmarks from X (n x t, or the n x n kernel when precomputed)."""
        prm = self._validate()
        rng = check_random_state(self.random_state)
        pre = self.kernel == "precomputed"
        if pre:
            K = check_kernel(X, "X (precomputed kernel)")
            n = K.shape[0]
            X = None
            kblock = lambda r, c: K[np.ix_(r, c)]  # noqa: E731
            diag = np.diag(K).copy()
        else:
            X = _features(X, "X")
            n = X.shape[0]
            self._gamma = prm["gamma"] if prm["gamma"] is not None else 1.0 / X.shape[1]
            kblock = lambda r, c: self._k(X[r], X[c])  # noqa: E731
            diag = self._k_diag(X)
        self.n_features_in_ = n if pre else X.shape[1]
        m = prm["n_components"]
        if m > n and self.landmarks is None:
            warnings.warn(f"n_components={m} > n_samples={n}; n_components is set to "
                          f"n_samples.", UserWarning, stacklevel=2)
            m = n
        self.leverage_scores_ = None
        self.alpha_ = None
        self.effective_dimension_ = None
        weights = None
        points = None
        sampling = prm["sampling"]
        if self.landmarks is not None:
            lm = np.asarray(self.landmarks)
            if lm.ndim == 1 and np.issubdtype(lm.dtype, np.integer):
                if lm.size == 0 or lm.min() < 0 or lm.max() >= n:
                    raise DataValueError(f"landmarks holds indices outside 0..{n - 1}",
                                         expected="indices into the training X")
                idx = lm.astype(np.int64)
            else:
                if pre:
                    raise DataValueError("landmark points need a feature kernel; with "
                                         "kernel='precomputed' give landmark indices")
                points = _features(lm, "landmarks")
                if points.shape[1] != X.shape[1]:
                    raise DataValueError(f"landmarks has {points.shape[1]} columns",
                                         expected=f"{X.shape[1]}, as X")
                idx = None
            sampling = "given"
        elif sampling == "uniform":
            idx = rng.choice(n, m, replace=False).astype(np.int64)
        elif sampling == "leverage":
            Kfull = check_kernel(K if pre else self._k(X, X), "kernel matrix")
            # no eigendecomposition: the default alpha needs Tr K and the k largest
            # eigenvalues, the scores one Cholesky and a triangular inverse (at n = 5,000 on
            # the mixture: 7 s of CPU against 68 s for eigh, both on the loaded box)
            alpha = prm["alpha"] if prm["alpha"] is not None else \
                default_alpha_of_kernel(Kfull, m)
            try:
                lev = ridge_leverage_scores_cholesky(Kfull, alpha, overwrite=pre is False)
            except DataValueError:  # K + alpha I singular in rounding: the eigenvalues
                sig, Q = _eig_psd(Kfull)
                lev = (Q * Q) @ (sig / (sig + alpha))
            del Kfull
            idx, p = self._draw(lev, m, rng)
            weights = 1.0 / np.sqrt(m * p)
            self.leverage_scores_, self.alpha_ = lev, float(alpha)
            self.effective_dimension_ = float(lev.sum())
        elif sampling == "approximate_leverage":
            sketch = rng.choice(n, m, replace=False).astype(np.int64)
            w = np.full(m, math.sqrt(n / m))
            if prm["alpha"] is not None:
                alpha = prm["alpha"]
            else:  # the default rule on the sketch's spectrum, scaled to the whole set
                with blas_threads(factor_threads(m)):
                    ev = np.clip(sla.eigvalsh(kblock(sketch, sketch)), 0.0, None) * (n / m)
                alpha = default_alpha(ev, m)
            with blas_threads(factor_threads(m)):
                lev = approximate_ridge_leverage_scores(lambda S: kblock(np.arange(n), S),
                                                        diag, sketch, w, alpha)
            # true scores are <= 1; the sketch over-estimates the points it covers badly
            # (a far cluster gets 2-3 each where the exact score is 0.3), and uncapped they
            # draw most of the landmarks with replacement onto a few points
            lev = np.minimum(lev, 1.0)
            idx, p = self._draw(lev, m, rng)
            weights = 1.0 / np.sqrt(m * p)
            self.leverage_scores_, self.alpha_ = lev, float(alpha)
            self.effective_dimension_ = float(lev.sum())
        else:  # recursive
            # its LAPACK calls are on samples of about m points: one BLAS thread (on the busy
            # box a threaded OpenBLAS made a 2,000-point run take 3.4 s instead of 0.37 s)
            with blas_threads(factor_threads(m)):
                idx = recursive_rls_sample(n, m, kblock, diag, random_state=rng)
        self.sampling_ = sampling
        self.component_indices_ = idx
        if points is not None:
            self.components_ = points
            W = self._k(points, points)
            self._basis = points
        else:
            self.components_ = None if pre else X[idx]
            W = kblock(idx, idx)
            self._basis = self.components_
        d = np.ones(W.shape[0]) if weights is None else weights
        self.component_weights_ = d
        with blas_threads(factor_threads(W.shape[0])):
            V, _ = _pinv_sqrt(W * np.outer(d, d))
        self.normalization_ = V
        return self

    def _draw(self, scores, m, rng):
        """Landmarks by the scores (5.22) and their probabilities: m distinct ones, or m
        draws with replacement (``distinct=False``, the thesis's §5.2.1 tuple)."""
        p = sampling_probabilities(scores)
        if self.distinct:
            idx = sample_distinct(p, m, rng)
            return idx, p[idx]
        return sample_indices(p, m, replace=True, random_state=rng, probabilities=True)

    def _check_fitted(self):
        if not hasattr(self, "normalization_"):
            raise NotFittedError("This Nystroem instance is not fitted yet. Call 'fit' with "
                                 "appropriate arguments before using this estimator.")

    def transform(self, X):
        """Features ``k(X, landmarks) D normalization_`` (rows of kernel values against the
        training points when precomputed)."""
        self._check_fitted()
        if self.kernel == "precomputed":
            Kx = np.atleast_2d(np.asarray(X, dtype=np.float64))
            C = Kx[:, self.component_indices_]
        else:
            C = self._k(_features(X, "X"), self._basis)
        return (C * self.component_weights_) @ self.normalization_

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)

    def residual_diagonal(self, X, K_diag=None) -> np.ndarray:
        """``k(x, x) - ||phi(x)||^2`` per row of X: the per-point bound (5.10), O(n m)."""
        Z = self.transform(X)
        if K_diag is None:
            if self.kernel == "precomputed":
                raise ValueError("pass K_diag (the kernel's diagonal) with a precomputed kernel")
            K_diag = self._k_diag(_features(X, "X"))
        return np.clip(np.asarray(K_diag) - np.einsum("ij,ij->i", Z, Z), 0.0, None)

    def trace_error(self, X, K_diag=None, *, relative=True) -> float:
        """``Tr(K - K_hat)`` on X (Theorem 5.1), divided by ``Tr K`` when ``relative``."""
        if K_diag is None and self.kernel != "precomputed":
            K_diag = self._k_diag(_features(X, "X"))
        r = self.residual_diagonal(X, K_diag)
        tr = float(np.sum(K_diag))
        return float(r.sum()) / tr if relative and tr > 0 else float(r.sum())


__all__ = [
    "Nystroem",
    "SAMPLINGS",
    "approximate_kron_leverage_scores",
    "alpha_for_dimension",
    "approximate_ridge_leverage_scores",
    "default_alpha",
    "default_alpha_of_kernel",
    "effective_dimension",
    "kron_effective_dimension",
    "kron_ridge_leverage_scores",
    "nystrom_approximation",
    "nystrom_errors",
    "recursive_rls_sample",
    "residual_diagonal",
    "ridge_leverage_scores",
    "ridge_leverage_scores_cholesky",
    "sample_distinct",
    "sample_entries",
    "sample_indices",
    "sampling_probabilities",
    "tail_alpha",
    "top_eigenvalues",
]
