"""Interpretation views: influence scores (Fig. 8) and the implication graph of the supports.

Edge j -> i means supp(psi_j) ⊆ supp(psi_i): everyone who likes j also likes i.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import plotly.graph_objects as go

from ._theme import color, empty_figure, plain, styled

MAX_ARROWS = 300  # beyond this many edges, draw plain lines (annotations get slow)


def _short(text: str, n: int = 40) -> str:
    """An item name cut to ``n`` characters, as plain text for the figure (:func:`plain`)."""
    text = str(text)
    return plain(text if len(text) <= n else text[: n - 1] + "…")


def influence_figure(scores, names=None, *, kind: str = "bar", top: int = 30,
                     items=None) -> go.Figure:
    """Normalized influence scores ςᵢ of (21): sorted bars of the top items, or a histogram.

    ``items`` restricts the view to these item indices (labels keep the original index);
    by default every item is shown.
    """
    scores = np.asarray(scores, dtype=float)
    names = [f"item {i}" for i in range(scores.size)] if names is None else list(names)
    if items is not None:
        items = np.asarray(items, dtype=np.int64)
        names = [names[i] for i in items]
        scores = scores[items]
    else:
        items = np.arange(scores.size)
    if scores.size == 0:
        return empty_figure("Normalized influence score ςᵢ (Fig. 8)", "No items to show.")
    if kind == "histogram":
        fig = go.Figure(go.Histogram(
            x=scores, nbinsx=min(40, max(5, scores.size // 3)), marker_color=color(0),
            name="items", hovertemplate="ς in %{x}: %{y} items<extra></extra>"))
        return styled(fig, title="Distribution of the normalized influence score ςᵢ (Fig. 8)",
                      x="normalized influence score ςᵢ (share of items whose support lies "
                        "inside item i's)", y="number of items")
    order = np.argsort(-scores, kind="stable")[: max(1, int(top))]
    labels = [f"{_short(names[i])} [{items[i]}]" for i in order]
    fig = go.Figure(go.Bar(
        x=scores[order], y=labels, orientation="h", marker_color=color(0), name="ςᵢ",
        customdata=np.array([[plain(names[i]), int(items[i])] for i in order], dtype=object),
        hovertemplate=("<b>%{customdata[0]}</b> (index %{customdata[1]})<br>ς = %{x:.3f}"
                       "<extra></extra>")))
    fig.update_yaxes(autorange="reversed")
    return styled(fig, title=f"Normalized influence score ςᵢ (Fig. 8): top {len(order)} items",
                  x="normalized influence score ςᵢ", y="item",
                  height=max(360, 22 * len(order) + 120))


def _attr(data: dict, *names, default=None):
    for n in names:
        if n in data:
            return data[n]
    return default


def filter_graph(G: nx.DiGraph, *, min_influence: float = 0.0, min_support: int = 0,
                 max_support: int | None = None) -> nx.DiGraph:
    """The subgraph of nodes whose influence and support size are in the given ranges."""
    keep = []
    for n, d in G.nodes(data=True):
        s = int(_attr(d, "support_size", "size", default=len(_attr(d, "support", default=()))))
        infl = float(_attr(d, "influence", default=0.0))
        if infl >= min_influence and s >= min_support and (max_support is None or s <= max_support):
            keep.append(n)
    return G.subgraph(keep).copy()


def graph_layout(G: nx.DiGraph) -> dict:
    """Layers by support size (bigger supports higher up), evenly spread inside a layer."""
    layers: dict[int, list] = {}
    for n, d in G.nodes(data=True):
        s = int(_attr(d, "support_size", "size", default=len(_attr(d, "support", default=()))))
        layers.setdefault(s, []).append(n)
    pos = {}
    for s, nodes in layers.items():
        nodes.sort(key=lambda n: (-float(_attr(G.nodes[n], "influence", default=0.0)), str(n)))
        k = len(nodes)
        for j, n in enumerate(nodes):
            pos[n] = ((j - (k - 1) / 2.0) / max(k, 1), float(s))
    return pos


def _node_label(d: dict, n) -> str:
    names = _attr(d, "names", default=None) or [str(n)]
    names = list(names)
    head = _short(names[0], 30)
    return head if len(names) == 1 else f"{head} +{len(names) - 1}"


def implication_graph_figure(G: nx.DiGraph, *, selected=None, reduce: bool = True,
                             show_labels: bool = True) -> go.Figure:
    """Interactive implication graph: nodes are groups of items with the same support.

    Parameters
    ----------
    G : networkx.DiGraph
        From :func:`kmviz.km.interpret.implication_graph`; node attributes ``names``,
        ``members``, ``support``, ``support_size``, ``influence``.
    selected : node, optional
        Highlight this node, what it implies (descendants, green) and what implies it
        (ancestors, orange).
    reduce : bool, default=True
        Draw only direct implications (the transitive reduction); the others follow.
    """
    title = "Implication graph: an arrow A → B means everyone who likes A also likes B"
    if G.number_of_nodes() == 0:
        return empty_figure(title, "No items match the filter.")
    H = nx.transitive_reduction(G) if reduce and nx.is_directed_acyclic_graph(G) else G
    pos = graph_layout(G)
    implied = nx.descendants(G, selected) if selected in G else set()
    implying = nx.ancestors(G, selected) if selected in G else set()

    fig = go.Figure()
    ex, ey, mx, my, mtext = [], [], [], [], []
    for j, i in H.edges():
        (x0, y0), (x1, y1) = pos[j], pos[i]
        ex += [x0, x1, None]
        ey += [y0, y1, None]
        mx.append((x0 + x1) / 2)
        my.append((y0 + y1) / 2)
        mtext.append(f"Everyone who likes <b>{_node_label(G.nodes[j], j)}</b><br>"
                     f"also likes <b>{_node_label(G.nodes[i], i)}</b>")
    arrows = H.number_of_edges() <= MAX_ARROWS
    if not arrows:
        fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", name="implication",
                                 line=dict(color="#aaaaaa", width=1), hoverinfo="skip"))
    else:
        for j, i in H.edges():
            (x0, y0), (x1, y1) = pos[j], pos[i]
            hot = selected is not None and (j == selected or i == selected)
            fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x",
                               ayref="y", showarrow=True, arrowhead=2, arrowsize=1.2,
                               arrowwidth=2 if hot else 1, standoff=9, startstandoff=7,
                               arrowcolor="#444444" if hot else "#b0b0b0", text="")
    fig.add_trace(go.Scatter(x=mx, y=my, mode="markers", name="implication (hover)",
                             marker=dict(size=6, color="rgba(0,0,0,0)"), text=mtext,
                             hovertemplate="%{text}<extra></extra>", showlegend=False))

    nodes = list(G.nodes())
    xs = [pos[n][0] for n in nodes]
    ys = [pos[n][1] for n in nodes]
    infl = [float(_attr(G.nodes[n], "influence", default=0.0)) for n in nodes]
    hover = []
    for n in nodes:
        d = G.nodes[n]
        names = list(_attr(d, "names", default=[str(n)]))
        support = list(_attr(d, "support", default=[]))
        listed = "<br>".join(_short(x, 60) for x in names[:12])
        more = f"<br>… and {len(names) - 12} more" if len(names) > 12 else ""
        hover.append(
            f"{listed}{more}<br><br>support {{{', '.join(str(int(s)) for s in support)}}} "
            f"(size {len(support)})<br>influence ς = {float(_attr(d, 'influence', default=0)):.3f}"
            f"<br>implies {G.out_degree(n)} group(s), implied by {G.in_degree(n)}")
    base, per = (10, 4) if len(nodes) <= 60 else (6, 1.5)  # smaller dots in crowded graphs
    sizes = [base + per * min(len(list(_attr(G.nodes[n], "members", default=[n]))), 8)
             for n in nodes]
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="markers+text" if show_labels and len(nodes) <= 60 else "markers",
        text=[_node_label(G.nodes[n], n) for n in nodes], textposition="top center",
        textfont=dict(size=10), hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
        # the first member item of each node, so a click on a node names an item
        customdata=[int(list(_attr(G.nodes[n], "members", default=[n]))[0]) for n in nodes],
        name="item groups (same support)",
        marker=dict(size=sizes, color=infl, colorscale="Viridis", cmin=0, cmax=1,
                    showscale=True, colorbar=dict(title="ς", thickness=12),
                    line=dict(width=1, color="white"))))
    for group, colour, label in ((implying, "#ff7f0e", "implies the selection"),
                                 (implied, "#2ca02c", "implied by the selection"),
                                 ({selected} if selected in G else set(), "#000000",
                                  "selected")):
        if not group:
            continue
        fig.add_trace(go.Scatter(
            x=[pos[n][0] for n in group], y=[pos[n][1] for n in group], mode="markers",
            name=label, hoverinfo="skip",
            marker=dict(size=22, color="rgba(0,0,0,0)", line=dict(width=3, color=colour))))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(title_text="support size |supp(ψᵢ)| (number of the D events)", dtick=1)
    return styled(fig, title=title, height=620)
