"""Every widget whose label is a symbol or a short phrase says what it does (its help, the
(?) beside it): the Recovery and Nyström pages (no run needed), the Data page's split form
and the Train page's family picker."""

import pytest

from .apphelpers import DATA, TRAIN, goto, new_session

#: Labels that say all there is to say on their own.
SELF_EXPLAINING = {"Source", "Dataset", "Run", "Runs to overlay", "sampling schemes"}
KINDS = ("slider", "select_slider", "multiselect", "number_input", "radio", "toggle",
         "checkbox", "selectbox", "text_input")


def _without_help(at) -> list[str]:
    out = []
    for kind in KINDS:
        for widget in at.get(kind):
            label = widget.proto.label
            if label not in SELF_EXPLAINING and not widget.proto.help:
                out.append(f"{kind} {label!r}")
    return out


@pytest.mark.parametrize("page", [DATA, TRAIN, "app_pages/gfm_recovery.py",
                                  "app_pages/kmc_nystrom.py"])
def test_widgets_say_what_they_do(page):
    at = goto(new_session(), page)
    assert not at.exception
    missing = _without_help(at)
    assert not missing, missing
