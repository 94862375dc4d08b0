"""Charts that project: every figure drawn through kmviz.viz._theme.themed has ticks and
legends of 14 px or more, no SI prefixes, colours that do not repeat, larger text when
presented."""

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from kmviz.similarity.figures import embedding_figure
from kmviz.viz import convergence_figure
from kmviz.viz._theme import BASE_FONT, PRESENTATION_SCALE, TEMPLATE, themed
from kmviz.trace import Trace


def _sizes(fig) -> dict:
    """Effective text sizes of a themed figure, as Plotly resolves them (explicit value,
    else the template's)."""
    layout, tmpl = fig.layout, pio.templates[TEMPLATE.split("+")[-1]].layout
    if fig.layout.template.layout.font.size != tmpl.font.size:
        tmpl = fig.layout.template.layout
    def pick(explicit, default):
        return explicit if explicit is not None else default
    return {"font": pick(layout.font.size, tmpl.font.size),
            "legend": pick(layout.legend.font.size, tmpl.legend.font.size),
            "xtick": pick(layout.xaxis.tickfont.size, tmpl.xaxis.tickfont.size),
            "ytick": pick(layout.yaxis.tickfont.size, tmpl.yaxis.tickfont.size)}


def _small_figure():
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[1e-4, 2e-4, 3e-4], name="relative error"))
    fig.update_layout(template="plotly_white", legend=dict(font=dict(size=10)),
                      xaxis=dict(tickfont=dict(size=11)))
    fig.add_annotation(text="note", font=dict(size=12), x=1, y=1e-4)
    return fig


def test_text_is_at_least_14_px_and_larger_when_presented():
    fig = themed(_small_figure())
    sizes = _sizes(fig)
    assert min(sizes.values()) >= BASE_FONT, sizes
    assert fig.layout.annotations[0].font.size >= BASE_FONT
    big = themed(_small_figure(), presentation=True)
    big_sizes = _sizes(big)
    assert all(big_sizes[k] >= round(sizes[k] * PRESENTATION_SCALE) - 1 for k in sizes), \
        (sizes, big_sizes)
    # the original figure is left as it was
    assert _small_figure().layout.legend.font.size == 10


def test_no_si_prefixes_on_any_axis():
    fig = themed(_small_figure())
    assert fig.layout.yaxis.exponentformat not in (None, "B", "SI")
    assert fig.layout.template.layout.xaxis.exponentformat == "e"
    log = go.Figure(go.Scatter(x=[1, 2], y=[1e-6, 1e-2]))
    log.update_yaxes(type="log")
    assert themed(log).layout.yaxis.exponentformat == "power"


def test_a_chart_of_many_groups_repeats_no_colour():
    rng = np.random.default_rng(0)
    genres = [f"genre {g}" for g in range(18)]
    labels = np.repeat(genres, 5)
    fig = themed(embedding_figure(rng.normal(size=(labels.size, 2)), labels,
                                  [str(i) for i in range(labels.size)]))
    colorway = list(fig.layout.template.layout.colorway)
    explicit = [t.marker.color for t in fig.data if t.marker.color is not None]
    # traces without a colour take the colourway in order: 18 groups, 18 colours
    assigned = explicit + colorway[:len(fig.data) - len(explicit)]
    assert len(fig.data) == 18 and len({str(c).lower() for c in assigned}) == 18
    assert len({c.lower() for c in colorway}) == len(colorway) >= 30


def test_figures_built_by_kmviz_use_the_template():
    trace = Trace(solver="test")
    for i in range(3):
        trace.record(iter=i + 1, objective=1.0 / (i + 1), time_s=0.1 * i)
    fig = themed(convergence_figure({"run": trace}))
    assert fig.layout.template.layout.font.size == BASE_FONT


def test_presentation_gives_pixel_layouts_room_in_proportion():
    from kmviz.viz import dual_gap_figure
    import pandas as pd

    frame = pd.DataFrame({"iteration": [0, 1, 2], "gap": [1.0, 1e-3, 1e-6],
                          "phase": ["1a", "1b", "2b"], "n_evd": [1, 2, 3]})
    fig = dual_gap_figure({"a": frame, "b": frame}, title="t")
    big = themed(fig, presentation=True)
    assert big.layout.height == round(fig.layout.height * PRESENTATION_SCALE)
    assert big.layout.margin.b == round(fig.layout.margin.b * PRESENTATION_SCALE)
    # the legends' offsets are fractions of the plot: the same, so they scale with it
    assert big.layout.legend.y == fig.layout.legend.y
