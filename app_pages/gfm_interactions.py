"""gFM Interactions: for a trained run, the strongest learned pairwise interactions (with the
features' names), the spectrum of M, the first-order weights, and held-out predictions."""

import streamlit as st

from kmviz.gfm.analysis import interaction_table
from kmviz.ui.errors import user_errors
from kmviz.ui.families.gfm import interaction_figures, replayed
from kmviz.ui.state import init_state
from kmviz.ui.text import md_escape
from kmviz.ui.views import collect_finished_job, require_run

init_state()
collect_finished_job("gfm")
st.title("gFM: what the model learned")
run = replayed(require_run(family="gfm", need_model=True))  # the iteration picked (default: last)
model, split = run.model, run.split
st.caption(f"Solver: {getattr(model, 'solver_', 'onepass')}, rank k = {model.rank}, "
           f"{model.n_features_in_:,} features. Ratings enter as factorization-machine rows: "
           "a one-hot user (user=…) and item (item=…) when their ids repeat, and the side "
           "features (user:…, item:…).")
for event in run.trace.events:
    if event.get("kind") == "warning":
        st.warning(md_escape(event["message"]), icon=":material/warning:")

st.subheader("Predictions on held-out ratings")
with user_errors("predicting the held-out ratings"):
    figures = interaction_figures(model, split)
    summary = figures["summary"]
    if figures["predictions"] is None:
        st.info("The split has no test or validation part; set one on the Data page.")
    else:
        c = st.columns(3)
        c[0].metric(f"{summary['part']} RMSE", f"{summary['rmse']:.4f}")
        c[1].metric("RMSE of the training mean", f"{summary['mean_rmse']:.4f}")
        c[2].metric("held-out ratings", f"{summary['n']:,}")
        st.plotly_chart(figures["predictions"])
        st.caption("Each point is a held-out rating: on the dotted diagonal the prediction is "
                   "exact; the dashed line is what predicting the training mean gives. A "
                   "useful model has a lower RMSE than the mean and points along the diagonal.")

st.subheader("Strongest pairwise interactions")
c1, c2 = st.columns([1, 3])
top = c1.slider("how many", 5, 50, 15, key="gfm_top_n",
                help="Number of feature pairs listed, largest |M_ab| first.")
diagonal = c1.checkbox("include squares x_a²", value=False, key="gfm_diag",
                       help="Also list M_aa, the weight of a feature's own square (for "
                            "one-hot features x_a² = x_a, so it adds to its first-order "
                            "weight).")
with user_errors("ranking the interactions"):
    table = interaction_table(model, top, include_diagonal=diagonal)
    c2.dataframe(table[["feature_a", "feature_b", "M_ab", "effect"]], hide_index=True,
                 column_config={"M_ab": st.column_config.NumberColumn(format="%.4f"),
                                "effect": st.column_config.NumberColumn(
                                    "effect of x_a·x_b", format="%.4f")})
st.caption("The largest |M_ab| of the learned M = (UVᵀ + VUᵀ)/2, in the units of the features. "
           "A positive effect means the two features together raise the prediction beyond "
           "their separate weights (user=… with item=… is that user's taste for that item); "
           "a negative one lowers it.")

c1, c2 = st.columns(2)
with c1:
    st.plotly_chart(figures["spectrum"])
    st.caption("M has rank at most 2k. Eigenvalues of both signs are allowed (a classic FM "
               "with a PSD factorization has only positive ones).")
with c2:
    st.plotly_chart(figures["weights"])
    st.caption("First-order weights w with the largest |w|: a user's or item's bias, or a "
               "side feature's linear effect.")
