"""User text in figures stays text: Plotly reads HTML tags (<a href>, <b>, <br>), entities,
``%{...}`` hover-template fields and $...$ TeX in labels, so names are escaped where they enter
a figure (issue 13)."""

import json

import networkx as nx
import numpy as np
import pandas as pd
import plotly.io as pio

from kmviz.trace import Trace
from kmviz.km.figures import implication_graph_figure, influence_figure
from kmviz.viz import convergence_figure, dual_gap_figure
from kmviz.viz._theme import plain

EVIL = '<a href="http://z">y</a> <b>x</b> %{x} &amp; $\\alpha$'


def _strings(fig) -> str:
    """Every string of the figure as its JSON (what the browser's plotly.js receives)."""
    return json.dumps(json.loads(pio.to_json(fig)), ensure_ascii=False)


def _assert_inert(fig):
    text = _strings(fig)
    assert "<a " not in text and "http://z\\\">" not in text and "<b>x" not in text
    assert "%{x} " not in text  # the user's %{x} is not a template field ...
    assert "$\\\\alpha$" not in text  # ... nor TeX
    return text


def test_plain_escapes_what_plotly_would_interpret():
    assert plain("a < b & c > d") == "a &lt; b &amp; c &gt; d"
    assert plain("50% of %{y}") == "50&#37; of &#37;{y}"
    assert plain("$x$") == "&#36;x&#36;"
    assert plain("Amélie (2001)") == "Amélie (2001)"  # ordinary titles are unchanged


def test_run_labels_name_the_convergence_legend_and_hover_as_text():
    t = Trace(solver="km.fast")
    t.record(objective=1.0, train_nrmse=0.3)
    t.record(objective=0.5, train_nrmse=0.2)
    fig = convergence_figure({EVIL: t, "plain run": t})
    text = _assert_inert(fig)
    lines = [tr for tr in fig.data if tr.showlegend]
    assert [tr.name for tr in lines] == [plain(EVIL), "plain run"]  # the legend: run labels
    assert lines[0].hovertemplate.startswith(f"<b>{plain(EVIL)}</b><br>iteration %{{x}}")
    assert "plain run" in text


def test_item_names_in_the_dual_gap_subtitle_stay_text():
    df = pd.DataFrame({"iteration": [0, 1], "gap": [1.0, 0.1], "phase": ["I-A", "II-B"]})
    fig = dual_gap_figure({"enhanced": df}, title="Fig. 1", subtitle=f"item {EVIL!r}")
    _assert_inert(fig)
    assert fig.layout.title.text.startswith("Fig. 1<br><sup>item ")  # its own markup kept


def test_item_names_in_the_influence_bars_and_the_implication_graph_stay_text():
    fig = influence_figure(np.array([0.5, 1.0]), [EVIL, "Heat"])
    _assert_inert(fig)
    assert list(fig.data[0].y) == ["Heat [1]", f"{plain(EVIL[:39] + '…')} [0]"]
    G = nx.DiGraph()
    G.add_node(0, members=[0], names=[EVIL], support=(1,), support_size=1, influence=0.5)
    G.add_node(1, members=[1], names=["Heat"], support=(1, 2), support_size=2, influence=1.0)
    G.add_edge(0, 1)
    fig = implication_graph_figure(G, selected=0)
    text = _assert_inert(fig)
    assert "Everyone who likes <b>&lt;a href=" in text  # the figure's own <b> stays markup
