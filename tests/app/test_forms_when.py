"""Settings forms show only the settings whose ``Param.when`` holds for the chosen values
(generic: no family named), keep the hidden ones' values, and draw the settings that others
depend on outside the form so that a change redraws it at once."""

from streamlit.testing.v1 import AppTest

from kmviz._params import Param
from kmviz.ui.forms import form_layout

CONSTRAINTS = {
    "method": Param(str, options=("a", "b"), label="method"),
    "mu": Param(float, low=0.0, label="mu"),
    "only_a": Param(int, low=1, label="only a", when={"method": ("a",)}),
    "only_b": Param(float, low=0.0, label="only b", when={"method": ("b",)}),
    "b_more": Param(bool, label="b more", advanced=True, when={"method": ("b",)}),
    "both": Param(int, low=0, label="both", advanced=True, when={"method": ("a", "b")}),
}


def test_form_layout_follows_when():
    a = form_layout(CONSTRAINTS, {"method": "a"})
    assert a == {"controls": ["method"], "main": ["mu", "only_a"], "more": ["both"]}
    b = form_layout(CONSTRAINTS, {"method": "b"})
    assert b == {"controls": ["method"], "main": ["mu", "only_b"], "more": ["b_more", "both"]}
    plain = {k: v for k, v in CONSTRAINTS.items() if not v.when}  # nothing depends on others
    assert form_layout(plain, {"method": "a"}) == {"controls": [], "main": ["method", "mu"],
                                                   "more": []}


def test_a_setting_that_depends_on_two_others_needs_both():
    constraints = {"method": Param(str, options=("a", "b")),
                   "solver": Param(str, options=("x", "y"), when={"method": ("a",)}),
                   "pc": Param(str, options=("p",), when={"method": ("a",), "solver": ("y",)})}
    assert form_layout(constraints, {"method": "a", "solver": "x"})["controls"] == [
        "method", "solver"]
    assert form_layout(constraints, {"method": "a", "solver": "y"})["main"] == ["pc"]
    assert form_layout(constraints, {"method": "b", "solver": "y"}) == {
        "controls": ["method"], "main": [], "more": []}


SCRIPT = '''
import streamlit as st
from kmviz.ui.forms import params_form
from tests.app.test_forms_when import CONSTRAINTS

class Fam:
    name = "fake"
    def constraints(self):
        return dict(CONSTRAINTS)
    def default_params(self):
        return {"method": "a", "mu": 0.5, "only_a": 3, "only_b": 0.25, "b_more": False,
                "both": 1}

params, submitted = params_form(Fam())
st.session_state["out"] = params
'''


def _keys(at) -> set:
    widgets = list(at.number_input) + list(at.selectbox) + list(at.checkbox)
    return {w.key for w in widgets}


def test_the_form_shows_the_chosen_methods_settings_and_keeps_the_others():
    at = AppTest.from_string(SCRIPT, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert {"train_fake_method", "train_fake_mu", "train_fake_only_a",
            "train_fake_both"} == _keys(at)
    at.number_input(key="train_fake_only_a").set_value(7)
    at.button[0].click().run()
    assert at.session_state["out"]["only_a"] == 7
    # the method is outside the form: choosing it redraws the form without a submit
    at.selectbox(key="train_fake_method").set_value("b").run()
    assert not at.exception, at.exception
    assert {"train_fake_method", "train_fake_mu", "train_fake_only_b", "train_fake_b_more",
            "train_fake_both"} == _keys(at)
    out = at.session_state["out"]
    assert out["method"] == "b" and out["only_a"] == 7 and out["only_b"] == 0.25
    at.number_input(key="train_fake_only_b").set_value(0.75)
    at.button[0].click().run()
    at.run()  # a later run (the hidden widget's state is gone by now) keeps the value
    out = at.session_state["out"]
    assert out["only_b"] == 0.75 and out["only_a"] == 7
    at.selectbox(key="train_fake_method").set_value("a").run()
    assert at.number_input(key="train_fake_only_a").value == 7
    assert at.session_state["out"]["only_b"] == 0.75
