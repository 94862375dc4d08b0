"""Streamlit glue shared by the pages: state keys, cached loaders, forms, training jobs.

This is the only subpackage of kmviz that imports streamlit.
"""
