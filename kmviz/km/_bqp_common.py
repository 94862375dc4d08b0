"""Pieces shared by ``solvers.py``, ``_bqp_methods.py`` and ``baselines.py``: the one-item and
batch result types, the phase labels of Alg. 2 and the enumeration limit.

A module below both, so that ``solvers`` imports ``baselines`` and never the other way round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

PHASES = ("I-A", "I-B", "II-A", "II-B")
MAX_ENUM_D = 20  # exact enumeration of one item: at most 2^20 candidates


@dataclass
class BQPResult:
    """Result of :func:`kmviz.km.solvers.solve_bqp` for one item.

    Attributes
    ----------
    psi : ndarray of shape (D,), float64 in {0, 1}
    objective : float
        psi^T S psi - 2 psi^T v.
    n_iter : int
        Dual iterations (0 for "exact", "bnb", "sdr"; BFGS iterations for "bfgs").
    phase_counts : dict
        Iterations per phase of Alg. 2, keys "I-A", "I-B", "II-A", "II-B".
    n_evd : int
        EVDs / Lanczos runs (see the docstring of ``kmviz.km.solvers``).
    u : ndarray of shape (D+1,)
        Dual solution u* (NaN for methods without a dual).
    lanczos_m_mean, lanczos_beta_mean : float
        Mean Krylov dimension and final beta_{m+1} over Lanczos runs (NaN when exact).
    method : str
    improved : bool
        A candidate strictly beat ``psi_prev`` (True when no incumbent was given).
    converged : bool
        The dual stopping rule was met (True for non-dual methods).
    h : float
        h_gamma(u*) (NaN without a dual).
    info : dict
        Method-specific extras (bnb nodes, SDP status, ...).
    """

    psi: np.ndarray
    objective: float
    n_iter: int
    phase_counts: dict
    n_evd: int
    u: np.ndarray
    lanczos_m_mean: float
    lanczos_beta_mean: float
    method: str
    improved: bool = True
    converged: bool = True
    h: float = math.nan
    info: dict = field(default_factory=dict)


@dataclass
class BatchResult:
    """Result of :func:`kmviz.km.solvers.solve_bqp_batch`; one row per item.

    ``psi`` (n_items, D) float64 0/1; ``u`` (n_items, D+1) dual solutions (NaN for "exact" /
    "bnb"); ``objective``, ``n_iter``, ``n_evd`` (n_items,); ``phase_counts`` (n_items, 4)
    int64 in the order I-A, I-B, II-A, II-B; ``lanczos_m`` / ``lanczos_beta`` (n_items,)
    per-item means (NaN when exact); ``improved`` (n_items,) bool; ``converged`` (n_items,)
    bool; ``times``: seconds of ``TIME_PARTS`` and of "dual", the sum of the four phase parts
    (see the docstring of :mod:`kmviz.km.solvers`).
    """

    psi: np.ndarray
    u: np.ndarray
    objective: np.ndarray
    n_iter: np.ndarray
    phase_counts: np.ndarray
    n_evd: np.ndarray
    lanczos_m: np.ndarray
    lanczos_beta: np.ndarray
    improved: np.ndarray
    converged: np.ndarray
    times: dict
