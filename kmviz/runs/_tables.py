"""Reading the tables saved with a run from its folder (:mod:`kmviz.runs.artifacts` is the
store-facing side; the export of a run reads its tables through this module, which does not
import the store). See :mod:`kmviz.runs.artifacts` for the format."""

from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..exceptions import RunStoreError
from .files import _MAX_JSON_BYTES, _read_npz, max_run_bytes

#: The folder of a run's attachments.
ATTACHMENTS = "attachments"
#: The header's ``format`` and ``version``.
TABLE_FORMAT, TABLE_VERSION = "kmviz-run-table", 1
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,79}$")
_KINDS = {"i": "int", "u": "int", "f": "float", "b": "bool"}
_FIX = "It reads as not computed: compute it again (that saves it anew)."


@dataclass
class SavedTable:
    """A table read back from a run: the rows (``attrs`` restored), ``meta`` and when it
    was saved (ISO 8601, UTC)."""

    name: str
    table: pd.DataFrame
    meta: dict = field(default_factory=dict)
    created: str = ""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _old_files(folder: Path, name: str) -> set:
    """The data files the current header of ``name`` names (to remove once replaced)."""
    try:
        header = json.loads((folder / f"{name}.json").read_bytes())
        out = {header["data"]["file"]}
        if header.get("arrays"):
            out.add(header["arrays"]["file"])
        return {f for f in out if isinstance(f, str) and "/" not in f and f.startswith(name)}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def _file_bytes(folder: Path, entry, what: str, bad) -> bytes:
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
        raise bad(f"its header has no valid {what} entry")
    fname = entry["file"]
    if "/" in fname or "\\" in fname or fname.startswith("."):
        raise bad(f"its header names {fname!r}, which is not a file of the attachment")
    path = folder / fname
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise bad(f"its {what} file {fname} is missing") from None
    if size != entry.get("bytes") or size > max_run_bytes():
        raise bad(f"its {what} file {fname} holds {size:,} bytes, not the "
                  f"{entry.get('bytes')!r} its header declares")
    data = path.read_bytes()
    if _sha(data) != entry.get("sha256"):
        raise bad(f"its {what} file {fname} does not match its checksum (damaged)")
    return data


def _read_header(path: Path, bad, fmt: str, version: int, what: str, missing: str, *,
                 plural: bool = False) -> dict:
    """The JSON header at ``path`` of an attachment of kind ``what`` (format ``fmt``,
    ``version``), checked; ``bad(problem)`` makes the error, ``missing`` is the message when
    there is none. ``plural``: the attachment is "they" (arrays), not "it" (a table)."""
    its, it_was = ("their", "they were") if plural else ("its", "it was")
    try:
        if path.stat().st_size > _MAX_JSON_BYTES:
            raise bad(f"{its} header is implausibly large")
        header = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise RunStoreError(missing) from None
    except (OSError, ValueError) as exc:
        raise bad(f"{its} header is not readable JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != fmt:
        raise bad(f"{its} header is not a kmviz {what} header")
    if header.get("version") != version:
        raise bad(f"{it_was} written in version {header.get('version')!r} of the format, "
                  f"which this kmviz (version {version}) does not read")
    return header


def read_at(folder: Path, run_id: str, name: str) -> SavedTable:
    """The table ``name`` in the attachments folder ``folder`` of run ``run_id``, checked
    (see :func:`kmviz.runs.artifacts.load_table`)."""
    def bad(problem: str) -> RunStoreError:
        return RunStoreError(f"The table {name!r} saved with run {run_id!r} cannot be read: "
                             f"{problem}. {_FIX}")

    header = _read_header(folder / f"{name}.json", bad, TABLE_FORMAT, TABLE_VERSION, "table",
                          f"No table {name!r} is saved with run {run_id!r}.")
    columns, tuples = header.get("columns"), header.get("tuple_columns")
    if not (isinstance(columns, list) and all(isinstance(c, list) and len(c) == 2
                                              for c in columns) and isinstance(tuples, list)):
        raise bad("its header's columns are malformed")
    data = _file_bytes(folder, header.get("data"), "data", bad)
    try:
        if header["data"].get("format") == "parquet":
            table = pd.read_parquet(io.BytesIO(data))
        elif header["data"].get("format") == "csv":
            table = pd.read_csv(io.BytesIO(data), keep_default_na=True)
        else:
            raise bad(f"its data format {header['data'].get('format')!r} is unknown")
    except RunStoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - any reader failure is damage
        raise bad(f"its data file cannot be read ({type(exc).__name__}: {exc})") from None
    if [c for c, _ in columns] != list(table.columns) or len(table) != header.get("rows"):
        raise bad("its data file's columns or row count differ from its header")
    for col in tuples:
        try:
            table[col] = [tuple(int(x) for x in str(v).split()) for v in table[col]]
        except ValueError:
            raise bad(f"its column {col!r} does not hold item indices") from None
    attrs = header.get("attrs") if isinstance(header.get("attrs"), dict) else {}
    if header.get("arrays"):
        packed = _file_bytes(folder, header["arrays"], "arrays", bad)
        arrays = _read_npz(io.BytesIO(packed), run_id,
                           owner=f"The table {name!r} saved with run {run_id!r}", fix=_FIX)
        if sorted(arrays) != sorted(header["arrays"].get("names") or []):
            raise bad("its arrays differ from those its header names")
        attrs.update(arrays)
    table.attrs.update(attrs)
    meta = header.get("meta") if isinstance(header.get("meta"), dict) else {}
    return SavedTable(name=name, table=table, meta=meta, created=str(header.get("created")))



#: The header's ``format`` of a set of named arrays saved with a run (a fit's history).
ARRAYS_FORMAT, ARRAYS_VERSION = "kmviz-run-arrays", 1


def read_arrays_at(folder: Path, run_id: str, name: str) -> tuple[dict, dict]:
    """``(arrays, meta)`` of the named arrays ``name`` in the attachments folder ``folder``
    of run ``run_id``, checked (see :func:`kmviz.runs.artifacts.load_arrays`)."""
    def bad(problem: str) -> RunStoreError:
        return RunStoreError(f"The arrays {name!r} saved with run {run_id!r} cannot be read: "
                             f"{problem}.")

    header = _read_header(folder / f"{name}.json", bad, ARRAYS_FORMAT, ARRAYS_VERSION,
                          "arrays", f"No arrays {name!r} are saved with run {run_id!r}.",
                          plural=True)
    data = _file_bytes(folder, header.get("data"), "data", bad)
    arrays = _read_npz(io.BytesIO(data), run_id,
                       owner=f"The arrays {name!r} saved with run {run_id!r}",
                       fix="Train the run again to save them anew.")
    if sorted(arrays) != sorted(header.get("names") or []):
        raise bad("their arrays differ from those the header names")
    meta = header.get("meta") if isinstance(header.get("meta"), dict) else {}
    return arrays, meta


def table_names(folder: Path) -> list[str]:
    """The names of the tables whose headers are in ``folder``."""
    if not folder.is_dir():
        return []
    return [p.name[:-5] for p in sorted(folder.glob("*.json")) if _NAME.match(p.name[:-5])]


def attachment_files(folder: Path, run_id: str) -> dict:
    """``{"attachments/<file>": bytes}`` of every table and set of named arrays (a fit's
    history) in ``folder`` (run ``run_id``'s attachments) that reads back whole
    (:func:`read_at`, :func:`read_arrays_at`; a damaged one is left out): what an export of
    the run carries, so that they travel with it."""
    out = {}
    for name in table_names(folder):
        try:
            header = json.loads((folder / f"{name}.json").read_bytes())
            arrays = isinstance(header, dict) and header.get("format") == ARRAYS_FORMAT
            (read_arrays_at if arrays else read_at)(folder, run_id, name)
        except (RunStoreError, ValueError, OSError):
            continue
        for fname in [f"{name}.json", *sorted(_old_files(folder, name))]:
            out[f"{ATTACHMENTS}/{fname}"] = (folder / fname).read_bytes()
    return out
