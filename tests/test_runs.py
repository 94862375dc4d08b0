"""Run store: round trip, atomic saves, concurrent writers, delete, export, bad runs."""

import io
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
import zipfile

import numpy as np
import pandas as pd
import pytest

from kmviz import families
from kmviz.data import Ratings
from kmviz.exceptions import RunStoreError
from kmviz.runs import RUN_FORMAT, RunStore, default_runs_dir
from kmviz.trace import Trace


def make_trace(n=3, solver="km.enhanced"):
    trace = Trace(solver, {"D": 4, "gamma": 100.0})
    for i in range(n):
        with trace.phase("I-A"):
            pass
        trace.record(objective=10.0 - i, train_rmse=0.3 - 0.01 * i, n_evd=i)
    trace.event("warning", "max_iter reached", iteration=n)
    trace.stop_reason = "max_iter"
    return trace


def make_arrays(seed=0):
    rng = np.random.default_rng(seed)
    return {"theta": rng.random((6, 4)), "psi": rng.random((9, 4)) > 0.5}


def save_one(store, *, label=None, seed=0, dataset="toy", **kw):
    return store.save(
        "km", make_trace(), make_arrays(seed), dataset=dataset,
        params={"D": 4, "gamma": 100.0, "bqp_solver": "enhanced", "schedule": {"step": 0.5}},
        metrics={"train_rmse": 0.28, "val_nrmse": 0.21}, label=label, **kw,
    )


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "store")


# ----------------------------------------------------------------------------- round trip


def test_round_trip_save_list_load(store):
    ratings = Ratings.from_arrays([1, 1, 2, 3], [10, 20, 10, 30], [1.0, 5.0, 3.0, 4.0],
                                  name="tiny")
    trace, arrays = make_trace(), make_arrays()
    params = {"D": 4, "gamma": 100.0, "bqp_solver": "enhanced", "seed": np.int64(3)}
    run_id = store.save("km", trace, arrays, dataset=ratings, params=params,
                        metrics={"train_rmse": np.float64(0.28), "val_nrmse": 0.21})

    df = store.list()
    assert list(df["run_id"]) == [run_id]
    row = df.iloc[0]
    assert row["family"] == "km" and row["label"] == "km on tiny"
    assert row["dataset"] == "tiny" and row["fingerprint"] == ratings.fingerprint()
    assert row["status"] == "max_iter" and row["n_iter"] == 3
    assert row["val_nrmse"] == 0.21 and row["train_rmse"] == 0.28
    assert row["D"] == 4 and row["bqp_solver"] == "enhanced" and row["seed"] == 3
    assert row["duration_s"] == pytest.approx(trace.rows[-1]["wall_s"])
    assert isinstance(row["created"], pd.Timestamp) and row["created"].tzinfo is not None

    run = store.load(run_id)
    assert run.run_id == run_id and run.family == "km"
    assert run.params == {"D": 4, "gamma": 100.0, "bqp_solver": "enhanced", "seed": 3}
    assert run.metrics == {"train_rmse": 0.28, "val_nrmse": 0.21}
    assert run.dataset["n_users"] == 3 and run.dataset["n_ratings"] == 4
    assert run.meta["format"] == RUN_FORMAT
    assert set(run.arrays) == {"theta", "psi"}
    np.testing.assert_array_equal(run.arrays["theta"], arrays["theta"])
    np.testing.assert_array_equal(run.arrays["psi"], arrays["psi"])
    assert run.arrays["psi"].dtype == bool
    assert run.trace.to_dict() == trace.to_dict()


def test_list_is_newest_first_and_flattens_nested_params(store):
    first = save_one(store, label="first")
    time.sleep(0.01)  # created has millisecond resolution
    second = save_one(store, label="second")
    df = store.list()
    assert list(df["run_id"]) == [second, first]
    assert list(df["label"]) == ["second", "first"]
    assert df["schedule.step"].tolist() == [0.5, 0.5]
    assert len(store) == 2 and first in store and "nope" not in store


def test_param_colliding_with_a_core_column_is_prefixed(store):
    store.save("km", make_trace(), {}, dataset="toy", params={"label": "x"}, metrics={})
    df = store.list()
    assert df["label"].iloc[0] == "km on toy" and df["param_label"].iloc[0] == "x"


def test_empty_store_lists_core_columns(store):
    df = store.list()
    assert df.empty and "run_id" in df.columns and "created" in df.columns


def test_family_taken_from_a_registered_estimator(store):
    # one rule for "which family is this model": the registry's (kmviz.families.family_of)
    estimator = families.get("kmc").estimator_class()()
    run_id = store.save(estimator, make_trace(), {}, dataset="toy", params={}, metrics={})
    assert store.load(run_id).family == "kmc"


def test_default_dir_follows_env_var(monkeypatch, tmp_path):
    monkeypatch.setenv("KMVIZ_RUNS_DIR", str(tmp_path / "envstore"))
    assert default_runs_dir() == tmp_path / "envstore"
    assert RunStore().path == tmp_path / "envstore"
    monkeypatch.delenv("KMVIZ_RUNS_DIR")
    assert default_runs_dir().name == "runs" and "kmviz" in str(default_runs_dir())


# ----------------------------------------------------------------------------- bad input to save


@pytest.mark.parametrize(
    "arrays, match",
    [
        ({"x": np.array([{"a": 1}], dtype=object)}, "dtype object"),
        ({"file": np.zeros(2)}, "array name 'file' is not allowed"),
        ({"bad name": np.zeros(2)}, "array name 'bad name' is not allowed"),
        ([np.zeros(2)], "arrays must be a dict"),
    ],
)
def test_save_refuses_unstorable_arrays(store, arrays, match):
    with pytest.raises(ValueError, match=match):
        store.save("km", make_trace(), arrays, dataset="toy", params={}, metrics={})
    assert store.list().empty


def test_save_refuses_non_json_params_and_bad_trace(store):
    with pytest.raises(ValueError, match="params must be JSON-serializable"):
        store.save("km", make_trace(), {}, dataset="toy", params={"f": object()}, metrics={})
    with pytest.raises(ValueError, match="trace must be a kmviz Trace"):
        store.save("km", {"rows": []}, {}, dataset="toy", params={}, metrics={})
    with pytest.raises(ValueError, match="model family must be a short name"):
        store.save("k m", make_trace(), {}, dataset="toy", params={}, metrics={})
    assert store.list().empty


# ----------------------------------------------------------------------------- atomicity


def _store_contents(store):
    return sorted(p.name for p in store.runs_dir.iterdir())


def test_failure_while_writing_files_leaves_nothing(store, monkeypatch):
    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(RunStoreError, match="Could not save the run .*disk full"):
        save_one(store)
    assert store.list().empty
    assert _store_contents(store) == []


def test_failure_at_rename_leaves_nothing(store, monkeypatch):
    import kmviz.runs.store as runs_module

    def failing_replace(src, dst):
        raise OSError("rename refused")

    monkeypatch.setattr(runs_module.os, "replace", failing_replace)
    with pytest.raises(RunStoreError, match="rename refused"):
        save_one(store)
    monkeypatch.undo()
    assert store.list().empty
    assert _store_contents(store) == []


def test_failure_at_index_insert_removes_the_folder(store, monkeypatch):
    good = save_one(store, label="good")

    def failing_insert(self, conn, meta):
        assert (self.runs_dir / meta["run_id"] / "meta.json").exists()  # folder already moved
        raise RuntimeError("crash between rename and index")

    monkeypatch.setattr(RunStore, "_insert_row", failing_insert)
    with pytest.raises(RuntimeError, match="crash between rename and index"):
        save_one(store, label="bad")
    monkeypatch.undo()
    assert list(store.list()["run_id"]) == [good]
    assert _store_contents(store) == [good]


_CRASH_SCRIPT = r"""
import os, sys
import numpy as np
from kmviz.runs import RunStore
from kmviz.trace import Trace
import kmviz.runs.store as runs_module

where = sys.argv[2]
if where == "before_rename":
    runs_module.os.replace = lambda src, dst: os._exit(3)
else:
    RunStore._insert_row = lambda self, conn, meta: os._exit(3)
t = Trace("km.enhanced", {})
t.record(objective=1.0)
RunStore(sys.argv[1]).save("km", t, {"theta": np.ones((2, 2))}, dataset="toy", params={},
                           metrics={})
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["before_rename", "after_rename"])
def test_process_killed_mid_save_leaves_no_visible_half_run(tmp_path, where):
    store = RunStore(tmp_path / "store")
    kept = save_one(store)
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, str(store.path), where],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    leftovers = [n for n in _store_contents(store) if n != kept]
    assert len(leftovers) == 1  # the dead process's temp folder, or its unindexed run
    assert list(store.list()["run_id"]) == [kept]  # nothing half-saved is visible
    if where == "before_rename":
        assert leftovers[0].startswith(".tmp-")
        assert _store_contents(store) == [kept]  # list() swept the dead writer's temp folder
    else:
        # A complete folder without a row: invisible, and repair() can index it again.
        assert _store_contents(store) == sorted([kept, leftovers[0]])
        assert store.repair(grace_s=60.0)["reindexed"] == []  # too young: may be in progress
        assert store.repair(grace_s=0.0) == {"reindexed": leftovers, "unreadable": []}
        assert store.load(leftovers[0]).arrays["theta"].shape == (2, 2)


def test_temp_folder_of_a_live_writer_is_not_swept(store):
    save_one(store)
    live = store.runs_dir / f".tmp-20260101-000000-abcdef01-{os.getpid()}"
    live.mkdir()
    store.list()
    assert live.is_dir()


def test_row_without_folder_is_dropped(store):
    a, b = save_one(store), save_one(store, seed=1)
    # what an interrupted delete leaves: the folder was moved away, the row not yet deleted
    os.replace(store.runs_dir / a, store.runs_dir / f".del-{a}-999999999")
    assert list(store.list()["run_id"]) == [b]
    assert _store_contents(store) == [b]


# ----------------------------------------------------------------------------- two processes


def _save_many(path, worker, n, barrier):
    store = RunStore(path)
    barrier.wait()  # start together to make the writers collide
    for i in range(n):
        save_one(store, label=f"w{worker}-{i}", seed=i)


@pytest.mark.slow
def test_two_processes_saving_at_once(tmp_path):
    path = tmp_path / "store"
    save_one(RunStore(path), label="first", seed=99)  # the store exists (reading creates none)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_save_many, args=(path, w, 20, barrier)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    store = RunStore(path)
    df = store.list()
    assert len(df) == 41 and df["run_id"].is_unique
    assert sorted(df["label"]) == sorted(["first"] + [f"w{w}-{i}" for w in range(2)
                                                      for i in range(20)])
    for run_id, label in zip(df["run_id"], df["label"]):
        if label == "first":
            continue
        run = store.load(run_id)
        i = int(label.split("-")[1])
        np.testing.assert_array_equal(run.arrays["theta"], make_arrays(i)["theta"])


# ----------------------------------------------------------------------------- delete, export


def test_delete(store):
    a, b = save_one(store), save_one(store, seed=1)
    store.delete(a)
    assert list(store.list()["run_id"]) == [b]
    assert _store_contents(store) == [b]
    with pytest.raises(RunStoreError, match=f"No run '{a}'"):
        store.load(a)
    with pytest.raises(RunStoreError, match=f"No run '{a}'"):
        store.delete(a)


def test_export_zip_dir_and_bytes(store, tmp_path):
    run_id = save_one(store)
    names = {f"{run_id}/{n}" for n in
             ("meta.json", "trace.json", "trace.csv", "arrays.npz", "events.csv")}

    zpath = store.export(run_id, tmp_path / "out" / "run.zip")
    with zipfile.ZipFile(zpath) as zf:
        assert set(zf.namelist()) == names
        trace_csv = pd.read_csv(io.BytesIO(zf.read(f"{run_id}/trace.csv")))
        meta = json.loads(zf.read(f"{run_id}/meta.json"))
        npz = np.load(io.BytesIO(zf.read(f"{run_id}/arrays.npz")), allow_pickle=False)
        np.testing.assert_array_equal(npz["theta"], make_arrays()["theta"])
    assert list(trace_csv["objective"]) == [10.0, 9.0, 8.0]
    assert "t_I-A_s" in trace_csv.columns
    assert meta["run_id"] == run_id and meta["params"]["D"] == 4

    with pytest.raises(RunStoreError, match="already exists"):
        store.export(run_id, zpath)
    assert store.export(run_id, zpath, overwrite=True) == zpath

    folder = store.export(run_id, tmp_path / "dirout")
    assert folder == tmp_path / "dirout" / run_id
    assert {f"{run_id}/{p.name}" for p in folder.iterdir()} == names
    assert Trace.load(folder / "trace.json").to_dict() == store.load(run_id).trace.to_dict()

    with zipfile.ZipFile(io.BytesIO(store.export_bytes(run_id))) as zf:
        assert set(zf.namelist()) == names


# ----------------------------------------------------------------------------- bad / missing runs


def test_missing_run_names_id_and_how_to_list(store):
    save_one(store)
    with pytest.raises(RunStoreError, match=r"No run '20200101-000000-deadbeef'.*kmviz runs list"):
        store.load("20200101-000000-deadbeef")


@pytest.mark.parametrize("bad", ["../etc", "", "a/b", None])
def test_malformed_run_id(store, bad):
    with pytest.raises(RunStoreError, match="is not a run id"):
        store.load(bad)


def _edit_meta(store, run_id, **changes):
    path = store.runs_dir / run_id / "meta.json"
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


def test_run_from_newer_format_is_refused_clearly(store):
    run_id = save_one(store)
    _edit_meta(store, run_id, format=RUN_FORMAT + 1)
    with pytest.raises(RunStoreError, match=rf"saved by a newer kmviz \(run format {RUN_FORMAT + 1}.*Upgrade"):
        store.load(run_id)


def test_run_from_unknown_older_format_is_refused(store):
    run_id = save_one(store)
    _edit_meta(store, run_id, format=0)
    with pytest.raises(RunStoreError, match=f"Run '{run_id}' has an unknown run format 0"):
        store.load(run_id)


def test_run_meta_missing_fields_is_refused(store):
    run_id = save_one(store)
    path = store.runs_dir / run_id / "meta.json"
    meta = json.loads(path.read_text())
    del meta["params"]
    path.write_text(json.dumps(meta))
    with pytest.raises(RunStoreError, match="meta.json lacks params"):
        store.load(run_id)


def test_run_without_format_is_refused(store):
    run_id = save_one(store)
    _edit_meta(store, run_id, format="one")
    with pytest.raises(RunStoreError, match="no valid 'format' version"):
        store.load(run_id)


def test_run_with_newer_trace_format_is_refused(store):
    run_id = save_one(store)
    path = store.runs_dir / run_id / "trace.json"
    d = json.loads(path.read_text())
    d["format"] = 99
    path.write_text(json.dumps(d))
    with pytest.raises(RunStoreError, match=f"Run '{run_id}'.*trace format 99"):
        store.load(run_id)


@pytest.mark.parametrize("name, match", [("arrays.npz", "arrays.npz is missing"),
                                         ("trace.json", "trace.json is missing"),
                                         ("meta.json", "meta.json is missing")])
def test_incomplete_run(store, name, match):
    run_id = save_one(store)
    (store.runs_dir / run_id / name).unlink()
    with pytest.raises(RunStoreError, match=match):
        store.load(run_id)


def test_corrupt_files(store):
    run_id = save_one(store)
    (store.runs_dir / run_id / "arrays.npz").write_bytes(b"not a zip")
    with pytest.raises(RunStoreError, match="arrays.npz cannot be read"):
        store.load(run_id)
    (store.runs_dir / run_id / "meta.json").write_text("{broken")
    with pytest.raises(RunStoreError, match="meta.json is malformed"):
        store.load(run_id)


def test_pickled_array_file_is_not_loaded(store):
    run_id = save_one(store)
    # a hand-made npz with an object array, which only pickle could read
    np.savez(store.runs_dir / run_id / "arrays.npz", theta=np.array([{"x": 1}], dtype=object))
    with pytest.raises(RunStoreError, match=r"arrays.npz member 'theta.npy' holds Python "
                                            r"objects.*never unpickles. Fix: delete the run"):
        store.load(run_id)


def test_index_from_newer_kmviz_is_refused(tmp_path):
    import sqlite3

    store = RunStore(tmp_path / "s")
    save_one(store)
    conn = sqlite3.connect(store.index_path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(RunStoreError, match=r"newer kmviz \(schema 99"):
        RunStore(tmp_path / "s").list()


def test_store_path_that_is_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(RunStoreError, match="it is a file, not a folder"):
        RunStore(tmp_path / "f").list()
    with pytest.raises(RunStoreError, match="Cannot create the run store"):
        save_one(RunStore(tmp_path / "f"))


def test_index_that_is_not_sqlite(tmp_path):
    (tmp_path / "s" / "runs").mkdir(parents=True)
    (tmp_path / "s" / "index.sqlite").write_text("this is not a database" * 100)
    with pytest.raises(RunStoreError, match="is not a kmviz run index"):
        RunStore(tmp_path / "s").list()
