"""Similarity · Embeddings: users and items in 2-D, an item's nearest items, a cold item's
scores from its features alone, and what each tower layer does to one entity."""

import streamlit as st

from kmviz.similarity import analysis as an
from kmviz.similarity.figures import cold_scores_figure, tower_layers_figure
from kmviz.ui.errors import user_errors
from kmviz.ui.families.similarity import embedding_map, no_towers_note, replayed
from kmviz.ui.state import init_state
from kmviz.ui.text import md_escape
from kmviz.ui.views import collect_finished_job, require_run

init_state()
collect_finished_job("similarity")
st.title("Embeddings: what the towers learned")
run = replayed(require_run(family="similarity", need_model=True))  # default: the last iteration
model, train = run.model, run.split.train
has_towers = getattr(model, "item_tower_", None) is not None

st.subheader("Users and items in 2-D")
c = st.columns(2)
side = c[0].radio("show", ["items", "users"], horizontal=True, key="similarity_emb_side",
                  help="Whose embeddings (p_i = f(u_i) or q_j = g(v_j)) to draw.")
colour = c[1].selectbox("colour by", an.colour_options(train, side),
                        key=f"similarity_emb_colour_{side}",
                        help="A side feature (genre: the first one listed; years by "
                             "decade; ages by the MovieLens age groups) or how many "
                             "training positives the row has.")
with user_errors("drawing the embeddings"):
    st.plotly_chart(embedding_map(model, train, side, colour), key="similarity_emb_pca")
st.caption("Each dot is one row's k-dimensional embedding projected on its first two "
           "principal components. Rows the model treats alike sit together; a colour that "
           "forms regions is a side feature the embeddings reflect.")

st.subheader("An item's nearest items")
counts = an.positives_per(model, "items")
order = sorted(range(train.n_items), key=lambda j: -counts[j])
c = st.columns([3, 1])
item = c[0].selectbox("item", order, key="similarity_emb_item",
                      format_func=lambda j: f"{train.item_label(j)} ({counts[j]} positives)",
                      help="Items with the most training positives first.")
k = c[1].slider("neighbours", 3, 30, 10, key="similarity_emb_k")
with user_errors("finding the neighbours"):
    st.dataframe(an.neighbours_table(model, item, [train.item_label(j) for j in
                                                   range(train.n_items)], k=k),
                 hide_index=True, column_config={"cosine": st.column_config.NumberColumn(
                     format="%.3f")})
st.caption("By the cosine of the item embeddings q_j: items whose scores for every user "
           "rise and fall together.")

st.subheader("The same item, scored from its features alone")
if not has_towers:
    st.info(no_towers_note(run))
elif an.cold_scoring_problem(model):
    st.info(md_escape("No cold scores: " + an.cold_scoring_problem(model)))
else:
    with user_errors("scoring from features") as outcome:
        cold, warm = an.cold_item_scores(model, item)
    if outcome.ok:
        st.metric("rank agreement with the fitted scores (Spearman)",
                  f"{an.rank_agreement(cold, warm):.3f}")
        st.plotly_chart(cold_scores_figure(cold, warm), key="similarity_emb_cold")
        st.caption("Each dot is a user: the item's fitted score against its score when the "
                   "item tower sees only its features (its id column dropped), as it would "
                   "score a new item with those features. On the dashed line the features "
                   "carry everything the id added.")

if has_towers:
    st.subheader("What each tower layer does")
    c = st.columns(2)
    who = c[0].radio("tower", ["items", "users"], horizontal=True, key="similarity_emb_tower")
    n_rows = train.n_items if who == "items" else train.n_users
    index = c[1].number_input(f"{who[:-1]} index", 0, n_rows - 1, int(item) if who == "items"
                              else 0, key=f"similarity_emb_index_{who}")
    name = (train.item_label if who == "items" else train.user_label)(index)
    st.caption(md_escape(f"{who[:-1]} {index}: {name}"))
    with user_errors("running the tower"):
        layers = an.tower_activations(model, index, who)
        st.plotly_chart(tower_layers_figure(layers), key="similarity_emb_layers")
        st.dataframe(an.layer_table(layers), hide_index=True)
    st.caption("One row per layer: the outputs of each hidden layer after its activation, "
               "then the embedding. An identity tower is a table lookup (one row); an MLP "
               "shows how its input is re-coded layer by layer (ELU units below 0 are "
               "damped, not cut).")
