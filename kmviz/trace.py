"""Per-iteration telemetry shared by every solver in kmviz.

A :class:`Trace` holds one row per outer iteration (flat scalars only), named phase timers
that are folded into the next row, and events (warnings, stops). Figures, the run store and
the app read traces; nothing else carries telemetry.

Row columns follow one convention: ``iteration``, ``objective`` and ``wall_s`` always; phase
times as ``t_<phase>_s``; counts as ``n_<thing>``; metrics as ``{part}_{metric}``: ``train_nrmse``, ``validation_nrmse`` ...
"""

from __future__ import annotations

import json
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .exceptions import RunStoreError

#: 1: kmviz 0.1.0; 2: metrics named {part}_{metric} (KM's probability-scale training RMSE is
#: ``train_nrmse``, the validation one ``validation_nrmse``).
TRACE_FORMAT = 2


def _scalar(name, value):
    """Coerce a row value to a JSON-friendly scalar, refusing arrays (rows stay flat)."""
    if isinstance(value, (np.generic,)):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"Trace rows hold scalars only; column {name!r} got {type(value).__name__}.")


@dataclass
class Trace:
    """Telemetry of one fit.

    Parameters
    ----------
    solver : str
        Dotted solver name, for example ``"km.enhanced"``.
    params : dict
        The estimator's parameters at fit time (JSON-serializable values).
    """

    solver: str
    params: dict = field(default_factory=dict)
    rows: list = field(default_factory=list)
    events: list = field(default_factory=list)
    stop_reason: str = "running"
    #: Why the fit ended, in words (the family's own criterion, the user's stop ...).
    stop_message: str = ""
    _pending: dict = field(default_factory=dict, repr=False)
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    # -- recording ---------------------------------------------------------------------
    @contextmanager
    def phase(self, name: str):
        """Time a block; the seconds are added to ``t_<name>_s`` of the next recorded row."""
        start = time.perf_counter()
        try:
            yield
        finally:
            key = f"t_{name}_s"
            self._pending[key] = self._pending.get(key, 0.0) + time.perf_counter() - start

    def add_time(self, name: str, seconds: float) -> None:
        """Add measured seconds to phase ``name`` (for times measured inside kernels)."""
        key = f"t_{name}_s"
        self._pending[key] = self._pending.get(key, 0.0) + float(seconds)

    def record(self, **values) -> dict:
        """Append a row; ``iteration`` and cumulative ``wall_s`` are filled in."""
        row = {"iteration": len(self.rows) + 1}
        row.update({k: _scalar(k, v) for k, v in self._pending.items()})
        row.update({k: _scalar(k, v) for k, v in values.items()})
        row.setdefault("wall_s", time.perf_counter() - self._t0)
        self._pending = {}
        self.rows.append(row)
        return row

    def event(self, kind: str, message: str, **data) -> None:
        """Record something that happened (a warning, a stop, a fallback)."""
        self.events.append(
            {"iteration": len(self.rows), "kind": kind, "message": message,
             **{k: _scalar(k, v) for k, v in data.items()}}
        )

    # -- reading -----------------------------------------------------------------------
    @property
    def n_iter(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> np.ndarray:
        """One column as a float array (NaN where a row lacks it)."""
        return np.array([r.get(name, math.nan) for r in self.rows], dtype=float)

    def phase_names(self) -> list[str]:
        names = []
        for r in self.rows:
            for k in r:
                if k.startswith("t_") and k.endswith("_s") and k[2:-2] not in names:
                    names.append(k[2:-2])
        return names

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame.from_records(self.rows)

    # -- persistence (JSON, never pickle) -------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "format": TRACE_FORMAT,
            "solver": self.solver,
            "params": self.params,
            "rows": self.rows,
            "events": self.events,
            "stop_reason": self.stop_reason,
            "stop_message": self.stop_message,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Trace":
        """A trace from :meth:`to_dict`'s output, checked: wrong types are refused with a
        :class:`RunStoreError` saying which field, never a ``TypeError`` later on."""
        if not isinstance(d, dict) or "rows" not in d or "solver" not in d:
            raise RunStoreError("Not a kmviz trace: expected a JSON object with 'solver' and 'rows'.")
        fmt = d.get("format", 1)
        if isinstance(fmt, bool) or not isinstance(fmt, int):
            raise RunStoreError(f"Not a kmviz trace: 'format' is {_kind(fmt)}; expected an "
                                "integer version.")
        if fmt > TRACE_FORMAT:
            raise RunStoreError(
                f"This trace was written by a newer kmviz (trace format {d['format']}, "
                f"this version reads up to {TRACE_FORMAT}). Upgrade kmviz to read it."
            )
        solver = d["solver"]
        if not isinstance(solver, str):
            raise RunStoreError(f"Not a kmviz trace: 'solver' is {_kind(solver)}; expected a "
                                "string such as 'km.enhanced'.")
        params = d.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RunStoreError(f"Not a kmviz trace: 'params' is {_kind(params)}; expected a "
                                "JSON object.")
        stop_reason = d.get("stop_reason", "unknown")
        if not isinstance(stop_reason, str):
            raise RunStoreError(f"Not a kmviz trace: 'stop_reason' is {_kind(stop_reason)}; "
                                "expected a string.")
        stop_message = d.get("stop_message", "")  # absent before kmviz 0.2
        if not isinstance(stop_message, str):
            raise RunStoreError(f"Not a kmviz trace: 'stop_message' is {_kind(stop_message)}; "
                                "expected a string.")
        rows = _records(d["rows"], "rows")
        events = _records(d.get("events", []), "events")
        if fmt < 2:  # kmviz 0.1.0's names -> {part}_{metric}
            km = solver.startswith("km.")
            for r in rows:
                if "val_nrmse" in r and "validation_nrmse" not in r:
                    r["validation_nrmse"] = r.pop("val_nrmse")
                if km and "train_rmse" in r and "train_nrmse" not in r:
                    r["train_nrmse"] = r.pop("train_rmse")  # KM's was on the [0, 1] scale
        return cls(solver=solver, params=dict(params), rows=rows, events=events,
                   stop_reason=stop_reason, stop_message=stop_message)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=json_default, allow_nan=True)

    @classmethod
    def from_json(cls, text) -> "Trace":
        """A trace from JSON text, or from bytes that must be UTF-8."""
        if isinstance(text, (bytes, bytearray, memoryview)):
            raw = bytes(text)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RunStoreError(
                    f"Trace JSON is not UTF-8 text (byte {raw[exc.start:exc.start + 1]!r} at "
                    f"offset {exc.start}).") from None
        if not isinstance(text, str):
            raise RunStoreError(f"Trace JSON must be text; got {_kind(text)}.")
        try:
            d = json.loads(text)
        except RecursionError:
            raise RunStoreError("Trace JSON is malformed: nested too deeply.") from None
        except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
            raise RunStoreError(f"Trace JSON is malformed: {exc}.") from None
        return cls.from_dict(d)

    def save(self, path) -> None:
        """Write the trace as JSON (atomically: temporary file, then rename)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path) -> "Trace":
        path = Path(path)
        if not path.exists():
            raise RunStoreError(f"{path}: no such trace file.")
        return cls.from_json(path.read_text(encoding="utf-8"))


def _kind(value) -> str:
    """'a list', 'null', 'the string ...' : what a JSON value is, for messages."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    name = {dict: "an object", list: "a list", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(value), type(value).__name__)
    return name


def _records(value, what: str) -> list:
    """``value`` as a list of flat records (dicts of scalars), or RunStoreError."""
    if not isinstance(value, list):
        raise RunStoreError(f"Not a kmviz trace: {what!r} is {_kind(value)}; expected a list "
                            "of JSON objects.")
    out = []
    for k, rec in enumerate(value):
        if not isinstance(rec, dict):
            raise RunStoreError(f"Not a kmviz trace: {what}[{k}] is {_kind(rec)}; expected a "
                                "JSON object.")
        for key, v in rec.items():
            if not (v is None or isinstance(v, (bool, int, float, str))):
                raise RunStoreError(f"Not a kmviz trace: {what}[{k}][{key!r}] is {_kind(v)}; "
                                    "expected a number, a string, a boolean or null.")
        out.append(dict(rec))
    return out


def json_default(obj):
    """``json.dumps`` fallback for NumPy scalars and arrays and paths (shared with the run store)."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"a {type(obj).__name__} cannot be stored as JSON")
