"""Kernel regression on a Kronecker kernel: KKMCEX (3.46) and RRMCEX (3.59), as functions.

Notation: the row kernel ``K_row`` (N x N, the thesis's K_w) and the column kernel ``K_col``
(L x L, K_h); the observed entries ``(rows[k], cols[k])`` with values ``m[k]``, k < s. The
Kronecker kernel ``K_f = K_col ⊗ K_row`` (NL x NL, entry (i, j) of the matrix at flat index
``i + j N``, vec stacking columns) is never formed.

KKMCEX (3.45)-(3.46)::

    K_OO[k, k'] = K_row[rows[k], rows[k']] * K_col[cols[k], cols[k']]        (s x s)
    c = (K_OO + mu I)^-1 m
    F_hat = K_row Gamma K_col,  Gamma = unvec(S^T c): c[k] at (rows[k], cols[k])
    prediction(u, i) = sum_k K_row[u, rows[k]] K_col[i, cols[k]] c[k]

:func:`kkmcex_direct` / :func:`kkmcex_cholesky` form K_OO (O(s^2) memory, a Cholesky in
O(s^3); float32 factor + float64 refinement from :data:`MIXED_MIN_S` observations up, which
halves memory and about halves the time); :class:`KronGram` is
the matrix-free product ``v -> K_OO v = (K_row unvec(v) K_col)[rows, cols]`` (the vec trick,
O(N^2 L + N L^2) per product with BLAS, never K_OO) used by :class:`KKMCEXConjugateGradient`.

RRMCEX (3.58)-(3.59) with eigen features: ``Phi_z`` has columns
``sqrt(sigma_row[a] sigma_col[b]) (q_col,b ⊗ q_row,a)`` for the d largest products of the two
kernels' eigenvalues (§3.5.3), so row (i, j) of Phi_z is
``w[k] Q_row[i, a[k]] Q_col[j, b[k]]``; ``xi = (Phi^T Phi + mu I)^-1 Phi^T m`` over the observed
rows of Phi. With all N L features it equals KKMCEX (3.61).

Modules: :mod:`~kmviz.kmc.krr.dense` (KKMCEX on dense kernels: K_OO, the Cholesky paths,
:class:`KronGram`, predictions, conjugate gradients, the NMSE), :mod:`~kmviz.kmc.krr.factored`
(:class:`SideKernel` and :class:`FactoredKronGram`: factored or identity side kernels) and
:mod:`~kmviz.kmc.krr.eigen` (the eigen features and the RRMCEX solve). The names below are
the package's interface (``from kmviz.kmc import krr``); module switches such as
``MIXED_MIN_S`` are read from :mod:`~kmviz.kmc.krr.dense`, so set them there.
"""

from . import dense, eigen, factored  # noqa: F401
from .dense import (  # noqa: F401
    CHUNK_VALUES, MIXED_MIN_S, REFINE_MAX_ITER, SPARSE_DENSITY, KKMCEXConjugateGradient,
    KronGram, kkmcex_cholesky, kkmcex_direct, kkmcex_gram, kkmcex_objective, kkmcex_predict,
    nmse, weighted_ridge,
)
from .eigen import (  # noqa: F401
    EigenFeatures, features_svd, kernel_eigen, rrmcex_objective, rrmcex_solve, top_products,
)
from .factored import (  # noqa: F401
    FactoredKronGram, SideKernel, as_side, kkmcex_factored_cholesky,
)

__all__ = [
    "EigenFeatures",
    "FactoredKronGram",
    "KKMCEXConjugateGradient",
    "SideKernel",
    "as_side",
    "KronGram",
    "features_svd",
    "kernel_eigen",
    "kkmcex_cholesky",
    "kkmcex_direct",
    "kkmcex_factored_cholesky",
    "kkmcex_gram",
    "kkmcex_objective",
    "kkmcex_predict",
    "nmse",
    "rrmcex_objective",
    "rrmcex_solve",
    "top_products",
    "weighted_ridge",
]
