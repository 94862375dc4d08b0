"""One look for every kmviz figure: template, palettes, labels for trace columns.

Nothing model-specific here: a model family's names and colours (for KM,
:mod:`kmviz.km.telemetry`) are passed to the figures as arguments.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go
import plotly.io as pio
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#17becf", "#7f7f7f", "#bcbd22"]
#: Line colours and dash styles for methods drawn over coloured markers: two methods never
#: share both, so curves that coincide stay apart (see :func:`method_line`).
LINE_COLORS = ["#9e9e9e", "#222222", "#9467bd", "#8c564b", "#17becf"]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash"]
#: Colours handed out after :data:`COLORS`, for figures with many parts, in the order that
#: keeps each one farthest (CIE Lab) from those before it: the first 20 colours of a chart
#: differ by a ΔE of 18 or more (in the former order a 20-genre chart gave Action #2ca02c
#: and Mystery #54a24b, two greens 7 apart).
EXTRA_COLORS = ["#637939", "#ff9da6", "#1f3b73", "#e7ba52", "#7b4173", "#b279a2", "#ad494a",
                "#e45756", "#bab0ac", "#5254a3", "#72b7b2", "#8ca252", "#54a24b", "#eeca3b",
                "#6b6ecf", "#9d755d", "#bd9e39", "#843c39", "#4c78a8", "#f58518"]


#: Text sizes in px of every figure: ticks and legends at least 14 (readable from the back of
#: a room); "presentation" multiplies them by :data:`PRESENTATION_SCALE`.
BASE_FONT, TITLE_FONT = 14, 18
PRESENTATION_SCALE = 1.4


def theme_template(scale: float = 1.0) -> go.layout.Template:
    """kmviz's Plotly template (layered over ``plotly_white``): text sizes, a colourway of
    30 distinct colours (a chart's traces repeat no colour before that), axes that make
    room for their labels, and exponents written 1e-4 (never SI prefixes: a relative
    error of 0.0001 must not read "100µ")."""
    size = round(BASE_FONT * scale)
    axis = dict(tickfont=dict(size=size), title=dict(font=dict(size=size)), automargin=True,
                exponentformat="e")
    return go.layout.Template(layout=dict(
        font=dict(size=size),
        title=dict(font=dict(size=round(TITLE_FONT * scale))),
        legend=dict(font=dict(size=size), title=dict(font=dict(size=size))),
        hoverlabel=dict(font=dict(size=size)),
        colorway=[*COLORS, *EXTRA_COLORS],
        xaxis=axis, yaxis=axis,
        coloraxis=dict(colorbar=dict(tickfont=dict(size=size), exponentformat="e")),
    ))


pio.templates["kmviz"] = theme_template()
pio.templates["kmviz_presentation"] = theme_template(PRESENTATION_SCALE)
#: The template every kmviz figure uses (``plotly_white`` with :func:`theme_template`).
TEMPLATE = "plotly_white+kmviz"
PRESENTATION_TEMPLATE = "plotly_white+kmviz_presentation"


#: Tick format of a linear axis of objectives or errors: plain digits, thousands separated,
#: trailing zeros trimmed (25,473; 0.25; 0.0012), never an exponent ("0.2e+7") or an SI
#: prefix ("25.5k", "100µ").
VALUE_TICKFORMAT = ",~r"


def value_axis(log: bool = False) -> dict:
    """Axis settings of an objective, an error or a relative error: on a log axis, powers
    of ten (10⁻⁴); on a linear one, :data:`VALUE_TICKFORMAT`. Pass to ``update_yaxes`` (or
    ``update_xaxes``) of the axis, or merge into its layout dict."""
    if log:
        return dict(type="log", exponentformat="power", showexponent="all")
    return dict(tickformat=VALUE_TICKFORMAT, exponentformat="none")


def _scaled(font, scale: float, floor: int):
    if font is not None and font.size is not None:
        font.size = max(round(font.size * scale), floor)


def themed(fig: go.Figure, *, presentation: bool = False) -> go.Figure:
    """``fig`` (a copy) in kmviz's theme: its template, and every text size it sets
    itself raised to the theme's minimum (then scaled for ``presentation``): annotations,
    trace text, axis ticks, legends, titles."""
    scale = PRESENTATION_SCALE if presentation else 1.0
    floor = round(BASE_FONT * scale)
    fig = go.Figure(fig)
    fig.update_layout(template=PRESENTATION_TEMPLATE if presentation else TEMPLATE)
    layout = fig.layout
    _scaled(layout.font, scale, floor)
    _scaled(layout.legend.font, scale, floor)
    _scaled(layout.title.font, scale, round(TITLE_FONT * scale))
    for ann in layout.annotations or ():
        _scaled(ann.font, scale, floor if ann.font.size is None or ann.font.size >= 10
                else round(ann.font.size * scale))
    for name in layout:
        if name.startswith(("xaxis", "yaxis")) and layout[name] is not None:
            axis = layout[name]
            _scaled(axis.tickfont, scale, floor)
            _scaled(axis.title.font, scale, floor)
            if axis.exponentformat in (None, "B", "SI"):
                axis.exponentformat = "power" if axis.type == "log" else "e"
    if presentation:  # the room for text grows with it: the layouts laid out in pixels
        # (legends placed below the plot in fractions of its height) keep their proportions
        if layout.height is not None:
            layout.height = round(layout.height * scale)
        for side in ("t", "b", "l", "r"):
            if layout.margin[side] is not None:
                layout.margin[side] = round(layout.margin[side] * scale)
    for trace in fig.data:
        # colour bars too: Plotly's default exponent format puts SI prefixes on them
        # ("100µ" for a leverage score of 0.0001)
        marker = getattr(trace, "marker", None)
        bars = [trace.colorbar if "colorbar" in trace and trace["showscale"] is not False
                else None,
                marker.colorbar if marker is not None and "colorbar" in marker
                and marker.showscale else None]
        for bar in bars:
            if bar is not None and bar.exponentformat in (None, "B", "SI"):
                bar.exponentformat = "e"
        textfont = getattr(trace, "textfont", None)
        # labels laid out in pixels to avoid each other (kmviz.viz.labels) keep their size
        placed = isinstance(trace.meta, dict) and trace.meta.get("placed_labels")
        if textfont is not None and textfont.size is not None and presentation and not placed:
            textfont.size = round(textfont.size * scale)
    return fig


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
