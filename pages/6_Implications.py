"""Implications: influence scores (Fig. 8), the implication graph, Table VI, precision, CSV."""

import numpy as np
import streamlit as st

from kmviz.ui import analysis as an
from kmviz.ui.errors import user_errors
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, require_run
from kmviz.viz import implication_graph_figure, influence_figure
from kmviz.viz.implications import filter_graph

init_state()
collect_finished_job()
st.title("Implications between items")
st.caption("If supp(ψ_j) ⊆ supp(ψ_i), every user who likes j also likes i under the model.")
run = require_run(need_split=True)
psi, names = np.asarray(run.psi), an.item_names(run)
scores = an.influence_cached(run.run_id, psi)

st.subheader("Normalized influence score ς_i, eq. (21)")
c1, c2 = st.columns([1, 3])
kind = c1.radio("view", ["bar", "histogram"], key="impl_kind", horizontal=True)
top = c1.slider("items shown", 5, 100, 30, key="impl_top")
c1.metric("items with ς = 1", int(np.sum(np.isclose(scores, 1.0))))
c2.plotly_chart(influence_figure(scores, names, kind=kind, top=top))

st.subheader("Implication graph")
G = an.implication_graph_cached(psi, tuple(names))
sizes = [d["support_size"] for _, d in G.nodes(data=True)] or [0]
c1, c2, c3 = st.columns(3)
min_infl = c1.slider("minimum influence ς", 0.0, 1.0, 0.0, 0.05, key="impl_min_infl")
lo, hi = c2.slider("support size", 0, max(sizes) + 1, (min(sizes), max(sizes)),
                   key="impl_support")
rated = an.items_by_count(run.split.train)
item = c3.selectbox("item", rated, key="impl_item", format_func=lambda i: f"{names[i]} [{i}]")
H = filter_graph(G, min_influence=min_infl, min_support=lo, max_support=hi)
st.plotly_chart(implication_graph_figure(H, selected=an.node_of_item(H, item)))
said, told = an.plain_words(run, item, names)
st.markdown(f"- {said}\n- {told}")

st.subheader("Checks against the ratings")
threshold = st.slider("liked when p_ui ≥", 0.05, 0.95, 0.5, 0.05, key="impl_threshold")
best = [int(i) for i in np.argsort(-scores, kind="stable")[:3]]
chosen = st.multiselect("items for the Table VI measure", rated, default=best,
                        key="impl_table_items", format_func=lambda i: f"{names[i]} [{i}]")
raters = an.raters_of(run, chosen)
users = st.multiselect("users (empty = every user who rated the items)", raters,
                       key="impl_table_users")
with user_errors("computing the relation-mining accuracy"):
    tab = an.table_vi(run, chosen, threshold=threshold, users=users)
    st.markdown("**Relation-mining accuracy: the paper's measure (Table VI)**: for each user "
                "who rated the item, the share of their rated items that they like.")
    st.dataframe(tab, hide_index=True)
with user_errors("computing the precision of the implications"):
    prec = an.precision_table(run, threshold=threshold)
    st.markdown("**Precision of each implication j ⇒ i**: among users who like j and rated i, "
                "the share who like i, on training and on held-out ratings.")
    st.dataframe(prec.head(500), hide_index=True)
st.download_button("Download the implications (CSV)",
                   data=lambda: an.implications_csv(run, names)[0],
                   file_name=f"implications-{run.run_id}.csv", mime="text/csv",
                   key="impl_csv", icon=":material/download:")
st.caption("One row per implication with its statement in words. Above a million rows the "
           "file covers the 1,000 most rated items.")
