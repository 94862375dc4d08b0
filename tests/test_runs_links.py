"""Exports and deletes never follow or delete through symbolic links, and never end in a
traceback (issue 24, item 5)."""

import os
import zipfile

import numpy as np
import pytest

from kmviz.cli import main as cli_main
from kmviz.exceptions import RunStoreError
from kmviz.runs import RunStore
from kmviz.trace import Trace


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "store")


@pytest.fixture
def run_id(store):
    t = Trace("km.enhanced", {"D": 2})
    t.record(objective=1.0, train_nrmse=0.2)
    t.stop_reason = "max_iter"
    return store.save("km", t, {"theta": np.ones((3, 2))}, dataset="toy", params={"D": 2},
                      metrics={"validation_nrmse": 0.2})


def _cli(capsys, *argv):
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _user_error(code, err, match):
    assert code == 2, err
    assert "Traceback" not in err and err.startswith("error: ") and match in err, err


def test_overwrite_onto_a_symlinked_run_folder_is_refused_and_the_target_kept(
        store, run_id, tmp_path, capsys):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / run_id).symlink_to(target, target_is_directory=True)
    code, _, err = _cli(capsys, "runs", "export", run_id, str(out), "--overwrite",
                        "--dir", str(store.path))
    _user_error(code, err, "is a symbolic link")
    assert (target / "keep.txt").read_text() == "mine" and sorted(os.listdir(target)) == \
        ["keep.txt"]
    assert os.path.islink(out / run_id)


@pytest.mark.parametrize("dest", ["afile/x.zip", "afile/folder", "afile"])
def test_a_file_as_the_parent_gives_a_clear_error(store, run_id, tmp_path, capsys, dest):
    (tmp_path / "afile").write_text("not a folder")
    code, _, err = _cli(capsys, "runs", "export", run_id, str(tmp_path / dest), "--overwrite",
                        "--dir", str(store.path))
    _user_error(code, err, "Could not export run")
    assert (tmp_path / "afile").read_text() == "not a folder"


def test_a_planted_part_file_link_is_not_followed(store, run_id, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch")
    dest = tmp_path / "run.zip"
    (tmp_path / "run.zip.part").symlink_to(victim)
    assert store.export(run_id, dest) == dest
    assert victim.read_text() == "do not touch"
    with zipfile.ZipFile(dest) as z:
        assert f"{run_id}/meta.json" in z.namelist()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".run.zip.")]  # no leftovers


def test_a_zip_destination_that_is_a_link_is_refused(store, run_id, tmp_path):
    victim = tmp_path / "victim.zip"
    victim.write_bytes(b"old")
    (tmp_path / "link.zip").symlink_to(victim)
    (tmp_path / "dangling.zip").symlink_to(tmp_path / "nowhere.zip")
    for name in ("link.zip", "dangling.zip"):
        with pytest.raises(RunStoreError, match="is a symbolic link"):
            store.export(run_id, tmp_path / name, overwrite=True)
    assert victim.read_bytes() == b"old" and not (tmp_path / "nowhere.zip").exists()


def test_overwrite_replaces_a_real_export(store, run_id, tmp_path):
    first = store.export(run_id, tmp_path / "exp")
    (first / "stale.txt").write_text("x")
    again = store.export(run_id, tmp_path / "exp", overwrite=True)
    assert again == first and not (again / "stale.txt").exists()
    assert (again / "meta.json").is_file()
    zipped = store.export(run_id, tmp_path / "r.zip")
    assert store.export(run_id, zipped, overwrite=True) == zipped
    with pytest.raises(RunStoreError, match="already exists"):
        store.export(run_id, zipped)


def test_deleting_a_run_whose_folder_is_a_link_leaves_nothing_behind(store, run_id, tmp_path):
    real = tmp_path / "elsewhere"
    os.replace(store.runs_dir / run_id, real)
    (store.runs_dir / run_id).symlink_to(real, target_is_directory=True)
    store.delete(run_id)
    assert os.listdir(store.runs_dir) == []  # no .del-... link left
    assert real.is_dir()  # the link went, not what it points to
    assert run_id not in store.ids()


def test_the_sweep_removes_a_leftover_trash_link_only(store, run_id, tmp_path):
    real = tmp_path / "target"
    real.mkdir()
    (real / "f").write_text("x")
    (store.runs_dir / ".del-old-1").symlink_to(real, target_is_directory=True)
    (store.runs_dir / ".del-dangling-1").symlink_to(tmp_path / "gone")
    store.list()
    assert sorted(os.listdir(store.runs_dir)) == [run_id]
    assert (real / "f").read_text() == "x"
