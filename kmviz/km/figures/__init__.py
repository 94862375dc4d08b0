"""KM's own Plotly figures (pure functions returning ``go.Figure``, no Streamlit): the
Lanczos bounds of one item's binary QP and the implication graph, its ego view and the
influence scores. The generic figures (convergence, phases, data) are in :mod:`kmviz.viz`."""

from .implications import (ego_graph_figure, filter_graph, graph_layout,
                           implication_graph_figure, influence_figure)
from .lanczos import lanczos_bounds_figure, ritz_values_figure

__all__ = ["ego_graph_figure", "filter_graph", "graph_layout", "implication_graph_figure",
           "influence_figure", "lanczos_bounds_figure", "ritz_values_figure"]
