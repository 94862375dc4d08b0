"""The Data page's choice of file format (``format=``) and the options of the basket and
users x items table readers that their error messages suggest (``missing=``,
``implicit=``) and, for one-class files, reading absent pairs as 0 (``absent=``); the
columns, delimiter and header are in :mod:`kmviz.ui.forms`."""

from __future__ import annotations

import streamlit as st

#: format= value -> label ("auto" detects the format).
FORMAT_CHOICES = {
    "auto": "Detect from the file",
    "delimited": "Triplets: a rating (user, item[, value]) per line",
    "basket": "Basket: a line of items per user",
    "table": "Table: users x items, a header row of item names",
    "matrix-market": "Matrix Market (.mtx)",
}
#: implicit= value of a table -> label.
CELL_CHOICES = {None: "Detect: 0/1 only means interactions",
                True: "0/1 interactions", False: "Ratings (0 and 1 too)"}


def format_options(*, prefix: str) -> dict:
    """The format options the widgets of :func:`format_options_form` hold now (read from
    the session state, for a button's callback), defaults left out."""
    get = st.session_state.get
    return _options(get(f"{prefix}_format", "auto"), get(f"{prefix}_cells"),
                    get(f"{prefix}_missing", ""), get(f"{prefix}_absent", False))


def _options(fmt, cells, missing, absent=False) -> dict:
    out = {"absent": "zero"} if absent else {}
    if fmt and fmt != "auto":
        out["format"] = fmt
    if fmt == "table":
        if cells is not None:
            out["implicit"] = bool(cells)
        markers = [m.strip() for m in str(missing or "").split(",") if m.strip()]
        if markers:
            out["missing"] = markers
    return out


def format_options_form(*, prefix: str) -> dict:
    """A format selector (detect, triplets, basket, table, Matrix Market) and, for a table,
    what its cells are and which texts mean "not rated"; returns :func:`format_options`."""
    fmt = st.selectbox("File format (format=)", list(FORMAT_CHOICES),
                       format_func=FORMAT_CHOICES.get, key=f"{prefix}_format",
                       help="Detected from the file unless chosen: a header row of 4 or more "
                            "item names over numbers or empty cells is a table; lines with "
                            "different numbers of fields are baskets; else triplets.")
    if fmt == "basket":
        st.caption("Items are separated by commas, tabs, semicolons or spaces (detected); "
                   "an item repeated on a line counts once. If the first field of each line "
                   "is a user id, set User column to 0 under Reading options.")
    elif fmt == "table":
        c = st.columns(2)
        c[0].selectbox("Cells (implicit=)", list(CELL_CHOICES), format_func=CELL_CHOICES.get,
                       key=f"{prefix}_cells")
        c[1].text_input("Also not rated (missing=)", key=f"{prefix}_missing",
                        placeholder="for example NA", help="Texts that mean 'not rated' "
                        "besides an empty cell, separated by commas.")
        st.caption("The first column holds user ids when its header is empty or user/id, or "
                   "when it holds text; set User column under Reading options to choose "
                   "('none' for no id column).")
    st.checkbox("Absent pairs as 0 (absent=zero)", key=f"{prefix}_absent",
                help="For one-class files (baskets, user,item pairs, 0/1 tables): every item "
                     "a user does not have counts as a 0. KM models ratings, so it needs "
                     "this to learn from such a file; one-class MF and similarity learning "
                     "treat absent pairs themselves, so leave it off for them.")
    return format_options(prefix=prefix)
