"""Pages a teacher tripped over (issue 20, item 6), as AppTests."""

import pytest

from kmviz.ui.state import StateKeys

from .apphelpers import goto, metrics, new_session, pick_family

HOME = "app_pages/home.py"
DATA = "app_pages/data.py"


@pytest.mark.slow
def test_planted_km_button_opens_train_with_km_picked_even_after_gfm():
    at = pick_family(new_session(), "gfm")
    goto(at, HOME)
    at.button(key="home_planted").click().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Train"]
    assert at.selectbox(key="train_family").value == "km"


@pytest.mark.slow
def test_data_page_counts_gapminder_in_countries_and_years():
    at = goto(new_session(), DATA)
    at.selectbox(key="data_builtin").set_value("gapminder").run()
    [b for b in at.button if b.label == "Load"][0].click().run()
    assert not at.exception
    assert at.session_state[StateKeys.DATASET].nouns == ("country", "year")
    m = metrics(at)
    assert m["countries"] == "185" and "users" not in m and "items" not in m
