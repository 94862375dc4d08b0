"""Streamlit glue of the Implications page's table: the filters (quick minimums, items to
require or exclude on either side, a range on any statistic, the order), the support x
confidence scatter linked with the table, the table and the export of every row that passes.
The filtering and the export are :mod:`kmviz.km.relation_view`'s pure functions."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from kmviz import rules as pair_rules
from kmviz.km import relation_view as rv
from kmviz.km import stability as stab
from kmviz.km.figures.implications import relation_scatter_figure, stability_figure

from ..text import md_escape

#: The columns of the table, in order (those present are shown).
SHOWN = ["rank", "stability", "oob_lift_lo", "score", "antecedent_name", "consequent_name",
         "equivalent", "size", "antecedent_group_size", "consequent_group_size",
         "co_support", "support", "n_known", "confidence", "confidence_lower",
         "classic_confidence",
         "base_rate", "lift", "p_value", "heldout_n", "heldout_confidence", "heldout_lift",
         "implied_by", "hub", "antecedent", "consequent"]
#: The label of "keep the table's order" in the sort picker.
TABLE_ORDER = "the ranking"


def _quick_filters(held, p="impl"):
    f1, f2, f3, f4, f5, f6 = st.columns(6, vertical_alignment="bottom")
    q = {"co_support": f1.number_input("min co-support", min_value=0, value=0, step=1,
                                       key=f"{p}_f_support",
                                       help="Users (training) who like both sides."),
         "confidence": f2.number_input(
             "min confidence", min_value=0.0, max_value=1.0, value=0.0, step=0.05,
             key=f"{p}_f_conf", help="Share of the antecedent's fans who rated the "
                                     "consequent and like it."),
         "lift": f3.number_input("min lift", min_value=0.0, value=0.0, step=0.1,
                                 key=f"{p}_f_lift"),
         "heldout_confidence": f4.number_input(
             "min held-out confidence", min_value=0.0, max_value=1.0, value=0.0, step=0.05,
             key=f"{p}_f_heldout", disabled=held is None,
             help="Confidence on the held-out ratings; above 0, rows without held-out data "
                  "are hidden.")}
    if held is None:
        q.pop("heldout_confidence")
    top = int(f5.number_input("top k (0 = all)", min_value=0, value=100, step=10,
                              key=f"{p}_f_topk",
                              help="The k first rows of the table, the graph and the "
                                   "sentences. The export holds every row that passes."))
    hide = f6.checkbox("hide hubs", value=False, key=f"{p}_f_hubs",
                       help="Hubs: consequents implied by more than "
                            f"{pair_rules.HUB_SHARE:.0%} of the items shown.")
    ranges = {c: (float(v), None) for c, v in q.items() if v and float(v) > 0}
    return ranges, top, hide


def _item_filters(view, names, p="impl"):
    label = (lambda i: f"{names[i]} [{i}]")
    left, right = rv.items_in(view, "antecedent"), rv.items_in(view, "consequent")
    a1, a2, a3 = st.columns([3, 3, 1], vertical_alignment="bottom")
    picks = {"require_antecedent": a1.multiselect(
                 "antecedent (if liked) includes", left, key=f"{p}_req_ante",
                 format_func=label, placeholder="any item: type a name"),
             "exclude_antecedent": a2.multiselect(
                 "antecedent excludes", left, key=f"{p}_exc_ante", format_func=label,
                 placeholder="no item excluded")}
    match = a3.radio("includes", rv.MATCH, key=f"{p}_match", horizontal=True,
                     help="any: a rule passes when one of the required items is on its side; "
                          "all: when every one of them is (for multi-item antecedents).")
    c1, c2, _ = st.columns([3, 3, 1], vertical_alignment="bottom")
    picks["require_consequent"] = c1.multiselect(
        "consequent (then liked) is one of", right, key=f"{p}_req_cons", format_func=label,
        placeholder="any item: type a name")
    picks["exclude_consequent"] = c2.multiselect(
        "consequent is none of", right, key=f"{p}_exc_cons", format_func=label,
        placeholder="no item excluded")
    return picks, match


def _range_filters(view, p="impl"):
    stats = rv.statistic_columns(view)
    r1, r2, r3 = st.columns([3, 2, 1], vertical_alignment="bottom")
    chosen = r1.multiselect("filter by a range of", stats, key=f"{p}_range_cols",
                            placeholder="any statistic",
                            help="Each statistic chosen gets a low and a high end (blank: "
                                 "open). A row whose value is undefined fails the range.")
    by = r2.selectbox("sort by", [TABLE_ORDER] + stats, key=f"{p}_sort_by",
                      help="The table's own order, or any statistic (undefined values last).")
    desc = r3.toggle("largest first", value=True, key=f"{p}_sort_desc",
                     disabled=by == TABLE_ORDER)
    ranges = {}
    for col in chosen:
        v = pd.to_numeric(view[col], errors="coerce")
        lo_v, hi_v = (float(v.min()), float(v.max())) if v.notna().any() else (0.0, 0.0)
        a, b, c = st.columns([1, 1, 2], vertical_alignment="bottom")
        lo = a.number_input(f"{col} ≥", value=None, key=f"{p}_range_lo_{col}",
                            placeholder=f"{lo_v:.4g}")
        hi = b.number_input(f"{col} ≤", value=None, key=f"{p}_range_hi_{col}",
                            placeholder=f"{hi_v:.4g}")
        c.caption(f"{col} runs from {lo_v:.4g} to {hi_v:.4g} in the table.")
        ranges[col] = (lo, hi)
    return ranges, (None if by == TABLE_ORDER else by), desc


def _stability_controls(frame, stable, p="impl"):
    s1, s2 = st.columns([1, 3], vertical_alignment="bottom")
    f_stab = s1.number_input("min stability", 0.0, 1.0, 0.0, 0.05, key=f"{p}_f_stab",
                             help="Share of the refits in which the implication held.")
    order = s2.radio("order", ["evidence: out-of-bag lift (lower bound) of the rows with "
                               "enough out-of-bag ratings",
                               "stability alone", "the model's ranking"],
                     key=f"{p}_sort", horizontal=True)
    frame = stab.add_stability(frame, stable)
    if order.startswith("evidence"):
        frame = stab.sort_by_stability(frame, stable.attrs["min_oob_n"])
    elif order.startswith("stability"):
        frame = stab.stability_order(frame)
    return frame, f_stab


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    out = table[[c for c in SHOWN if c in table]]
    out.attrs = {}  # the refits' matrices and the choice stay out of the browser's copy
    if "size" in out and (out["size"] == 1).all():  # pairs only: the column says nothing
        out = out.drop(columns="size")
    for col in ("antecedent", "consequent"):  # a multi-item side reads as "3 & 7"
        if col in out and out[col].dtype == object:
            out = out.assign(**{col: rv.export_frame(out[[col]])[col].to_numpy()})
    return out


def relation_table(run, frame, stable, held, train, liked, fmt, names, count_metrics, *,
                   prefix: str = "impl", title: str = "Implications and their figures"):
    """Filters, counts, scatter, table, one implication across the refits and the export.
    Returns (the rows of ``frame`` that pass, in the chosen order; the filter; top k).
    ``prefix`` starts every widget key (two tables on one page each have their own) and
    names the block's container (``st-key-<prefix>_section`` in the browser)."""
    with st.container(key=f"{prefix}_section"):
        return _relation_table(run, frame, stable, held, train, liked, fmt, names,
                               count_metrics, prefix, title)


def _relation_table(run, frame, stable, held, train, liked, fmt, names, count_metrics, p,
                    title):
    if title:
        st.subheader(title)
    ranges, top, hide = _quick_filters(held, p)
    if stable is not None:
        frame, f_stab = _stability_controls(frame, stable, p)
        if f_stab > 0:
            ranges["stability"] = (float(f_stab), None)
    view = rv.normalize(frame)
    with st.expander("Require or exclude items, filter by any statistic, sort",
                     expanded=False):
        picks, match = _item_filters(view, names, p)
        more, by, desc = _range_filters(view, p)
    spec = rv.RelationFilter(**picks, match=match, ranges={**more, **ranges}, hubs=not hide,
                             sort_by=by, descending=desc)
    passing = rv.apply_filter(view, spec)
    keys = [k for k in rv.selected_keys(st.session_state.get(f"{p}_scatter"))
            if k in passing.index]
    chosen = rv.select_rows(passing, keys)
    table = chosen.head(top) if top else chosen
    count_metrics(frame.attrs.get("counts", {}), len(passing))
    key = _table_key(table, p)
    st.plotly_chart(relation_scatter_figure(passing, highlight=_ticked_rows(table, key)),
                    key=f"{p}_scatter", on_select="rerun", selection_mode=("box", "lasso"))
    if keys:
        st.info(f"{len(chosen):,} rules selected in the chart: the table and the export "
                "hold those. Double-click the chart to clear the selection.",
                icon=":material/filter_alt:")
    st.caption("Drag a box or lasso on the chart to keep those rules; tick rows in the table "
               "to ring them on the chart. " + CONFIDENCE_CAPTION)
    st.dataframe(_shown(table), hide_index=True, column_config=fmt, key=key,
                 on_select="rerun", selection_mode="multi-row",
                 height=min(360, 38 + 35 * max(len(table), 1)))
    st.caption(stab.evidence_caption(table))
    _export_row(run, chosen, train, liked, top, bool(keys), p)
    # the refits behind the stability: a stability table's, or the relation table's own
    # (it keeps one column of attrs["held"] per row, multi-item rows included)
    refits = stable if stable is not None else (
        frame if frame.attrs.get("held") is not None and "rank" in frame else None)
    if refits is not None and len(table):
        _one_refit_view(table, refits, p)
    return frame.loc[chosen.index], spec, top


def _table_key(table, p: str = "impl") -> str:
    """The table's widget key, one per set of rows shown: Streamlit keeps a selection by
    row position, so a table with other rows (a new filter) starts with nothing ticked
    instead of ticking whatever rule now sits at the old positions."""
    digest = hashlib.blake2b(np.asarray(table.index, dtype=np.int64).tobytes(),
                             digest_size=6).hexdigest()
    return f"{p}_table_{digest}"


def _ticked_rows(table, key: str) -> list:
    """The row keys of the rows ticked in the table drawn under ``key`` (the same rows)."""
    state = st.session_state.get(key) or {}
    rows = (state.get("selection") or {}).get("rows") or []
    return [table.index[r] for r in rows if 0 <= r < len(table)]


CONFIDENCE_CAPTION = rv.CONFIDENCE_WORDS + (
    " **Lift** = confidence ÷ base rate (1 = the antecedent tells nothing beyond the "
    "consequent's popularity). Held-out columns: users who like the antecedent in training "
    "and whose rating of the consequent was held out.")


def _export_row(run, rows, train, liked, top, selected, p="impl") -> None:
    # on_click="ignore": a download does not rerun the page (its rerun could redraw the
    # button, and drop the download, before the browser fetched the file)
    phrase = pair_rules.liked_phrase(train, liked)
    c1, c2, c3 = st.columns([1, 1, 3], vertical_alignment="center")
    for col, fmt in zip((c1, c2), rv.EXPORT_FORMATS):
        col.download_button(f"{fmt.upper()} ({len(rows):,} rows)",
                            data=lambda fmt=fmt: rv.export_bytes(rows, fmt, phrase),
                            file_name=rv.export_name(run.run_id, fmt),
                            mime=rv.EXPORT_FORMATS[fmt], key=f"{p}_{fmt}",
                            icon=":material/download:", on_click="ignore")
    shown = f"; the table shows the first {min(top, len(rows)):,}" if top else ""
    what = "the rules selected in the chart among those" if selected else "every row"
    c3.caption(f"Download {what} that pass the filters: **{len(rows):,} rows**{shown}, in "
               "the table's order, with every statistic (training and held-out), the groups, "
               "the hub count and the meaning of liked.")


def _one_refit_view(table, stable, p="impl") -> None:
    if "stable" in stable:
        st.caption(md_escape(stab.stability_caption(stable)))
    else:  # a relation table: its stability is over the miner's refits
        st.caption(f"{int(stable.attrs.get('n_refits', 0))} KM refits on half the users "
                   "each; a row's stability is the share of them whose supports state it "
                   "(multi-item rows included).")
    pick = st.selectbox("one implication across the refits", range(min(len(table), 500)),
                        key=f"{p}_stab_pick", format_func=lambda k: (
                            f"{table['antecedent_name'].iloc[k]} ⇒ "
                            f"{table['consequent_name'].iloc[k]}"))
    row = table.iloc[pick]
    held_in = stab.row_held(stable, row)
    st.plotly_chart(stability_figure(held_in), key=f"{p}_stab_fig")
    st.text(stab.evidence_sentence(row))

