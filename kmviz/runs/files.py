"""A run's files: atomic, private writes (temporary name, fsync, rename; modes 0700/0600)
and checked reads (JSON files of bounded size, ``arrays.npz`` member by member from the .npy
headers before anything is allocated; nothing is ever unpickled)."""

from __future__ import annotations

import io
import json
import math
import os
import re
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..exceptions import RunStoreError
from ..trace import json_default


_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_ARRAY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# np.savez takes these as its own keyword arguments, so they cannot name arrays.
_RESERVED_ARRAY_NAMES = {"file", "allow_pickle"}
_TMP_PREFIX = ".tmp-"
_TRASH_PREFIX = ".del-"

# Largest meta.json / trace.json read (parsing JSON takes several times its size).
_MAX_JSON_BYTES = 256 * 1024 * 1024
#: Environment variable and default of the most bytes a run's arrays may take when loaded
#: (checked from the .npy headers before anything is read).
MAX_RUN_MB_ENV = "KMVIZ_MAX_RUN_MB"
DEFAULT_MAX_RUN_MB = 1024

# What to do about a run whose files are damaged.
_DAMAGED_FIX = ("Fix: delete the run (kmviz runs delete ID, or the Runs page) or restore its "
                "folder from an export or a backup.")


def _to_json(what: str, value) -> str:
    try:
        return json.dumps(value, default=json_default, allow_nan=True, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be JSON-serializable: {exc}.") from None


def _fsync_dir(path: Path) -> None:
    """Make a rename or file creation in ``path`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # Windows cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_bytes_synced(path: Path, data: bytes) -> None:
    # 0600: runs hold the training data, readable by the store's owner only
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0),
                 0o600)
    with open(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


#: Modes of the store's directories and files: its owner only (runs hold the training data).
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def _make_private(path: Path, mode: int) -> None:
    """Give an existing file or directory of the store ``mode`` if it is more open than that
    (a store made by an older kmviz heals; a path owned by someone else is left alone)."""
    try:
        if os.stat(path).st_mode & 0o777 & ~mode:
            os.chmod(path, mode)
    except (FileNotFoundError, PermissionError):
        pass


def _private_dirs(*dirs: Path) -> None:
    for d in dirs:
        d.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        _make_private(d, PRIVATE_DIR_MODE)


def _check_arrays(arrays) -> dict:
    if not isinstance(arrays, dict):
        raise ValueError(f"arrays must be a dict of name -> ndarray; got {type(arrays).__name__}.")
    out = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not _ARRAY_NAME.match(name) or (
                name in _RESERVED_ARRAY_NAMES):
            raise ValueError(
                f"array name {name!r} is not allowed; use letters, digits and '_' "
                "(and not 'file' or 'allow_pickle')."
            )
        a = np.asarray(value)
        # Object arrays can only be stored by pickling them, which the store never does.
        if a.dtype.hasobject:
            raise ValueError(
                f"array {name!r} has dtype object; only numeric, boolean and fixed-width "
                "string arrays can be saved."
            )
        out[name] = a
    return out


def _remove_tree(path: Path) -> None:
    """Remove a folder of the store, or only the link if ``path`` is a symbolic link (never
    what it points to); errors are ignored (the next sweep retries)."""
    try:
        if os.path.islink(path) or not os.path.isdir(path):
            os.unlink(path)
            return
    except FileNotFoundError:
        return
    except OSError:
        pass
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _write_new(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to a file that must not exist yet (``mode``, default owner-only);
    a planted link is not followed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, mode)
    with open(fd, "wb") as f:
        f.write(data)


def _zip(run_id: str, members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(f"{run_id}/{name}", data)
    return buf.getvalue()


def _loads_or_empty(text) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _read_json_bytes(path: Path, run_id: str) -> bytes:
    """The bytes of a run's JSON file, refusing a missing or implausibly large one."""
    try:
        size = path.stat().st_size
        if size > _MAX_JSON_BYTES:
            raise RunStoreError(
                f"Run {run_id!r}: {path.name} is {size / 2**20:.0f} MB, more than the "
                f"{_MAX_JSON_BYTES // 2**20} MB a run's {path.name} can take; not reading it. "
                f"{_DAMAGED_FIX.replace('ID', run_id)}")
        return path.read_bytes()
    except FileNotFoundError:
        raise RunStoreError(f"Run {run_id!r} is incomplete: {path.name} is missing. "
                            f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
    except IsADirectoryError:
        raise RunStoreError(f"Run {run_id!r}: {path.name} is a folder, not a file. "
                            f"{_DAMAGED_FIX.replace('ID', run_id)}") from None
    except OSError as exc:
        raise RunStoreError(f"Run {run_id!r}: {path.name} cannot be read "
                            f"({exc.strerror or exc}).") from None


def max_run_bytes() -> int:
    """The most bytes a run's arrays may take when loaded: ``$KMVIZ_MAX_RUN_MB`` megabytes,
    default 1024. Checked from the arrays' headers before anything is read."""
    env = os.environ.get(MAX_RUN_MB_ENV, "").strip()
    if not env:
        return DEFAULT_MAX_RUN_MB * 1024 * 1024
    try:
        mb = float(env)
    except ValueError:
        mb = float("nan")
    if not (mb > 0 and math.isfinite(mb)):
        raise RunStoreError(f"The environment variable {MAX_RUN_MB_ENV} must be a positive "
                            f"number of megabytes; got {env!r}.")
    return int(mb * 1024 * 1024)


def _read_npz(path, run_id: str, limit: int | None = None, *, owner: str | None = None,
              fix: str | None = None) -> dict:
    """The arrays of a run's ``arrays.npz``, every member checked before it is read.

    Each member's .npy header gives its shape and dtype: object dtypes (pickle) are refused,
    the data size the header implies must equal the member's size in the archive, and the
    total must stay under :func:`max_run_bytes`. Only then is anything allocated, and each
    member is read through the zip's own size and CRC checks. ``path`` may be a file
    object (a model file's member); ``owner`` and ``fix`` word the errors for it.
    """
    limit = max_run_bytes() if limit is None else limit
    fix = _DAMAGED_FIX.replace("ID", run_id) if fix is None else fix
    owner = f"Run {run_id!r}" if owner is None else owner

    def bad(problem: str) -> RunStoreError:
        return RunStoreError(f"{owner}: arrays.npz {problem}. {fix}")

    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise RunStoreError(f"{owner} is incomplete: arrays.npz is missing. {fix}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise bad(f"cannot be read ({exc})") from None
    arrays = {}
    with archive:
        plan, total = [], 0
        for info in archive.infolist():
            name = info.filename
            if not name.endswith(".npy") or info.is_dir():
                raise bad(f"holds {name!r}, which is not an array (.npy)")
            if info.flag_bits & 0x1:
                raise bad(f"member {name!r} is encrypted")
            try:
                with archive.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                    elif version == (2, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                    else:
                        raise ValueError(f"unsupported .npy format version {version}")
                    offset = f.tell()
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
                    RuntimeError, NotImplementedError, SyntaxError) as exc:
                raise bad(f"member {name!r} has no readable array header ({exc})") from None
            if dtype.hasobject:
                raise bad(f"member {name!r} holds Python objects (dtype {dtype}), which only "
                          "pickle could read; kmviz never unpickles")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes != info.file_size - offset:
                raise bad(f"member {name!r} declares shape {tuple(shape)} of {dtype} "
                          f"({nbytes:,} bytes) but holds {max(0, info.file_size - offset):,} "
                          "bytes of data")
            total += nbytes
            if total > limit:
                raise RunStoreError(
                    f"{owner}: its arrays take more than {limit / 2**20:,.0f} MB "
                    f"(member {name!r}: shape {tuple(shape)} of {dtype}); not loading them. "
                    f"Fix: if the run is genuine, set {MAX_RUN_MB_ENV} to a larger number of "
                    "megabytes; otherwise delete it.")
            plan.append((info, name[:-4]))
        for info, key in plan:
            try:
                with archive.open(info) as f:
                    arrays[key] = np.lib.format.read_array(f, allow_pickle=False)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
                    RuntimeError, NotImplementedError) as exc:
                raise bad(f"member {info.filename!r} cannot be read ({exc})") from None
    return arrays
