"""The small computations behind the Kernel MC Nyström page (``app_pages/kmc_nystrom.py``):
which kernels it offers, the γ and α it starts from, the landmark counts of the error curve
and the landmarks per group. No Streamlit here; the glue is :mod:`kmviz.ui.families.kmc`."""

from __future__ import annotations

import numpy as np

from .analysis.kernel_data import sklearn_available

#: The γ values offered for the Gaussian kernel of a point data set.
GAMMA_OPTIONS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
#: The γ each point data set starts from.
DEFAULT_GAMMA = {"boston": 0.1, "digits": 0.02, "mixture": 0.5}
#: The numbers of landmarks of the error curve (those up to n are used).
CURVE_LANDMARKS = (10, 20, 50, 100, 200, 400)


def nystrom_sources(has_run: bool) -> list[str]:
    """The kernels offered: a trained run's row and column kernels (when there is a run),
    then the point data sets (digits only with scikit-learn)."""
    sources = ["boston", "mixture"]
    if sklearn_available():
        sources.insert(1, "digits")
    if has_run:
        sources = ["row_kernel", "col_kernel"] + sources
    return sources


def source_notes(has_run: bool) -> list[str]:
    """Why a kernel is missing from the list, one sentence each."""
    notes = []
    if not sklearn_available():
        notes.append("scikit-learn is not installed: the digits and its Nystroem are left "
                     "out (pip install scikit-learn).")
    if not has_run:
        notes.append("Train a Kernel MC model to study its row and column kernels here.")
    return notes


def nearest_alpha(grid, alpha) -> float:
    """The value of ``grid`` nearest ``alpha`` on a log scale."""
    grid = np.asarray(grid)
    return grid[int(np.argmin(np.abs(np.log(grid / alpha))))]


def curve_landmarks(n: int) -> list[int]:
    """The numbers of landmarks of the error curve for a kernel of n points."""
    return [m for m in CURVE_LANDMARKS if m <= n]


def landmark_groups(groups, idx) -> list[tuple]:
    """(group, number of landmarks) of the landmarks ``idx``, groups in sorted order."""
    vals, cnt = np.unique(np.asarray(groups)[idx], return_counts=True)
    return list(zip(vals, cnt))
