"""The Data page reads basket files and users x items tables, by detection or by the format
chosen, and shows the loaders' errors with the options they suggest (Local path)."""

import pytest

from kmviz.ui.dataformats import _options
from kmviz.ui.state import StateKeys

from .apphelpers import DATA, goto, new_session, plain_text


def test_format_options_leave_defaults_out():
    assert _options("auto", None, "") == {}
    assert _options("basket", None, "", True) == {"absent": "zero", "format": "basket"}
    assert _options("basket", True, "NA") == {"format": "basket"}
    assert _options("table", False, " NA, - ") == {"format": "table", "implicit": False,
                                                   "missing": ["NA", "-"]}


def _load_path(at, path):
    at.text_input(key="data_path").input(str(path))
    at.button(key="data_load_path").click().run()
    assert not at.exception
    return at


@pytest.mark.slow
def test_data_page_loads_a_basket_and_a_table_and_explains_a_bad_cell(tmp_path, monkeypatch):
    monkeypatch.setenv("KMVIZ_DATA_DIRS", str(tmp_path))
    basket = tmp_path / "b.csv"
    basket.write_text("u1,Coffee,Tea\nu2,Jam\nu3,Tea,Rice,Jam\n")
    at = goto(new_session(), DATA)
    at.radio(key="data_source").set_value("Local path").run()
    at.selectbox(key="data_path_format").set_value("basket").run()
    at.text_input(key="data_path_user_col").input("0")
    _load_path(at, basket)
    assert not at.error, [e.value for e in at.error]
    r = at.session_state[StateKeys.DATASET]
    assert r.implicit and sorted(r.user_ids) == ["u1", "u2", "u3"] and r.n_items == 4
    assert at.session_state[StateKeys.DATASET_SPEC]["options"] == {"format": "basket",
                                                                    "user_col": 0}
    table = tmp_path / "t.csv"
    table.write_text("user,A,B,C,D\nx,5,NA,1,\ny,1,2,,4\nz,3,,,2\n")
    at.text_input(key="data_path_user_col").input("")
    at.selectbox(key="data_path_format").set_value("table").run()
    _load_path(at, table)
    message = plain_text(at.error[0].value)
    assert "t.csv" in message and "line 2" in message and "missing=" in message
    at.text_input(key="data_path_missing").input("NA")
    _load_path(at, table)
    assert not at.error, [e.value for e in at.error]
    r = at.session_state[StateKeys.DATASET]
    assert r.info["format"] == "table" and r.n_ratings == 7 and list(r.item_ids) == list("ABCD")
