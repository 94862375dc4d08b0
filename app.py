"""kmviz Streamlit entry point: page config and the navigation, built from the family registry.

Shared pages first (Home, Data, Train, Runs, Convergence), then one section per registered
model family with its own Explore pages (files, or functions of a family's package, such as
one installed through the ``kmviz.families`` entry point). The page files live in app_pages/
(not pages/, which Streamlit would also list on its own before this navigation runs).
"""

import streamlit as st

from kmviz import families
from kmviz.ui.pages import explore_sections
from kmviz.ui.training import background_warm_up

st.set_page_config(page_title="kmviz", page_icon=":material/hub:", layout="wide")
background_warm_up()  # compile the Numba kernels while the user looks at data (once per process)

pages = {
    "kmviz": [
        st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("app_pages/data.py", title="Data", icon=":material/database:"),
        st.Page("app_pages/train.py", title="Train", icon=":material/model_training:"),
        st.Page("app_pages/runs.py", title="Runs", icon=":material/history:"),
        st.Page("app_pages/convergence.py", title="Convergence", icon=":material/show_chart:"),
    ],
}
pages.update(explore_sections())  # files of app_pages/ or functions of a family's package
for problem in families.load_problems():  # an installed family that failed to load
    st.warning(problem, icon=":material/extension_off:")
st.navigation(pages).run()
