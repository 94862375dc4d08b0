"""Kernels from prior information: graphs, feature vectors, and the checks every kernel passes.

Graph-Laplacian kernels (thesis §3.5.1, eq. (3.65)): with the combinatorial Laplacian
``L = diag(A 1) - A = Q diag(lambda) Q^T`` of a weighted, undirected adjacency A, a kernel is
``K = Q r^+(Lambda) Q^T`` with a spectral weight ``r^+(lambda) = 1 / r(lambda)``:

=========================  ==========================  ============================
kind                       r(lambda)                   K
=========================  ==========================  ============================
``"diffusion"``            ``exp(eta lambda)``         ``expm(-eta L)``
``"regularized_laplacian"``  ``1 + eta lambda``        ``(I + eta L)^-1``
``"bandlimited"``          0 off the kept band (3.66)  ``sum_{i < bandwidth} q_i q_i^T``
=========================  ==========================  ============================

The bandlimited kernel keeps the ``bandwidth`` smoothest graph frequencies (the smallest
Laplacian eigenvalues) with weight 1 (our reading of (3.66), which only says which
frequencies are suppressed). The appendix's (A.5) prints ``diag^-1(A 1) - A``; that is a typo,
§3.5.1 is right and used here.

Feature kernels (§3.5.2): Gaussian ``exp(-gamma ||x_i - x_j||^2)`` (the thesis's eta is
``gamma``), linear ``X X^T`` and the Pearson correlation between rows (the mushroom kernel of
§3.6.3, ``np.corrcoef(X)``).

Graph builders (§2.3.2, §3.6): k nearest neighbours and the thesis's geodesic weights
``A_ij = exp(-d_ij / mean(d))`` here; groups (regions, genres), Erdős–Rényi and the temporal
neighbouring-index graph are data-level side information in :mod:`kmviz.data.graphs`,
re-exported here.

:func:`check_kernel` is the gate every kernel passes before a fit: square, of the expected
size, finite, symmetric, and positive semidefinite within rounding; a kernel that is not PSD
is refused with its smallest eigenvalue in the message, and repaired (``K + jitter I``) only
when the caller asks with ``jitter=``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._validation import check_number, check_option
from ..data.graphs import erdos_renyi_graph, group_graph, temporal_graph
from ..exceptions import DataValueError

GRAPH_KERNELS = ("diffusion", "regularized_laplacian", "bandlimited")
FEATURE_KERNELS = ("gaussian", "linear", "pearson")

#: Relative tolerance of the PSD test: eigenvalues above ``-PSD_RTOL * n * max(1, |lambda|_max)``
#: count as rounding of a PSD matrix (float64 eigensolvers are accurate to about
#: ``n eps ||K||``; 1e-10 leaves a wide margin).
PSD_RTOL = 1e-10
#: Relative tolerance of the symmetry test ``|K - K^T| <= SYM_RTOL * max|K|``.
SYM_RTOL = 1e-8


# ----------------------------------------------------------------------------- checks
def _as_dense_square(A, name, n=None):
    """A dense float64 square matrix from an array or a scipy sparse matrix."""
    if sp.issparse(A):
        A = A.toarray()
    try:
        A = np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataValueError(f"{name} is not a numeric matrix",
                             expected="a square array of numbers") from None
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise DataValueError(f"{name} has shape {A.shape}", expected="a square 2-D matrix")
    if n is not None and A.shape[0] != n:
        raise DataValueError(f"{name} has shape {A.shape}",
                             expected=f"shape ({n}, {n}), one row and column per entity",
                             fix="build the kernel on the same index space as the ratings")
    bad = ~np.isfinite(A)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DataValueError(f"{name} holds {int(bad.sum())} NaN or infinite value(s), the "
                             f"first at ({i}, {j})", expected="finite numbers")
    return A


def _symmetrized(K, name):
    scale = float(np.max(np.abs(K))) if K.size else 0.0
    asym = float(np.max(np.abs(K - K.T))) if K.size else 0.0
    if asym > SYM_RTOL * max(scale, 1e-300):
        i, j = np.unravel_index(int(np.argmax(np.abs(K - K.T))), K.shape)
        raise DataValueError(
            f"{name} is not symmetric: entry ({i}, {j}) is {K[i, j]:.6g} but ({j}, {i}) is "
            f"{K[j, i]:.6g}", expected="a symmetric kernel matrix K = K^T",
            fix="use (K + K.T) / 2 if the asymmetry is a rounding error")
    return 0.5 * (K + K.T)


#: Below this order a dense LAPACK call (Cholesky, eigenvalues) runs on one BLAS thread: it
#: takes milliseconds there, and a threaded OpenBLAS waiting for a busy core costs more.
SMALL_DENSE = 1000


def factor_threads(n=None) -> int:
    """BLAS threads for a dense factorization of order n: the cores other processes leave.

    OpenBLAS's threaded ``potrf`` synchronizes its threads at every block step and spins
    while it waits; when another process holds a core, each step waits for the scheduler.
    Measured on the shared 2-core box (load average 10, ``spotrf`` of order 6,250): one
    thread 1.9-3.1 s wall and 0.9 s CPU, two threads 6.2-14 s wall and 2.4-4.8 s CPU; and a
    250 x 250 PSD check took 0.6-1 s instead of 1 ms. So: one thread below
    :data:`SMALL_DENSE`, else ``cpu_count - (load average - 1)`` threads (our own process
    counts 1 in the load), at least one: every core on an idle machine, one on a busy one.
    """
    import os

    if n is not None and n < SMALL_DENSE:
        return 1
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        return cores
    return int(min(cores, max(1, math.floor(cores - max(load - 1.0, 0.0) + 0.5))))


def blas_threads(k):
    """Context manager: BLAS limited to k threads inside (the shared controller of
    :mod:`kmviz._threads`)."""
    from .._threads import _get_controller

    return _get_controller().limit(limits=int(k), user_api="blas")


def min_eigenvalue(K) -> float:
    """The smallest eigenvalue of a symmetric matrix (LAPACK, only that eigenvalue)."""
    K = np.asarray(K, dtype=np.float64)
    if K.shape[0] == 0:
        return math.inf
    with blas_threads(factor_threads(K.shape[0])):
        return float(sla.eigvalsh(K, subset_by_index=[0, 0], check_finite=False)[0])


def psd_tolerance(K) -> float:
    """The rounding margin of the PSD test for ``K`` (see :data:`PSD_RTOL`)."""
    n = K.shape[0]
    scale = float(np.max(np.abs(np.diag(K)))) if n else 0.0
    return PSD_RTOL * max(n, 1) * max(1.0, scale)


def is_psd(K) -> bool:
    """True when ``K + tol I`` has a Cholesky factor, i.e. K is PSD within rounding."""
    K = np.asarray(K, dtype=np.float64)
    tol = psd_tolerance(K)
    try:
        with blas_threads(factor_threads(K.shape[0])):
            sla.cholesky(K + tol * np.eye(K.shape[0]), lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return False
    return True


def check_kernel(K, name="kernel", *, n=None, jitter=None) -> np.ndarray:
    """``K`` checked and returned as a symmetric float64 array (``+ jitter I`` when asked).

    Parameters
    ----------
    K : array-like or sparse, shape (n, n)
    name : str
        What the matrix is, for the messages (``"row_kernel"``).
    n : int, optional
        The required size.
    jitter : float >= 0, optional
        Added to the diagonal before the PSD test. Without it a kernel that is not PSD within
        rounding is refused; with it, ``K + jitter I`` must pass.

    Raises
    ------
    DataValueError
        Wrong shape, non-finite values, asymmetry, or not PSD (the message gives the smallest
        eigenvalue and the ``jitter`` that would repair it).
    """
    K = _symmetrized(_as_dense_square(K, name, n), name)
    if jitter is not None:
        jitter = check_number("check_kernel", "jitter", jitter, low=0.0)
        if jitter > 0:
            K = K + jitter * np.eye(K.shape[0])
    if not is_psd(K):
        lam = min_eigenvalue(K)
        need = -lam * 1.01 + psd_tolerance(K)
        added = f" after adding jitter={jitter:g}" if jitter else ""
        raise DataValueError(
            f"{name} is not positive semidefinite{added}: its smallest eigenvalue is "
            f"{lam:.4g} (tolerance {-psd_tolerance(K):.2g})",
            expected="a kernel matrix, all eigenvalues >= 0",
            fix=f"build it with a kernel function, or pass jitter={need:.3g} (or more) to add "
                f"that much to its diagonal")
    return K


# ----------------------------------------------------------------------------- graphs
def check_adjacency(A, name="adjacency", n=None) -> np.ndarray:
    """A dense, symmetric, non-negative weighted adjacency with a zero diagonal.

    A nonzero diagonal (self-loops) is dropped: it does not change the Laplacian.
    """
    A = _symmetrized(_as_dense_square(A, name, n), name)
    if (A < 0).any():
        i, j = np.argwhere(A < 0)[0]
        raise DataValueError(f"{name} has a negative weight {A[i, j]:.4g} at ({i}, {j})",
                             expected="non-negative edge weights")
    A = A.copy()
    np.fill_diagonal(A, 0.0)
    return A


def laplacian(A) -> np.ndarray:
    """The combinatorial graph Laplacian ``L = diag(A 1) - A`` (thesis §3.5.1)."""
    A = check_adjacency(A)
    return np.diag(A.sum(axis=1)) - A


def laplacian_eigen(A):
    """``(lambda, Q)`` of the Laplacian of ``A``, eigenvalues ascending and clipped at 0."""
    Lap = laplacian(A)
    with blas_threads(factor_threads(Lap.shape[0])):
        lam, Q = np.linalg.eigh(Lap)
    return np.clip(lam, 0.0, None), Q


def spectral_weights(lam, kind="diffusion", *, eta=1.0, bandwidth=None) -> np.ndarray:
    """The kernel eigenvalue ``r^+(lambda)`` of each Laplacian eigenvalue (ascending ``lam``).

    ``diffusion``: ``exp(-eta lambda)``; ``regularized_laplacian``: ``1 / (1 + eta lambda)``;
    ``bandlimited``: 1 for the ``bandwidth`` smallest eigenvalues, 0 for the others.
    """
    check_option("spectral_weights", "kind", kind, GRAPH_KERNELS)
    lam = np.clip(np.asarray(lam, dtype=np.float64), 0.0, None)
    if kind == "bandlimited":
        n = lam.shape[0]
        bw = _bandwidth(bandwidth, n)
        out = np.zeros(n)
        out[np.argsort(lam, kind="stable")[:bw]] = 1.0
        return out
    eta = check_number("spectral_weights", "eta", eta, low=0.0, closed="neither")
    if kind == "diffusion":
        return np.exp(-eta * lam)
    return 1.0 / (1.0 + eta * lam)


def _bandwidth(bandwidth, n):
    if bandwidth is None:
        return max(1, int(math.ceil(n / 10)))
    return check_number("graph_kernel", "bandwidth", bandwidth, kind=int, low=1, high=n)


def graph_kernel(A, kind="diffusion", *, eta=1.0, bandwidth=None) -> np.ndarray:
    """A graph-Laplacian kernel ``Q r^+(Lambda) Q^T`` (eq. (3.65)) from an adjacency.

    Parameters
    ----------
    A : array-like or sparse, shape (n, n)
        Symmetric non-negative weights (self-loops ignored).
    kind : {"diffusion", "regularized_laplacian", "bandlimited"}
    eta : float > 0, default=1.0
        Diffusion time / Laplacian weight (the thesis's eta; 1 in its synthetic test).
    bandwidth : int, optional
        Kept frequencies of the bandlimited kernel (default ``ceil(n / 10)``).

    Returns
    -------
    K : ndarray, shape (n, n), symmetric PSD
    """
    lam, Q = laplacian_eigen(A)
    w = spectral_weights(lam, kind, eta=eta, bandwidth=bandwidth)
    K = (Q * w) @ Q.T
    return 0.5 * (K + K.T)


def diffusion_kernel(A, eta=1.0) -> np.ndarray:
    """``expm(-eta L)``, the diffusion kernel of the Laplacian of ``A``."""
    return graph_kernel(A, "diffusion", eta=eta)


def regularized_laplacian_kernel(A, eta=1.0) -> np.ndarray:
    """``(I + eta L)^-1``, the regularized Laplacian kernel."""
    return graph_kernel(A, "regularized_laplacian", eta=eta)


def bandlimited_kernel(A, bandwidth=None) -> np.ndarray:
    """The projector on the ``bandwidth`` smoothest Laplacian eigenvectors (eq. (3.66))."""
    return graph_kernel(A, "bandlimited", bandwidth=bandwidth)


# ----------------------------------------------------------------------------- features
def _features(X, name="X") -> np.ndarray:
    if hasattr(X, "to_numpy"):  # DataFrame: numeric columns only
        import pandas as pd

        df = X if isinstance(X, pd.DataFrame) else pd.DataFrame(X)
        numeric = df.select_dtypes(include=[np.number, bool])
        if numeric.shape[1] == 0:
            raise DataValueError(f"{name} has no numeric column",
                                 expected="numeric side features",
                                 fix="encode categorical features (one-hot) first")
        X = numeric.to_numpy(dtype=np.float64)
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataValueError(f"{name} is not numeric", expected="a numeric array") from None
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise DataValueError(f"{name} has shape {X.shape}", expected="a 2-D array (n, t)")
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DataValueError(f"{name} holds {int(bad.sum())} missing or infinite value(s), "
                             f"the first at row {i}, column {j}", expected="finite features",
                             fix="fill or drop the missing side information")
    return X


def squared_distances(X, Y=None) -> np.ndarray:
    """``||x_i - y_j||^2`` for all rows of X and Y (clipped at 0 against rounding)."""
    X = _features(X)
    Y = X if Y is None else _features(Y, "Y")
    xx = np.einsum("ij,ij->i", X, X)
    yy = xx if Y is X else np.einsum("ij,ij->i", Y, Y)
    D = xx[:, None] + yy[None, :] - 2.0 * (X @ Y.T)
    np.maximum(D, 0.0, out=D)
    if Y is X:
        np.fill_diagonal(D, 0.0)
    return D


def default_gamma(X) -> float:
    """scikit-learn's default RBF width ``1 / n_features``."""
    return 1.0 / _features(X).shape[1]


def gaussian_kernel(X, Y=None, gamma=None) -> np.ndarray:
    """``exp(-gamma ||x_i - y_j||^2)`` (eq. (3.8)); ``gamma=None`` means ``1 / n_features``."""
    X = _features(X)
    gamma = default_gamma(X) if gamma is None else check_number(
        "gaussian_kernel", "gamma", gamma, low=0.0, closed="neither")
    return np.exp(-gamma * squared_distances(X, Y))


def linear_kernel(X, Y=None) -> np.ndarray:
    """``X Y^T`` (``X X^T`` when Y is None)."""
    X = _features(X)
    Y = X if Y is None else _features(Y, "Y")
    return X @ Y.T


def pearson_kernel(X) -> np.ndarray:
    """Pearson correlations between the rows of X (``np.corrcoef(X)``), PSD by construction.

    Raises DataValueError for a constant row (its correlation is undefined).
    """
    Z = pearson_kernel_factor(X)
    K = Z @ Z.T
    return 0.5 * (K + K.T)


def feature_kernel(X, kind="gaussian", *, gamma=None) -> np.ndarray:
    """The kernel ``kind`` in {"gaussian", "linear", "pearson"} of the rows of X."""
    check_option("feature_kernel", "kind", kind, FEATURE_KERNELS)
    if kind == "gaussian":
        return gaussian_kernel(X, gamma=gamma)
    if kind == "linear":
        return linear_kernel(X)
    return pearson_kernel(X)


# ----------------------------------------------------------------------------- graph builders
def _check_n(owner, n):
    return check_number(owner, "n", n, kind=int, low=1)


def knn_graph(X, k=8, *, mutual=False) -> sp.csr_matrix:
    """Unweighted k-nearest-neighbour graph on the rows of X, symmetrized.

    Each point is linked to its ``k`` nearest others (Euclidean); ``P' = sign(P + P^T)``
    (the thesis's station graph, §2.3.2), or ``P ∘ P^T`` with ``mutual=True``.
    """
    X = _features(X)
    n = X.shape[0]
    k = check_number("knn_graph", "k", k, kind=int, low=1, high=max(n - 1, 1))
    D = squared_distances(X)
    np.fill_diagonal(D, np.inf)
    nbr = np.argpartition(D, k - 1, axis=1)[:, :k]
    rows = np.repeat(np.arange(n), k)
    P = sp.csr_matrix((np.ones(n * k), (rows, nbr.ravel())), shape=(n, n))
    P = P.minimum(P.T) if mutual else P.maximum(P.T)
    P.setdiag(0)
    P.eliminate_zeros()
    return P.tocsr()


def geodesic_weights(P, *, row_normalize=False) -> np.ndarray:
    """Dense weights ``A_ij = exp(-d_ij / mean(d))`` from hop distances on the graph ``P``.

    The thesis's temperature graph (§2.3.2): ``d_ij`` is the hop count between i and j on the
    unweighted graph P, ``A_ij = exp(-N^2 d_ij / sum d)``; A is dense with a unit diagonal
    (:func:`laplacian` ignores the diagonal). Unreachable pairs get weight 0. Appendix A
    (A.3) also row-normalizes (``row_normalize=True``), which makes A asymmetric: use that
    only for the total-variation measures, not for a Laplacian kernel.
    """
    from scipy.sparse.csgraph import shortest_path

    P = sp.csr_matrix(P) if not sp.issparse(P) else P.tocsr()
    d = shortest_path(P, unweighted=True, directed=False)
    finite = np.isfinite(d)
    mean = float(d[finite].mean()) if finite.any() else 1.0
    A = np.where(finite, np.exp(-d / max(mean, 1e-300)), 0.0)
    if row_normalize:
        A = A / A.sum(axis=1, keepdims=True)
    return A


# ----------------------------------------------------------------------------- helpers
def linked(K, known, *, rtol=1e-12) -> np.ndarray:
    """Per entity: True if it is ``known`` or its kernel row reaches a known entity.

    An entity without observations is predicted from the kernel values between it and the
    observed ones (KKMCEX's extrapolation); with none of them nonzero (an identity kernel,
    an isolated graph node) there is nothing to extrapolate from.
    """
    K = np.asarray(K)
    known = np.asarray(known, dtype=bool)
    out = known.copy()
    if known.all() or not known.any():
        return out
    scale = float(np.max(np.abs(K))) if K.size else 0.0
    reach = np.max(np.abs(K[:, known]), axis=1) > rtol * max(scale, 1e-300)
    return out | reach


# ----------------------------------------------------------------------------- factors
#: Distinct feature rows up to which a kernel on features is factored exactly through its
#: distinct rows (one eigendecomposition of that order: about 2 s at 1,500 on the 2-core box).
DISTINCT_MAX = 2500
#: A factor is used instead of the dense kernel when its rank is below this share of n.
FACTOR_SHARE = 0.5


def _psd_factor(K, rank=None):
    """``F`` with ``F F^T = K`` (rank=None: every eigenvalue above rounding, exact within
    it) or the best rank-``rank`` approximation (the leading eigenpairs)."""
    K = 0.5 * (K + K.T)
    n = K.shape[0]
    with blas_threads(factor_threads(n)):
        if rank is not None and rank < n:
            lam, Q = sla.eigh(K, subset_by_index=[n - rank, n - 1], check_finite=False)
        else:
            lam, Q = np.linalg.eigh(K)
    top = float(lam[-1]) if lam.size else 0.0
    keep = lam > PSD_RTOL * max(n, 1) * max(top, 1e-300)
    return np.ascontiguousarray(Q[:, keep] * np.sqrt(lam[keep]))


def _kernel_between(X, Y, kind, gamma):
    if kind == "gaussian":
        return np.exp(-gamma * squared_distances(X, Y))
    return X @ Y.T


def feature_kernel_factor(X, kind="gaussian", *, gamma=None, rank=None, random_state=None):
    """A factor ``F`` (n x r) of the feature kernel ``kind`` of the rows of X, or None when
    the dense kernel is cheaper, with ``exact`` and a sentence saying which factor it is.

    Exact factors (``F F^T`` equals :func:`feature_kernel` within rounding):

    - ``linear``: ``F = X`` when X has fewer columns t than rows (rank <= t);
    - ``pearson``: the centred, row-normalized X (rank <= t);
    - any kind when the rows take few distinct values (MovieLens users by age, items by
      genres and year): with ``E`` the n x u indicator of the distinct rows and ``K_u`` the
      u x u kernel between them, ``K = E K_u E^T = (E F_u)(E F_u)^T``.

    ``rank`` (optional) asks for an approximation of at most that rank when no exact factor
    is that small: the leading eigenpairs of the kernel of the distinct rows (the best
    rank-``rank`` approximation) up to :data:`DISTINCT_MAX` distinct rows, else Nyström
    with ``rank`` landmarks drawn uniformly among the distinct rows
    (``C W^{-1/2}``, ``C`` the kernel between all rows and the landmarks).

    Returns
    -------
    (F, exact, note) : (ndarray or None, bool, str)
    """
    check_option("feature_kernel_factor", "kind", kind, FEATURE_KERNELS)
    X = _features(X)
    n, t = X.shape
    if rank is not None:
        rank = check_number("feature_kernel_factor", "rank", rank, kind=int, low=1)
    if kind == "gaussian":
        gamma = default_gamma(X) if gamma is None else check_number(
            "feature_kernel_factor", "gamma", gamma, low=0.0, closed="neither")
    if kind == "linear" and t < FACTOR_SHARE * n and (rank is None or rank >= t):
        return np.ascontiguousarray(X), True, f"linear kernel as its {t} features"
    if kind == "pearson" and t < FACTOR_SHARE * n and (rank is None or rank >= t):
        Z = pearson_kernel_factor(X)
        return Z, True, f"Pearson kernel as its {t} normalized features"
    Xu, inv = np.unique(X, axis=0, return_inverse=True)
    inv = np.asarray(inv).ravel()
    u = Xu.shape[0]
    if kind == "pearson":
        Xu = pearson_kernel_factor(Xu)
        kind_u = "linear"
    else:
        kind_u = kind
    small = u < FACTOR_SHARE * n and u <= DISTINCT_MAX
    if rank is None or (small and rank >= u):
        if not small:
            return None, True, "dense"
        Fu = _psd_factor(_kernel_between(Xu, Xu, kind_u, gamma))
        return (np.ascontiguousarray(Fu[inv]), True,
                f"{kind} kernel through its {u} distinct feature rows (rank {Fu.shape[1]})")
    rank = min(rank, u)
    if u <= DISTINCT_MAX:
        Fu = _psd_factor(_kernel_between(Xu, Xu, kind_u, gamma), rank)
        note = (f"{kind} kernel, rank-{rank} truncated eigendecomposition of its {u} "
                f"distinct feature rows (approximate)")
    else:
        rng = np.random.default_rng(random_state)
        idx = np.sort(rng.choice(u, size=rank, replace=False))
        C = _kernel_between(Xu, Xu[idx], kind_u, gamma)
        W = 0.5 * (C[idx] + C[idx].T)
        lam, Q = np.linalg.eigh(W)
        keep = lam > PSD_RTOL * rank * max(float(lam[-1]), 1e-300)
        Fu = C @ (Q[:, keep] / np.sqrt(lam[keep]))
        note = (f"{kind} kernel, Nyström with {rank} uniform landmarks among its {u} "
                f"distinct feature rows (approximate)")
    return np.ascontiguousarray(Fu[inv]), False, note


def pearson_kernel_factor(X) -> np.ndarray:
    """``Z`` with ``Z Z^T`` = :func:`pearson_kernel` (X): rows centred and normalized."""
    X = _features(X)
    Xc = X - X.mean(axis=1, keepdims=True)
    norms = np.sqrt(np.einsum("ij,ij->i", Xc, Xc))
    flat = norms <= 1e-12 * max(1.0, float(np.max(np.abs(X))) if X.size else 1.0)
    if flat.any():
        raise DataValueError(
            f"row {int(np.flatnonzero(flat)[0])} of the features is constant "
            f"({int(flat.sum())} such rows), so its Pearson correlation is undefined",
            expected="rows with at least two distinct feature values",
            fix="use feature_kernel='linear' or 'gaussian', or drop those rows' features")
    return np.ascontiguousarray(Xc / norms[:, None])


def graph_kernel_factor(A, kind="diffusion", *, eta=1.0, bandwidth=None, rank=None):
    """A factor ``F`` of :func:`graph_kernel` (A, kind, ...) from the Laplacian's
    eigenpairs, or None when the dense kernel is cheaper; ``(F, exact, note)``.

    The bandlimited kernel is exactly ``Q_b Q_b^T`` (the ``bandwidth`` smoothest
    eigenvectors). Diffusion and regularized-Laplacian kernels have full rank; ``rank``
    keeps their ``rank`` largest spectral weights ``r^+(lambda)`` (the smoothest graph
    frequencies): the best rank-``rank`` approximation.
    """
    lam, Q = laplacian_eigen(A)
    n = lam.shape[0]
    w = spectral_weights(lam, kind, eta=eta, bandwidth=bandwidth)
    order = np.argsort(-w, kind="stable")
    nz = int(np.count_nonzero(w > 0))
    if rank is not None:
        rank = check_number("graph_kernel_factor", "rank", rank, kind=int, low=1)
    if kind == "bandlimited" and (rank is None or rank >= nz):
        if nz >= FACTOR_SHARE * n:
            return None, True, "dense"
        idx = order[:nz]
        return (np.ascontiguousarray(Q[:, idx]), True,
                f"bandlimited kernel as its {nz} graph frequencies")
    if rank is None:
        return None, True, "dense"
    idx = order[:min(rank, nz)]
    return (np.ascontiguousarray(Q[:, idx] * np.sqrt(w[idx])), False,
            f"{kind} kernel, its {idx.shape[0]} smoothest graph frequencies (approximate)")


__all__ = [
    "FEATURE_KERNELS",
    "GRAPH_KERNELS",
    "bandlimited_kernel",
    "check_adjacency",
    "check_kernel",
    "default_gamma",
    "diffusion_kernel",
    "erdos_renyi_graph",
    "feature_kernel",
    "feature_kernel_factor",
    "gaussian_kernel",
    "geodesic_weights",
    "graph_kernel",
    "graph_kernel_factor",
    "group_graph",
    "is_psd",
    "knn_graph",
    "laplacian",
    "laplacian_eigen",
    "linear_kernel",
    "linked",
    "min_eigenvalue",
    "pearson_kernel",
    "pearson_kernel_factor",
    "regularized_laplacian_kernel",
    "spectral_weights",
    "squared_distances",
    "temporal_graph",
]
