"""Runs that travel: export -> delete -> import gives the same run; hostile archives are
refused with a clear message and change nothing; exports keep owner-only modes."""

import io
import json
import os
import stat
import zipfile

import numpy as np
import pytest

from kmviz.cli import main
from kmviz.exceptions import RunStoreError
from kmviz.runs import RunStore, import_run_zip
from kmviz.runs.transfer import MAX_MEMBERS
from tests.test_runs import make_arrays, make_trace, save_one


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "store")


def snapshot(store):
    """Everything the store holds: index rows and every file under it (name -> bytes)."""
    files = {}
    for root, dirs, names in os.walk(store.path):
        for n in names:
            p = os.path.join(root, n)
            if n.startswith("index.sqlite"):
                continue
            with open(p, "rb") as f:
                files[os.path.relpath(p, store.path)] = f.read()
    listing = store.list()
    return files, sorted(listing["run_id"]), sorted(listing["label"])


def exported(store, tmp_path, **kw):
    run_id = save_one(store, label="travelling run", seed=3, **kw)
    path = store.export(run_id, tmp_path / "out" / f"{run_id}.zip")
    return run_id, path


def rezip(path, out, change):
    """A copy of the zip at ``path`` with ``change(members)`` applied (name -> bytes)."""
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    members = change(members) or members
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out


# ------------------------------------------------------------------------ round trip
def test_export_delete_import_gives_the_same_run(store, tmp_path):
    run_id, path = exported(store, tmp_path)
    before = store.load(run_id)
    store.delete(run_id)
    assert run_id not in store
    result = import_run_zip(store, path, owner="cli:me")
    assert result.run_id == run_id and not result.renamed
    assert f"Imported run 'travelling run' as {run_id}." == result.message
    after = store.load(run_id)
    assert after.metrics == before.metrics and after.params == before.params
    assert after.label == before.label and after.dataset == before.dataset
    assert set(after.arrays) == set(before.arrays)
    for k, a in before.arrays.items():
        np.testing.assert_array_equal(after.arrays[k], a)
        assert after.arrays[k].dtype == a.dtype
    assert after.trace.to_dict() == before.trace.to_dict()
    assert after.meta["owner"] == "cli:me"
    assert after.meta["provenance"]["imported"]["from_run_id"] == run_id
    row = store.list().set_index("run_id").loc[run_id]
    assert row["val_nrmse"] == before.metrics["val_nrmse"] and row["D"] == 4
    # the imported folder has the store's modes
    folder = store.runs_dir / run_id
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {0o600}


def test_an_existing_run_id_is_not_overwritten(store, tmp_path):
    run_id, path = exported(store, tmp_path)
    store.update(run_id, label="kept as it is")
    result = import_run_zip(store, path.read_bytes())
    assert result.renamed and result.run_id != run_id and result.original_id == run_id
    assert run_id in result.message and result.run_id in result.message
    assert "already in this store" in result.message
    assert store.load(run_id).label == "kept as it is"
    assert store.load(result.run_id).label == "travelling run"
    assert len(store) == 2


def test_cli_import_says_what_it_did(store, tmp_path, capsys):
    run_id, path = exported(store, tmp_path)
    assert main(["runs", "import", str(path), "--dir", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert "Imported run 'travelling run' as" in out and "already in this store" in out
    assert len(store) == 2
    assert main(["runs", "import", str(tmp_path / "nope.zip"), "--dir", str(store.path)]) == 2
    assert "no such file" in capsys.readouterr().err


# ------------------------------------------------------------------------ hostile archives
def _meta_change(fn):
    def change(members):
        (name,) = [n for n in members if n.endswith("/meta.json")]
        meta = json.loads(members[name])
        fn(meta)
        members[name] = json.dumps(meta).encode()
    return change


def _pickled_npz(members):
    (name,) = [n for n in members if n.endswith("/arrays.npz")]
    buf = io.BytesIO()
    np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("theta.npy", buf.getvalue())
    members[name] = out.getvalue()


def _wrong_shape(members):
    (name,) = [n for n in members if n.endswith("/arrays.npz")]
    out = io.BytesIO()
    arrays = make_arrays(3)
    arrays["theta"] = arrays["theta"][:, :2]
    np.savez(out, **arrays)
    members[name] = out.getvalue()


def _traversal(members):
    (name,) = [n for n in members if n.endswith("/trace.csv")]
    members["../../evil.txt"] = members.pop(name)


def _second_folder(members):
    (name,) = [n for n in members if n.endswith("/trace.csv")]
    members["other-run/trace.csv"] = members.pop(name)


def _unknown_member(members):
    members[next(iter(members)).split("/")[0] + "/run.py"] = b"print('hi')"


def _missing_arrays(members):
    (name,) = [n for n in members if n.endswith("/arrays.npz")]
    del members[name]


HOSTILE = {
    "path traversal": (_traversal, "is not <run id>/<file>"),
    "two folders": (_second_folder, "exactly one run folder"),
    "unknown member": (_unknown_member, "is not a file of an exported run"),
    "missing arrays": (_missing_arrays, "lacks arrays.npz"),
    "params a list": (_meta_change(lambda m: m.update(params=[1, 2])),
                      "'params' is a list; expected a JSON object"),
    "label a number": (_meta_change(lambda m: m.update(label=5)),
                       "'label' is a int; expected a string"),
    "tags not strings": (_meta_change(lambda m: m.update(tags=[1])),
                         "'tags' is a list; expected a list of strings"),
    "run id differs": (_meta_change(lambda m: m.update(run_id="20200101-000000-00000000")),
                       "meta.json names run '20200101-000000-00000000'"),
    "undeclared array": (_meta_change(lambda m: m["arrays"].pop("psi")), "undeclared psi"),
    "pickled npz": (_pickled_npz, "kmviz never unpickles"),
    "wrong shape": (_wrong_shape, "array 'theta' is <f8 [6, 2] but meta.json declares"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_archives_are_refused_and_change_nothing(store, tmp_path, case):
    change, words = HOSTILE[case]
    _, path = exported(store, tmp_path)
    bad = rezip(path, tmp_path / "bad.zip", change)
    before = snapshot(store)
    with pytest.raises(RunStoreError) as e:
        import_run_zip(store, bad)
    assert words in str(e.value) and "othing was imported" in str(e.value), str(e.value)
    assert snapshot(store) == before
    assert not list(store.runs_dir.glob(".tmp-*"))


def test_symlink_member_is_refused(store, tmp_path):
    _, path = exported(store, tmp_path)
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    bad = tmp_path / "link.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        for name, data in members.items():
            if name.endswith("trace.csv"):
                info = zipfile.ZipInfo(name)
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                zf.writestr(info, "/etc/passwd")
            else:
                zf.writestr(name, data)
    before = snapshot(store)
    with pytest.raises(RunStoreError, match="is a symbolic link"):
        import_run_zip(store, bad)
    assert snapshot(store) == before


def test_zip_bomb_is_refused_before_it_is_expanded(store, tmp_path):
    _, path = exported(store, tmp_path)
    bomb = tmp_path / "bomb.zip"

    def change(members):
        (name,) = [n for n in members if n.endswith("/trace.csv")]
        members[name] = b"0" * (80 * 2 ** 20)  # 80 MB of zeros: ~80 KB compressed
    rezip(path, bomb, change)
    assert bomb.stat().st_size < 2 ** 20
    before = snapshot(store)
    with pytest.raises(RunStoreError, match="expands to 83,886,080 bytes, more than"):
        import_run_zip(store, bomb)
    # a whole-archive bound too, given by the caller
    with pytest.raises(RunStoreError, match="more than the 1,000 an import may take"):
        import_run_zip(store, path, max_bytes=1000)
    assert snapshot(store) == before


def test_a_lying_size_stops_at_the_declared_size(store, tmp_path):
    """A member whose header declares fewer bytes than it expands to is cut off there
    (zipfile stops at the declared size; the CRC check then fails)."""
    _, path = exported(store, tmp_path)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = next(i for i in zf.infolist() if i.filename.endswith("trace.json"))
    # patch the uncompressed size in the central directory entry of trace.json
    name = info.filename.encode()
    cd = data.find(b"PK\x01\x02")
    while cd != -1:
        n = int.from_bytes(data[cd + 28:cd + 30], "little")
        if bytes(data[cd + 46:cd + 46 + n]) == name:
            data[cd + 24:cd + 28] = (10).to_bytes(4, "little")
            break
        cd = data.find(b"PK\x01\x02", cd + 4)
    bad = tmp_path / "lying.zip"
    bad.write_bytes(bytes(data))
    before = snapshot(store)
    with pytest.raises(RunStoreError, match="trace.json"):
        import_run_zip(store, bad)
    assert snapshot(store) == before


def test_truncated_and_non_zip_files_are_refused(store, tmp_path):
    _, path = exported(store, tmp_path)
    data = path.read_bytes()
    before = snapshot(store)
    for k, cut in enumerate((len(data) // 2, len(data) - 30, 10)):
        bad = tmp_path / f"cut{k}.zip"
        bad.write_bytes(data[:cut])
        with pytest.raises(RunStoreError, match="not a readable zip archive|cannot be read"):
            import_run_zip(store, bad)
    # damaged in the middle, central directory intact: the CRC check catches it
    with zipfile.ZipFile(path) as zf:
        info = next(i for i in zf.infolist() if i.filename.endswith("arrays.npz"))
    damaged = bytearray(data)
    start = info.header_offset + 30 + len(info.filename) + 10
    damaged[start:start + 20] = b"\x00" * 20
    bad = tmp_path / "damaged.zip"
    bad.write_bytes(bytes(damaged))
    with pytest.raises(RunStoreError, match="nothing was imported|Nothing was imported"):
        import_run_zip(store, bad)
    assert snapshot(store) == before


def test_too_many_members_are_refused(store, tmp_path):
    _, path = exported(store, tmp_path)

    def change(members):
        folder = next(iter(members)).split("/")[0]
        for k in range(MAX_MEMBERS):
            members[f"{folder}/x{k}.csv"] = b""
    bad = rezip(path, tmp_path / "many.zip", change)
    with pytest.raises(RunStoreError, match=f"an exported run has at most {MAX_MEMBERS}"):
        import_run_zip(store, bad)


def test_a_killed_import_leaves_nothing_visible(store, tmp_path):
    """An import killed after writing its temporary folder: the next listing sweeps it."""
    run_id, path = exported(store, tmp_path)
    store.delete(run_id)
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    leftover = store.runs_dir / f".tmp-import-{run_id}-{dead}"
    leftover.mkdir()
    (leftover / "meta.json").write_text("{}")
    assert store.list().empty
    assert not leftover.exists()


# ------------------------------------------------------------------------ exports (defect 5)
def test_exports_keep_owner_only_modes(store, tmp_path):
    run_id = save_one(store)
    old = os.umask(0o022)
    try:
        folder = store.export(run_id, tmp_path / "exports")
        archive = store.export(run_id, tmp_path / "exports" / "run.zip")
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {0o600}
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600


@pytest.mark.parametrize("where", ["runs", "runs/RUN", ".", "runs/x.zip"])
def test_export_into_the_store_is_refused(store, tmp_path, where, capsys):
    run_id = save_one(store)
    before = snapshot(store)
    dest = store.path / where.replace("RUN", run_id)
    with pytest.raises(RunStoreError, match="is inside the run store"):
        store.export(run_id, dest, overwrite=True)
    assert main(["runs", "export", run_id, "--out", str(dest), "--overwrite", "--dir",
                 str(store.path)]) == 2
    assert "inside the run store" in capsys.readouterr().err
    assert snapshot(store) == before



# ------------------------------------------------------------------------ defect 16
def test_runs_list_dir_reads_and_creates_nothing(tmp_path, capsys):
    deep = tmp_path / "a" / "b" / "c"
    for argv in (["runs", "list"], ["runs", "list", "--family", "km"]):
        assert main([*argv, "--dir", str(deep)]) == 0
        assert "No runs" in capsys.readouterr().out
    assert main(["runs", "show", "20200101-000000-deadbeef", "--dir", str(deep)]) == 2
    assert not (tmp_path / "a").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["runs", "list", "--dir", str(empty)]) == 0
    assert list(empty.iterdir()) == []
    assert RunStore(empty).repair() == {"reindexed": [], "unreadable": []}
    assert list(empty.iterdir()) == []


def test_repair_removes_the_temporary_meta_files_of_killed_renames(store):
    run_id = save_one(store, label="kept")
    folder = store.runs_dir / run_id
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    stale = folder / f"meta.json.tmp-{dead}"
    stale.write_text('{"label": "half-written"}')
    live = folder / f"meta.json.tmp-{os.getpid()}"  # a rename in progress: kept
    live.write_text("{}")
    store.repair()
    assert not stale.exists() and live.exists()
    assert store.load(run_id).label == "kept"


# ------------------------------------------------------------------------ runs list --family
def test_runs_list_shows_the_listed_families_metric_columns_in_120(tmp_path, capsys,
                                                                     monkeypatch):
    from kmviz import families
    from kmviz.trace import Trace

    store = RunStore(tmp_path / "s")
    for name in ("km", "ocmf", "kmc", "gfm", "similarity"):
        fam = families.get(name)
        for k in range(2):
            trace = Trace(f"{name}.x", {})
            trace.record(objective=1.0)
            trace.stop_reason = "max_iter"
            store.save(name, trace, {}, dataset="MovieLens latest-small", params={"D": k},
                       metrics={m: 0.1 + 0.01 * j for j, m in enumerate(fam.metrics)},
                       label=f"{fam.short or name} run number {k} on MovieLens latest-small")
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["runs", "list", "--family", "km", "--dir", str(store.path)]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0].splitlines()
    assert max(len(line) for line in table) <= 120
    header = table[0].split()
    assert header[:3] == ["RUN_ID", "CREATED", "FAMILY"]
    assert {"VAL_NRMSE", "TEST_NRMSE", "TRAIN_NRMSE", "TEST_RMSE"} <= set(header)
    assert not any("PRECISION" in h or "NMSE" in h or "MAP" in h for h in header)
    assert len(table) == 2 + 2 and all(" km " in line for line in table[2:])
    assert "0.11" in table[2] and "0.13" in table[2]
    # two families: both families' first metrics, still within 120
    assert main(["runs", "list", "--family", "km,ocmf", "--dir", str(store.path)]) == 0
    table = capsys.readouterr().out.split("\n\n")[0].splitlines()
    assert max(len(line) for line in table) <= 120 and len(table) == 2 + 4
    assert main(["runs", "list", "--family", "nope", "--dir", str(store.path)]) == 2
    assert "not a model family" in capsys.readouterr().err


def test_load_trace_reads_the_trace_alone(store):
    run_id = save_one(store)
    (store.runs_dir / run_id / "arrays.npz").write_bytes(b"not read")
    trace, made = store.load_trace(run_id), make_trace()
    assert trace.solver == made.solver and trace.stop_reason == "max_iter"
    assert list(trace.column("objective")) == [10.0, 9.0, 8.0]
    assert list(trace.column("n_evd")) == [0.0, 1.0, 2.0] and len(trace.events) == 1
    with pytest.raises(RunStoreError, match="arrays.npz"):
        store.load(run_id)  # the whole run would not load
    (store.runs_dir / run_id / "trace.json").write_text("[1")
    with pytest.raises(RunStoreError, match="trace.json"):
        store.load_trace(run_id)


# ------------------------------------------------------------------ saved tables travel
def _with_table(store, tmp_path):
    import pandas as pd

    from kmviz.runs.artifacts import save_table

    run_id = save_one(store, label="travelling run", seed=3)
    table = pd.DataFrame({"antecedent": [(1, 2), (3,)], "consequent": [4, 5],
                          "score": [0.9, 0.4]})
    table.attrs["n_refits"] = 8
    save_table(run_id, "relations", table, store=store, meta={"liked": 4.0})
    return run_id, table, store.export(run_id, tmp_path / "out" / f"{run_id}.zip")


def test_a_fits_history_travels_with_an_exported_run(store, tmp_path):
    from kmviz.runs.artifacts import load_arrays, save_arrays

    run_id = save_one(store, label="travelling run", seed=3)
    bits = np.arange(12, dtype=np.uint8).reshape(3, 4)
    save_arrays(run_id, "history", {"psi_bits": bits, "iteration": np.arange(3)},
                meta={"kept": 3}, store=store)
    path = store.export(run_id, tmp_path / "out" / f"{run_id}.zip")
    other = RunStore(tmp_path / "other")
    result = import_run_zip(other, path)
    assert "came along: history" in result.message
    arrays, meta = load_arrays(result.run_id, "history", store=other)
    np.testing.assert_array_equal(arrays["psi_bits"], bits)
    assert meta == {"kept": 3}


def test_saved_tables_travel_with_an_exported_run(store, tmp_path):
    from kmviz.runs.artifacts import load_table

    run_id, table, path = _with_table(store, tmp_path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    assert f"{run_id}/attachments/relations.json" in names
    other = RunStore(tmp_path / "other")
    result = import_run_zip(other, path)
    assert "What was saved with it came along: relations." in result.message
    got = load_table(result.run_id, "relations", store=other)
    assert got.table["antecedent"].tolist() == [(1, 2), (3,)]
    assert got.table["score"].tolist() == [0.9, 0.4] and got.table.attrs["n_refits"] == 8
    assert got.meta == {"liked": 4.0}
    # imported under a new id (the id is taken): the table comes along all the same
    again = import_run_zip(other, path)
    assert again.renamed and load_table(again.run_id, "relations", store=other).table[
        "consequent"].tolist() == [4, 5]
    folder = other.runs_dir / again.run_id / "attachments"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # a folder export carries them too
    out = store.export(run_id, tmp_path / "folder")
    assert (out / "attachments" / "relations.json").is_file()


def test_a_damaged_table_is_left_out_and_named_the_run_imported(store, tmp_path):
    from kmviz.runs.artifacts import list_tables

    run_id, _, path = _with_table(store, tmp_path)

    def change(members):
        data = next(k for k in members if "/attachments/relations." in k
                    and not k.endswith(".json"))
        members[data] = members[data][:-7] + b"garbage"
    bad = rezip(path, tmp_path / "damaged.zip", change)
    other = RunStore(tmp_path / "other")
    result = import_run_zip(other, bad)
    assert "Left out, as they did not read back: relations" in result.message
    assert other.load(result.run_id).label == "travelling run"
    assert list_tables(result.run_id, store=other).empty
    assert not any((other.runs_dir / result.run_id / "attachments").iterdir())


@pytest.mark.parametrize("member", ["attachments/../meta.json", "attachments/x/y.json",
                                    "attachments/Evil.json", "attachments/rel.123.exe",
                                    "other/relations.json"])
def test_an_attachment_outside_the_table_names_is_refused(store, tmp_path, member):
    run_id, _, path = _with_table(store, tmp_path)
    bad = rezip(path, tmp_path / "odd.zip",
                lambda m: m.update({f"{run_id}/{member}": b"{}"}))
    other = RunStore(tmp_path / "other")
    with pytest.raises(RunStoreError, match="not <run id>/<file>|not a file of an exported"):
        import_run_zip(other, bad)
    assert not other.runs_dir.exists() or not any(other.runs_dir.iterdir())
