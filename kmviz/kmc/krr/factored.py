"""Side kernels kept in their cheapest exact form, and KKMCEX on them.

:class:`SideKernel` holds one side's kernel dense, as the identity or as a factor
``d I + F F^T``; :class:`FactoredKronGram` is the matrix-free ``K_OO`` of two such kernels
(never forming either), and :func:`kkmcex_factored_cholesky` the direct solve on its
``K_OO``.
"""

from __future__ import annotations

import math

import numpy as np

from ..rkhs import factor_threads
from .dense import CHUNK_VALUES, _double_solve
from .eigen import features_svd, kernel_eigen


class SideKernel:
    """One side's kernel in the cheapest exact form: dense, identity, or a factor ``F F^T``.

    ``kind`` is ``"dense"`` (``K``, n x n), ``"identity"`` (never formed) or ``"factor"``
    (``F``, n x r, ``K = F F^T``: a linear kernel on r < n features, a kernel on feature rows
    with r distinct values, a bandlimited graph kernel, or a low-rank approximation when
    ``exact`` is False). A factor may carry a ``shift`` d >= 0: ``K = d I + F F^T`` (e.g.
    ``I + 1 1^T``: a per-entity term plus a shared one), still applied in O(n r).
    :class:`FactoredKronGram` multiplies by ``K`` through :meth:`apply` without forming it.
    """

    def __init__(self, n, *, dense=None, factor=None, identity=False, exact=True, note="",
                 shift=0.0):
        self.n = int(n)
        self.exact = bool(exact)
        self.note = note
        self.shift = float(shift)
        if not (self.shift >= 0 and math.isfinite(self.shift)):
            raise ValueError(f"shift must be a finite number >= 0; got {shift!r}")
        if self.shift and factor is None:
            raise ValueError("shift is only for a factor (K = shift I + F F^T)")
        self.K = self.F = None
        if identity:
            self.kind = "identity"
        elif factor is not None:
            self.kind = "factor"
            self.F = np.ascontiguousarray(factor, dtype=np.float64)
            if self.F.ndim != 2 or self.F.shape[0] != self.n:
                raise ValueError(f"a kernel factor must have {self.n} rows; got shape "
                                 f"{self.F.shape}")
        else:
            self.kind = "dense"
            self.K = np.ascontiguousarray(dense, dtype=np.float64)
        self._diag = None

    @property
    def rank(self) -> int:
        """Columns of the factor (n for dense and identity kernels)."""
        return int(self.F.shape[1]) if self.kind == "factor" else self.n

    def dense(self) -> np.ndarray:
        """The n x n kernel (formed for a factor or the identity)."""
        if self.kind == "dense":
            return self.K
        if self.kind == "identity":
            return np.eye(self.n)
        K = self.F @ self.F.T
        K = 0.5 * (K + K.T)
        if self.shift:
            K[np.diag_indices_from(K)] += self.shift
        return K

    @property
    def low_rank(self) -> bool:
        """True for a pure factor ``K = F F^T`` (no shift): the side a product can go
        through."""
        return self.kind == "factor" and not self.shift

    def diag(self) -> np.ndarray:
        if self._diag is None:
            if self.kind == "dense":
                self._diag = np.ascontiguousarray(np.diag(self.K))
            elif self.kind == "identity":
                self._diag = np.ones(self.n)
            else:
                self._diag = np.einsum("ij,ij->i", self.F, self.F) + self.shift
        return self._diag

    def apply(self, T) -> np.ndarray:
        """``K T`` for an n x k matrix T: O(n r k) for a factor, free for the identity."""
        if self.kind == "identity":
            return T
        if self.kind == "dense":
            return self.K @ T
        out = self.F @ (self.F.T @ T)
        if self.shift:
            out += self.shift * T
        return out

    def apply_cost(self, k) -> float:
        """Multiply-adds of :meth:`apply` on an n x k matrix."""
        if self.kind == "identity":
            return 0.0
        if self.kind == "dense":
            return float(self.n) * self.n * k
        return 2.0 * self.n * self.rank * k

    def block(self, a, b) -> np.ndarray:
        """``K[a][:, b]`` for index arrays a, b."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if self.kind == "dense":
            return self.K[np.ix_(a, b)]
        if self.kind == "identity":
            return (a[:, None] == b[None, :]).astype(np.float64)
        out = np.take(self.F, a, axis=0) @ np.take(self.F, b, axis=0).T
        if self.shift:
            out += self.shift * (a[:, None] == b[None, :])
        return out

    def eigen(self, d):
        """``(sigma, Q)``: at least the d leading eigenpairs, eigenvalues descending (for
        the eigen features of the CG preconditioner): the whole spectrum of a dense kernel,
        the thin SVD of a factor, d unit vectors of the identity."""
        if self.kind == "dense":
            return kernel_eigen(self.K)
        if self.kind == "factor":
            sig, U = features_svd(self.F)  # the rest of the spectrum is the shift
            return sig + self.shift, U
        k = min(int(d), self.n)
        Q = np.zeros((self.n, k))
        Q[np.arange(k), np.arange(k)] = 1.0
        return np.ones(k), Q

    def linked(self, known, *, rtol=1e-12) -> np.ndarray:
        """:func:`kmviz.kmc.rkhs.linked` without forming the kernel."""
        from ..rkhs import linked

        known = np.asarray(known, dtype=bool)
        if self.kind == "dense":
            return linked(self.K, known, rtol=rtol)
        out = known.copy()
        if self.kind == "identity" or known.all() or not known.any():
            return out
        kn_idx = np.flatnonzero(known)
        scale = float(np.max(self.diag())) if self.n else 0.0  # max |K| of a PSD K
        reach = np.zeros(self.n)
        step = max(1, CHUNK_VALUES // max(self.n, 1))
        for lo in range(0, kn_idx.shape[0], step):
            B = self.F @ np.take(self.F, kn_idx[lo:lo + step], axis=0).T
            np.maximum(reach, np.max(np.abs(B), axis=1), out=reach)
        return out | (reach > rtol * max(scale, 1e-300))


def as_side(K, n=None) -> SideKernel:
    """A :class:`SideKernel` from a dense kernel (or pass a SideKernel through)."""
    if isinstance(K, SideKernel):
        return K
    K = np.asarray(K, dtype=np.float64)
    return SideKernel(K.shape[0] if n is None else n, dense=K)


class FactoredKronGram:
    """The matrix-free ``K_OO = S (K_col ⊗ K_row) S^T`` for side kernels that are factors
    ``K = F F^T`` or the identity (:class:`SideKernel`), never forming either kernel.

    With ``Gamma = unvec(S^T v)`` (N x L, s nonzeros) and the column kernel a factor
    ``B`` (L x r_c): ``K_row Gamma K_col = Y B^T`` with ``Y = K_row (Gamma B)``, so
    ``matvec(v)[k] = Y[rows[k]] . B[cols[k]]``: ``s r_c`` for ``Gamma B``, the row kernel's
    product on an N x r_c matrix (``2 N r_r r_c`` for a factor A, nothing for the identity,
    ``N^2 r_c`` for a dense kernel) and ``s r_c`` for the observed entries. The mirror route
    works from a row factor A (``Z = K_col (Gamma^T A)``, ``Z[cols[k]] . A[rows[k]]``); the
    cheaper of the two is taken. Both identities: ``K_OO`` is the identity on distinct pairs
    (repeats summed). A side may be dense when the other is a factor. The same factors give
    the whole estimate as ``P Q^T`` (:meth:`estimate_factors`).
    """

    def __init__(self, row_side, col_side, rows, cols, *, route="auto"):
        self.row = as_side(row_side)
        self.col = as_side(col_side)
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.cols = np.ascontiguousarray(cols, dtype=np.int64)
        self.N, self.L = self.row.n, self.col.n
        s = self.rows.shape[0]
        # Gamma as CSR (row-major) and its transpose as CSR, duplicates summed: the
        # distinct cells in row order, and where each entry lands
        flat = self.rows * self.L + self.cols
        self._cells, self._inv = np.unique(flat, return_inverse=True)
        self._inv = self._inv.astype(np.int64)
        r, c = np.divmod(self._cells, self.L)
        self._indptr = np.zeros(self.N + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=self.N), out=self._indptr[1:])
        self._indices = c.astype(np.int64)
        tord = np.lexsort((r, c))
        self._t_order = tord.astype(np.int64)
        self._t_indptr = np.zeros(self.L + 1, dtype=np.int64)
        np.cumsum(np.bincount(c, minlength=self.L), out=self._t_indptr[1:])
        self._t_indices = r[tord].astype(np.int64)
        self.unique = self._cells.shape[0] == s
        costs = {}
        if self.col.low_rank:
            rc = self.col.rank
            costs["col"] = 2.0 * s * rc + self.row.apply_cost(rc)
        if self.row.low_rank:
            rr = self.row.rank
            costs["row"] = 2.0 * s * rr + self.col.apply_cost(rr)
        if self.row.kind == "identity" and self.col.kind == "identity":
            costs["identity"] = float(s)
        if not costs:
            raise ValueError("FactoredKronGram needs a low-rank factor (no shift) on one side, "
                             "or the identity on both; use KronGram for two dense kernels")
        self.route = min(costs, key=costs.get) if route == "auto" else route
        self.n_matvec = 0

    @property
    def s(self) -> int:
        return int(self.rows.shape[0])

    def _data(self, v):
        v = np.asarray(v, dtype=np.float64)
        if self.unique:
            out = np.empty(self._cells.shape[0])
            out[self._inv] = v
            return out
        return np.bincount(self._inv, weights=v, minlength=self._cells.shape[0])

    def _gamma_times(self, data, B):
        """``Gamma B`` (N x k)."""
        from .._kernels import csr_times_dense

        out = np.empty((self.N, B.shape[1]))
        csr_times_dense(self._indptr, self._indices, data, np.ascontiguousarray(B), out)
        return out

    def _gamma_t_times(self, data, A):
        """``Gamma^T A`` (L x k)."""
        from .._kernels import csr_times_dense

        out = np.empty((self.L, A.shape[1]))
        csr_times_dense(self._t_indptr, self._t_indices,
                        np.ascontiguousarray(data[self._t_order]), np.ascontiguousarray(A),
                        out)
        return out

    def unvec(self, v) -> np.ndarray:
        """``Gamma = unvec(S^T v)`` as a dense N x L matrix (repeated pairs summed)."""
        G = np.zeros((self.N, self.L))
        r, c = np.divmod(self._cells, self.L)
        G[r, c] = self._data(v)
        return G

    def estimate_factors(self, v, route=None):
        """``(P, Q)`` with ``K_row unvec(S^T v) K_col = P Q^T``.

        Column route: ``P = K_row (Gamma B)``, ``Q = B``; row route: ``P = A``,
        ``Q = K_col (Gamma^T A)``. Two identities give ``P = Gamma`` (dense N x L), ``Q = I``
        (only for :meth:`full`)."""
        route = self.route if route is None else route
        data = self._data(v)
        if route == "col":
            B = self.col.F
            return np.ascontiguousarray(self.row.apply(self._gamma_times(data, B))), B
        if route == "row":
            A = self.row.F
            return A, np.ascontiguousarray(self.col.apply(self._gamma_t_times(data, A)))
        G = self.unvec(v)
        return G, np.eye(self.L)

    def matvec(self, v) -> np.ndarray:
        from .._kernels import pair_rowdot

        self.n_matvec += 1
        if self.route == "identity":
            return self._data(v)[self._inv]
        P, Q = self.estimate_factors(v)
        out = np.empty(self.s)
        pair_rowdot(np.ascontiguousarray(P), np.ascontiguousarray(Q), self.rows, self.cols,
                    out)
        return out

    def full(self, v) -> np.ndarray:
        """``K_row unvec(S^T v) K_col``: the whole N x L matrix."""
        if self.route == "identity":
            return self.unvec(v)
        P, Q = self.estimate_factors(v)
        return P @ Q.T

    def diagonal(self) -> np.ndarray:
        return self.row.diag()[self.rows] * self.col.diag()[self.cols]

    def gram(self) -> np.ndarray:
        """The dense ``K_OO`` (s x s), for the direct solve: the product of the two gathered
        blocks ``K_row[rows][:, rows] * K_col[cols][:, cols]``, O(s^2 (r_r + r_c))."""
        G = self.row.block(self.rows, self.rows)
        G *= self.col.block(self.cols, self.cols)
        return G


def kkmcex_factored_cholesky(gram: FactoredKronGram, m, mu, *, ridge=None, threads=None):
    """KKMCEX coefficients ``c = (K_OO + mu I)^-1 m`` by a float64 Cholesky of the K_OO of
    factored side kernels (:meth:`FactoredKronGram.gram`). Returns ``(c, info)`` like
    :func:`kkmcex_cholesky`."""
    import time

    b = np.asarray(m, dtype=np.float64)
    s = b.shape[0]
    diag = np.full(s, float(mu)) if ridge is None else np.asarray(ridge, dtype=np.float64)
    threads = factor_threads(s) if threads is None else int(threads)
    info = {"precision": "double", "refine_iter": 0, "backward_error": math.nan,
            "fallback": "", "threads": threads, "gram": 0.0, "factor": 0.0, "refine": 0.0,
            "solve": 0.0}
    t0 = time.perf_counter()
    A = gram.gram()
    info["gram"] = time.perf_counter() - t0
    return _double_solve(A, b, diag, threads, info), info



__all__ = ["FactoredKronGram", "SideKernel", "as_side", "kkmcex_factored_cholesky"]
