"""The run format: reading what kmviz 0.1.0 wrote, editing runs, refusing newer formats.

kmviz 0.1.0 had two writers with different layouts (run format 1, index schema 1, trace
format 1): the command line saved ``theta``/``psi`` only, with the split settings mixed into
the params and metrics named ``val_nrmse``/``train_rmse``; the app saved its split as
``data_*`` arrays, with ``family``/``split``/``fingerprint`` in the params and metrics such as
``final_train_rmse``. ``KolmogorovModel.save`` wrote one ``.npz``. The fixtures below write
those layouts by hand, byte for byte as 0.1.0 did, and check that this version reads them.
"""

from __future__ import annotations

import io
import json
import sqlite3
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

from kmviz.data import load
from kmviz.data.splits import SPLIT_PARTS, make_split, split_arrays
from kmviz.exceptions import ConvergenceWarning, RunStoreError
from kmviz.km import KolmogorovModel
from kmviz.runs import (
    INDEX_SCHEMA,
    RUN_FORMAT,
    RunStore,
    load_model_file,
    open_run,
    save_model_file,
    save_run,
)

PARAMS = {"D": 3, "bqp_solver": "fast", "evd": "exact", "gamma": 100.0, "n_rand": 5,
          "max_iter": 3, "tol": 1e-4, "lambda_theta": 0.0, "mu_psi": 0.0,
          "probability": "minmax", "init": "random", "lanczos_a": 1.0, "dual_eps": 1e-6,
          "random_state": 1}

# kmviz 0.1.0's index (schema 1): no note column
V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    family      TEXT NOT NULL,
    label       TEXT NOT NULL,
    dataset     TEXT,
    fingerprint TEXT,
    created     TEXT NOT NULL,
    duration_s  REAL,
    n_iter      INTEGER,
    status      TEXT NOT NULL,
    params      TEXT NOT NULL,
    metrics     TEXT NOT NULL,
    format      INTEGER NOT NULL
)
"""
CLI_RUN = "20250501-100000-0a1b2c3d"
APP_RUN = "20250502-110000-4e5f6a7b"


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def fit():
    """A small KM fitted on a three-way split: ``(whole, split, model)``."""
    whole = load("planted-km", n_users=40, n_items=25, D=3, random_state=1)
    split = make_split(whole, val_size=0.1, test_size=0.2, seed=0)
    model = KolmogorovModel(**PARAMS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(split.train, validation=split.validation)
    return whole, split, model


def _v1_trace(model) -> dict:
    """The model's trace as kmviz 0.1.0 wrote it (trace format 1, KM's old row names)."""
    rows = []
    for row in model.trace_.rows:
        old = {}
        for k, v in row.items():
            old[{"train_nrmse": "train_rmse", "validation_nrmse": "val_nrmse"}.get(k, k)] = v
        rows.append(old)
    return {"format": 1, "solver": "km.fast", "params": dict(PARAMS), "rows": rows,
            "events": list(model.trace_.events), "stop_reason": model.trace_.stop_reason}


def _v1_dataset(ratings) -> dict:
    """0.1.0's ``RunStore._dataset_meta`` of a Ratings."""
    return {"name": ratings.name, "fingerprint": ratings.fingerprint(),
            "source": ratings.source, "n_users": int(ratings.n_users),
            "n_items": int(ratings.n_items), "n_ratings": int(ratings.n_ratings),
            "r_min": float(ratings.r_min), "r_max": float(ratings.r_max),
            "implicit": bool(ratings.implicit)}


def _v1_meta(run_id, label, dataset, params, metrics, arrays, model, created) -> dict:
    return {"format": 1, "kmviz_version": "0.1.0", "run_id": run_id, "family": "km",
            "label": label, "dataset": dataset, "params": params, "metrics": metrics,
            "created": created, "duration_s": 1.25, "n_iter": model.trace_.n_iter,
            "status": model.trace_.stop_reason,
            "arrays": {k: {"shape": list(a.shape), "dtype": a.dtype.str}
                       for k, a in arrays.items()}}


def _write_v1_store(root, runs):
    """A run store exactly as kmviz 0.1.0 left it: index schema 1, run folders format 1."""
    runs_dir = root / "runs"
    runs_dir.mkdir(parents=True)
    conn = sqlite3.connect(root / "index.sqlite", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(V1_SCHEMA)
        conn.execute("PRAGMA user_version = 1")
        for meta, trace, arrays in runs:
            folder = runs_dir / meta["run_id"]
            folder.mkdir()
            np.savez(folder / "arrays.npz", **arrays)
            (folder / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
            (folder / "meta.json").write_text(json.dumps(meta, sort_keys=True),
                                              encoding="utf-8")
            ds = meta["dataset"]
            conn.execute(
                "INSERT INTO runs (run_id, family, label, dataset, fingerprint, created, "
                "duration_s, n_iter, status, params, metrics, format) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (meta["run_id"], meta["family"], meta["label"], ds.get("name"),
                 ds.get("fingerprint"), meta["created"], meta["duration_s"], meta["n_iter"],
                 meta["status"], json.dumps(meta["params"], sort_keys=True),
                 json.dumps(meta["metrics"], sort_keys=True), 1))
    finally:
        conn.close()


def _cli_run(fit):
    """What ``kmviz train km --data ... --test-size 0.2 --seed 1 --save`` wrote in 0.1.0."""
    whole, split, model = fit
    held = split.validation
    metrics = {"objective": model.trace_.rows[-1]["objective"],
               "train_rmse": model.trace_.rows[-1]["train_nrmse"],
               "val_nrmse": model.nrmse(held),
               "val_rmse_ratings": 0.25, "val_nrmse_ratings": 0.25}
    params = dict(PARAMS, split={"test_size": 0.2, "seed": 1})
    arrays = {"theta": model.theta_, "psi": model.psi_}
    meta = _v1_meta(CLI_RUN, f"km on {whole.name}", _v1_dataset(whole), params, metrics,
                    arrays, model, "2025-05-01T10:00:00.000+00:00")
    return meta, _v1_trace(model), arrays


def _app_run(fit):
    """What the 0.1.0 app's Train page saved: the split as data_* arrays, bookkeeping in
    the params and its own metric names."""
    whole, split, model = fit
    metrics = {"train_nrmse": model.nrmse(split.train),
               "validation_nrmse": model.nrmse(split.validation),
               "test_nrmse": model.nrmse(split.test),
               "final_train_rmse": model.trace_.rows[-1]["train_nrmse"],
               "final_objective": model.trace_.rows[-1]["objective"],
               "wall_s": model.trace_.rows[-1]["wall_s"], "n_iter": model.trace_.n_iter}
    params = {"family": "km", **PARAMS, "split": split.describe(),
              "fingerprint": whole.fingerprint()}
    arrays = {"theta": model.theta_, "psi": model.psi_, **split_arrays(split)}
    dataset = {
        "name": whole.name, "source": whole.source, "fingerprint": whole.fingerprint(),
        "train_fingerprint": split.train.fingerprint(), "n_users": int(whole.n_users),
        "n_items": int(whole.n_items), "n_ratings": int(whole.n_ratings),
        "r_min": float(whole.r_min), "r_max": float(whole.r_max),
        "implicit": bool(whole.implicit), "spec": {"name": "planted-km"},
        "item_names": [str(x) for x in whole.item_names]}
    meta = _v1_meta(APP_RUN, f"KM D=3 fast on {whole.name}", dataset, params, metrics,
                    arrays, model, "2025-05-02T11:00:00.000+00:00")
    return meta, _v1_trace(model), arrays


@pytest.fixture
def v1_store(tmp_path, fit):
    root = tmp_path / "old-store"
    _write_v1_store(root, [_cli_run(fit), _app_run(fit)])
    return RunStore(root)


def _all_pairs(model):
    n_users, n_items = model.theta_.shape[0], model.psi_.shape[0]
    return np.repeat(np.arange(n_users), n_items), np.tile(np.arange(n_items), n_users)


def _assert_same_predictions(a, b, split):
    users, items = _all_pairs(a)
    np.testing.assert_array_equal(a.predict(users, items), b.predict(users, items))
    for part in SPLIT_PARTS:
        assert a.evaluate(getattr(split, part)) == b.evaluate(getattr(split, part))


# ------------------------------------------------------------------------------ (a) 0.1.0 CLI
def test_v1_index_gets_the_note_column_and_schema_2(v1_store):
    df = v1_store.list()
    assert "note" in df.columns and list(df["note"]) == ["", ""]
    conn = sqlite3.connect(v1_store.index_path)
    try:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()
    assert "note" in columns and version == INDEX_SCHEMA == 3


def test_v1_cli_run_lists_with_the_new_metric_names(v1_store, fit):
    _, split, model = fit
    df = v1_store.list()
    assert list(df["run_id"]) == [APP_RUN, CLI_RUN]  # newest first
    row = df.set_index("run_id").loc[CLI_RUN]
    assert row["validation_nrmse"] == model.nrmse(split.validation)
    assert row["train_nrmse"] == model.trace_.rows[-1]["train_nrmse"]
    assert row["validation_rmse"] == 0.25 and row["validation_nrmse_ratings"] == 0.25
    assert row["D"] == 3 and row["family"] == "km"
    for old in ("val_nrmse", "train_rmse", "val_rmse_ratings", "final_train_rmse",
                "final_objective", "param_family", "param_fingerprint"):
        assert old not in df.columns, old
    assert not [c for c in df.columns if c.startswith("split")]
    assert isinstance(row["created"], pd.Timestamp)


def test_v1_cli_run_loads_migrated(v1_store, fit):
    _, split, model = fit
    run = v1_store.load(CLI_RUN)
    assert run.meta["format"] == RUN_FORMAT and run.meta["migrated_from"] == 1
    assert run.params == PARAMS  # no split, family or fingerprint among the params
    assert run.meta["split"] == {"val_size": 0.2, "test_size": 0.0, "by": "random", "seed": 1}
    assert run.metrics == {"objective": model.trace_.rows[-1]["objective"],
                           "train_nrmse": model.trace_.rows[-1]["train_nrmse"],
                           "validation_nrmse": model.nrmse(split.validation),
                           "validation_rmse": 0.25, "validation_nrmse_ratings": 0.25}
    assert run.meta["note"] == "" and run.label == "km on planted KM"
    assert set(run.arrays) == {"theta", "psi"}
    np.testing.assert_array_equal(run.arrays["theta"], model.theta_)
    # the trace's rows under their {part}_{metric} names
    assert run.trace.n_iter == model.trace_.n_iter
    for old, new in zip(run.trace.rows, model.trace_.rows):
        assert "val_nrmse" not in old and "train_rmse" not in old
        assert old["validation_nrmse"] == new["validation_nrmse"]
        assert old["train_nrmse"] == new["train_nrmse"]
    assert run.trace.stop_reason == model.trace_.stop_reason


def test_v1_cli_run_opens_without_a_model_and_says_why(v1_store):
    opened = open_run(CLI_RUN, v1_store)
    assert opened.model is None and opened.split is None and opened.dataset is None
    assert opened.run.run_id == CLI_RUN
    problem = opened.problem
    assert CLI_RUN in problem and "km on planted KM" in problem
    assert "kmviz 0.1.0's command line" in problem
    assert "without its training data" in problem
    # how to get a run that carries its data
    assert "Train it again" in problem and "--save" in problem
    assert "carries its split" in problem


def test_repair_reindexes_a_v1_folder_in_the_new_layout(tmp_path, fit):
    root = tmp_path / "old-store"
    meta, trace, arrays = _cli_run(fit)
    _write_v1_store(root, [(meta, trace, arrays)])
    conn = sqlite3.connect(root / "index.sqlite")
    conn.execute("DELETE FROM runs")
    conn.commit()
    conn.close()
    store = RunStore(root)
    assert store.repair(grace_s=0.0) == {"reindexed": [CLI_RUN], "unreadable": []}
    row = store.list().iloc[0]
    assert row["validation_nrmse"] == meta["metrics"]["val_nrmse"] and row["note"] == ""
    assert "val_nrmse" not in store.list().columns


# ------------------------------------------------------------------------------ (b) 0.1.0 app
def test_v1_app_run_lists_and_loads_migrated(v1_store, fit):
    whole, split, model = fit
    row = v1_store.list().set_index("run_id").loc[APP_RUN]
    # the app's train_nrmse (the final model on the training part) wins over the last row's
    assert row["train_nrmse"] == model.nrmse(split.train)
    assert row["objective"] == model.trace_.rows[-1]["objective"]
    assert row["test_nrmse"] == model.nrmse(split.test)
    run = v1_store.load(APP_RUN)
    assert run.params == PARAMS
    assert set(run.metrics) == {"train_nrmse", "validation_nrmse", "test_nrmse", "objective",
                                "wall_s", "n_iter"}
    assert run.metrics["validation_nrmse"] == model.nrmse(split.validation)
    assert run.meta["split"]["val_size"] == 0.1 and run.meta["split"]["test_size"] == 0.2


def test_v1_app_run_reopens_with_a_working_model_and_its_split(v1_store, fit):
    whole, split, model = fit
    opened = open_run(APP_RUN, v1_store)
    assert opened.problem == ""
    assert isinstance(opened.model, KolmogorovModel)
    assert opened.model.get_params() == model.get_params()
    _assert_same_predictions(opened.model, model, split)
    for part in SPLIT_PARTS:
        a, b = getattr(opened.split, part), getattr(split, part)
        np.testing.assert_array_equal(a.users, b.users)
        np.testing.assert_array_equal(a.items, b.items)
        np.testing.assert_array_equal(a.values, b.values)
    assert opened.split.settings() == split.settings()
    assert opened.split.train.fingerprint() == split.train.fingerprint()
    assert opened.dataset.n_ratings == whole.n_ratings
    assert list(opened.dataset.item_names) == [str(x) for x in whole.item_names]
    assert (opened.dataset.r_min, opened.dataset.r_max) == (whole.r_min, whole.r_max)
    np.testing.assert_array_equal(opened.model.known_users_, model.known_users_)
    np.testing.assert_array_equal(opened.model.known_items_, model.known_items_)
    assert opened.model.mean_p_ == model.mean_p_
    assert opened.model.trace_.column("validation_nrmse").tolist() == \
        model.trace_.column("validation_nrmse").tolist()


# ------------------------------------------------------------------------------ (c) model files
def _write_v1_model_file(path, model):
    """kmviz 0.1.0's ``KolmogorovModel.save``: one .npz, params and trace as JSON text."""
    with open(path, "wb") as fh:
        np.savez(
            fh, format=np.array(1), kind=np.array("KolmogorovModel"),
            params=np.array(json.dumps(model.get_params())),
            theta=model.theta_, psi=model.psi_, dual_u=model.dual_u_,
            known_users=model.known_users_, known_items=model.known_items_,
            scale=np.array([model.r_min_, model.r_max_, model.mean_p_]),
            probability=np.array(model.probability_), n_iter=np.array(model.n_iter_),
            trace=np.array(json.dumps(_v1_trace(model))))
    return path


def test_v1_model_file_loads_and_predicts_like_the_original(tmp_path, fit):
    _, split, model = fit
    path = _write_v1_model_file(tmp_path / "km-model.npz", model)
    loaded = KolmogorovModel.load(path)
    assert loaded.get_params() == model.get_params()
    _assert_same_predictions(loaded, model, split)
    np.testing.assert_array_equal(loaded.dual_u_, model.dual_u_)
    assert loaded.n_iter_ == model.n_iter_
    assert "train_nrmse" in loaded.trace_.rows[0] and "train_rmse" not in loaded.trace_.rows[0]
    same, no_split = load_model_file(path)
    assert no_split is None
    _assert_same_predictions(same, model, split)


def test_model_file_round_trip_of_this_version(tmp_path, fit):
    whole, split, model = fit
    path = model.save(tmp_path / "km.kmviz", split=split, dataset=whole)
    loaded = KolmogorovModel.load(path)
    _assert_same_predictions(loaded, model, split)
    with zipfile.ZipFile(path) as zf:
        assert set(zf.namelist()) == {"meta.json", "trace.json", "arrays.npz"}
        assert json.loads(zf.read("meta.json"))["format"] == RUN_FORMAT


def test_model_file_arrays_get_the_run_stores_member_checks(tmp_path, fit):
    whole, split, model = fit
    path = model.save(tmp_path / "km.kmviz", split=split, dataset=whole)
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}

    def rewrite(name, **arrays):
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        out = tmp_path / name
        with zipfile.ZipFile(out, "w") as zf:
            for n, data in members.items():
                zf.writestr(n, buf.getvalue() if n == "arrays.npz" else data)
        return out

    hostile = rewrite("pickle.kmviz", psi=np.array([{"a": 1}], dtype=object))
    with pytest.raises(RunStoreError, match="never unpickles") as info:
        load_model_file(hostile)
    assert str(hostile) in str(info.value) and "save the model again" in str(info.value)
    # a header that promises more data than the member holds is refused before allocating
    buf = io.BytesIO()
    np.save(buf, np.zeros(4))
    raw = buf.getvalue().replace(b"(4,)", b"(9,)")
    lying = tmp_path / "lying.kmviz"
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("psi.npy", raw)
    with zipfile.ZipFile(lying, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, inner.getvalue() if n == "arrays.npz" else data)
    with pytest.raises(RunStoreError, match=r"declares shape \(9,\)"):
        load_model_file(lying)


def test_reopened_runs_keep_user_and_item_names(tmp_path, fit):
    whole, split, model = fit
    names = [f"user <{u}>" for u in range(whole.n_users)]
    named = whole._replace_entries(whole.users, whole.items, whole.values)
    named.user_names = np.asarray(names, dtype=object)
    store = RunStore(tmp_path / "store")
    run_id = save_run(model, split, dataset=named, store=store)
    opened = open_run(run_id, store=store)
    assert list(opened.split.train.user_names) == names
    assert opened.split.train.user_label(3) == "user <3>"
    # a damaged names entry is dropped, not trusted
    folder = store.runs_dir / run_id
    meta = json.loads((folder / "meta.json").read_text())
    meta["dataset"]["user_names"] = [{"x": 1}] * whole.n_users
    (folder / "meta.json").write_text(json.dumps(meta))
    assert open_run(run_id, store=store).split.train.user_names is None


def test_foreign_files_are_refused_naming_the_path(tmp_path):
    other_zip = tmp_path / "photos.zip"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("hello.txt", "not a model")
        zf.writestr("data/image.bin", bytes(range(256)))
    text = tmp_path / "notes.txt"
    text.write_text("just some text\n")
    other_npz = tmp_path / "arrays.npz"
    np.savez(other_npz, a=np.arange(3))
    for path in (other_zip, text, other_npz):
        for reader in (load_model_file, KolmogorovModel.load):
            with pytest.raises(RunStoreError) as info:
                reader(path)
            assert str(path) in str(info.value), (path, str(info.value))
    with pytest.raises(RunStoreError, match="no such model file"):
        load_model_file(tmp_path / "missing.kmviz")


# ------------------------------------------------------------------------------ (d) edits
@pytest.fixture
def store_with_run(tmp_path, fit):
    whole, split, model = fit
    store = RunStore(tmp_path / "store")
    run_id = save_run(model, split, dataset=whole, label="first name", store=store)
    return store, run_id


def test_update_renames_and_sets_a_note(store_with_run):
    store, run_id = store_with_run
    meta = store.update(run_id, label="  a   better\tname ", note="tried D=3\nsecond line")
    assert meta["label"] == "a better name" and meta["note"] == "tried D=3\nsecond line"
    row = store.list().set_index("run_id").loc[run_id]
    assert row["label"] == "a better name" and row["note"] == "tried D=3\nsecond line"
    run = store.load(run_id)
    assert run.label == "a better name" and run.meta["note"] == "tried D=3\nsecond line"
    on_disk = json.loads((store.runs_dir / run_id / "meta.json").read_text(encoding="utf-8"))
    assert on_disk["label"] == "a better name" and on_disk["format"] == RUN_FORMAT
    assert sorted(p.name for p in (store.runs_dir / run_id).iterdir()) == \
        ["arrays.npz", "meta.json", "trace.json"]
    # one field at a time keeps the other
    store.update(run_id, note="")
    assert store.load(run_id).label == "a better name"
    store.update(run_id, label="third")
    assert store.load(run_id).meta["note"] == ""
    assert open_run(run_id, store).model is not None


@pytest.mark.parametrize("kwargs, match", [
    ({"label": ""}, "cannot be empty"),
    ({"label": " \t\n "}, "cannot be empty"),
    ({"label": "x" * 201}, "at most 200 characters"),
    ({"note": "n" * 5001}, "at most 5,000 characters"),
])
def test_update_refuses_bad_names_and_notes(store_with_run, kwargs, match):
    store, run_id = store_with_run
    before = (store.runs_dir / run_id / "meta.json").read_bytes()
    with pytest.raises(ValueError, match=match):
        store.update(run_id, **kwargs)
    assert (store.runs_dir / run_id / "meta.json").read_bytes() == before
    json.loads(before)
    assert store.list().iloc[0]["label"] == "first name"
    store.update(run_id, label="x" * 200, note="n" * 5000)  # the limits themselves are fine
    assert store.load(run_id).label == "x" * 200


def test_update_of_a_missing_run(store_with_run):
    store, _ = store_with_run
    with pytest.raises(RunStoreError, match="No run '20990101-000000-deadbeef'"):
        store.update("20990101-000000-deadbeef", label="x")
    with pytest.raises(RunStoreError, match="is not a run id"):
        store.update("../escape", label="x")


def test_update_of_a_v1_run_keeps_it_readable(v1_store, fit):
    _, split, model = fit
    v1_store.update(CLI_RUN, label="old CLI run", note="from 0.1.0")
    meta = json.loads((v1_store.runs_dir / CLI_RUN / "meta.json").read_text(encoding="utf-8"))
    assert meta["label"] == "old CLI run" and meta["note"] == "from 0.1.0"
    run = v1_store.load(CLI_RUN)
    assert run.label == "old CLI run" and run.params == PARAMS
    assert run.metrics["validation_nrmse"] == model.nrmse(split.validation)
    assert run.meta["split"]["val_size"] == 0.2
    row = v1_store.list().set_index("run_id").loc[CLI_RUN]
    assert row["label"] == "old CLI run" and row["note"] == "from 0.1.0"
    assert row["validation_nrmse"] == model.nrmse(split.validation)
    opened = open_run(CLI_RUN, v1_store)
    assert opened.model is None and "kmviz 0.1.0's command line" in opened.problem


# ------------------------------------------------------------------------------ (e) newer
def test_run_of_a_newer_format_is_refused(store_with_run):
    store, run_id = store_with_run
    path = store.runs_dir / run_id / "meta.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["format"] = RUN_FORMAT + 1
    path.write_text(json.dumps(meta), encoding="utf-8")
    for call in (lambda: store.load(run_id), lambda: open_run(run_id, store),
                 lambda: store.update(run_id, note="x")):
        with pytest.raises(RunStoreError, match=r"run format 3.*Upgrade kmviz"):
            call()
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == 3  # left untouched


def test_model_file_of_a_newer_format_is_refused(tmp_path, fit):
    whole, split, model = fit
    path = save_model_file(tmp_path / "m.kmviz", model, split=split, dataset=whole)
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = json.loads(members["meta.json"])
    meta["format"] = RUN_FORMAT + 1
    members["meta.json"] = json.dumps(meta).encode()
    newer = tmp_path / "newer.kmviz"
    with zipfile.ZipFile(newer, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(RunStoreError, match=r"format 3.*Upgrade kmviz") as info:
        load_model_file(newer)
    assert str(newer) in str(info.value)
