"""Streamlit glue owned by one model family each (``km.py``: the KM Explore pages'), kept
apart from the generic glue of :mod:`kmviz.ui`, which never names a family."""
