"""Plotly figure builders, one module per view: pure functions returning ``go.Figure``.

No streamlit and no I/O here; pages render and export the figures. Nothing model-specific
either: a family's names and colours (KM: :mod:`kmviz.km.telemetry`) come as arguments.
"""

from .convergence import bcd_convergence_figure, dual_gap_figure, mean_predictor_rmse
from .data import count_distribution_figure, rating_histogram_figure
from .implications import implication_graph_figure, influence_figure
from .lanczos import lanczos_bounds_figure, ritz_values_figure
from .phases import evd_savings_figure, phase_share_figure, phase_time_figure

__all__ = [
    "bcd_convergence_figure", "dual_gap_figure", "count_distribution_figure",
    "rating_histogram_figure", "implication_graph_figure", "influence_figure",
    "lanczos_bounds_figure", "ritz_values_figure", "evd_savings_figure", "phase_share_figure",
    "phase_time_figure", "mean_predictor_rmse",
]
