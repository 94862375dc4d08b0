"""Forms render parameters that accept None (``Param(none_ok=True)``) generically: an empty
number box or an "automatic" choice means None, and a value typed in replaces it."""

from streamlit.testing.v1 import AppTest

SCRIPT = '''
import streamlit as st
from kmviz._params import Param, RANDOM_STATE
from kmviz.ui.forms import params_form

class Est:
    _parameter_constraints = {
        "size": Param(int, low=1, none_ok=True, label="size", help="Rows per batch."),
        "rate": Param(float, low=0.0, none_ok=True, label="rate"),
        "ids": Param(bool, none_ok=True, label="ids"),
        "flag": Param(bool, label="flag"),
        "count": Param(int, low=1, label="count"),
        "random_state": Param(RANDOM_STATE, none_ok=True, label="seed"),
    }
    def __init__(self, size=None, rate=0.5, ids=None, flag=True, count=3, random_state=None):
        pass

class Fam:
    name = "fake"
    def constraints(self):
        return dict(Est._parameter_constraints)
    def default_params(self):
        return {"size": None, "rate": 0.5, "ids": None, "flag": True, "count": 3,
                "random_state": None}

params, submitted = params_form(Fam())
st.session_state["out"] = params
'''


def _app():
    at = AppTest.from_string(SCRIPT, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def test_optional_parameters_start_automatic_and_return_none():
    at = _app()
    assert at.number_input(key="train_fake_size").value is None
    assert at.number_input(key="train_fake_size").placeholder == "automatic"
    assert at.selectbox(key="train_fake_ids").value is None
    assert at.selectbox(key="train_fake_ids").options == ["automatic", "yes", "no"]
    assert at.selectbox(key="train_fake_ids").placeholder == "automatic"  # shown for None
    out = at.session_state["out"]
    assert out["size"] is None and out["ids"] is None and out["rate"] == 0.5
    assert out["count"] == 3 and out["flag"] is True
    assert out["random_state"] == 0  # a seed is never left to chance in the app
    assert "empty for automatic" in at.number_input(key="train_fake_size").help


def test_a_value_replaces_automatic_and_clearing_brings_it_back():
    at = _app()
    at.number_input(key="train_fake_size").set_value(250)
    at.number_input(key="train_fake_rate").set_value(None)
    at.selectbox(key="train_fake_ids").set_value(False)
    at.button[0].click().run()
    out = at.session_state["out"]
    assert out["size"] == 250 and isinstance(out["size"], int)
    assert out["rate"] is None and out["ids"] is False
    at.number_input(key="train_fake_size").set_value(None)
    at.selectbox(key="train_fake_ids").set_value(None)
    at.button[0].click().run()
    out = at.session_state["out"]
    assert out["size"] is None and out["ids"] is None


def test_required_numbers_are_not_clearable():
    at = _app()
    assert at.number_input(key="train_fake_count").placeholder in (None, "")
