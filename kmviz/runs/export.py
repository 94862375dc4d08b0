"""Writing an export outside the store: never through a symbolic link, never following a
planted temporary file, and every failure a :class:`~kmviz.exceptions.RunStoreError`."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from ..exceptions import RunStoreError
from .files import _write_new


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
    out.mkdir(parents=True)
    for name, data in members.items():
        _write_new(out / name, data)
    return out
