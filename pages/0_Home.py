"""Home: what kmviz does and a three-step path on built-in data."""

import streamlit as st

from kmviz.ui.datasets import quick_start
from kmviz.ui.errors import user_errors
from kmviz.ui.state import StateKeys, init_state
from kmviz.ui.views import collect_finished_job

init_state()
collect_finished_job()

st.title("kmviz: look inside interpretable factorization models")
st.markdown(
    "kmviz trains the **Kolmogorov model** (KM), P(user *u* likes item *i*) = θ_uᵀψ_i with a "
    "probability vector θ_u over D elementary events and a binary vector ψ_i, and shows what "
    "it learned: convergence of the block coordinate descent, where the dual gradient "
    "descent spends its time, how tight the Lanczos error bounds are, and the **implications "
    "between items** read off nested supports (*everyone who likes A also likes B*).")

st.subheader("Try it in three steps")
c1, c2, c3 = st.columns(3)
with c1:
    st.markdown("**1. Load data**: MovieLens latest-small (100k ratings) or a small "
                "synthetic set with a planted KM.")
    ml = st.button("Load MovieLens latest-small", key="home_movielens", icon=":material/movie:")
    planted = st.button("Load a planted KM set", key="home_planted", icon=":material/science:")
with c2:
    st.markdown("**2. Train** a KM with the paper's enhanced dual GD; watch the progress and "
                "stop it whenever you like.")
    st.page_link("pages/2_Train.py", label="Train", icon=":material/model_training:")
with c3:
    st.markdown("**3. Explore** convergence, phases, Lanczos bounds and the implication "
                "graph; compare saved runs.")
    st.page_link("pages/6_Implications.py", label="Implications", icon=":material/hub:")
    st.page_link("pages/7_Runs.py", label="Runs", icon=":material/history:")

choice = "movielens-small" if ml else "planted-km" if planted else None
if choice:
    with user_errors("loading the dataset") as outcome:
        quick_start(choice)
    if outcome.ok:
        st.switch_page("pages/2_Train.py")

if st.session_state.get(StateKeys.DATASET) is not None:
    st.caption(f"Loaded: {st.session_state[StateKeys.DATASET]!r}")

st.divider()
st.markdown(
    "Paper: *Kolmogorov model learning via dual gradient descent* (IEEE TSP 2022, "
    "[doi:10.1109/TSP.2022.3150953](https://doi.org/10.1109/TSP.2022.3150953)). "
    "Data: [MovieLens](https://grouplens.org/datasets/movielens/) by GroupLens.")
