"""gFM Recovery: Algorithm 1 on planted data (no run needed): the error per batch against the
theory's linear rate, the subspace angle, M against M*, and a phase diagram on request."""

import streamlit as st

from kmviz.ui.families.gfm import phase_section, recovery_section
from kmviz.ui.state import init_state
from kmviz.ui.text import md_escape
from kmviz.ui.views import collect_finished_job

init_state()
collect_finished_job("gfm")
st.title("One-pass gFM: does it recover a planted model?")
st.caption(md_escape("Data drawn as the paper assumes: x ~ N(0, I), y = xᵀw* + xᵀM*x + noise "
                     "with a rank-k M*. Algorithm 1 uses every batch of n instances once (no "
                     "standardization, no intercept: the paper's steps). No trained run is "
                     "needed."))

recovery_section()
phase_section()
