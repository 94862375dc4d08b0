"""Ridge leverage scores as the Nyström page shows them: exact from one eigendecomposition,
estimated from a sketch, their agreement, the alphas to show them at, and the Kronecker
scores of every entry of the run's matrix."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..._validation import check_random_state
from ..nystrom import approximate_ridge_leverage_scores, tail_alpha
from ..nystrom import ridge as ny
from .kernel_data import KernelData, KronSample


def leverage_scores(data: KernelData, alpha) -> tuple[np.ndarray, float]:
    """Ridge leverage scores ``diag(K (K + alpha I)^-1)`` (5.21) of every point and
    ``d_eff(alpha)``, their sum: from one eigendecomposition, cheap for a new alpha."""
    sig, Q = data.eigen()
    w = sig / (sig + float(alpha))
    return (Q * Q) @ w, float(w.sum())


def _nystroem_alpha(eigenvalues, m, *, total=None) -> float:
    """The default ridge of :class:`~kmviz.kmc.nystrom.Nystroem` for m landmarks: its
    ``default_alpha`` rule; with an older nystrom module, its tail rule (``total``: the
    trace when ``eigenvalues`` are a sketch's)."""
    rule = getattr(ny, "default_alpha", None)
    if rule is not None:
        return float(rule(eigenvalues, m))
    k = ny._k_of(m)
    sig = np.sort(np.clip(np.asarray(eigenvalues, np.float64), 0.0, None))[::-1]
    if total is None:
        return tail_alpha(sig, k)
    return max((total - float(sig[:k].sum())) / k, 1e-12 * float(sig[0]) if sig.size else 1e-12)


def default_alpha(data: KernelData, m) -> float:
    """The ridge the :class:`~kmviz.kmc.nystrom.Nystroem` sampler uses for m landmarks."""
    sig, _ = data.eigen()
    return _nystroem_alpha(sig, m)


def alpha_for_landmarks(data: KernelData, m) -> float:
    """The alpha at which ``d_eff(alpha) = m``: the scale that m landmarks can cover, where
    the scores show which points they should cover (the samplers' own default ridge is
    larger, :func:`default_alpha`)."""
    sig, _ = data.eigen()
    rule = getattr(ny, "alpha_for_dimension", None)
    if rule is not None:
        return float(rule(sig, float(m)))
    return default_alpha(data, m)


def alpha_grid(data: KernelData, n=41) -> np.ndarray:
    """Log-spaced alphas from 1e-4 to 10 times the largest eigenvalue (slider stops)."""
    sig, _ = data.eigen()
    top = max(float(sig.max()), 1e-12)
    return np.logspace(math.log10(top * 1e-4), math.log10(top * 10), n)


def approximate_scores(data: KernelData, alpha, m, *, random_state=0) -> np.ndarray:
    """Ridge leverage scores estimated from a uniform sketch of m points (Musco and Musco):
    ``min(1, (k_ii - k_iS (K_SS + alpha n/m I)^-1 k_Si) / alpha)``, O(n m^2), no n x n
    eigendecomposition. The estimator the ``approximate_leverage`` sampling draws from."""
    rng = check_random_state(random_state)
    n = data.n
    m = int(min(max(1, m), n))
    sketch = rng.choice(n, m, replace=False).astype(np.int64)
    w = np.full(m, math.sqrt(n / m))
    K = data.K
    # capped at 1 as the sampler caps them: true scores never exceed 1, and a sketch that
    # misses a region over-estimates its points by far
    return np.minimum(approximate_ridge_leverage_scores(
        lambda S: K[:, S], np.diag(K).copy(), sketch, w, float(alpha)), 1.0)


def score_agreement(exact, approx) -> dict:
    """Pearson and Spearman correlations of two score vectors and the median ratio."""
    exact, approx = np.asarray(exact, float), np.asarray(approx, float)
    pearson = float(np.corrcoef(exact, approx)[0, 1]) if exact.std() > 0 and \
        approx.std() > 0 else math.nan
    re = pd.Series(exact).rank().to_numpy()
    ra = pd.Series(approx).rank().to_numpy()
    spearman = float(np.corrcoef(re, ra)[0, 1]) if re.std() > 0 and ra.std() > 0 else math.nan
    pos = exact > 0
    ratio = float(np.median(approx[pos] / exact[pos])) if pos.any() else math.nan
    return {"pearson": pearson, "spearman": spearman, "median_ratio": ratio}


def kron_scores(model, alpha, *, max_side=2000):
    """Ridge leverage scores of the run's Kronecker kernel ``K_col ⊗ K_row``, one per entry
    of the N x L matrix: ``(exact, approximate, d_eff)``.

    ``exact`` by :func:`~kmviz.kmc.nystrom.kron_ridge_leverage_scores` (O(N^3 + L^3), the
    NL x NL kernel never formed), ``approximate`` the thesis's (5.23), the outer product of
    the two kernels' own scores at ``sqrt(alpha)``; ``d_eff`` the sum of the exact map.
    ``model`` may be a :class:`KronSample` (:func:`kron_sample`: the kernels of a
    sample of rows and columns). Raises ValueError without kernels or above ``max_side``
    rows or columns.
    """
    from ..nystrom import approximate_kron_leverage_scores, kron_ridge_leverage_scores

    if isinstance(model, KronSample):
        Kr, Kc = model.Kr, model.Kc
    else:
        Kr, Kc = getattr(model, "row_kernel_", None), getattr(model, "col_kernel_", None)
    if Kr is None or Kc is None:
        raise ValueError(f"this run ({model.method_}) keeps no kernels; kernel methods "
                         "(kkmcex, rrmcex, als, sgd) do")
    Kr, Kc = np.asarray(Kr, np.float64), np.asarray(Kc, np.float64)
    if max(Kr.shape[0], Kc.shape[0]) > max_side:
        raise ValueError(f"the kernels are {Kr.shape[0]} x {Kr.shape[0]} and {Kc.shape[0]} x "
                         f"{Kc.shape[0]}: the entry scores are limited to {max_side} a side "
                         "(two eigendecompositions)")
    exact = kron_ridge_leverage_scores(Kr, Kc, alpha)
    approx = approximate_kron_leverage_scores(Kr, Kc, alpha)
    return exact, approx, float(exact.sum())


def kron_alpha_grid(model, n=41) -> np.ndarray:
    """Log-spaced alphas for the Kronecker scores: 1e-6 to 10 times the largest eigenvalue
    of ``K_col ⊗ K_row`` (the product of the two largest)."""
    top = 1.0
    kernels = (model.Kr, model.Kc) if isinstance(model, KronSample) else \
        (model.row_kernel_, model.col_kernel_)
    for K in kernels:
        top *= max(float(np.linalg.eigvalsh(np.asarray(K, np.float64))[-1]), 1e-12)
    return np.logspace(math.log10(top * 1e-6), math.log10(top * 10), n)


__all__ = ["alpha_for_landmarks", "alpha_grid", "approximate_scores", "default_alpha",
           "kron_alpha_grid", "kron_scores", "leverage_scores", "score_agreement"]
