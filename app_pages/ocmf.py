"""OCMF: the objective split over iterations, TRON's steps, one user's top-k with each
score's attribution, and a rho x lambda grid of validation p@5 on request."""

import streamlit as st

from kmviz import families
from kmviz.ui.families.ocmf import (grid_section, objective_section, recommendations_section,
                                   replayed)
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, require_run

init_state()
collect_finished_job("ocmf")
fam = families.get("ocmf")
st.title("One-class MF: what it optimized and what it recommends")
fitted = require_run(family="ocmf", need_model=True)
run = replayed(fitted)  # the model after the iteration picked (default: the last)

objective_section(run, fam, whole=fitted.trace)
recommendations_section(run)
grid_section(run)
