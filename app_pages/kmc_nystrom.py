"""Kernel MC · Nyström: ridge leverage scores and d_eff with an alpha slider, exact vs
approximate scores, the sampled landmarks, and the error against the number of landmarks
for each sampling scheme (on request)."""

import streamlit as st

from kmviz.ui.families import kmc
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job

init_state()
collect_finished_job("kmc")
st.title("Nyström approximation and ridge leverage scores")
st.markdown(
    "A Nyström approximation rebuilds an n × n kernel matrix K from m of its columns, the "
    "*landmarks*: K̂ = C W⁺ Cᵀ (C: the m columns, W: their m × m block). How good it is "
    "depends on which columns are picked. The **ridge leverage score** of a point, "
    "ℓᵢ = (K (K + αI)⁻¹)ᵢᵢ, between 0 and 1, says how much that point's column sticks out "
    "from the others at the scale α: isolated points score near 1, points in dense crowds "
    "near 0. The scores add up to the **effective dimension** d_eff(α) = Σⱼ σⱼ / (σⱼ + α), "
    "about the number of landmarks that the kernel needs at that scale.")

source, run, gamma = kmc.kernel_source()
run_id = run.run_id if run is not None else None
key = (source, gamma, run_id)
data = kmc.kernel_data(source, run, gamma, key)

m_ref, alpha, scores = kmc.leverage_map(data, key, run_id)
kmc.score_agreement(data, scores, alpha, m_ref)
if run is not None:
    kmc.kron_entry_scores(run)
kmc.sampled_landmarks(data, m_ref)
kmc.error_curves(data, key)
