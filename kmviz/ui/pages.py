"""The app's navigation entries of the families' Explore pages (``st.Page`` objects).

An Explore page is a file of the app (``app_pages/km_dual.py``) or a function of the
family's package (:class:`kmviz.families.ExplorePage`); Streamlit's ``st.Page`` takes both.
The same object serves ``st.navigation`` (app.py) and ``st.page_link`` (Train's links).
"""

from __future__ import annotations

import streamlit as st

from kmviz import families


def explore_page(page: families.ExplorePage):
    """The ``st.Page`` of one Explore page."""
    return st.Page(page.target(), title=page.title, icon=page.icon, url_path=page.url_path)


def explore_sections() -> dict:
    """Family section title (``Family.section_title``, short enough for the sidebar) ->
    its Explore pages' ``st.Page`` objects, in registry order. A page
    function that cannot be imported is left out with a warning naming it (an installed
    family's bug must not take the app down)."""
    sections = {}
    for fam in families.all_families():
        pages = []
        for page in fam.explore:
            try:
                pages.append(explore_page(page))
            except (ImportError, AttributeError, ValueError) as exc:
                st.warning(f"The Explore page {page.title!r} of {fam.title} ({page.path}) "
                           f"could not be loaded and is left out: {exc}",
                           icon=":material/extension_off:")
        if pages:
            sections[fam.section_title()] = pages
    return sections


def link_target(page: families.ExplorePage):
    """What ``st.page_link`` takes for ``page``: the file path, or its ``st.Page``."""
    return explore_page(page) if page.is_function else page.path
