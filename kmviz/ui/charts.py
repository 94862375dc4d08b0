"""Every chart of the app in kmviz's theme, larger in presentation mode.

The pages draw Plotly figures with ``st.plotly_chart`` (and ``column.plotly_chart``);
:func:`install` wraps that method once per process so that each figure is drawn through
:func:`kmviz.viz._theme.themed`: its ticks and legends at 14 px or more, no SI prefixes,
30 colours before any repeats, and, when the session's Presentation switch is on, every
text larger still. The switch is read from the session of the script run that draws.
"""

from __future__ import annotations

import functools
import threading

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from kmviz.viz._theme import themed

from .address import PRESENT_ON

_LOCK = threading.Lock()
_INSTALLED = {"done": False}


def _presentation() -> bool:
    try:
        return bool(st.session_state.get(PRESENT_ON))
    except Exception:  # noqa: BLE001 - no session (a bare script): the plain theme
        return False


def _wrap(draw):
    @functools.wraps(draw)
    def plotly_chart(self, figure_or_data, *args, **kwargs):
        if hasattr(figure_or_data, "layout") and hasattr(figure_or_data, "data"):
            figure_or_data = themed(figure_or_data, presentation=_presentation())
            # our template, not Streamlit's (whose ticks are 12 px and prefixes SI)
            kwargs.setdefault("theme", None)
        return draw(self, figure_or_data, *args, **kwargs)

    plotly_chart.kmviz_themed = True
    return plotly_chart


def install() -> None:
    """Wrap ``DeltaGenerator.plotly_chart`` (and ``st.plotly_chart``) once per process."""
    with _LOCK:
        if _INSTALLED["done"] or getattr(DeltaGenerator.plotly_chart, "kmviz_themed", False):
            _INSTALLED["done"] = True
            return
        DeltaGenerator.plotly_chart = _wrap(DeltaGenerator.plotly_chart)
        main = st._main  # st.plotly_chart is the main area's bound method
        st.plotly_chart = functools.partial(DeltaGenerator.plotly_chart, main)
        _INSTALLED["done"] = True
