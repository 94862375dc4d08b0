"""kmviz.runs.artifacts: named tables saved with a run (Parquet + JSON header, never
pickled): exact round trip with attributes and tuple columns, atomic private writes, damaged
or missing attachments read as "not computed" with a notice, deletion with the run; and
kmviz.km.saved_tables, the stability of a run kept with it."""

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest

from kmviz.exceptions import RunStoreError
from kmviz.km.saved_tables import save_stability, saved_stabilities, saved_stability
from kmviz.runs import RunStore, artifacts
from tests.test_runs import save_one


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "store")


def _table(n=6):
    rng = np.random.default_rng(0)
    t = pd.DataFrame({
        "rank": np.arange(1, n + 1), "antecedent": [(k,) if k % 2 else (k, k + 1)
                                                    for k in range(n)],
        "consequent": np.arange(n) + 10, "antecedent_name": [f"=item {k}" for k in range(n)],
        "stability": rng.random(n), "hub": rng.random(n) > 0.5,
        "oob_lift": np.where(np.arange(n) == 2, np.nan, rng.random(n))})
    t.attrs.update(n_refits=4, liked=4.0, settings={"D": 8, "resampling": "subsample"},
                   held=rng.random((4, n)) > 0.5, seeds=[1, 2, 3, 4], refits_ran=None)
    return t


def test_round_trip_keeps_rows_types_tuples_and_attributes(store):
    run_id = save_one(store)
    t = _table()
    path = artifacts.save_table(run_id, "stability-x", t, store=store, meta={"kind": "s"})
    got = artifacts.load_table(run_id, "stability-x", store=store)
    pd.testing.assert_frame_equal(got.table, t, check_dtype=True)
    assert got.table["antecedent"].iloc[0] == (0, 1) and got.table["antecedent"].iloc[1] == (1,)
    assert got.table["antecedent_name"].iloc[0] == "=item 0"  # data, not an export
    held = got.table.attrs["held"]
    assert held.dtype == bool and (held == t.attrs["held"]).all()
    assert got.table.attrs["settings"] == {"D": 8, "resampling": "subsample"}
    assert got.table.attrs["seeds"] == [1, 2, 3, 4] and got.meta == {"kind": "s"}
    # private and pickle-free: 0700 folder, 0600 files, a JSON header naming Parquet + npz
    folder = path.parent
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    names = sorted(os.listdir(folder))
    assert sorted(n.rsplit(".", 1)[-1] for n in names) == ["json", "npz", "parquet"]
    assert all(stat.S_IMODE(os.stat(folder / n).st_mode) == 0o600 for n in names)
    header = json.loads(path.read_text())
    assert header["rows"] == 6 and header["tuple_columns"] == ["antecedent"]
    # saving again replaces it atomically and leaves no old or temporary file behind
    t2 = t.head(3)
    t2.attrs = {**t.attrs, "held": t.attrs["held"][:, :3]}
    artifacts.save_table(run_id, "stability-x", t2, store=store)
    assert len(artifacts.load_table(run_id, "stability-x", store=store).table) == 3
    assert len(os.listdir(folder)) == 3
    listed = artifacts.list_tables(run_id, store=store)
    assert list(listed["name"]) == ["stability-x"] and list(listed["rows"]) == [3]


def test_missing_or_damaged_reads_as_not_computed_with_a_notice(store):
    run_id = save_one(store)
    found = artifacts.read_table(run_id, "stability-x", store=store)
    assert found.table is None and found.notice is None  # never computed: nothing to say
    with pytest.raises(RunStoreError, match="No table"):
        artifacts.load_table(run_id, "stability-x", store=store)
    path = artifacts.save_table(run_id, "stability-x", _table(), store=store)
    header = json.loads(path.read_text())
    data = path.parent / header["data"]["file"]
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte
    data.write_bytes(bytes(raw))
    found = artifacts.read_table(run_id, "stability-x", store=store)
    assert found.table is None and "checksum" in found.notice and "compute it again" in \
        found.notice
    for damage, words in [
        (lambda p: p.write_text("{not json"), "not readable JSON"),
        (lambda p: p.write_text(json.dumps({**header, "version": 99})), "version 99"),
        (lambda p: p.write_text(json.dumps({**header, "data": {
            **header["data"], "file": "../../meta.json"}})), "not a file of the attachment"),
        (lambda p: (p.parent / header["data"]["file"]).unlink(), "missing"),
    ]:
        artifacts.save_table(run_id, "stability-x", _table(), store=store)
        header = json.loads(path.read_text())
        damage(path)
        found = artifacts.read_table(run_id, "stability-x", store=store)
        assert found.table is None and words in found.notice, (words, found.notice)
    # a damaged arrays file too
    artifacts.save_table(run_id, "stability-x", _table(), store=store)
    header = json.loads(path.read_text())
    (path.parent / header["arrays"]["file"]).write_bytes(b"PK\x03\x04 nonsense")
    assert "compute it again" in artifacts.read_table(run_id, "stability-x",
                                                      store=store).notice
    # a run that is gone reads as not computed too
    assert "not a run id" in artifacts.read_table("../x", "stability-x", store=store).notice


def test_bad_names_and_values_are_refused_with_the_reason(store):
    run_id = save_one(store)
    for name in ("../up", ".hidden", "UPPER", "", "a/b"):
        with pytest.raises(ValueError, match="name"):
            artifacts.save_table(run_id, name, _table(), store=store)
    bad = pd.DataFrame({"x": [object(), object()]})
    with pytest.raises(ValueError, match="column 'x'"):
        artifacts.save_table(run_id, "t", bad, store=store)
    odd = pd.DataFrame({"x": [1]})
    odd.attrs["f"] = lambda: 0
    with pytest.raises(ValueError, match="JSON"):
        artifacts.save_table(run_id, "t", odd, store=store)
    assert artifacts.list_tables(run_id, store=store).empty  # nothing half-written
    with pytest.raises(RunStoreError, match="No run"):
        artifacts.save_table("20260101-000000-00000000", "t", odd.iloc[:, :0], store=store)


def test_deleting_the_run_or_the_table_deletes_its_files(store):
    run_id = save_one(store)
    path = artifacts.save_table(run_id, "stability-x", _table(), store=store)
    assert artifacts.delete_table(run_id, "stability-x", store=store)
    assert not os.listdir(path.parent) and not artifacts.delete_table(run_id, "stability-x",
                                                                      store=store)
    artifacts.save_table(run_id, "stability-x", _table(), store=store)
    store.delete(run_id)
    assert not (store.runs_dir / run_id).exists()


def test_stability_kept_per_setting_and_found_without_them(store):
    run_id = save_one(store)
    a, b = _table(4), _table(6)
    save_stability(run_id, a, liked=4.0, min_ratings=5, store=store)
    save_stability(run_id, b, liked="interacted", min_ratings=1, store=store)
    got = saved_stability(run_id, liked=4, min_ratings=5, store=store)
    pd.testing.assert_frame_equal(got.table, a)
    assert got.saved.meta["n_refits"] == 4 and got.saved.meta["liked"] == 4.0
    assert len(saved_stability(run_id, liked="interacted", min_ratings=1,
                               store=store).table) == 6
    assert saved_stability(run_id, liked=3.5, min_ratings=5, store=store).table is None
    assert len(saved_stability(run_id, liked=4.0, store=store).table) == 4
    assert len(saved_stability(run_id, min_ratings=1, store=store).table) == 6
    assert saved_stability(run_id, store=store).table is not None  # the newest
    assert len(saved_stabilities(run_id, store=store)) == 2


def test_relation_table_with_multi_item_rules_and_nested_attrs_round_trips(store):
    from kmviz.km.saved_tables import save_relations, saved_relations

    run_id = save_one(store)
    t = pd.DataFrame({"rank": [1, 2, 3], "antecedent": [(4,), (1, 2), (3, 7)],
                      "consequent": [5, 6, 0], "antecedent_name": ["a", "b & c", "d & e"],
                      "size": [1, 2, 2], "support": [9, 4, 3], "co_support": [9, 4, 2],
                      "stability": [1.0, 0.5, np.nan]})
    chosen = pd.DataFrame({"D": [8, 16], "skill": [0.9, 0.95]})
    t.attrs.update(chosen={"table": chosen, "summary": "KM D = 8", "settings": {"D": 8}},
                   held=np.array([[True, False, True], [True, True, False]]), n_refits=2)
    save_relations(run_id, t, store=store, meta={"liked": 4.0})
    back = saved_relations(run_id, store=store)
    assert back.notice is None and back.saved.meta == {"kind": "relations", "liked": 4.0}
    pd.testing.assert_frame_equal(back.table, t)
    assert list(back.table["antecedent"]) == [(4,), (1, 2), (3, 7)]
    assert back.table.attrs["chosen"]["table"] == [{"D": 8, "skill": 0.9},
                                                   {"D": 16, "skill": 0.95}]
    assert back.table.attrs["chosen"]["summary"] == "KM D = 8"
    assert (back.table.attrs["held"] == t.attrs["held"]).all()
    assert saved_relations(run_id, name="other", store=store).table is None
