"""The small computations behind the Kernel MC Nyström page (``app_pages/kmc_nystrom.py``):
which kernels it offers, the γ and α it starts from, the landmark counts of the error curve
and the landmarks per group. No Streamlit here; the glue is :mod:`kmviz.ui.families.kmc`."""

from __future__ import annotations

from dataclasses import dataclass

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


# ------------------------------------------------------------------ the kernel the page opens on
#: Leverage scores whose spread (largest minus smallest) is at most this share of the largest
#: are *flat*: the map shows one colour and the samplers all behave like uniform sampling.
FLAT_SPREAD = 0.01
#: The number of landmarks the page starts from (its slider's default).
DEFAULT_LANDMARKS = 50
#: The kernel the page falls back to when both of the run's kernels are flat: its small far
#: cluster is what leverage sampling is for.
FALLBACK_SOURCE = "mixture"


def scores_flat(scores, spread: float = FLAT_SPREAD) -> bool:
    """True when every score is within ``spread`` (a share of the largest) of the others."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return True
    hi = float(s.max())
    return float(hi - s.min()) <= spread * max(abs(hi), 1e-300)


def default_landmarks(n: int) -> int:
    """The number of landmarks the page starts from for a kernel of n points: 50, or half
    the points for a small kernel (at m = n, d_eff = n puts α at the bottom of the grid
    and every score near 1, flat whatever the kernel), on the slider's steps of 5."""
    half = min(DEFAULT_LANDMARKS, int(n) // 2)
    return int(max(5, 5 * (half // 5)))


def opening_scores(data):
    """The scores the page first shows for ``data``: at the α where d_eff(α) equals the
    default number of landmarks (the slider's stop nearest it). Returns (alpha, scores)."""
    from .analysis.leverage import alpha_for_landmarks, alpha_grid, leverage_scores

    m = min(default_landmarks(data.n), data.n)
    alpha = nearest_alpha(alpha_grid(data), alpha_for_landmarks(data, m))
    return float(alpha), leverage_scores(data, alpha)[0]


def _why_flat(K) -> str:
    """Why a kernel gives every point one score, when its form says it: a multiple of the
    identity plus a constant treats every point alike."""
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if n < 2:
        return ""
    diag = np.diag(K)
    off = K[~np.eye(n, dtype=bool)]
    scale = max(float(np.abs(K).max()), 1e-300)
    if np.ptp(diag) <= 1e-9 * scale and np.ptp(off) <= 1e-9 * scale:
        if abs(float(off[0])) <= 1e-12 * scale:
            return " (it is the identity: nothing in the data tells them apart)"
        return (" (it is the identity plus the all-ones constant: nothing in the data tells "
                "them apart)")
    return ""


@dataclass(frozen=True)
class Opening:
    """The kernel the Nyström page opens on: ``source`` (a key of
    :data:`kmviz.kmc.analysis.NYSTROM_SOURCES`), whether the rule moved away from the
    run's row kernel (``switched``) and a sentence saying why (``reason``)."""

    source: str
    switched: bool
    reason: str


SIDE_WORDS = {"row_kernel": ("row kernel", "rows"), "col_kernel": ("column kernel", "columns")}


def opening_source(prepare, candidates=("row_kernel", "col_kernel"), *,
                   fallback: str = FALLBACK_SOURCE) -> Opening:
    """The first of ``candidates`` whose opening scores (:func:`opening_scores`) are not
    flat (:func:`scores_flat`), else ``fallback``.

    ``prepare(source)`` returns the :class:`~kmviz.kmc.analysis.KernelData` of a candidate
    (with its eigendecomposition) or raises ValueError when the run has no such kernel. A
    flat kernel teaches nothing about leverage (one colour, every sampler uniform), so the
    page says which kernels were flat and why, and opens on the next one.
    """
    skipped = []
    for source in candidates:
        word, things = SIDE_WORDS.get(source, (source, "points"))
        try:
            data = prepare(source)
        except ValueError as exc:
            skipped.append(f"the run has no {word} ({exc})")
            continue
        alpha, scores = opening_scores(data)
        if not scores_flat(scores):
            if not skipped:
                return Opening(source, False,
                               f"Opened on the run's {word}: its scores range from "
                               f"{float(np.min(scores)):.3g} to {float(np.max(scores)):.3g} "
                               f"at α = {alpha:.3g}.")
            return Opening(source, True, f"Opened on the run's {word}: "
                           + "; ".join(skipped) + ". " + FLAT_WHY)
        skipped.append(f"the run's {word} gives all its {things} one score, about "
                       f"{float(np.mean(scores)):.3g} at α = {alpha:.3g}{_why_flat(data.K)}")
    return Opening(fallback, True, "Opened on the Gaussian mixture: " + "; ".join(skipped)
                   + ". " + FLAT_WHY + " The run's kernels stay in the Data list.")


#: Why the page does not open on a flat kernel, after the list of the kernels it skipped.
FLAT_WHY = ("A kernel that gives every point one score draws a map of one colour, and every "
            "sampler then draws like uniform sampling.")
