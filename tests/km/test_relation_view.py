"""kmviz.km.relation_view: the analyst's filters, order, selection and export of a relation
table, on mine_implications' table and on a table of the default path's shape (tuple
antecedents), against brute force over the rows and counts from the ratings."""

import io

import numpy as np
import pandas as pd
import pytest

from kmviz.data import Ratings
from kmviz.exceptions import InvalidParameterError
from kmviz.km import mine_implications
from kmviz.km import relation_view as rv
from kmviz.km.figures.implications import relation_scatter_figure

PSI = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 1],
                [0, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=float)


def _ratings(seed=0, n_users=80, observed=0.7):
    rng = np.random.default_rng(seed)
    n_items = PSI.shape[0]
    mask = rng.random((n_users, n_items)) < observed
    u, i = np.nonzero(mask)
    v = rng.integers(1, 6, u.size).astype(float)
    names = ["=cmd|' /C calc'!A0" if k == 3 else f"film {k}" for k in range(n_items)]
    return Ratings.from_arrays(u, i, v, r_min=1, r_max=5, user_ids=np.arange(n_users),
                               item_ids=np.arange(n_items), item_names=names)


@pytest.fixture(scope="module")
def table():
    r = _ratings()
    return r, mine_implications(PSI, r, liked=4, merge_groups=False)


def _multi_table(r):
    """A relation table in the default path's columns (kmviz.km.relations.RELATION_COLUMNS)
    with one- and two-item antecedents, its counts from the ratings."""
    ante = [(0,), (1, 4), (2,), (0, 5), (4,), (1, 5), (7,)]
    cons = [2, 7, 6, 3, 7, 2, 1]
    counts = rv.rule_counts(r, ante, cons, liked=4)
    names = [r.item_label(k) for k in range(r.n_items)]
    return pd.DataFrame({
        "rank": np.arange(1, len(ante) + 1), "antecedent": ante, "consequent": cons,
        "antecedent_name": [" & ".join(names[k] for k in a) for a in ante],
        "consequent_name": [names[c] for c in cons], "size": [len(a) for a in ante],
        "support": counts["support"], "antecedent_support": counts["support"],
        "n_known": counts["n_known"], "co_support": counts["co_support"],
        "confidence": counts["confidence"], "confidence_lower": counts["confidence"] * 0.9,
        "classic_confidence": counts["classic_confidence"], "base_rate": 0.5,
        "lift": np.linspace(2.0, 0.8, len(ante)), "conviction_lower": 1.0,
        "stability": [1, .5, .9, .2, .7, 0, .4], "score": np.linspace(1, 0, len(ante))})


def test_normalize_renames_and_adds_classic_confidence_from_the_counts(table):
    r, frame = table
    view = rv.normalize(frame)
    assert list(view.index) == list(frame.index)
    assert (view["co_support"] == frame["co_support"]).all()
    assert (view["antecedent_support"] == frame["support"]).all()
    assert (view["confidence_lower"] == frame["confidence_lo"]).all()
    assert (view["size"] == 1).all()
    oracle = rv.rule_counts(r, frame["antecedent"], frame["consequent"], liked=4)
    # the table's figures are the ratings' counts: confidence among the antecedent's fans who
    # rated the consequent, classic confidence among all of them
    assert np.allclose(view["confidence"], oracle["confidence"], equal_nan=True)
    assert np.allclose(view["classic_confidence"], oracle["classic_confidence"], equal_nan=True)
    assert (view["support"].to_numpy() == oracle["support"]).all()
    assert (view["co_support"].to_numpy() == oracle["co_support"]).all()
    assert (view["n_known"].to_numpy() == oracle["n_known"]).all()
    assert (oracle["n_known"] <= oracle["support"]).all()
    assert (view["classic_confidence"] <= view["confidence"] + 1e-12).all()
    assert (view["classic_confidence"] < view["confidence"] - 1e-9).any()  # they differ here
    multi = _multi_table(r)
    again = rv.normalize(multi)  # the default path's table: nothing to add or rename
    assert list(again.columns) == list(multi.columns)
    assert list(again["size"]) == [1, 2, 1, 2, 1, 2, 1]


def test_require_and_exclude_on_either_side_agree_with_brute_force(table):
    r, frame = table
    for t in (rv.normalize(frame), rv.normalize(_multi_table(r))):
        sides = [(set(rv.antecedent_items(a)), c) for a, c in zip(t["antecedent"],
                                                                  t["consequent"])]
        for spec, want in [
            (rv.RelationFilter(require_antecedent=[1]), lambda a, c: 1 in a),
            (rv.RelationFilter(require_antecedent=[1, 4]), lambda a, c: bool({1, 4} & a)),
            (rv.RelationFilter(require_antecedent=[1, 4], match="all"),
             lambda a, c: {1, 4} <= a),
            (rv.RelationFilter(exclude_antecedent=[0, 1]), lambda a, c: not {0, 1} & a),
            (rv.RelationFilter(require_consequent=[7, 2]), lambda a, c: c in (7, 2)),
            (rv.RelationFilter(exclude_consequent=[2], require_antecedent=[0, 1]),
             lambda a, c: c != 2 and bool({0, 1} & a)),
        ]:
            got = rv.apply_filter(t, spec)
            expect = [k for k, (a, c) in zip(t.index, sides) if want(a, c)]
            assert list(got.index) == expect, spec
            assert len(expect) not in (0, len(t)) or spec.match == "all"  # the filter bites


def test_ranges_on_any_statistic_and_undefined_values(table):
    r, frame = table
    t = rv.normalize(frame)
    t.loc[t.index[0], "lift"] = np.nan
    spec = rv.RelationFilter(ranges={"lift": (1.0, None), "co_support": (2, 10),
                                     "confidence": (None, 0.9), "p_value": (None, None)})
    got = rv.apply_filter(t, spec)
    brute = [k for k, row in t.iterrows() if row["lift"] == row["lift"] and row["lift"] >= 1.0
             and 2 <= row["co_support"] <= 10 and row["confidence"] <= 0.9]
    assert list(got.index) == brute and 0 < len(brute) < len(t)
    assert t.index[0] not in got.index  # NaN fails an active range
    with pytest.raises(InvalidParameterError, match="low end"):
        rv.RelationFilter(ranges={"lift": (2.0, 1.0)})
    with pytest.raises(InvalidParameterError, match="no such column"):
        rv.apply_filter(t, rv.RelationFilter(ranges={"nope": (0, 1)}))
    with pytest.raises(InvalidParameterError, match="match"):
        rv.RelationFilter(match="some")
    stats = rv.statistic_columns(t)
    assert {"support", "confidence", "classic_confidence", "lift", "p_value"} <= set(stats)
    assert not {"antecedent", "consequent", "hub", "equivalent"} & set(stats)


def test_sort_by_any_statistic_undefined_last():
    t = pd.DataFrame({"antecedent": [0, 1, 2, 3], "consequent": [4, 4, 4, 4],
                      "lift": [1.5, np.nan, 3.0, 1.5], "support": [1, 2, 3, 4]})
    got = rv.apply_filter(t, rv.RelationFilter(sort_by="lift"))
    assert list(got.index) == [2, 0, 3, 1]  # ties keep the table's order, NaN last
    got = rv.apply_filter(t, rv.RelationFilter(sort_by="lift", descending=False))
    assert list(got.index) == [0, 3, 2, 1]
    assert list(rv.apply_filter(t, rv.RelationFilter()).index) == [0, 1, 2, 3]


def test_export_holds_every_passing_row_and_the_count_shown_equals_it(table):
    r, frame = table
    t = rv.normalize(frame)
    spec = rv.RelationFilter(exclude_consequent=[7], ranges={"co_support": (1, None)})
    passing = rv.apply_filter(t, spec)
    assert 100 < len(t) or len(passing) < len(t)
    csv = rv.export_bytes(passing, "csv", "rated 4 or more")
    back = pd.read_csv(io.BytesIO(csv))
    assert len(back) == len(passing)  # every row, not a top k
    assert list(back["antecedent"]) == list(passing["antecedent"])
    assert list(back["consequent"]) == list(passing["consequent"])
    assert np.allclose(back["classic_confidence"], passing["classic_confidence"],
                       equal_nan=True)
    assert (back["liked"] == "rated 4 or more").all()
    # a formula-like item name is written as text, not a formula
    names = set(back["antecedent_name"]) | set(back["consequent_name"])
    assert not any(str(n).startswith("=") for n in names)
    assert "'=cmd|' /C calc'!A0" in names
    pq = pd.read_parquet(io.BytesIO(rv.export_bytes(passing, "parquet")))
    assert len(pq) == len(passing) and list(pq["support"]) == list(passing["support"])
    # through the page's other views: the original frame's rows, same order
    rows = rv.filter_frame(frame, spec)
    assert list(rows.index) == list(passing.index) and "co_support" in rows
    with pytest.raises(InvalidParameterError, match="format"):
        rv.export_bytes(passing, "xlsx")


def test_multi_item_rules_export_as_text_and_filter_by_set(table):
    r, _ = table
    t = rv.normalize(_multi_table(r))
    got = rv.apply_filter(t, rv.RelationFilter(require_antecedent=[5]))
    assert [tuple(a) for a in got["antecedent"]] == [(0, 5), (1, 5)]
    back = pd.read_csv(io.BytesIO(rv.export_bytes(got, "csv")))
    assert list(back["antecedent"]) == ["0 & 5", "1 & 5"]
    assert back["antecedent_name"].iloc[0] == "film 0 & film 5"
    assert rv.items_in(t, "antecedent") == [0, 1, 2, 4, 5, 7]
    fig = relation_scatter_figure(t)
    assert list(fig.data[0].x) == list(t["co_support"]) and len(fig.data[0].x) == len(t)
    assert rv.antecedent_items(np.int64(3)) == (3,) and rv.antecedent_items([2, 1]) == (2, 1)
    with pytest.raises(InvalidParameterError):
        rv.antecedent_items("a")


def test_scatter_points_carry_row_keys_and_a_selection_filters_the_table(table):
    r, frame = table
    t = rv.apply_filter(rv.normalize(frame), rv.RelationFilter(ranges={"lift": (1.0, None)}))
    fig = relation_scatter_figure(t, highlight=list(t.index[:2]))
    pts = fig.data[0]
    assert list(pts.customdata) == list(t.index)
    assert list(pts.x) == list(t["co_support"]) and np.allclose(pts.y, t["confidence"])
    assert list(fig.data[1].customdata) == list(t.index[:2])  # ringed: the table's selection
    # a box selection (Streamlit's selection state) names rows by their key
    chosen = [int(t.index[3]), int(t.index[1])]
    state = {"selection": {"points": [{"customdata": chosen[0]}, {"customdata": [chosen[1]]},
                                      {"customdata": float(chosen[0])}]}}
    assert rv.selected_keys(state) == chosen
    sel = rv.select_rows(t, rv.selected_keys(state))
    assert list(sel.index) == [t.index[1], t.index[3]]  # in the table's order
    assert rv.selected_keys(None) == [] and len(rv.select_rows(t, [])) == len(t)
    assert "No rule" in relation_scatter_figure(t.head(0)).layout.annotations[0].text
    capped = relation_scatter_figure(t, max_points=3)
    assert len(capped.data[0].x) == 3 and "first 3" in capped.layout.title.text
