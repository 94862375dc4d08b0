"""Writing an export outside the store: never through a symbolic link, never following a
planted temporary file, never inside the store itself, with the store's owner-only modes
(folders 0700, files 0600: a run's arrays hold its training data), and every failure a
:class:`~kmviz.exceptions.RunStoreError`."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from ..exceptions import RunStoreError
from ..tabular_export import table_bytes
from ..trace import json_default
from ._tables import ATTACHMENTS, attachment_files
from .files import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, _write_new, _zip


def export_members(store, run_id: str) -> dict:
    """File name -> bytes of an export: trace CSV and JSON, arrays NPZ, meta JSON, and the
    tables saved with the run (``attachments/...``)."""
    import json

    run = store.load(run_id)  # validates the run before anything is written
    folder = store.runs_dir / run_id
    trace_csv = table_bytes(run.trace.to_frame(), "csv").decode("utf-8")
    members = {
        "meta.json": json.dumps(run.meta, indent=2, default=json_default).encode("utf-8"),
        "trace.json": (folder / "trace.json").read_bytes(),
        "trace.csv": trace_csv.encode("utf-8"),
        "arrays.npz": (folder / "arrays.npz").read_bytes(),
    }
    if run.trace.events:
        members["events.csv"] = table_bytes(
            pd.DataFrame.from_records(run.trace.events), "csv")
    # its saved tables travel too
    members.update(attachment_files(folder / ATTACHMENTS, run_id))
    return members


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def export_run(store, run_id: str, dest, *, overwrite: bool) -> Path:
    """:meth:`RunStore.export`: a zip (``dest`` ends in .zip) or a folder ``dest/<run_id>``."""
    dest = Path(dest).expanduser()
    is_zip = dest.suffix.lower() == ".zip"
    target = dest if is_zip else dest / run_id
    if _inside(target, store.path) or _inside(dest, store.path):
        raise RunStoreError(
            f"{dest} is inside the run store {store.path}; an export is written outside it "
            "(writing there could replace a run's own files). Choose a destination outside "
            "the store.")
    members = export_members(store, run_id)
    try:
        if is_zip:
            return write_zip(dest, _zip(run_id, members), overwrite=overwrite)
        return write_folder(target, members, overwrite=overwrite)
    except OSError as exc:
        raise RunStoreError(
            f"Could not export run {run_id!r} to {dest}: {exc.strerror or exc}"
            f"{f' ({exc.filename})' if exc.filename else ''}. Choose a destination in a "
            "folder you can write to.") from None


def _refuse_link(path: Path, what: str) -> None:
    if os.path.islink(path):
        raise RunStoreError(
            f"{path} is a symbolic link; an export never writes or deletes through a "
            f"link. Remove the link or choose another {what}.")


def write_zip(dest: Path, data: bytes, *, overwrite: bool) -> Path:
    """Write the zip ``data`` to ``dest`` atomically (a fresh temporary file, renamed)."""
    _refuse_link(dest, "name")
    if os.path.lexists(dest):
        if not overwrite:
            raise RunStoreError(f"{dest} already exists; choose another name or overwrite.")
        if dest.is_dir():
            raise RunStoreError(f"{dest} is a folder; choose another name.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600, the store's mode: the arrays hold the training data
    # a fresh name, created exclusively: a planted DEST.zip.part (or a link named like the
    # temporary file) is neither followed nor overwritten
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    try:
        with open(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return dest


def write_folder(out: Path, members: dict, *, overwrite: bool) -> Path:
    """Create the folder ``out`` holding ``members`` (file name -> bytes)."""
    _refuse_link(out, "directory")
    if os.path.lexists(out):
        if not overwrite:
            raise RunStoreError(f"{out} already exists; choose another directory or overwrite.")
        if not out.is_dir():
            raise RunStoreError(f"{out} is a file, not an export folder; remove it or choose "
                                "another directory.")
        shutil.rmtree(out)  # a real folder, not a link: rmtree does not follow links inside
    out.parent.mkdir(parents=True, exist_ok=True)
    out.mkdir(mode=PRIVATE_DIR_MODE)
    os.chmod(out, PRIVATE_DIR_MODE)  # whatever the umask
    for name, data in members.items():
        if "/" in name:  # attachments/<file>
            sub = out / name.split("/")[0]
            if not sub.is_dir():
                sub.mkdir(mode=PRIVATE_DIR_MODE)
                os.chmod(sub, PRIVATE_DIR_MODE)
        _write_new(out / name, data, PRIVATE_FILE_MODE)
    return out
