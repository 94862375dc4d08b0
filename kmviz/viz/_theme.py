"""One look for every kmviz figure: template, palettes, labels for trace columns.

Nothing model-specific here: a model family's names and colours (for KM,
:mod:`kmviz.km.telemetry`) are passed to the figures as arguments.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

TEMPLATE = "plotly_white"
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#17becf", "#7f7f7f", "#bcbd22"]
#: Line colours and dash styles for methods drawn over coloured markers: two methods never
#: share both, so curves that coincide stay apart (see :func:`method_line`).
LINE_COLORS = ["#9e9e9e", "#222222", "#9467bd", "#8c564b", "#17becf"]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash"]
#: Colours handed out after :data:`COLORS`, for figures with many parts.
EXTRA_COLORS = ["#54a24b", "#b279a2", "#eeca3b", "#9d755d", "#ff9da6", "#1f3b73", "#bab0ac",
                "#4c78a8", "#72b7b2", "#f58518", "#e45756", "#637939", "#ad494a", "#6b6ecf",
                "#e7ba52", "#843c39", "#5254a3", "#8ca252", "#bd9e39", "#7b4173"]


def plain(text) -> str:
    """User text (a run label, an item title, a file name) for a Plotly figure, shown as typed.

    Plotly reads a subset of HTML in every label, title, legend entry and hover text (``<a
    href>``, ``<b>``, ``<br>``, entities), ``%{...}`` fields in hover templates and ``$...$``
    as TeX: ``<``, ``>`` and ``&`` become entities, ``%`` and ``$`` numeric ones (which Plotly
    shows as the characters, after filling in the template)."""
    return html.escape(str(text), quote=False).replace("%", "&#37;").replace("$", "&#36;")


def plural(noun: str) -> str:
    """The plural of a dataset's noun for its rows or columns ("user" -> "users",
    "country" -> "countries", "tract" -> "tracts")."""
    noun = str(noun)
    if noun.endswith("y") and len(noun) > 1 and noun[-2].lower() not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def column_label(column: str) -> str:
    """A readable name for a trace column: ``t_build_s`` -> "build", ``n_phase_1a`` ->
    "phase 1a", ``train_rmse`` -> "train rmse"."""
    name = str(column)
    if name.startswith("t_") and name.endswith("_s") and len(name) > 4:
        name = name[2:-2]
    elif name.startswith("n_") and len(name) > 2:
        name = name[2:]
    return name.replace("_", " ").strip()


def label_of(column: str, labels=None) -> str:
    """``labels[column]`` when given (a string, or a tuple whose first item is the name),
    else :func:`column_label`."""
    if labels and column in labels:
        value = labels[column]
        return value[0] if isinstance(value, (tuple, list)) else str(value)
    return column_label(column)


def distinct_colors(keys, given=None, *, avoid=()) -> dict:
    """One colour per key, no two alike: ``given[key]`` where set (unless an earlier key took
    it), then the first palette colours neither used nor in ``avoid`` (:data:`COLORS`, then
    :data:`EXTRA_COLORS`, then generated hues)."""
    given = given or {}
    out, used = {}, set()
    for k in keys:
        c = given.get(k)
        if c is not None and c.lower() not in used:
            out[k] = c
            used.add(c.lower())
    used |= {c.lower() for c in avoid}
    free = (c for c in [*COLORS, *EXTRA_COLORS] if c.lower() not in used)
    n_generated = 0
    for k in keys:
        if k in out:
            continue
        c = next(free, None)
        while c is None or c.lower() in used:
            # golden-angle hues: distinct for any number of keys
            c = f"hsl({(n_generated * 137.508) % 360:.1f}, 60%, 45%)"
            n_generated += 1
        out[k] = c
        used.add(c.lower())
    return out


def method_line(k: int, n: int) -> dict:
    """Line style of method ``k`` of ``n``: its own colour and dash, and a width that shrinks
    with k so that a later curve drawn over an earlier identical one leaves it visible."""
    width = 4.0 - 2.5 * k / max(n - 1, 1) if n > 1 else 2.5
    return dict(color=LINE_COLORS[k % len(LINE_COLORS)], dash=DASHES[k % len(DASHES)],
                width=round(width, 2))


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
