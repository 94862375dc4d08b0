"""kmviz Streamlit entry point: page config and navigation over the files in pages/."""

import streamlit as st

from kmviz.ui.training import background_warm_up

st.set_page_config(page_title="kmviz", page_icon=":material/hub:", layout="wide")
background_warm_up()  # compile the Numba kernels while the user looks at data (once per process)

pages = {
    "": [st.Page("pages/0_Home.py", title="Home", icon=":material/home:", default=True)],
    "Data": [st.Page("pages/1_Data.py", title="Data", icon=":material/database:")],
    "Train": [st.Page("pages/2_Train.py", title="Train", icon=":material/model_training:")],
    "Explore": [
        st.Page("pages/3_Convergence.py", title="Convergence", icon=":material/show_chart:"),
        st.Page("pages/4_Phases.py", title="Phases", icon=":material/stacked_bar_chart:"),
        st.Page("pages/5_Lanczos.py", title="Lanczos", icon=":material/functions:"),
        st.Page("pages/6_Implications.py", title="Implications", icon=":material/hub:"),
    ],
    "Runs": [st.Page("pages/7_Runs.py", title="Runs", icon=":material/history:")],
}
st.navigation(pages).run()
