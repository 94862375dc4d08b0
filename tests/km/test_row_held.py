"""Per-refit history of one row: a relation table's rows (multi-item ones included) by rank,
a stable_implications table's by its pair (kmviz.km.stability.row_held)."""

import numpy as np
import pandas as pd

from kmviz.km.stability import row_held


def test_a_relation_tables_rows_by_rank_including_multi_item_ones():
    table = pd.DataFrame({"rank": [1, 2, 3], "antecedent": [(4,), (1, 2), (5,)],
                          "consequent": [7, 3, 0]})
    H = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 1, 0]], bool)  # 4 refits x 3 rows
    table.attrs["held"] = H
    shown = table.sort_values("consequent")  # filtered / sorted views keep their rank
    for _, row in shown.iterrows():
        np.testing.assert_array_equal(row_held(table, row), H[:, row["rank"] - 1])
    assert row_held(table, table.iloc[1]).tolist() == [False, True, True, True]


def test_a_stability_table_by_its_pair():
    stable = pd.DataFrame({"antecedent": [4, 1], "consequent": [7, 3]})
    stable.attrs["held"] = np.array([[1, 0], [1, 1]], bool)
    assert row_held(stable, {"antecedent": 1, "consequent": 3}).tolist() == [False, True]
    assert row_held(stable, {"antecedent": (4,), "consequent": 7}).tolist() == [True, True]
    assert row_held(stable, {"antecedent": 9, "consequent": 9}).tolist() == [False, False]
    assert row_held(stable, {"antecedent": (1, 4), "consequent": 3}).size == 0
    assert row_held(pd.DataFrame({"a": [1]}), {"antecedent": 1, "consequent": 2}).size == 0
