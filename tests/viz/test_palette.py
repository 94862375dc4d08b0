"""The colourway: no colour repeats within 30 traces, and the first 20 (a chart of MovieLens's
genres) are far apart in CIE Lab, so no two classes read as the same colour."""

import itertools

import numpy as np

from kmviz.viz._theme import COLORS, EXTRA_COLORS, theme_template


def _lab(hex_colour):
    h = hex_colour.lstrip("#")
    rgb = np.array([int(h[i:i + 2], 16) for i in (0, 2, 4)]) / 255.0
    rgb = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                  [0.0193, 0.1192, 0.9505]])
    xyz = m @ rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_the_first_twenty_colours_are_far_apart_and_none_repeats():
    way = list(theme_template().layout.colorway)
    assert way == [*COLORS, *EXTRA_COLORS]
    assert len({c.lower() for c in way}) == len(way) == 30
    lab = [_lab(c) for c in way[:20]]
    closest = min(np.linalg.norm(a - b) for a, b in itertools.combinations(lab, 2))
    assert closest >= 15.0, closest


def test_colour_bars_get_exponents_not_si_prefixes():
    import plotly.graph_objects as go

    from kmviz.viz._theme import themed

    fig = themed(go.Figure([
        go.Heatmap(z=[[1e-4, 2e-4]]),
        go.Scatter(x=[1, 2], y=[1, 2], mode="markers",
                   marker=dict(color=[1e-4, 2e-4], showscale=True)),
        go.Bar(x=[1], y=[2])]))
    assert fig.data[0].colorbar.exponentformat == "e"
    assert fig.data[1].marker.colorbar.exponentformat == "e"
    assert fig.layout.template.layout.coloraxis.colorbar.exponentformat == "e"
    # a trace without a colour bar gets none
    assert "colorbar" not in fig.data[2].marker.to_plotly_json()
