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

Modules: :mod:`~kmviz.kmc.nystrom.scores` (exact and Kronecker ridge leverage scores,
d_eff, sampling by the scores), :mod:`~kmviz.kmc.nystrom.ridge` (the default alpha for m
landmarks), :mod:`~kmviz.kmc.nystrom.landmarks` (distinct draws, sketched scores, recursive
sampling) and :mod:`~kmviz.kmc.nystrom.approximation` (the approximation, its errors and
:class:`Nystroem`). The names below are the package's interface
(``from kmviz.kmc import nystrom as ny``).
"""

from . import approximation, landmarks, ridge, scores  # noqa: F401
from .approximation import (  # noqa: F401
    KERNELS, SAMPLINGS, Nystroem, nystrom_approximation, nystrom_errors, residual_diagonal,
)
from .landmarks import (  # noqa: F401
    approximate_ridge_leverage_scores, recursive_rls_sample, sample_distinct,
)
from .ridge import (  # noqa: F401
    alpha_for_dimension, default_alpha, default_alpha_of_kernel, tail_alpha, top_eigenvalues,
)
from .scores import (  # noqa: F401
    approximate_kron_leverage_scores, effective_dimension, kron_effective_dimension,
    kron_ridge_leverage_scores, ridge_leverage_scores, ridge_leverage_scores_cholesky,
    sample_entries, sample_indices, sampling_probabilities,
)

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
