"""The replay slider's glue (kmviz.ui.replay.iteration_picker) on its own: it starts at the
last iteration, follows the end when the options grow while it sits there, stays where the
user put it otherwise, and play steps one kept iteration per timer tick, from the first when
pressed at the end, switching itself off at the last."""

import pytest
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.slow   # AppTest: the first run imports the app's modules (~5 s)


def _script():
    import streamlit as st

    from kmviz.ui.replay import iteration_picker

    st.session_state["chosen"] = iteration_picker(st.session_state.get("options", [1, 2, 3]),
                                                  key="pick")


def _app(options):
    at = AppTest.from_function(_script, default_timeout=60)
    at.session_state["options"] = options
    at.run()
    assert not at.exception, at.exception
    return at


def test_starts_at_the_end_and_follows_a_growing_fit():
    at = _app([1, 2, 3])
    assert at.session_state["chosen"] == 3
    at.session_state["options"] = [1, 2, 3, 4, 5]
    at.run()
    assert at.session_state["chosen"] == 5       # it sat at the end: it stays at the end
    at.select_slider(key="pick").set_value(2).run()
    at.session_state["options"] = [1, 2, 3, 4, 5, 6]
    at.run()
    assert at.session_state["chosen"] == 2       # a choice of the user is kept
    at.session_state["options"] = [1, 3, 5]
    at.run()
    assert at.session_state["chosen"] == 5       # no longer kept: back to the end


def test_play_steps_and_stops_at_the_last():
    at = _app([1, 5, 9])
    at.toggle(key="pick_play").set_value(True).run()
    assert at.session_state["chosen"] == 1       # pressed at the end: from the first
    at.session_state["pick_tick"] = True
    at.run()
    assert at.session_state["chosen"] == 5 and at.toggle(key="pick_play").value
    at.session_state["pick_tick"] = True
    at.run()
    assert at.session_state["chosen"] == 9 and not at.toggle(key="pick_play").value
    at.session_state["pick_tick"] = True         # a late tick after the end does nothing
    at.run()
    assert at.session_state["chosen"] == 9
