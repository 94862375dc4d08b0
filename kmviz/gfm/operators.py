"""Matrix-free products of the symmetric rank-one sensing operator, on batches of rows.

Notation of the paper (Lin & Ye, NIPS 2016, eq. (2)), with instances as ROWS here: a batch
X is n x d (the paper's X is d x n); ``A(M)_i = x_i^T M x_i`` and its adjoint
``A'(z) = sum_i z_i x_i x_i^T = X^T diag(z) X``. Algorithm 1 needs these only through

- ``quadratic_form(X, U, V)``: ``A(M)`` for ``M = (U V^T + V U^T)/2``, i.e. the row sums of
  ``(X U) * (X V)``, O(ndk);
- ``adjoint_apply(X, z, A)``: ``A'(z) A = X^T (z * (X A))`` for a d x m block A, O(ndm);

so no d x d matrix is ever formed. Every function takes an optional :class:`Standardizer`:
the products are then those of the standardized rows ``z = (x - mean) / scale``, computed
without copying X (``Z A = X (A / scale) - (mean / scale)^T A`` and
``Z^T G = (X^T G - mean 1^T G) / scale``), so a sparse X stays sparse.

A mini-batch can be an array pair or a :class:`ChunkedBatch`: a re-readable sequence of row
chunks. Algorithm 1 reads its batch twice per step (the statistics, then ``H_1 U_new`` for
the V update) and 10-20 times at initialization (Lanczos), so a chunked batch bounds
the memory by one chunk instead of the batch.

Dense float64 chunks with at least :data:`NUMBA_MIN_D` columns go through the fused Numba
sweeps of :mod:`kmviz.gfm._kernels` (one read of each row per pass); smaller or sparse ones
through NumPy/SciPy (two BLAS products per pass). bench/gfm/gfm_kernels.py measures the switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import scipy.sparse as sp

ENGINES = ("auto", "numba", "numpy")

#: From this many columns on, "auto" uses the Numba sweeps for dense chunks (measured with
#: bench/gfm/gfm_kernels.py on a 2-core box: NumPy/BLAS is as fast or faster below d ~ 100,
#: the fused sweep ~1.5-2.5x faster from d = 200 on).
NUMBA_MIN_D = 128


# ----------------------------------------------------------------------------- scaling
@dataclass(frozen=True)
class Standardizer:
    """``z = (x - mean) / scale`` per feature, applied implicitly inside the products.

    Attributes
    ----------
    mean, scale : ndarray, shape (d,)
        Feature means and standard deviations (a zero-variance feature gets scale 1).
    """

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def identity(cls, d: int) -> "Standardizer":
        return cls(np.zeros(d), np.ones(d))

    @classmethod
    def from_data(cls, X) -> "Standardizer":
        """Mean and population standard deviation of the columns of X (dense or sparse)."""
        return cls.from_chunks([X])

    @classmethod
    def from_chunks(cls, chunks) -> "Standardizer":
        """The same over row chunks, merged exactly (Chan et al.'s pairwise update)."""
        n, mean, m2 = 0, None, None
        for Xc in chunks:
            nc, mc, m2c = _column_moments(Xc)
            if mean is None:
                n, mean, m2 = nc, mc, m2c
                continue
            delta = mc - mean
            tot = n + nc
            mean = mean + delta * (nc / tot)
            m2 = m2 + m2c + delta * delta * (n * nc / tot)
            n = tot
        if mean is None or n == 0:
            raise ValueError("cannot standardize: the batch has no rows.")
        scale = np.sqrt(m2 / n)
        # constant features: leave them unscaled, as scikit-learn's StandardScaler does
        scale[~(scale > 1e-12 * np.maximum(1.0, np.abs(mean)))] = 1.0
        return cls(np.asarray(mean, dtype=np.float64), np.asarray(scale, dtype=np.float64))

    @property
    def is_identity(self) -> bool:
        return not self.mean.any() and bool(np.all(self.scale == 1.0))

    def fold(self, A: np.ndarray):
        """``(A_raw, c)`` with ``Z A = X A_raw - c`` (c broadcast over rows)."""
        A_raw = A / self.scale[:, None]
        return A_raw, self.mean @ A_raw

    def unfold(self, acc: np.ndarray, gsum: np.ndarray) -> np.ndarray:
        """``Z^T G`` from ``acc = X^T G`` (d x m) and the column sums of G."""
        return (acc - self.mean[:, None] * gsum[None, :]) / self.scale[:, None]


def _column_moments(X):
    """(n, column means, column sums of squared deviations), two-pass (no cancellation)."""
    n = X.shape[0]
    if n == 0:
        return 0, np.zeros(X.shape[1]), np.zeros(X.shape[1])
    if sp.issparse(X):
        X = X.tocsc()
        mean = np.asarray(X.sum(axis=0)).ravel() / n
        counts = np.diff(X.indptr)
        col = np.repeat(np.arange(X.shape[1]), counts)
        dev = X.data - mean[col]
        m2 = np.bincount(col, weights=dev * dev, minlength=X.shape[1])
        m2 = m2 + (n - counts) * mean * mean  # the implicit zeros
        return n, mean, m2
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    dev = X - mean  # one chunk-sized temporary
    return n, mean, np.einsum("ij,ij->j", dev, dev)


def _std(std, d):
    return Standardizer.identity(d) if std is None else std


# ----------------------------------------------------------------------------- batches
class ChunkedBatch:
    """One mini-batch as a re-readable sequence of row chunks ``(X_c, y_c)``.

    Parameters
    ----------
    chunks : callable
        ``chunks()`` returns a fresh iterable of ``(X_c, y_c)`` pairs (X_c: n_c x d dense or
        sparse, y_c: n_c) and must give the same rows in the same order on every call: the
        one-pass step reads the batch twice, the initialization 10-20 times.
    n_rows : int, optional
        Rows in the batch, if known (used for messages only).

    Examples
    --------
    A batch stored as several .npy files, read one chunk at a time::

        batch = ChunkedBatch(lambda: ((np.load(f"X{i}.npy"), np.load(f"y{i}.npy"))
                                      for i in range(8)))
    """

    def __init__(self, chunks: Callable[[], Iterable], *, n_rows: int | None = None):
        if not callable(chunks):
            raise TypeError("ChunkedBatch takes a callable that returns the chunks (so the "
                            f"batch can be read more than once); got {type(chunks).__name__}.")
        self._chunks = chunks
        self.n_rows = n_rows

    @classmethod
    def from_arrays(cls, X, y, chunk_rows: int | None = None) -> "ChunkedBatch":
        """Views of an in-memory batch, ``chunk_rows`` rows at a time (all rows by default)."""
        n = X.shape[0]
        step = n if not chunk_rows else int(chunk_rows)
        return cls(lambda: ((X[i:i + step], y[i:i + step]) for i in range(0, n, step)),
                   n_rows=n)

    def __iter__(self):
        return iter(self._chunks())


def as_batch(X, y=None) -> ChunkedBatch:
    """A :class:`ChunkedBatch` from an array pair (one chunk) or a ChunkedBatch."""
    if isinstance(X, ChunkedBatch):
        if y is not None:
            raise TypeError("pass y inside the ChunkedBatch's chunks, not separately.")
        return X
    return ChunkedBatch.from_arrays(X, y)


# ----------------------------------------------------------------------------- checks
def check_rows(X, y, *, d=None, what="X", check_y=True):
    """``(X, y)`` as float64 (X dense C-order or CSR), checked; ValueError naming the fix."""
    if sp.issparse(X):
        X = X.tocsr()
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        values = X.data
    else:
        X = np.asarray(X)
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number)
                                     or X.dtype == np.bool_):
            raise ValueError(f"{what} must hold numbers; got dtype {X.dtype}.")
        if X.ndim != 2:
            raise ValueError(f"{what} must be a 2-D array (n_samples, n_features); got shape "
                             f"{X.shape}. Use X.reshape(-1, 1) for a single feature.")
        X = np.ascontiguousarray(X, dtype=np.float64)
        values = X
    if d is not None and X.shape[1] != d:
        raise ValueError(f"{what} has {X.shape[1]} features but the model has {d}; pass "
                         f"rows with the same columns as the first batch.")
    if not np.isfinite(values.sum()) and not np.all(np.isfinite(values)):
        bad = np.argwhere(~np.isfinite(X.toarray() if sp.issparse(X) else X))[0]
        raise ValueError(f"{what} has a non-finite value (NaN or inf) at row {bad[0]}, "
                         f"column {bad[1]}; remove or impute missing features first.")
    if not check_y:
        return X, None
    y = np.asarray(y, dtype=np.float64) if y is not None else None
    if y is None:
        raise ValueError(f"y is missing: pass the targets of {what} (one per row).")
    if y.ndim != 1:
        y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y has shape {np.shape(y)} but {what} has {X.shape[0]} rows; pass "
                         f"one target per row of {what}.")
    if not np.all(np.isfinite(y)):
        i = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"y has a non-finite value at position {i}; drop that row.")
    return X, y


# ----------------------------------------------------------------------------- engines
def _use_numba(X, engine) -> bool:
    if engine == "numpy" or sp.issparse(X):
        return False
    if engine == "numba":
        return True
    return X.shape[1] >= NUMBA_MIN_D and X.shape[0] >= 64


def _scratch(m, d):
    import numba

    nt = max(1, int(numba.get_num_threads()))
    return np.zeros((nt, m, d)), np.zeros((nt, m))


def project(X, A, std=None) -> np.ndarray:
    """``Z A`` (n x m) for the standardized rows Z of X (dense or sparse)."""
    A = np.asarray(A, dtype=np.float64)
    vec = A.ndim == 1
    A2 = A[:, None] if vec else A
    A_raw, c = _std(std, X.shape[1]).fold(A2)
    out = np.asarray(X @ A_raw) - c
    return out[:, 0] if vec else out


def quadratic_form(X, U, V, std=None) -> np.ndarray:
    """``A(M)_i = z_i^T M z_i`` with ``M = (U V^T + V U^T)/2``, as ``sum_q (z^T u_q)(z^T v_q)``."""
    k = np.shape(U)[1]
    P = project(X, np.hstack([U, V]), std)
    return np.einsum("ij,ij->i", P[:, :k], P[:, k:])


def adjoint_apply(X, z, A, std=None, *, engine="auto") -> np.ndarray:
    """``A'(z) A = Z^T diag(z) Z A`` (d x m) without forming the d x d matrix ``A'(z)``."""
    A = np.asarray(A, dtype=np.float64)
    vec = A.ndim == 1
    A2 = A[:, None] if vec else A
    out = _weighted(X, np.asarray(z, dtype=np.float64), A2, _std(std, X.shape[1]), engine)
    return out[:, 0] if vec else out


def _weighted(X, wts, A, std, engine):
    """Z^T (wts * (Z A)) for one chunk."""
    A_raw, c = std.fold(A)
    if _use_numba(X, engine):
        from . import _kernels

        acc, gsum = _scratch(A.shape[1], X.shape[1])
        _kernels.weighted_sweep(X, wts, np.ascontiguousarray(A_raw.T), c, acc, gsum)
        return std.unfold(acc.sum(axis=0).T, gsum.sum(axis=0))
    G = wts[:, None] * (np.asarray(X @ A_raw) - c)
    return std.unfold(np.asarray(X.T @ G), G.sum(axis=0))


def _residual(X, y, U, V, w, b, std, engine):
    """One chunk of the statistics pass: ``r`` and ``Z^T [r, r * (Z U)]``."""
    k = U.shape[1]
    W = np.hstack([U, V, w[:, None]])
    W_raw, c = std.fold(W)
    if _use_numba(X, engine):
        from . import _kernels

        acc, gsum = _scratch(k + 1, X.shape[1])
        r = np.empty(X.shape[0])
        _kernels.residual_sweep(X, y, np.ascontiguousarray(W_raw.T), c, k, float(b), r, acc,
                                gsum)
        return r, std.unfold(acc.sum(axis=0).T, gsum.sum(axis=0))
    P = np.asarray(X @ W_raw) - c
    r = y - b - P[:, 2 * k] - np.einsum("ij,ij->i", P[:, :k], P[:, k:2 * k])
    G = np.empty((X.shape[0], k + 1))
    G[:, 0] = r
    np.multiply(r[:, None], P[:, :k], out=G[:, 1:])
    return r, std.unfold(np.asarray(X.T @ G), G.sum(axis=0))


# ----------------------------------------------------------------------------- batch passes
def batch_targets(batch: ChunkedBatch, d=None, *, check=True):
    """All targets of a batch (n,) and its feature count; validates every chunk once."""
    ys = []
    for i, (Xc, yc) in enumerate(batch):
        if check:
            Xc, yc = check_rows(Xc, yc, d=d, what=f"X (chunk {i})" if i else "X")
        d = Xc.shape[1] if d is None else d
        ys.append(np.asarray(yc, dtype=np.float64).ravel())
    if not ys:
        raise ValueError("the batch is empty: it yielded no chunks.")
    return np.concatenate(ys), d


def residual_pass(batch: ChunkedBatch, U, V, w, b, std: Standardizer, engine="auto", *,
                  check=True):
    """The statistics of Alg. 1 on a batch under the model (w, U, V, b).

    Returns
    -------
    r : ndarray, shape (n,)
        ``y - b - Z w - A(M)`` with ``M = (U V^T + V U^T)/2``.
    S : ndarray, shape (d, k+1)
        ``Z^T [r, r * (Z U)]``: ``S[:, 0] / n = h_3`` and ``S[:, 1:] / (2n) = H_1 U``.
    """
    d = U.shape[0]
    rs, S = [], None
    for i, (Xc, yc) in enumerate(batch):
        if check:
            Xc, yc = check_rows(Xc, yc, d=d, what=f"X (chunk {i})" if i else "X")
        elif not sp.issparse(Xc):
            Xc = np.ascontiguousarray(Xc, dtype=np.float64)
        r, Sc = _residual(Xc, np.asarray(yc, dtype=np.float64), U, V, w, b, std, engine)
        rs.append(r)
        S = Sc if S is None else S + Sc
    if S is None:
        raise ValueError("the batch is empty: it yielded no chunks.")
    return np.concatenate(rs), S


def weighted_pass(batch: ChunkedBatch, wts, A, std: Standardizer, engine="auto"):
    """``Z^T (wts * (Z A))`` (d x m) over a batch, chunk by chunk (``A'(wts) A``)."""
    out, start = None, 0
    for Xc, _ in batch:
        if not sp.issparse(Xc):
            Xc = np.ascontiguousarray(Xc, dtype=np.float64)
        n_c = Xc.shape[0]
        part = _weighted(Xc, wts[start:start + n_c], A, std, engine)
        out = part if out is None else out + part
        start += n_c
    return out
