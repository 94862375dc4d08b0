"""The history of a fit: the fitted arrays after each outer iteration, within a budget.

A :class:`History` is handed to the shared fit loop (:class:`kmviz._base.IterativeEstimator`)
through :func:`recording`; after every outer iteration the loop publishes the fitted
attributes and the history keeps a snapshot of the model's ``_fitted_arrays()`` (for KM:
theta, psi, the duals ...). Any fitted model can then be rebuilt as it was at a kept
iteration (:meth:`History.model_at`), through the family's own ``_from_fitted_arrays``: the
pages draw a replayed iteration with the same code as the finished model.

Storage is exact and small:

- an array equal (bit for bit) to the one kept for the previous iteration is stored once
  and shared (the known users and items, the scale, a psi that did not change);
- an array whose values are all 0 or 1 (psi's binary supports, boolean masks) is stored as
  packed bits and unpacked to its dtype on the way out;
- everything else is kept as it is (float64 stays float64: a replay equals the live fit).

The budget (bytes, ``$KMVIZ_HISTORY_MB`` megabytes, default :data:`DEFAULT_BUDGET_MB`) is
kept this way: every iteration is kept while the snapshots fit; when they no longer do, the
spacing between kept iterations doubles (iterations 1, 3, 5, ... then 1, 5, 9, ...), so
the kept ones stay evenly spread, always with the first and the latest. When the first and
the latest alone do not fit, the history keeps nothing and :attr:`History.note` says why.

Saving (:func:`save_history` / :func:`load_history`) goes through the run's attachments
(:func:`kmviz.runs.artifacts.save_arrays`): an ``.npz`` read back with
``allow_pickle=False`` and a JSON header; nothing is pickled.
"""

from __future__ import annotations

import contextlib
import contextvars
import os

import numpy as np

from .exceptions import RunStoreError

__all__ = ["History", "recording", "active_history", "default_budget_bytes", "trace_until",
           "save_history", "load_history", "HISTORY_NAME", "BUDGET_ENV",
           "DEFAULT_BUDGET_MB"]

#: The environment variable holding the budget in megabytes.
BUDGET_ENV = "KMVIZ_HISTORY_MB"
#: The budget when the environment does not set one (megabytes, per fit).
DEFAULT_BUDGET_MB = 64
#: The attachment name a run's history is saved under.
HISTORY_NAME = "history"
_FORMAT, _VERSION = "kmviz-fit-history", 1

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("kmviz_history", default=None)


def default_budget_bytes() -> int:
    """``$KMVIZ_HISTORY_MB`` megabytes (default :data:`DEFAULT_BUDGET_MB`) in bytes."""
    env = os.environ.get(BUDGET_ENV, "").strip()
    if not env:
        return DEFAULT_BUDGET_MB * 1024 * 1024
    try:
        mb = float(env)
    except ValueError:
        mb = -1.0
    if not mb >= 0:
        raise ValueError(f"The environment variable {BUDGET_ENV} must be a number of "
                         f"megabytes >= 0 (0 keeps no history); got {env!r}.")
    return int(mb * 1024 * 1024)


@contextlib.contextmanager
def recording(history: "History | None"):
    """Within this block, every fit of the shared loop (in this thread) records its
    iterations into ``history`` (None: records nothing)."""
    token = _ACTIVE.set(history)
    try:
        yield history
    finally:
        _ACTIVE.reset(token)


def active_history() -> "History | None":
    """The history the fit loop records into (set by :func:`recording`), or None."""
    return _ACTIVE.get()


class _Blob:
    """One stored array: raw, or packed bits of a 0/1 array."""

    __slots__ = ("packed", "data", "shape", "dtype")

    def __init__(self, array: np.ndarray):
        a = np.array(array, order="C")  # a copy; keeps 0-d arrays 0-d
        if a.dtype.hasobject:
            raise ValueError("an object array cannot be kept in a fit's history")
        self.shape, self.dtype = tuple(a.shape), a.dtype
        self.packed = _is_binary(a)
        self.data = np.packbits(a.reshape(-1).astype(bool)) if self.packed else a

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def same(self, other: "_Blob") -> bool:
        return (self.packed == other.packed and self.shape == other.shape
                and self.dtype == other.dtype and self.data.shape == other.data.shape
                and self.data.tobytes() == other.data.tobytes())

    def array(self) -> np.ndarray:
        if not self.packed:
            return self.data.copy()
        n = int(np.prod(self.shape, dtype=np.int64))
        bits = np.unpackbits(self.data, count=n)
        return bits.astype(self.dtype).reshape(self.shape)


def _matches(a: np.ndarray, blob: _Blob) -> bool:
    """Whether ``a`` equals, bit for bit, the array ``blob`` keeps (without copying ``a``)."""
    if tuple(a.shape) != blob.shape or a.dtype != blob.dtype:
        return False
    if blob.packed:
        return _is_binary(a) and np.array_equal(np.packbits(a.reshape(-1).astype(bool)),
                                                blob.data)
    return _alike(a, blob.data)


def _alike(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, dtype and bytes (NaN equals NaN, 0.0 differs from -0.0)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a is b or a.size == 0:
        return True
    return bool(np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                               np.ascontiguousarray(b).reshape(-1).view(np.uint8)))


def _stored_bytes(a: np.ndarray) -> int:
    """Bytes ``a`` takes in a history (packed bits for a 0/1 array)."""
    return (a.size + 7) // 8 if _is_binary(a) else int(a.nbytes)


def _is_binary(a: np.ndarray) -> bool:
    if a.dtype == bool:
        return a.size > 0
    if a.dtype.kind not in "fiu" or a.size < 64:
        return False
    values = a.reshape(-1)
    if not np.all((values == 0) | (values == 1)):
        return False
    return not (a.dtype.kind == "f" and np.signbit(values).any())  # -0.0 stays raw


class History:
    """The fitted arrays of a fit's iterations, evenly thinned to stay within ``budget``
    bytes (see the module's docstring).

    Parameters
    ----------
    budget : int, optional
        Bytes the kept snapshots may take; default :func:`default_budget_bytes`.
    """

    def __init__(self, budget: int | None = None):
        budget = default_budget_bytes() if budget is None else budget
        if not isinstance(budget, (int, np.integer)) or isinstance(budget, bool) or budget < 0:
            raise ValueError(f"the history's budget must be a number of bytes >= 0; got "
                             f"{budget!r}.")
        self.budget = int(budget)
        self.stride = 1          # the spacing of the kept iterations
        self.first: int | None = None
        self.n_seen = 0          # iterations recorded (kept or not)
        self.note = ""           # why the history keeps fewer iterations than it saw
        self._snapshots: dict[int, dict[str, int]] = {}   # iteration -> key -> blob id
        self._blobs: dict[int, _Blob] = {}
        self._next_id = 0
        self._latest: int | None = None
        self._off = self.budget == 0
        if self._off:
            self.note = "No history is kept: its budget is 0 bytes."

    # -- recording -------------------------------------------------------------------------
    def record(self, iteration: int, model) -> None:
        """Keep ``model._fitted_arrays()`` as the snapshot of ``iteration`` (the loop calls
        this after publishing the fitted attributes)."""
        self.n_seen += 1
        if self._off:
            return
        previous = self._snapshots.get(self._latest) if self._latest is not None else None
        try:
            arrays = {str(k): np.asarray(v) for k, v in model._fitted_arrays().items()}
            # what this snapshot adds: arrays equal to the previous snapshot's (the kernels,
            # the known users and items) or to another of its own are shared, not stored
            same = {}
            for key, a in arrays.items():
                old = previous.get(key) if previous else None
                if a.dtype.hasobject:
                    raise ValueError("an object array cannot be kept in a fit's history")
                if old is not None and _matches(a, self._blobs[old]):
                    same[key] = ("kept", old)
                else:
                    twin = next((k for k in same if same[k][0] == "new"
                                 and _alike(a, arrays[k])), None)
                    same[key] = ("twin", twin) if twin is not None else ("new", None)
            size = sum(_stored_bytes(arrays[k]) for k, (how, _) in same.items() if how == "new")
            first = self._snapshot_bytes(self.first) if self.first is not None else 0
            if first + size > self.budget:  # checked before anything is copied
                self._turn_off(
                    f"No history is kept: the first iteration's fitted arrays and what "
                    f"iteration {iteration} changes take {(first + size) / 2**20:.1f} MB, "
                    f"more than the budget of {self.budget / 2**20:.1f} MB (raise "
                    f"${BUDGET_ENV}).")
                return
            ids = {}
            for key, (how, ref) in same.items():
                if how == "new":
                    ids[key] = self._add(_Blob(arrays[key]))
            for key, (how, ref) in same.items():
                if how != "new":
                    ids[key] = ref if how == "kept" else ids[ref]
        except (AttributeError, TypeError, ValueError, NotImplementedError) as exc:
            self._turn_off(f"No history is kept: the model's fitted arrays could not be read "
                           f"after iteration {iteration} ({type(exc).__name__}: {exc}).")
            return
        iteration = int(iteration)
        if self.first is None:
            self.first = iteration
        self._snapshots[iteration] = ids
        if self._latest is not None and not self._on_stride(self._latest):
            self._drop(self._latest)
        self._latest = iteration
        self._thin()

    def _snapshot_bytes(self, iteration: int) -> int:
        """Bytes of the distinct arrays of one kept snapshot."""
        snap = self._snapshots.get(iteration) or {}
        return sum(self._blobs[b].nbytes for b in set(snap.values()))

    def _add(self, blob: _Blob) -> int:
        self._next_id += 1
        self._blobs[self._next_id] = blob
        return self._next_id

    def _on_stride(self, iteration: int) -> bool:
        return (iteration - self.first) % self.stride == 0

    def _drop(self, iteration: int) -> None:
        self._snapshots.pop(iteration, None)
        used = {i for snap in self._snapshots.values() for i in snap.values()}
        for blob_id in [b for b in self._blobs if b not in used]:
            del self._blobs[blob_id]

    def _thin(self) -> None:
        while self.nbytes > self.budget:
            if len(self._snapshots) <= 2:
                self._turn_off(
                    f"No history is kept: the first and the latest iteration alone take "
                    f"{self.nbytes / 2**20:.1f} MB, more than the budget of "
                    f"{self.budget / 2**20:.1f} MB (raise ${BUDGET_ENV}).")
                return
            self.stride *= 2
            for it in [i for i in self._snapshots
                       if i not in (self.first, self._latest) and not self._on_stride(i)]:
                self._drop(it)
            self.note = (f"Every {self.stride}th iteration is kept (and the last): all of them "
                         f"would exceed the history's budget of {self.budget / 2**20:.1f} MB.")

    def _turn_off(self, why: str) -> None:
        self._off = True
        self._snapshots.clear()
        self._blobs.clear()
        self.note = why

    # -- reading ---------------------------------------------------------------------------
    @property
    def iterations(self) -> list[int]:
        """The kept iterations, in order."""
        return sorted(self._snapshots)

    @property
    def nbytes(self) -> int:
        """Bytes the kept snapshots take (each shared array once)."""
        return sum(b.nbytes for b in self._blobs.values())

    def __len__(self) -> int:
        return len(self._snapshots)

    def __contains__(self, iteration) -> bool:
        return iteration in self._snapshots

    def arrays_at(self, iteration: int) -> dict:
        """The fitted arrays after ``iteration`` (new arrays, exactly as recorded)."""
        if iteration not in self._snapshots:
            raise ValueError(f"iteration {iteration} is not kept in this history; kept: "
                             f"{_ranges(self.iterations)}.")
        return {k: self._blobs[b].array() for k, b in self._snapshots[iteration].items()}

    def nearest(self, iteration: int) -> int:
        """The kept iteration closest to ``iteration`` (the earlier one on a tie)."""
        kept = self.iterations
        if not kept:
            raise ValueError(self.note or "this history keeps no iteration.")
        return min(kept, key=lambda k: (abs(k - int(iteration)), k))

    def model_at(self, model, iteration: int, *, train=None):
        """A new fitted model of ``model``'s type and settings as it was after
        ``iteration``, rebuilt by the family's ``_from_fitted_arrays``; its trace holds the
        rows up to that iteration."""
        from .trace import Trace

        trace = getattr(model, "trace_", None)
        replay = trace_until(trace if trace is not None else Trace(type(model).__name__),
                             iteration)
        return type(model)._from_fitted_arrays(self.arrays_at(iteration), model.get_params(),
                                               replay, train=train)

    def summary(self) -> dict:
        """What the history holds, for a caption or a log line."""
        return {"iterations_seen": self.n_seen, "iterations_kept": len(self),
                "stride": self.stride, "bytes": self.nbytes, "budget_bytes": self.budget,
                "note": self.note}

    # -- saving ----------------------------------------------------------------------------
    def to_arrays(self) -> tuple[dict, dict]:
        """``(arrays, header)``: the blobs as plain NumPy arrays and a JSON-ready header
        describing the snapshots (:meth:`from_arrays` reverses it)."""
        ids = sorted(self._blobs)
        arrays = {f"b{i}": self._blobs[i].data for i in ids}
        header = {"format": _FORMAT, "version": _VERSION, "budget": self.budget,
                  "stride": self.stride, "first": self.first, "latest": self._latest,
                  "n_seen": self.n_seen, "note": self.note,
                  "blobs": {f"b{i}": {"packed": bool(self._blobs[i].packed),
                                      "shape": list(self._blobs[i].shape),
                                      "dtype": self._blobs[i].dtype.str} for i in ids},
                  "snapshots": {str(it): {k: f"b{b}" for k, b in snap.items()}
                                for it, snap in sorted(self._snapshots.items())}}
        return arrays, header

    @classmethod
    def from_arrays(cls, arrays: dict, header: dict) -> "History":
        """A history from :meth:`to_arrays`; ValueError naming what does not match."""
        if not isinstance(header, dict) or header.get("format") != _FORMAT:
            raise ValueError("this is not a kmviz fit history")
        if header.get("version") != _VERSION:
            raise ValueError(f"the history was written in version {header.get('version')!r}, "
                             f"which this kmviz (version {_VERSION}) does not read")
        out = cls(budget=int(header.get("budget", 0)))
        out._off = False
        out.stride, out.n_seen = int(header["stride"]), int(header["n_seen"])
        out.first = None if header.get("first") is None else int(header["first"])
        out._latest = None if header.get("latest") is None else int(header["latest"])
        out.note = str(header.get("note", ""))
        numbers = {}
        for name, spec in (header.get("blobs") or {}).items():
            if name not in arrays:
                raise ValueError(f"the history's array {name!r} is missing")
            blob = object.__new__(_Blob)
            blob.packed, blob.shape = bool(spec["packed"]), tuple(int(x) for x in spec["shape"])
            blob.dtype, blob.data = np.dtype(spec["dtype"]), np.asarray(arrays[name])
            if blob.dtype.hasobject:
                raise ValueError(f"the history's array {name!r} declares an object dtype")
            n = int(np.prod(blob.shape, dtype=np.int64))
            want = (n + 7) // 8 if blob.packed else n
            if blob.data.size != want or blob.data.dtype != (np.dtype(np.uint8) if blob.packed
                                                             else blob.dtype):
                raise ValueError(f"the history's array {name!r} does not match its header")
            out._next_id += 1
            numbers[name] = out._next_id
            out._blobs[out._next_id] = blob
        for it, snap in (header.get("snapshots") or {}).items():
            if any(b not in numbers for b in snap.values()):
                raise ValueError(f"the snapshot of iteration {it} names a missing array")
            out._snapshots[int(it)] = {k: numbers[b] for k, b in snap.items()}
        return out


def trace_until(trace, iteration: int):
    """A copy of ``trace`` as it stood after ``iteration``: its rows and events up to that
    iteration (the whole trace when it has no more), for a replayed figure."""
    from .trace import Trace

    t = int(iteration)
    out = Trace(solver=trace.solver, params=dict(trace.params or {}),
                rows=[dict(r) for r in trace.rows if int(r.get("iteration", 0)) <= t],
                events=[dict(e) for e in trace.events if int(e.get("iteration", 0)) <= t])
    if t >= trace.n_iter:
        out.stop_reason, out.stop_message = trace.stop_reason, trace.stop_message
    else:
        out.stop_reason, out.stop_message = "replay", f"replayed at iteration {t}"
    return out


def _ranges(values) -> str:
    values = list(values)
    if len(values) <= 6:
        return ", ".join(map(str, values)) or "none"
    return f"{values[0]}, {values[1]}, ..., {values[-1]} ({len(values)} in all)"


def save_history(run_id: str, history: History, *, store=None):
    """Save ``history`` with the saved run ``run_id`` (replacing an earlier one)."""
    from .runs.artifacts import save_arrays

    arrays, header = history.to_arrays()
    return save_arrays(run_id, HISTORY_NAME, arrays, meta=header, store=store)


def load_history(run_id: str, *, store=None) -> History | None:
    """The history saved with run ``run_id``; None when the run has none (a run saved
    before histories were kept). RunStoreError when it is there but damaged."""
    from .runs.artifacts import load_arrays

    try:
        arrays, meta = load_arrays(run_id, HISTORY_NAME, store=store)
    except RunStoreError as exc:
        if str(exc).startswith("No arrays"):
            return None
        raise
    try:
        return History.from_arrays(arrays, meta)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise RunStoreError(f"The history saved with run {run_id!r} cannot be read: {exc}. "
                            "Its replay is not available; train the run again to "
                            "record one.") from None
