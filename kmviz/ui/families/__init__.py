"""Streamlit glue owned by one model family each (``km.py``: the KM Explore pages',
``km_implications.py``: the KM Implications page's blocks, ``kmc.py``: the Kernel MC Nyström
page's blocks), kept apart from the generic glue of :mod:`kmviz.ui`, which never names a
family."""
