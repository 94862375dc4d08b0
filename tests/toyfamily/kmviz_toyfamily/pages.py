"""The toy family's Explore page, a function (kmviz's navigation calls it)."""

import pandas as pd
import streamlit as st

from kmviz.ui.state import init_state
from kmviz.ui.views import collect_finished_job, require_run


def toy_biases():
    """The learned item biases of a toy run, largest first."""
    init_state()
    collect_finished_job()
    st.title("Toy · Biases")
    run = require_run(family="toy", need_model=True)
    model = run.model
    st.metric("global mean μ", f"{model.mean_:.3f}")
    frame = pd.DataFrame({"item": range(model.item_bias_.size), "bias": model.item_bias_})
    st.bar_chart(frame.sort_values("bias", ascending=False).head(20), x="item", y="bias")
