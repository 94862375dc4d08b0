"""KM · Implications: influence scores (Fig. 8), the implication graph, Table VI, precision, CSV."""

import numpy as np
import streamlit as st

from kmviz.km import analysis as an
from kmviz.ui import km
from kmviz.ui.errors import user_errors
from kmviz.ui.state import init_state
from kmviz.ui.text import pieces_markdown
from kmviz.ui.views import collect_finished_job, require_run
from kmviz.viz import implication_graph_figure, influence_figure
from kmviz.viz.implications import filter_graph

init_state()
collect_finished_job()
st.title("Implications between items")
st.caption("If $\\mathrm{supp}(\\psi_j) \\subseteq \\mathrm{supp}(\\psi_i)$, every user who "
           "likes j also likes i under the model: liking j implies liking i.")
run = require_run(family="km", need_model=True)
train = run.split.train
psi, names = np.asarray(run.model.psi_), an.item_names(train)
scores = km.influence(run.run_id, psi)

c1, c2 = st.columns([1, 3], vertical_alignment="bottom")
min_ratings = c1.number_input("minimum training ratings per item", min_value=1, step=1,
                              value=an.default_min_ratings(train), key="impl_min_ratings",
                              help=an.MIN_RATINGS_HELP)
keep = an.shown_items(train, min_ratings)
summary = an.influence_summary(scores, keep)
c2.caption(an.filter_caption(summary, int(min_ratings)))
if summary["shown"] == 0:
    st.info("No item has that many training ratings; lower the minimum.")
    st.stop()

st.subheader("Normalized influence score $\\varsigma_i$, eq. (21)")
c1, c2 = st.columns([1, 3])
kind = c1.radio("view", ["bar", "histogram"], key="impl_kind", horizontal=True)
top = c1.slider("items shown", 1, max(2, min(100, summary["shown"])),
                min(30, summary["shown"]), key="impl_top")
c1.metric("items shown with $\\varsigma_i = 1$", summary["one_shown"])
c2.plotly_chart(influence_figure(scores, names, kind=kind, top=top, items=np.flatnonzero(keep)))

st.subheader("Implication graph")
G = an.restrict_graph(km.implication_graph(psi, tuple(names)), keep)
sizes = [d["support_size"] for _, d in G.nodes(data=True)] or [0]
c1, c2, c3 = st.columns(3)
min_infl = c1.slider("minimum influence $\\varsigma$", 0.0, 1.0, 0.0, 0.05, key="impl_min_infl")
lo, hi = c2.slider("support size", 0, max(sizes) + 1, (min(sizes), max(sizes)),
                   key="impl_support")
rated = [i for i in an.items_by_count(train) if keep[i]]
clicked = km.clicked_item(st.session_state.get("impl_graph"))
if clicked is not None and clicked != st.session_state.get("impl_last_click"):
    st.session_state["impl_last_click"] = clicked  # a click selects once; the picker stays free
    if clicked in rated:
        km.set_item(run, clicked)
        st.session_state.pop("impl_item", None)
with c3:
    item = km.item_picker(run, key="impl_item", label="item", restrict=keep)
H = filter_graph(G, min_influence=min_infl, min_support=lo, max_support=hi)
st.plotly_chart(implication_graph_figure(H, selected=an.node_of_item(H, item)),
                key="impl_graph", on_select="rerun", selection_mode="points")
if item is not None:
    said, told = an.plain_words(psi, item, names, keep=keep)
    st.markdown(f"- {pieces_markdown(said)}\n- {pieces_markdown(told)}")

st.subheader("Checks against the ratings")
threshold = st.slider("liked when $p_{ui} \\ge$", 0.05, 0.95, 0.5, 0.05, key="impl_threshold")
chosen = st.multiselect("items for the Table VI measure", rated, default=summary["top3"],
                        key="impl_table_items", format_func=lambda i: f"{names[i]} [{i}]")
raters = an.raters_of(train, chosen)
users = st.multiselect("users (empty = every user who rated the items)", raters,
                       key="impl_table_users")
with user_errors("computing the relation-mining accuracy"):
    tab = an.table_vi(run.model, train, chosen, threshold=threshold, users=users)
    st.markdown("**Relation-mining accuracy: the paper's measure (Table VI)**: for each user "
                "who rated the item, the share of their rated items that they like.")
    st.dataframe(tab, hide_index=True)
with user_errors("computing the precision of the implications"):
    prec = km.precision_table(run, threshold=threshold, keep=keep)
    st.markdown("**Precision of each implication j ⇒ i**: among users who like j and rated i, "
                "the share who like i, on training and on held-out ratings.")
    st.dataframe(prec.head(500), hide_index=True)
st.download_button("Download the implications (CSV)",
                   data=lambda: an.implications_csv(psi, names, train, keep)[0],
                   file_name=f"implications-{run.run_id}.csv", mime="text/csv",
                   key="impl_csv", icon=":material/download:")
st.caption("One row per implication between the items shown, with its statement in words. "
           "Above a million rows the file covers the 1,000 most rated of them.")
