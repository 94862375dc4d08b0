"""Streamlit glue of the KM Implications page (``app_pages/km_implications.py``): one
function per block of the page (what "liked" means, the filtered table with its stability,
the hubs, the graph around an item, the association rules, the planted truth and the
paper's Table VI). The computations are in :mod:`kmviz.km.analysis`, :mod:`kmviz.km.mining`,
:mod:`kmviz.km.stability` and :mod:`kmviz.rules`; the cached calls in :mod:`.km`."""

from __future__ import annotations

import numpy as np
import streamlit as st

from kmviz import rules as pair_rules
from kmviz.km import analysis as an
from kmviz.km import mining
from kmviz.km import relation_view as rv
from kmviz.km.figures import ego_graph_figure, implication_graph_figure, influence_figure
from kmviz.km.teaching import graph_item

from ..errors import user_errors
from ..state import StateKeys
from ..text import md_escape, pieces_markdown
from . import km
from .km_relation_table import relation_table

#: The columns of the association-rule tabs, in order.
RULE_COLUMNS = ["rank", "antecedent_name", "consequent_name", "co_support", "confidence",
                "lift", "heldout_confidence", "heldout_lift", "model_confidence",
                "outside_events", "why", "antecedent", "consequent"]


def column_formats() -> dict:
    """The column configuration of the page's tables."""
    fmt = {c: st.column_config.NumberColumn(format="%.2f") for c in
           ("confidence", "confidence_lo", "confidence_lower", "classic_confidence",
            "base_rate", "lift", "heldout_confidence", "heldout_lift", "model_confidence",
            "stability", "oob_lift_lo")}
    fmt["p_value"] = st.column_config.NumberColumn(format="%.1e")
    fmt["antecedent_name"] = st.column_config.TextColumn(
        "if liked (antecedent)", help="Every user who likes this (all of it, for a "
                                      "multi-item rule) ...")
    fmt["consequent_name"] = st.column_config.TextColumn(
        "then liked (consequent)", help="... also likes this, under the model.")
    fmt["classic_confidence"] = st.column_config.NumberColumn(
        format="%.2f", help="Among all the antecedent's fans (raters of the consequent or "
                            "not), the share who like the consequent.")
    fmt["confidence"] = st.column_config.NumberColumn(
        format="%.2f", help="Among the antecedent's fans who rated the consequent, the "
                            "share who like it.")
    return fmt


def liked_controls(run, train, psi):
    """The minimum ratings per item and the meaning of "liked"; stops the page when no
    item is left. Returns (min_ratings, liked, keep, scores, summary)."""
    c1, c2, c3 = st.columns([1, 1, 2], vertical_alignment="bottom")
    min_ratings = int(c1.number_input("minimum training ratings per item", min_value=1,
                                      step=1, value=an.default_min_ratings(train),
                                      key=min_ratings_key(run), help=an.MIN_RATINGS_HELP))
    default_liked = an.default_liked(run.model, train)
    if default_liked == pair_rules.INTERACTED:
        liked = pair_rules.INTERACTED
        c2.caption("liked = interacted (0/1 data)")
    else:
        step = an.liked_step(train)
        liked = float(c2.number_input(
            "liked when rating ≥", min_value=float(train.r_min), max_value=float(train.r_max),
            value=float(default_liked), step=float(step), key="impl_liked",
            help="One setting for every figure, sentence, graph and export on this page. "
                 "Default: the threshold the model was trained on likes with, else the top "
                 "quarter of the scale rounded to the rating step "
                 f"({default_liked:g} here; 4 on a 1-5 scale)."))
    keep = an.shown_items(train, min_ratings)
    scores = km.influence(run.run_id, psi)
    summary = an.influence_summary(scores, keep)
    c3.caption(an.filter_caption(summary, min_ratings) + " Liked means "
               + md_escape(pair_rules.liked_phrase(train, liked)) + ".")
    if summary["shown"] == 0:
        st.info("No item has that many training ratings; lower the minimum.")
        st.stop()
    return min_ratings, liked, keep, scores, summary


def implications_table(run, frame, stable, held, train, liked, fmt, names):
    """The table block (:func:`.km_relation_table.relation_table`): returns (the rows that
    pass, the filter, top k) for the views below."""
    return relation_table(run, frame, stable, held, train, liked, fmt, names, _count_metrics)


def _count_metrics(counts: dict, passing: int) -> None:
    m = st.columns(5)
    m[0].metric("implications", f"{counts.get('implications', 0):,}",
                help="Item pairs j ⇒ i with supp(ψ_j) ⊆ supp(ψ_i) among the items shown "
                     "(equivalent pairs once).")
    m[1].metric("claims between groups", f"{counts.get('claims', 0):,}",
                help="Distinct statements: one per pair of groups of equivalent items, plus "
                     "one per group. The table states each group once and each implication "
                     "between items of different groups on its own row.")
    m[2].metric("groups of equivalent items", f"{counts.get('groups', 0):,}",
                help="Two or more items with the same support: liked by the same people.")
    m[3].metric("hubs", f"{counts.get('hubs', 0):,}",
                help=f"Items implied by more than {pair_rules.HUB_SHARE:.0%} of the items "
                     "shown: that says they are popular, not that there is a logical relation.")
    m[4].metric("rows passing the filters", f"{passing:,}")


def hubs_section(scores, names, keep, summary) -> None:
    """The influence scores ς_i (Fig. 8): bar or histogram."""
    st.subheader("Hubs: items most others imply ($\\varsigma_i$, Fig. 8)")
    c1, c2 = st.columns([1, 3])
    kind = c1.radio("view", ["bar", "histogram"], key="impl_kind", horizontal=True,
                    help="bar: the items with the largest ς_i; histogram: how ς_i is "
                         "spread over all shown items.")
    top = c1.slider("items shown", 1, max(2, min(100, summary["shown"])),
                    min(15, summary["shown"]), key="impl_top")
    c1.metric("items shown with $\\varsigma_i = 1$", summary["one_shown"])
    c1.caption("ς_i is the share of items whose support lies inside item i's, eq. (21): near "
               "1, liking almost anything implies liking i, which says i is popular with "
               "everyone the model sees rather than that the items are related.")
    c2.plotly_chart(influence_figure(scores, names, kind=kind, top=top,
                                     items=np.flatnonzero(keep)))


def graph_section(run, frame, passing, spec, f_top, rated, keep, liked, min_ratings,
                  names):
    """The implication graph (around one item or the whole lattice), clickable, and the
    sentences about the item: of the rows that pass the table's filters (``passing``; the
    item's own rows through the same filter ``spec``)."""
    st.subheader("Implication graph")
    clicked = km.clicked_item(st.session_state.get("impl_graph"))
    if clicked is not None and clicked != st.session_state.get("impl_last_click"):
        st.session_state["impl_last_click"] = clicked  # a click selects once; the picker stays free
        if clicked in rated:
            km.set_item(run, clicked)
            st.session_state.pop("impl_item", None)
            _picked_here(run)
    # an item just required in the table's filter becomes the graph's item (once: the
    # picker stays free), so the graph and the sentences show the rules asked for
    required = tuple(spec.require_antecedent) + tuple(spec.require_consequent)
    if required and required != st.session_state.get("impl_last_required"):
        first = next((i for i in required if i in rated), None)
        if first is not None:
            km.set_item(run, first)
            st.session_state.pop("impl_item", None)
            _picked_here(run)
    st.session_state["impl_last_required"] = required
    opening = _opening_item(run, frame, passing, keep)
    groups = km.support_groups(run, liked, min_ratings)
    n_groups = len(groups["members"])
    g1, g2, g3 = st.columns([2, 1, 1], vertical_alignment="bottom")
    with g1:
        item = km.item_picker(run, key="impl_item", label="item", restrict=keep)
    if opening is not None and item == opening.item:
        # (the picker made it the run's current item, as any pick: the address bar and a
        # link name the item the graph shows)
        st.caption(f"Opened on {md_escape(names[item])}: {md_escape(opening.reason)}. Pick "
                   "another item, or click a node.")
    views = ["around the item", "whole lattice"]
    view = g2.radio("view", views, index=1 if n_groups <= mining.HASSE_MAX_GROUPS else 0,
                    key="impl_view", horizontal=True,
                    help="The whole lattice (a Hasse diagram of the groups) reads well for "
                         f"small models (up to {mining.HASSE_MAX_GROUPS} groups; here "
                         f"{n_groups}).")
    hops = int(g3.radio("steps", [1, 2], key="impl_hops", horizontal=True,
                        disabled=view != views[0],
                        help="Around the item: its direct implications (1) or also "
                             "those of its neighbours (2)."))
    graph_rows = passing
    center = mining.group_of(frame, item)
    if view == views[0]:
        ego = (mining.ego_rows(graph_rows, item, hops) if center is not None
               else graph_rows.head(0))
        fig = ego_graph_figure(ego.head(f_top) if f_top else ego,
                               center if center is not None else -1, hops=hops,
                               center_item=item, center_name=names[item])
    else:
        G = mining.lattice_graph(graph_rows.head(f_top) if f_top else graph_rows, groups,
                                 run.model, names)
        fig = implication_graph_figure(G, selected=center if center in G else None)
    st.plotly_chart(fig, key="impl_graph", on_select="rerun", selection_mode="points")
    around = km.item_implications(run, liked, min_ratings, item)
    around = rv.filter_frame(around, spec)
    said = mining.sentences(around.head(f_top) if f_top else around, item, names)
    if said:
        st.markdown("\n".join(f"- {pieces_markdown(p)}" for p in said))


#: This page's picks: run ids whose graph item the user chose here (picker, click, filter).
PICKED = "impl_item_picked"
#: run id -> the :class:`kmviz.km.teaching.GraphChoice` the graph opened on.
OPENED = "impl_item_opened"
#: The item this page last put in its picker by the rule (a different value: the user's).
RULE_SET = "impl_item_rule"


def _picked_here(run) -> None:
    st.session_state.setdefault(PICKED, set()).add(run.run_id)


def _opening_item(run, frame, passing, keep):
    """Until the user picks an item on this page, the graph opens on the rule's item
    (:func:`kmviz.km.teaching.graph_item`: well supported, not a hub), not on the item the
    other KM pages last used; returns the choice while it applies, else None."""
    if run.run_id in st.session_state.setdefault(PICKED, set()):
        return None
    opened = st.session_state.setdefault(OPENED, {})
    if run.run_id not in opened and st.query_params.get("item") and \
            (st.session_state.get(StateKeys.ITEM) or {}).get(run.run_id) is not None:
        # this page was opened by a link that names the item (kmviz.ui.address): a pick
        _picked_here(run)
        return None
    if run.run_id not in opened:
        rows = passing if len(passing) else frame
        opened[run.run_id] = graph_item(rows, run.split.train.item_counts(), shown=keep,
                                        alpha=pair_rules.ALPHA)
    choice = opened[run.run_id]
    if choice.item is None:
        return None
    current = st.session_state.get("impl_item")
    if current is not None and current != choice.item and \
            st.session_state.get(RULE_SET) == choice.item:
        _picked_here(run)  # the picker shows another item than the rule put there: a pick
        return None
    st.session_state["impl_item"] = choice.item
    st.session_state[RULE_SET] = choice.item
    return choice


def rules_section(run, passing, f_top, train, held, liked, min_ratings, fmt) -> int:
    """The association rules side by side with the implications; returns the rules' least
    co-support (the planted-truth table uses it too)."""
    st.subheader("Side by side with association rules")
    r1, r2, r3 = st.columns([1, 1, 2], vertical_alignment="bottom")
    rule_support = int(r1.number_input("rules: min co-support", min_value=1,
                                       value=an.default_rule_support(train), step=1,
                                       key="impl_rules_support",
                                       help="Least number of users who like both j and i "
                                            "for a rule j ⇒ i to be listed."))
    rule_conf = float(r2.number_input("rules: min confidence", min_value=0.0, max_value=1.0,
                                      value=0.5, step=0.05, key="impl_rules_conf",
                                      help="Least share of j's likers who also like i."))
    r3.caption("Pairwise rules j ⇒ i from the co-occurrence of likes, ranked by lift "
               "(supported and non-hub first). The same figures as above, on the same items "
               "and likes.")
    with user_errors("computing the association rules"):
        rule_frame = km.rules(run, liked, min_ratings, rule_support, rule_conf)
        both = pair_rules.compare_with_rules(
            passing, rule_frame, n_items=train.n_items,
            min_support=rule_support, strong=max(f_top, 1) if f_top else 100)
        c = both["counts"]
        k1, k2, k3, k4 = st.columns(4)
        k1.metric("KM implications the rules confirm", f"{c['confirmed']:,}")
        k2.metric("too rarely co-liked for a rule", f"{c['too_rare']:,}",
                  help=f"Co-support below {rule_support}: no rule can be judged; the "
                       "held-out columns show how they fare.")
        k3.metric("enough data, not a rule", f"{c['unconfirmed']:,}")
        missed = mining.missed_rules(run.model, rule_frame, strong=c["strong"])
        k4.metric("strong rules KM misses", f"{len(missed):,} of {c['strong']:,}",
                  help="The best-ranked rules (as many as the top k) whose antecedent's "
                       "support is not inside the consequent's: the model does not say "
                       "everyone who likes j likes i.")
        rare = both["too_rare"]
        pooled = mining.heldout_summary(train, held, rare, liked)
        if pooled:
            st.caption(an.heldout_sentence(pooled))
        tabs = st.tabs(["rules", "confirmed", "too rare for a rule", "missed by KM"])
        for tab, df in zip(tabs, (rule_frame.head(f_top or len(rule_frame)),
                                  both["confirmed"], rare, missed)):
            tab.dataframe(df[[x for x in RULE_COLUMNS if x in df]], hide_index=True,
                          column_config=fmt)
        tabs[3].caption(mining.missed_caption(missed))
    return rule_support


def truth_section(run, liked, min_ratings, rule_support) -> None:
    """Precision and recall against the planted implications, on planted data only."""
    recovered = km.recovery(run, liked, min_ratings, rule_support)
    if recovered is None:
        return
    st.subheader("Against the planted truth")
    st.caption("This data is a planted Kolmogorov model: the true implications are known. "
               "Precision: share of the pairs found that are true; recall: share of the true "
               "pairs found (directed item pairs among the items shown).")
    st.dataframe(recovered, hide_index=True, key="impl_truth",
                 column_config={k: st.column_config.NumberColumn(format="%.2f")
                                for k in ("precision", "recall", "f1")})


def table_vi_section(run, train, rated, summary, names, liked) -> None:
    """The paper's relation-mining accuracy (Table VI), in an expander."""
    with st.expander("The paper's relation-mining accuracy (Table VI)"):
        chosen = st.multiselect("items for the Table VI measure", rated,
                                default=summary["top3"], key="impl_table_items",
                                format_func=lambda i: f"{names[i]} [{i}]")
        users = st.multiselect("users (empty = every user who rated the items)",
                               an.raters_of(train, chosen), key="impl_table_users")
        with user_errors("computing the relation-mining accuracy"):
            tab = an.table_vi(run.model, train, chosen, liked=liked, users=users)
            st.markdown("**Relation-mining accuracy: the paper's measure (Table VI)**: for "
                        "each user who rated the item, the share of their rated items that "
                        "they like (liked as set above).")
            st.dataframe(tab, hide_index=True, key="impl_table_vi")


def min_ratings_key(run) -> str:
    """The minimum-ratings widget's key: one per run, so that a run picked after another
    starts from its own data's default, not the last run's cut (a cut of 20 ratings on
    MovieLens hid every item of a 40 x 25 run)."""
    return f"impl_min_ratings_{run.run_id}"
