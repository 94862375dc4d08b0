"""OCMF's Plotly figures (the template's ``figures``): pure functions of what
:mod:`kmviz.ocmf.analysis` computes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go


def _power_of_two(r) -> str:
    return f"2^{np.log2(r):.0f}"


def grid_figure(table: pd.DataFrame) -> go.Figure:
    """The rho x lambda table of validation p@5 (rows rho, columns lambda, as
    :func:`kmviz.ocmf.analysis.validation_grid` pivots it) as a heat map with the values
    written in, both axes as powers of 2."""
    shown = table.rename(index=_power_of_two, columns=_power_of_two)
    return px.imshow(shown, text_auto=".3f", aspect="auto",
                     labels=dict(x="λ", y="ρ", color="validation p@5"))
