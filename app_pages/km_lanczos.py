"""KM · Lanczos: error bounds of the approximate EVD against m on one item's C(u*) (Fig. 6)."""

import streamlit as st

from kmviz.km.figures import lanczos_bounds_figure, ritz_values_figure
from kmviz.ui.families import km
from kmviz.ui.errors import user_errors
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, require_run

init_state()
collect_finished_job("km")
st.title("Approximate EVD by the modified Lanczos method")
st.caption("Alg. 5 stops at the first m with $\\beta_{m+1} \\le \\delta$, the threshold (20) built from "
           "traces and the normalized Minkowski ℓ1-norm of C (Lemma 3).")
run = require_run(family="km", need_model=True)
item = km.item_picker(run, key="lanczos_item")
a = st.slider("a in (20)", 0.1, 10.0, float(run.params.get("lanczos_a", 1.0)), 0.1,
              key="lanczos_a", help="Larger a gives a smaller δ, so more iterations m.")
with user_errors("building C(u*) and running Lanczos") as outcome:
    C = km.item_dual_matrix(run, item)
    view = km.lanczos_view(C, a)
if outcome.ok:
    c = st.columns(4)
    c[0].metric("size of C(u*)", f"{C.shape[0]} × {C.shape[0]}")
    c[1].metric("δ of (20)", f"{view['delta']:.3e}")
    c[2].metric("m chosen", view["m_threshold"])
    c[3].metric("largest eigenvalue", f"{view['eigenvalues'].max():.4g}")
    if view["m_threshold"] <= 1:  # a flat chart: say why, and what shows more
        st.info(f"Here β₂ is already at or below δ = {view['delta']:.2e}, so Alg. 5 stops at "
                "m = 1 and the bounds below have little to show. C(u*) is (D + 1) × (D + 1) "
                f"= {C.shape[0]} × {C.shape[0]}: move a to the right (a smaller δ) or train "
                "with a larger D to see the bounds tighten over several m.",
                icon=":material/info:")
    st.plotly_chart(lanczos_bounds_figure(view["diag"], delta=view["delta"],
                                          m_chosen=view["m_threshold"], a=a,
                                          D=C.shape[0] - 1))
    st.plotly_chart(ritz_values_figure(view["eigenvalues"], view["ritz"]))
    with st.expander("Numbers"):
        st.dataframe(view["diag"], hide_index=True)
