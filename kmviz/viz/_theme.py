"""One look for every kmviz figure: template, colours, phase palette."""

from __future__ import annotations

import plotly.graph_objects as go

TEMPLATE = "plotly_white"
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#17becf", "#7f7f7f", "#bcbd22"]
#: The enhanced GD phases of the paper (Alg. 2, Table II).
PHASES = ["I-A", "I-B", "II-A", "II-B"]
PHASE_COLORS = {"I-A": "#4c78a8", "I-B": "#72b7b2", "II-A": "#f58518", "II-B": "#e45756",
                "GD": "#7f7f7f"}
#: Timed parts of one BCD iteration (Trace columns t_<name>_s) and their display names.
#: The BQP parts are non-overlapping pieces of t_bqp_s; t_bqp_dual_s (the sum of the four
#: t_dual_*_s) is drawn only for traces without the per-phase split.
TIMED_PARTS = {
    "t_lcqp_s": "LCQP (Frank-Wolfe, θ)",
    "t_build_s": "build S_i, v_i",
    "t_dual_1a_s": "BQP dual GD, phase I-A",
    "t_dual_1b_s": "BQP dual GD, phase I-B",
    "t_dual_2a_s": "BQP dual GD, phase II-A",
    "t_dual_2b_s": "BQP dual GD, phase II-B (EVD excluded)",
    "t_bqp_dual_s": "BQP dual GD (all phases)",
    "t_evd_s": "dense EVD (eigh)",
    "t_lanczos_s": "Lanczos (Alg. 5)",
    "t_randomization_s": "randomization (Alg. 3)",
    "t_bqp_other_s": "other BQP work (set-up, draws)",
    "t_objective_s": "objective and RMSE",
}


#: Line colours for methods drawn over phase-coloured markers (none of the phase colours).
LINE_COLORS = ["#222222", "#9467bd", "#8c564b", "#17becf"]


def color(i: int) -> str:
    return COLORS[i % len(COLORS)]


def styled(fig: go.Figure, *, title: str, x: str | None = None, y: str | None = None,
           height: int = 420) -> go.Figure:
    """Apply the template, a title and axis labels (the labels name the unit)."""
    fig.update_layout(template=TEMPLATE, title=dict(text=title, x=0.0, xanchor="left"),
                      height=height, margin=dict(l=60, r=20, t=60, b=50),
                      legend=dict(orientation="h", yanchor="top", y=-0.2, x=0.0),
                      hoverlabel=dict(namelength=-1))
    if x is not None:
        fig.update_xaxes(title_text=x)
    if y is not None:
        fig.update_yaxes(title_text=y)
    return fig


def empty_figure(title: str, message: str) -> go.Figure:
    """A figure that says why there is nothing to draw (instead of a blank chart)."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper",
                       yref="paper", font=dict(size=14))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return styled(fig, title=title, height=300)
