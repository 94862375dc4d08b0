"""Labels that never overlap: the placement rule against a brute-force check of every pair
of boxes, on the whole-lattice implication graph's own figure data."""

import itertools

import networkx as nx
import numpy as np

from kmviz.km.figures import implication_graph_figure
from kmviz.km.figures.implications import LABEL_PLOT_WIDTH, label_boxes
from kmviz.viz.labels import Box, boxes_overlap, label_box, place_labels, text_width


def _crowded(n_per_layer=25, layers=3):
    """Layers of many nodes with long names (MovieLens titles are up to 30 characters)."""
    G = nx.DiGraph()
    k = 0
    for s in range(1, layers + 1):
        for j in range(n_per_layer):
            G.add_node(k, members=[k], names=[f"A long film title number {k:03d}"],
                       support=tuple(range(s)), support_size=s, influence=j / n_per_layer)
            k += 1
    for a in range(n_per_layer):
        G.add_edge(a, n_per_layer + a)
    return G


def _pairs_brute(boxes):
    def inter(a, b):
        return min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0)
    return [(i, j) for i, j in itertools.combinations(range(len(boxes)), 2)
            if inter(boxes[i], boxes[j])]


def test_place_labels_leaves_no_two_boxes_overlapping():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 500, 80), rng.uniform(0, 300, 80)
    texts = [f"label {k}" * (1 + k % 3) for k in range(80)]
    spots = place_labels(x, y, texts, font_px=12, radius=4, bounds=Box(0, 0, 500, 300))
    placed = [label_box(x[k], y[k], text_width(texts[k], 12), 12 * 1.35, 4, s)
              for k, s in enumerate(spots) if s]
    assert placed and _pairs_brute(placed) == [] and boxes_overlap(placed) == []
    assert all(b.x0 >= 0 and b.x1 <= 500 and b.y0 >= 0 and b.y1 <= 300 for b in placed)
    # an isolated point always gets its label, at the first spot tried
    alone = place_labels([250.0], [150.0], ["alone"], font_px=12)
    assert alone == ["top center"]


def test_the_crowded_lattice_prints_no_overlapping_labels_and_says_how_many_are_hidden():
    G = _crowded()
    fig = implication_graph_figure(G, selected=3)
    boxes = label_boxes(fig)
    assert boxes and _pairs_brute(boxes) == []
    assert all(b.x0 >= 0 and b.x1 <= LABEL_PLOT_WIDTH for b in boxes)
    nodes = next(t for t in fig.data if t.name == "item groups (same support)")
    shown = [t for t in nodes.text if t]
    assert len(shown) < G.number_of_nodes()  # 75 long names cannot all fit
    assert nodes.text[list(G.nodes()).index(3)]  # the selected node keeps its label
    hidden = G.number_of_nodes() - len(shown)
    notes = [a.text for a in fig.layout.annotations if "left to the hover" in (a.text or "")]
    assert notes == [f"{hidden} of {G.number_of_nodes()} labels are left to the hover (they "
                     "would overlap others)"]
    # every node still names its items in its hover text
    assert all("A long film title" in h for h in nodes.hovertext)


def test_a_small_lattice_prints_every_label():
    G = _crowded(n_per_layer=3, layers=2)
    fig = implication_graph_figure(G)
    nodes = next(t for t in fig.data if t.name == "item groups (same support)")
    assert all(nodes.text) and _pairs_brute(label_boxes(fig)) == []
    assert not [a for a in fig.layout.annotations if "left to the hover" in (a.text or "")]


def test_presentation_keeps_the_placed_labels_size():
    from kmviz.viz._theme import themed

    fig = implication_graph_figure(_crowded())
    big = themed(fig, presentation=True)
    nodes = next(t for t in big.data if t.name == "item groups (same support)")
    assert nodes.textfont.size == 14  # laid out for 14 px: scaling would make them overlap
    assert _pairs_brute(label_boxes(big)) == []
