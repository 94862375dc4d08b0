"""kmviz Streamlit entry point: page config and the navigation, built from the family registry.

Shared pages first (Home, Data, Train, Runs, Convergence), then one section per registered
model family with its own Explore pages (files, or functions of a family's package, such as
one installed through the ``kmviz.families`` entry point). The page files live in app_pages/
(not pages/, which Streamlit would also list on its own before this navigation runs).
"""

import streamlit as st

from kmviz import families
from kmviz.ui.address import restore_view, show_notices, sync_address
from kmviz.ui.charts import install as themed_charts
from kmviz.ui.lesson import active_lesson, hide_settings, lesson_bar, navigation, sidebar_switches
from kmviz.ui.pages import explore_sections
from kmviz.ui.training import background_warm_up


def main() -> None:
    st.set_page_config(page_title="kmviz", page_icon=":material/hub:", layout="wide")
    themed_charts()  # every chart in kmviz's theme (larger with the Presentation switch)
    background_warm_up()  # compile the kernels while the user looks at data (once per process)

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
    by_path = {p.url_path: p for section in pages.values() for p in section}
    # the address bar holds the view: a link restores it (once per session), every run writes it
    restore_view(list(by_path))
    lesson = active_lesson()  # kmviz app --lesson FILE, or ?lesson=NAME
    sidebar_switches()  # Lesson mode, Presentation
    page = navigation(pages, lesson)  # in lesson mode: only the lesson's pages listed
    show_notices()
    hide_settings()  # in lesson mode: figures and captions stay, the controls go
    lesson_bar(page.url_path, by_path)
    try:
        page.run()
    finally:
        sync_address(page.url_path)


# Streamlit (and AppTest) run this file as __main__. A Dask worker process started by the
# spawn method re-runs the parent's main file as __mp_main__: the guard keeps it from
# drawing the app (or starting the warm-up) in every worker.
if __name__ == "__main__":
    main()
