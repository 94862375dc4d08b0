"""KM · Implications: the relations in the data (the miner's default path, saved with the
run), the model's implications with their figures on the data, filters, the graph around an
item, the association-rule baseline, the planted truth, and the export."""

import numpy as np
import streamlit as st

from kmviz.km import analysis as an
from kmviz.ui.families import km
from kmviz.ui.families import km_implications as page
from kmviz.ui.families import km_relations_panel as relations
from kmviz.ui.errors import user_errors
from kmviz.ui.replay import replay_run
from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, require_run

init_state()
collect_finished_job("km")
st.title("Implications between items")
st.caption("If $\\mathrm{supp}(\\psi_j) \\subseteq \\mathrm{supp}(\\psi_i)$, every user who "
           "likes j also likes i under the model: liking j implies liking i. Each implication "
           "below comes with how often it holds in the ratings.")
run = require_run(family="km", need_model=True)
run = replay_run(run, key="impl_replay")  # the model after the iteration picked (default: last)
train, held = run.split.train, run.split.held_out()
psi, names = np.asarray(run.model.psi_), an.item_names(train)

# ------------------------------------------------------------------ what is shown, "liked"
min_ratings, liked, keep, scores, summary = page.liked_controls(run, train, psi)
fmt = page.column_formats()

# ------------------------------------------------------------------ the relations in the data
with user_errors("mining the relations in the data"):
    relations.relations_section(run, liked, fmt, names)

with user_errors("mining the implications") as mined:
    frame = km.implications(run, liked, min_ratings)
if not mined.ok:
    st.stop()
st.subheader("Stability over refits")
stable = km.stability_panel(run, liked, min_ratings)

# ------------------------------------------------------------------ filters and counts
with user_errors("filtering the implications") as outcome:
    passing, spec, f_top = page.implications_table(run, frame, stable, held, train, liked,
                                                   fmt, names)
if not outcome.ok:
    st.stop()

# ------------------------------------------------------------------ hubs: influence scores
page.hubs_section(scores, names, keep, summary)

# ------------------------------------------------------------------ one item: words and graph
rated = an.shown_by_count(train, keep)
page.graph_section(run, frame, passing, spec, f_top, rated, keep, liked, min_ratings, names)

# ------------------------------------------------------------------ rules, planted truth
rule_support = page.rules_section(run, passing, f_top, train, held, liked, min_ratings,
                                  fmt)
page.truth_section(run, liked, min_ratings, rule_support)

# ------------------------------------------------------------------ the paper's views
page.table_vi_section(run, train, rated, summary, names, liked)
