"""Similarity · Optimizers: the paper's Figure 2 on the current data, an equal time budget
per solver; run once per session on the first visit (and on Compare) in the background,
with progress and Stop."""

import streamlit as st

from kmviz import families
from kmviz.ui.families.similarity import optimizers_race
from kmviz.ui.forms import form_params
from kmviz.ui.state import init_state
from kmviz.ui.text import md_escape
from kmviz.ui.views import collect_finished_job, require_dataset

SHOWN = ("k", "user_tower", "item_tower", "loss", "omega", "lambda_theta", "imputed",
         "threshold", "side_features")

init_state()
collect_finished_job("similarity")
st.title("Optimizers: how fast each solver gets there")
st.caption(md_escape(
    "The paper's Figure 2 on the data loaded now: every chosen solver fits the same model "
    "from the same starting θ (same settings and seed), and each line follows its relative "
    "objective difference (L − L*) / L*, L* the lowest objective any of them reached, and "
    "its validation MAP@5 against the time spent optimizing (the validation ranking is not "
    "counted)."))
ratings, split = require_dataset()
params = form_params(families.get("similarity"))
st.markdown(md_escape("Settings of the Train page's form: " + ", ".join(
    f"{name} = {params[name]}" for name in SHOWN) + ". Change them there."))
if split.validation is None:
    st.info("The split has no validation part: the MAP@5 panel stays empty (set one on the "
            "Data page).")

optimizers_race(split, params)
