"""What the Kernel MC pages show, computed here: completion maps with cold start marked,
errors by part, NMSE and time against the fraction observed, singular-value spectra, and
the Nyström views (leverage-score maps, exact vs approximate scores, landmarks, error
against the number of landmarks).

Pure functions of a fitted :class:`~kmviz.kmc.KernelMatrixCompletion`, its split and plain
arrays; no Streamlit. Long computations take ``progress(done, total, message)`` and a size
guard, so that a page can run them on request and finish in well under a minute.

Modules: :mod:`~kmviz.kmc.analysis.matrix` (the parts of the split, block estimates, kernel
blocks), :mod:`~kmviz.kmc.analysis.completion` (the Completion page's maps, errors, spectra
and cold-start refit), :mod:`~kmviz.kmc.analysis.fraction_observed` (the P_s curve),
:mod:`~kmviz.kmc.analysis.kernel_data` (the kernels the Nyström page studies),
:mod:`~kmviz.kmc.analysis.leverage` (their ridge leverage scores) and
:mod:`~kmviz.kmc.analysis.landmarks` (landmark draws and the Nyström error curve). The names
below are the package's interface (``from kmviz.kmc import analysis as an``).
"""

from . import (  # noqa: F401
    completion, fraction_observed, kernel_data, landmarks, leverage, matrix,
)
from .completion import (  # noqa: F401
    CompletionView, cold_start_refit, completion_view, error_table, singular_value_spectra,
)
from .fraction_observed import (  # noqa: F401
    CURVE_DEFAULT, CURVE_METHODS, SubProblem, fraction_observed_curve, sub_problem,
)
from .kernel_data import (  # noqa: F401
    NYSTROM_SOURCES, KernelData, KronSample, kron_sample, points_data, run_kernel_data,
    sklearn_available,
)
from .landmarks import (  # noqa: F401
    SAMPLING_LABELS, draw_landmarks, error_bands, nystrom_error_curve, nystrom_features,
    sample_landmarks,
)
from .leverage import (  # noqa: F401
    alpha_for_landmarks, alpha_grid, approximate_scores, default_alpha, kron_alpha_grid,
    kron_scores, leverage_scores, score_agreement,
)
from .matrix import PARTS, block_estimate, kernel_block, known_matrix  # noqa: F401

__all__ = [
    "CURVE_DEFAULT", "CURVE_METHODS", "CompletionView", "KernelData", "NYSTROM_SOURCES",
    "PARTS", "SAMPLING_LABELS", "alpha_for_landmarks", "alpha_grid", "approximate_scores",
    "block_estimate", "cold_start_refit", "completion_view", "default_alpha", "draw_landmarks",
    "error_bands",
    "error_table", "fraction_observed_curve", "known_matrix", "kron_alpha_grid",
    "kron_scores", "leverage_scores", "nystrom_error_curve", "nystrom_features",
    "points_data", "run_kernel_data", "sample_landmarks", "score_agreement",
    "singular_value_spectra", "sklearn_available", "sub_problem",
]
