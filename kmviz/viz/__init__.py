"""Plotly figure builders, one module per view: pure functions returning ``go.Figure``.

No streamlit and no I/O here; pages render and export the figures. Nothing model-specific
either: a family's names and colours (its ``telemetry.FIGURE_OPTIONS``) come as arguments;
a family's own figures live in its package (KM's: :mod:`kmviz.km.figures`).
"""

from .convergence import convergence_figure, dual_gap_figure, mean_predictor_rmse
from .data import count_distribution_figure, rating_histogram_figure
from .phases import evd_savings_figure, phase_share_figure, phase_time_figure

__all__ = [
    "convergence_figure", "dual_gap_figure", "count_distribution_figure",
    "rating_histogram_figure", "evd_savings_figure", "phase_share_figure",
    "phase_time_figure", "mean_predictor_rmse",
]
