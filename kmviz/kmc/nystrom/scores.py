"""Ridge leverage scores (5.21), the effective dimension, and sampling by the scores (5.22).

``l_i = (K (K + alpha I)^-1)_ii`` of a PSD kernel by its eigendecomposition or, for large n,
one Cholesky and a triangular inverse; the exact scores of a Kronecker kernel as an N x L
map without the NL x NL product and the thesis's approximation (5.23); draws of entries or
indices with probabilities ``p = l / sum l`` (notes in :mod:`kmviz.kmc.nystrom`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla

from ..._validation import check_number, check_random_state
from ...exceptions import DataValueError
from ..rkhs import blas_threads, check_kernel, factor_threads


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



__all__ = [
    "approximate_kron_leverage_scores",
    "effective_dimension",
    "kron_effective_dimension",
    "kron_ridge_leverage_scores",
    "ridge_leverage_scores",
    "ridge_leverage_scores_cholesky",
    "sample_entries",
    "sample_indices",
    "sampling_probabilities",
]
