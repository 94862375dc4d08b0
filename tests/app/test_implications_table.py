"""The Implications page's table as an analyst uses it: items required or excluded on either
side, a range on any statistic, any order, the scatter, and the export of every row that
passes with its count beside the buttons (the same rows as relation_view on the run)."""

import base64
import json

import numpy as np
import pytest

from kmviz.km import mining
from kmviz.km import relation_view as rv
from tests.app.apphelpers import (KM_IMPLICATIONS, goto, load_planted, new_session, only_run,
                                  train)


def _array(a):
    """A Plotly array from a figure's JSON: a list, or typed binary ``{dtype, bdata}``."""
    if isinstance(a, dict) and "bdata" in a:
        return np.frombuffer(base64.b64decode(a["bdata"]), dtype=a["dtype"])
    return np.asarray(a)


def _table(at):
    found = [d.value for d in at.dataframe if "implied_by" in d.value.columns]
    assert found, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def _impl_downloads(at) -> list:
    """The model table's export buttons (not those of "Relations in the data")."""
    return [b for b in at.get("download_button")
            if b.proto.id.endswith(("-impl_csv", "-impl_parquet"))]


def _impl_specs(at) -> list[dict]:
    """The model table's charts (keys starting with impl_)."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "-impl_" in c.proto.id]


@pytest.mark.slow
def test_require_exclude_ranges_sort_and_the_export_count():
    at = train(load_planted(new_session(), n_users=150, n_items=40, D=6), D=6, max_iter=5)
    at = goto(at, KM_IMPLICATIONS)
    run = only_run(at)
    train_part, held = run.split.train, run.split.held_out()
    at.number_input(key="impl_liked").set_value(0.3).run()
    at.number_input(key="impl_f_topk").set_value(5).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    frame = mining.mine_implications(run.model, train_part, liked=0.3, validation=held)
    view = rv.normalize(frame)
    # the scatter of every passing row, shaded by lift, each point keyed by its row
    scatter = [s for s in _impl_specs(at)
               if s["layout"].get("title", {}).get("text", "").startswith("Support ×")]
    assert scatter and len(_array(scatter[0]["data"][0]["x"])) == len(frame)
    assert (_array(scatter[0]["data"][0]["customdata"]) == frame.index.to_numpy()).all()
    # require an item on the left (the most frequent antecedent), exclude one on the right
    left = int(view["antecedent"].value_counts().index[0])
    right = int(view.loc[view["antecedent"] == left, "consequent"].iloc[0])
    at.multiselect(key="impl_req_ante").set_value([left]).run()
    assert at.selectbox(key="impl_item").value == left  # the graph follows the required item
    at.multiselect(key="impl_exc_cons").set_value([right]).run()
    at.multiselect(key="impl_range_cols").set_value(["classic_confidence"]).run()
    at.number_input(key="impl_range_lo_classic_confidence").set_value(0.05).run()
    at.selectbox(key="impl_sort_by").set_value("lift").run()
    at.toggle(key="impl_sort_desc").set_value(False).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    want = view[(view["antecedent"] == left) & (view["consequent"] != right)
                & (view["classic_confidence"] >= 0.05)]
    want = want.sort_values("lift", kind="stable", na_position="last")
    assert 1 <= len(want) < len(view)
    table = _table(at)
    assert len(table) == min(5, len(want))
    assert list(table["consequent"]) == list(want["consequent"][:5])
    assert (table["antecedent"] == left).all() and (table["consequent"] != right).all()
    # the export holds every passing row (not the top 5) and says how many beside the buttons
    n = len(want)
    labels = sorted(b.label for b in _impl_downloads(at))
    assert labels == [f"CSV ({n:,} rows)", f"PARQUET ({n:,} rows)"]
    assert any(f"**{n:,} rows**" in c.value and "first " in c.value for c in at.caption)
    assert any(m.label == "rows passing the filters" and m.value == f"{n:,}" for m in at.metric)
    exported = rv.export_frame(rv.apply_filter(view, rv.RelationFilter(
        require_antecedent=[left], exclude_consequent=[right],
        ranges={"classic_confidence": (0.05, None)}, sort_by="lift", descending=False)))
    assert len(exported) == n and list(exported["consequent"]) == list(want["consequent"])
    # a range whose ends are the wrong way round says so, no traceback
    at.number_input(key="impl_range_hi_classic_confidence").set_value(0.01).run()
    assert not at.exception
    assert any("low end" in e.value for e in at.error)
    at.number_input(key="impl_range_hi_classic_confidence").set_value(None).run()
    assert not at.error
    # exclude the only required item's every rule: nothing passes, every view says so
    at.multiselect(key="impl_exc_ante").set_value([left]).run()
    assert not at.exception and len(_table(at)) == 0
    assert sorted(b.label for b in _impl_downloads(at)) == ["CSV (0 rows)",
                                                                 "PARQUET (0 rows)"]
    empty = [a.get("text") for s in _impl_specs(at)
             if s["layout"].get("title", {}).get("text", "").startswith("Support ×")
             for a in s["layout"].get("annotations", [])]
    assert "No rule passes the filters." in empty
