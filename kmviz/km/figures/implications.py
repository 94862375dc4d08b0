"""Interpretation views: influence scores (Fig. 8) and the implication graph of the supports.

Edge j -> i means supp(psi_j) ⊆ supp(psi_i): everyone who likes j also likes i.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import plotly.graph_objects as go

from ...viz._theme import color, empty_figure, plain, styled

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
    # Items of equal score share one bar ("name +N tied"): on MovieLens hundreds of items
    # have ς = 1, and one bar each would draw the whole top as bars of one length.
    levels, first, inverse, size = np.unique(-np.round(scores, 12), return_index=True,
                                             return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    groups = []
    for g in range(min(levels.size, max(1, int(top)))):
        members = np.flatnonzero(inverse == g)  # in item order: the first is the stable pick
        groups.append(members)
    labels, custom = [], []
    for members in groups:
        i = members[0]
        more = f" +{members.size - 1} tied" if members.size > 1 else ""
        labels.append(f"{_short(names[i])} [{items[i]}]{more}")
        shown = ", ".join(plain(_short(names[j], 30)) for j in members[:8])
        if members.size > 8:
            shown += f", ... ({members.size:,} items)"
        custom.append([plain(names[i]), int(items[i]), int(members.size), shown])
    x = [float(scores[m[0]]) for m in groups]
    fig = go.Figure(go.Bar(
        x=x, y=labels, orientation="h", marker_color=color(0), name="ςᵢ",
        customdata=np.array(custom, dtype=object),
        hovertemplate=("<b>%{customdata[0]}</b> (index %{customdata[1]})<br>ς = %{x:.3f}"
                       "<br>%{customdata[2]} item(s) with this score: %{customdata[3]}"
                       "<extra></extra>")))
    fig.update_yaxes(autorange="reversed")
    n_items = int(sum(m.size for m in groups))
    title = (f"Normalized influence score ςᵢ (Fig. 8): top {len(groups)} items"
             if n_items == len(groups) else
             f"Normalized influence score ςᵢ (Fig. 8): the top {len(groups)} scores "
             f"({n_items:,} items; tied items share a bar)")
    return styled(fig, title=title, x="normalized influence score ςᵢ", y="item",
                  height=max(360, 22 * len(groups) + 120))


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
    if mx:  # (an empty trace draws no <g class="trace">, which would shift the DOM's order)
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
    labels = [_node_label(G.nodes[n], n) for n in nodes]
    xr, yr = _graph_ranges(xs, ys, labels)
    spots = (_label_spots(nodes, xs, ys, labels, sizes, xr, yr, selected) if show_labels
             else [None] * len(nodes))
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="markers+text",
        text=[t if spot else "" for t, spot in zip(labels, spots)],
        textposition=[spot or "top center" for spot in spots],
        textfont=dict(size=LABEL_FONT), hovertext=hover, meta={"placed_labels": True},
        hovertemplate="%{hovertext}<extra></extra>",
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
    fig.update_xaxes(visible=False, range=list(xr))
    fig.update_yaxes(title_text="support size |supp(ψᵢ)| (number of the D events)", dtick=1,
                     range=list(yr))
    hidden = sum(1 for spot in spots if spot is None) if show_labels else 0
    if hidden:
        fig.add_annotation(text=f"{hidden} of {len(nodes)} labels are left to the hover (they "
                                "would overlap others)", showarrow=False, xref="paper",
                           yref="paper", x=0.0, y=-0.04, xanchor="left", yanchor="top",
                           font=dict(size=14, color="#555555"))
    fig = styled(fig, title=title, height=GRAPH_HEIGHT)
    fig.update_layout(margin=dict(GRAPH_MARGIN))
    return fig


#: The whole-lattice graph's height and margins (pixels) and the plot width its labels are
#: laid out for: the narrowest plot area it gets in the app's main column at a laptop's
#: width (the colour bar takes the rest); a wider window only spreads the labels further.
GRAPH_HEIGHT, GRAPH_MARGIN = 620, dict(l=60, r=20, t=60, b=50)
LABEL_PLOT_WIDTH = 720
LABEL_FONT = 14  # the theme's smallest text; kept in presentation (laid out for it)


def _plot_height() -> float:
    return GRAPH_HEIGHT - GRAPH_MARGIN["t"] - GRAPH_MARGIN["b"]


def _graph_ranges(xs, ys, labels):
    """Axis ranges with room for the widest label at either end and a layer's labels above
    the top layer and below the bottom one."""
    from ...viz.labels import LINE_EM, text_width

    widest = max((text_width(t, LABEL_FONT) for t in labels), default=0.0)
    widest = min(widest, 0.45 * LABEL_PLOT_WIDTH)
    lo, hi = (min(xs), max(xs)) if xs else (-0.5, 0.5)
    span = max(hi - lo, 1e-9)
    pad = span * widest / (2.0 * (LABEL_PLOT_WIDTH - widest)) + 0.02 * span
    ylo, yhi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    layers = max(yhi - ylo, 1.0)
    # a label's height (and a marker) above the top layer, in layers
    ypad = layers * (LINE_EM * LABEL_FONT + 14) / _plot_height() + 0.15
    return (lo - pad, hi + pad), (ylo - ypad, yhi + ypad)


def _to_pixels(xs, ys, xr, yr):
    import numpy as np

    x = (np.asarray(xs, float) - xr[0]) / (xr[1] - xr[0]) * LABEL_PLOT_WIDTH
    y = (np.asarray(ys, float) - yr[0]) / (yr[1] - yr[0]) * _plot_height()
    return x, y


def label_boxes(fig: go.Figure):
    """The pixel boxes of the labels a graph figure prints (its node trace: the one with
    ``customdata``), as laid out for :data:`LABEL_PLOT_WIDTH`: what the tests check."""
    from ...viz.labels import LINE_EM, label_box, text_width

    trace = next(t for t in fig.data if t.customdata is not None and t.text is not None)
    xr, yr = fig.layout.xaxis.range, fig.layout.yaxis.range
    x, y = _to_pixels(trace.x, trace.y, xr, yr)
    sizes = trace.marker.size
    boxes = []
    for k, (text, spot) in enumerate(zip(trace.text, trace.textposition)):
        if text:
            boxes.append(label_box(x[k], y[k], text_width(text, LABEL_FONT),
                                   LINE_EM * LABEL_FONT, sizes[k] / 2 + 1, spot))
    return boxes


def _label_spots(nodes, xs, ys, labels, sizes, xr, yr, selected):
    """Which node labels fit without overlapping (kmviz.viz.labels.place_labels): the
    selected node first, then the groups with more items, then higher layers."""
    from ...viz.labels import Box, place_labels

    x, y = _to_pixels(xs, ys, xr, yr)
    radius = [s / 2 + 1 for s in sizes]
    markers = [Box(x[k] - r, y[k] - r, x[k] + r, y[k] + r) for k, r in enumerate(radius)]
    order = sorted(range(len(nodes)), key=lambda k: (nodes[k] != selected, -sizes[k], -ys[k],
                                                     xs[k]))
    return place_labels(x, y, labels, font_px=LABEL_FONT, radius=radius, order=order,
                        bounds=Box(0.0, 0.0, LABEL_PLOT_WIDTH, _plot_height()), avoid=markers)


# ----------------------------------------------------------------------------- ego graph
#: Most nodes the ego graph draws (best-ranked rows first).
EGO_MAX_NODES = 40


def _fmt(x, spec: str) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    return "–" if x != x else format(x, spec)


def ego_graph_figure(rows, center, *, hops: int = 1, max_nodes: int = EGO_MAX_NODES,
                     title: str | None = None, center_item: int | None = None,
                     center_name: str | None = None) -> go.Figure:
    """The implications around one item: what implies it (left), what it implies (right).

    Parameters
    ----------
    rows : DataFrame
        Implication rows in ranking order with ``antecedent``, ``consequent``,
        ``antecedent_name``, ``consequent_name`` and, when present, ``antecedent_group`` /
        ``consequent_group`` and ``*_group_size`` (nodes are then groups of items liked by
        the same people, labelled "name +k"), ``equivalent``, ``confidence``, ``lift``,
        ``co_support``, ``heldout_confidence``, ``heldout_lift``.
    center : int
        The node of the selected item: its group id when the rows have groups, else its
        item index.
    hops : 1 or 2
        Steps away from the centre (following implications either way).
    max_nodes : int
        Rows are taken in order until this many nodes are drawn.
    center_item, center_name : optional
        The selected item and its name, to name the centre after it (a group is otherwise
        named after the member its rows mention).

    Columns are the signed number of steps from the centre: -1 implies the centre, +1 is
    implied by it, ±2 one step further on the same side.
    """
    title = title or "Implications around the selected item: an arrow A → B means " \
        "everyone who likes A also likes B"
    grouped = "antecedent_group" in rows
    ka, kc = ("antecedent_group", "consequent_group") if grouped else ("antecedent",
                                                                         "consequent")
    eq = rows["equivalent"].to_numpy(bool) if "equivalent" in rows else np.zeros(len(rows),
                                                                                  bool)
    data = rows[~eq]
    info: dict = {}

    def node(key, item, name, size):
        if key not in info:
            info[key] = {"item": int(item), "name": str(name), "size": int(size)}

    side: dict = {center: 0}  # node -> signed steps from the centre
    edges = []
    skipped = set()
    frontier = {center}
    for step in range(1, max(1, int(hops)) + 1):
        nxt = set()
        for _, r in data.iterrows():
            a, c = r[ka], r[kc]
            if a not in frontier and c not in frontier:
                continue
            here, other, sign = (a, c, 1) if a in frontier else (c, a, -1)
            if other not in side:
                if len(side) >= max_nodes:
                    skipped.add(other)
                    continue
                side[other] = sign if step == 1 else int(np.sign(side[here])) * step
                nxt.add(other)
            edges.append(r)
        frontier = nxt
        if not frontier:
            break
    if len(side) <= 1:
        return empty_figure(title, "No implication around this item passes the filters.")
    fig = go.Figure()
    seen = set()
    uniq = []
    for r in edges:
        key = (r[ka], r[kc])
        if key in seen or r[ka] not in side or r[kc] not in side:
            continue
        seen.add(key)
        uniq.append(r)
        node(r[ka], r["antecedent"], r["antecedent_name"],
             r.get("antecedent_group_size", 1) if grouped else 1)
        node(r[kc], r["consequent"], r["consequent_name"],
             r.get("consequent_group_size", 1) if grouped else 1)
    if center in info and center_name is not None:
        info[center]["name"] = str(center_name)
        if center_item is not None:
            info[center]["item"] = int(center_item)
    columns: dict = {}
    for key, x in side.items():
        if key in info:
            columns.setdefault(x, []).append(key)
    pos = {}
    for x, keys in columns.items():
        keys.sort(key=lambda k: info[k]["name"])
        n = len(keys)
        for j, k in enumerate(keys):  # two steps out sit further away: room for labels
            pos[k] = (float(np.sign(x)) * (1.0 + 1.6 * (abs(x) - 1)) if x else 0.0,
                      (n - 1) / 2.0 - j)

    def label(k):
        d = info[k]
        more = f" +{d['size'] - 1}" if d["size"] > 1 else ""
        return _short(d["name"], 28) + more

    mx, my, mtext = [], [], []
    for r in uniq:
        (x0, y0), (x1, y1) = pos[r[ka]], pos[r[kc]]
        hot = center in (r[ka], r[kc])
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x",
                           ayref="y", showarrow=True, arrowhead=2, arrowsize=1.2,
                           arrowwidth=2 if hot else 1, standoff=10, startstandoff=8,
                           arrowcolor="#444444" if hot else "#b0b0b0", text="")
        mx.append((x0 + x1) / 2)
        my.append((y0 + y1) / 2)
        held = ""
        if "heldout_confidence" in r and r.get("heldout_n", 0):
            held = (f"<br>held-out: {int(r['heldout_co_support'])} of {int(r['heldout_n'])} "
                    f"like it, lift {_fmt(r['heldout_lift'], '.2f')}")
        evidence = (
            f"training: {int(r.get('co_support', 0))} of {int(r.get('n_known', 0))} like it "
            f"(confidence {_fmt(r.get('confidence'), '.0%')}), lift "
            f"{_fmt(r.get('lift'), '.2f')}" if int(r.get("n_known", 0) or 0) else
            "training: no fan of the first rated the second (nothing to check)")
        mtext.append(
            f"Everyone who likes <b>{plain(r['antecedent_name'])}</b><br>also likes "
            f"<b>{plain(r['consequent_name'])}</b> (model)<br>{evidence}{held}")
    fig.add_trace(go.Scatter(x=mx, y=my, mode="markers", name="implication (hover)",
                             marker=dict(size=8, color="rgba(0,0,0,0)"), text=mtext,
                             hovertemplate="%{text}<extra></extra>", showlegend=False))
    keys = list(pos)
    roles = {0: ("#000000", "selected"), -1: ("#ff7f0e", "implies the selection"),
             1: ("#2ca02c", "implied by the selection")}

    def role(k):
        return roles.get(side[k], ("#9e9e9e", "two steps away"))

    hover = [f"<b>{plain(info[k]['name'])}</b>"
             + (f"<br>+{info[k]['size'] - 1} item(s) liked by the same people"
                if info[k]["size"] > 1 else "") + f"<br>{role(k)[1]}" for k in keys]
    fig.add_trace(go.Scatter(
        x=[pos[k][0] for k in keys], y=[pos[k][1] for k in keys], mode="markers",
        text=[label(k) for k in keys], hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        customdata=[info[k]["item"] for k in keys], name="item groups (same support)",
        showlegend=False,
        marker=dict(size=[18 if k == center else 12 for k in keys],
                    color=[role(k)[0] for k in keys], line=dict(width=1, color="white"))))
    for k in keys:  # labels on a light background, beside their dot, away from the centre
        x = pos[k][0]
        fig.add_annotation(x=x, y=pos[k][1], xref="x", yref="y", text=label(k),
                           showarrow=False, font=dict(size=11 if k != center else 13),
                           bgcolor="rgba(255,255,255,0.85)",
                           xanchor="right" if x < 0 else "left" if x > 0 else "center",
                           yanchor="middle" if x else "bottom",
                           xshift=-10 if x < 0 else 10 if x > 0 else 0,
                           yshift=0 if x else 12)
    for colour, name in [roles[0], roles[-1], roles[1]] + (
            [("#9e9e9e", "two steps away")] if any(abs(v) > 1 for v in side.values())
            else []):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name,
                                 marker=dict(size=10, color=colour)))
    if skipped:
        fig.add_annotation(text=f"{len(skipped):,} more not drawn: raise the filters or "
                                f"lower top k", xref="paper", yref="paper", x=0, y=-0.02,
                           showarrow=False, xanchor="left", yanchor="top",
                           font=dict(size=11, color="#666666"))
    span = max(abs(x) for x, _ in pos.values()) or 1.0
    fig.update_xaxes(visible=False, range=[-span - 1.6, span + 1.6])
    fig.update_yaxes(visible=False)
    height = max(360, 30 * max(len(v) for v in columns.values()) + 160)
    return styled(fig, title=title, height=min(height, 1400))


# ----------------------------------------------------------------------------- stability
def stability_figure(held, *, name: str = "") -> go.Figure:
    """The refits in which one implication held: one square per refit (filled = held)."""
    held = np.asarray(held, dtype=bool).ravel()
    title = "Refits in which the implication held"
    if held.size == 0:
        return empty_figure(title, "No refit yet.")
    k = np.arange(1, held.size + 1)
    fig = go.Figure()
    for mask, colour, label in ((held, color(2), "held"), (~held, "#d0d0d0", "did not hold")):
        fig.add_trace(go.Scatter(
            x=k[mask], y=np.zeros(int(mask.sum())), mode="markers", name=label,
            marker=dict(symbol="square", size=18, color=colour),
            hovertemplate=f"refit %{{x}}: {label}<extra></extra>"))
    fig.update_yaxes(visible=False, range=[-1, 1])
    fig.update_xaxes(dtick=1 if held.size <= 30 else None)
    sub = f" ({int(held.sum())} of {held.size})"
    return styled(fig, title=(_short(name, 70) + ": " if name else "") + title + sub,
                  x="refit", y="", height=200)


# ----------------------------------------------------------------------------- scatter
#: Most rules the support x confidence scatter draws (the best-ranked first).
SCATTER_MAX_POINTS = 5000


def relation_scatter_figure(table, *, highlight=(), max_points: int = SCATTER_MAX_POINTS
                            ) -> go.Figure:
    """Support x confidence of the rules, shaded by lift (arulesViz's default view).

    ``table`` is a relation table (``co_support``: users who like both sides, the rule's
    support in arules' terms; ``confidence``, ``lift``, ``antecedent_name``,
    ``consequent_name``); each
    point carries its row's index as ``customdata``, so a box or lasso selection names the
    rows. ``highlight`` (row index values) are drawn ringed on top (the rows selected in
    the table). At most ``max_points`` rows are drawn, the first ones of the table's order.
    """
    title = "Support × confidence of the rules, shaded by lift"
    if table is None or len(table) == 0:
        return empty_figure(title, "No rule passes the filters.")
    shown = table.head(int(max_points))
    x = shown["co_support"].to_numpy(dtype=float)
    y = shown["confidence"].to_numpy(dtype=float)
    lift = shown["lift"].to_numpy(dtype=float) if "lift" in shown else np.full(x.size, np.nan)
    keys = shown.index.to_numpy()
    names = [f"{_short(a, 50)} ⇒ {_short(c, 50)}" for a, c in
             zip(shown["antecedent_name"], shown["consequent_name"])]
    trace = go.Scattergl if len(shown) > 2000 else go.Scatter
    fig = go.Figure(trace(
        x=x, y=y, mode="markers", name="rules", customdata=keys, text=names,
        marker=dict(size=8, color=np.nan_to_num(lift, nan=0.0), colorscale="Viridis",
                    showscale=True, colorbar=dict(title="lift"), opacity=0.8,
                    line=dict(width=0)),
        hovertemplate=("%{text}<br>co-support %{x:,} users · confidence %{y:.2f}"
                       "<br>lift %{marker.color:.2f}<extra></extra>")))
    ring = np.isin(keys, np.asarray(list(highlight), dtype=keys.dtype)) if len(highlight) \
        else np.zeros(keys.size, bool)
    if ring.any():
        fig.add_trace(go.Scatter(
            x=x[ring], y=y[ring], mode="markers", name="selected in the table",
            customdata=keys[ring], hoverinfo="skip",
            marker=dict(size=16, color="rgba(0,0,0,0)", line=dict(width=2.5,
                                                                  color="#d62728"))))
    if len(table) > len(shown):
        title += f" (the first {len(shown):,} of {len(table):,} rows)"
    fig.update_layout(dragmode="select", showlegend=bool(ring.any()))
    fig.update_yaxes(range=[-0.03, 1.03])
    return styled(fig, title=title, x="co-support (users who like both sides)",
                  y="confidence", height=420)
