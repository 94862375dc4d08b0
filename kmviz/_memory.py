"""Memory of a fit, estimated before any work array is allocated.

Each family tells the shared loop (:class:`kmviz._base.IterativeEstimator`) how much memory a
fit with the given settings and data needs, as ``_memory_estimate(params, data, **inputs)``
returning ``{"what, in the family's words": bytes}``. The loop calls :func:`check_fit_memory`
before ``_fit_start``; a fit whose estimate passes the limit is refused with
:class:`FitTooLargeError`, which names the largest part, the limit, what is available and
what to change. Nothing is allocated before the refusal.

The limit, in order of precedence:

1. :func:`set_memory_limit` (or the :func:`memory_limit` context manager);
2. the environment variable ``KMVIZ_MAX_FIT_BYTES`` (bytes, or with a suffix: ``2G``,
   ``512M``);
3. :data:`DEFAULT_FRACTION` of the memory available when the fit starts.

The app's per-fit limit (``kmviz app --max-fit-memory``) sets the environment variable of
the server.
"""

from __future__ import annotations

import contextlib
import os
import re

from .exceptions import InvalidParameterError

ENV_VAR = "KMVIZ_MAX_FIT_BYTES"
#: Share of the available memory one fit may ask for when no limit is set.
DEFAULT_FRACTION = 0.5
#: Memory besides the big arrays (Python objects, small work arrays, kernel scratch).
OVERHEAD_BYTES = 1 << 20
F8 = 8  # bytes of one float64 / int64

_limit: int | None = None


class FitTooLargeError(InvalidParameterError, MemoryError):
    """A fit's estimated memory is over the per-fit limit; raised before it allocates.

    A ``ValueError`` (pages show it as a user error) and a ``MemoryError``. Attributes:
    ``needed`` and ``limit`` (bytes) and ``parts`` (what -> bytes)."""

    def __init__(self, message, *, needed=0, limit=0, parts=None):
        super().__init__(message)
        self.needed, self.limit, self.parts = int(needed), int(limit), dict(parts or {})


def format_bytes(n: float) -> str:
    """``4.47 GiB``, ``512 KiB``, ``12 B``."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} EiB"  # pragma: no cover


def parse_bytes(text) -> int:
    """``"2G"``, ``"512MiB"``, ``"1e9"``, ``1000000`` -> bytes (an int > 0)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        found = re.fullmatch(r"\s*([0-9.eE+]+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
        if not found:
            raise InvalidParameterError(
                f"a memory size must be a number of bytes, optionally with K, M, G or T "
                f"(for example 2G); got {text!r}.")
        try:
            value = float(found.group(1))
        except ValueError:
            raise InvalidParameterError(
                f"a memory size must be a number of bytes (for example 2G); got {text!r}."
            ) from None
        value *= 1024 ** " KMGT".index(found.group(2).upper() or " ")
    if not value > 0 or value != value or value == float("inf"):
        raise InvalidParameterError(f"a memory size must be positive; got {text!r}.")
    return int(value)


def available_memory() -> int:
    """Bytes of memory available now (``MemAvailable`` on Linux; physical memory as a
    fallback), or 0 when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def set_memory_limit(limit) -> None:
    """Set the per-fit memory limit of this process: bytes (an int, or text such as
    ``"2G"``), or None to go back to the environment variable / the default fraction."""
    global _limit
    _limit = None if limit is None else parse_bytes(limit)


@contextlib.contextmanager
def memory_limit(limit):
    """The per-fit limit set to ``limit`` inside the block (as :func:`set_memory_limit`)."""
    global _limit
    before = _limit
    set_memory_limit(limit)
    try:
        yield
    finally:
        _limit = before


def _limit_from(env_var: str) -> tuple[int, str]:
    """The limit of :func:`set_memory_limit` if one is set, else ``$env_var``, else
    :data:`DEFAULT_FRACTION` of the memory available now; with where it comes from."""
    if _limit is not None:
        return _limit, "set by kmviz.set_memory_limit"
    env = os.environ.get(env_var, "").strip()
    if env:
        try:
            return parse_bytes(env), f"set by {env_var}={env}"
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{env_var}: {exc}") from None
    avail = available_memory()
    if avail <= 0:  # unknown: do not refuse on a guess
        return 1 << 62, "no limit (available memory unknown)"
    return int(avail * DEFAULT_FRACTION), \
        f"{DEFAULT_FRACTION:.0%} of the {format_bytes(avail)} available"


def fit_memory_limit() -> tuple[int, str]:
    """(bytes a fit may use, where the limit comes from, in words)."""
    return _limit_from(ENV_VAR)


def data_sizes(data) -> tuple[int, int, int]:
    """``(n_users, n_items, n_entries)`` of ratings, or ``(n_samples, n_features, nnz)`` of
    a design matrix; zeros for what cannot be known up front (a stream)."""
    if hasattr(data, "n_users") and hasattr(data, "n_items"):
        values = getattr(data, "values", None)
        n = getattr(data, "n_ratings", None)
        n = len(values) if n is None and values is not None else (n or 0)
        return int(data.n_users), int(data.n_items), int(n)
    X = getattr(data, "X", None)
    if X is None and isinstance(data, tuple) and data:
        X = data[0]
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2:
        nnz = getattr(X, "nnz", None)
        return int(shape[0]), int(shape[1]), int(shape[0] * shape[1] if nnz is None else nnz)
    return 0, 0, 0


def feature_width(given, data=None, who="user", wanted=True) -> int:
    """Columns of the ``who`` side features a fit will use: those ``given`` to ``fit``,
    else the data's own when ``wanted`` (0 when none)."""
    source = given if given is not None else (
        getattr(data, f"{who}_features", None) if wanted else None)
    shape = getattr(source, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) == 2 else 0


def check_fit_memory(estimator, params: dict, data, inputs: dict | None = None) -> int:
    """Refuse (:class:`FitTooLargeError`) a fit whose estimate passes the limit; returns the
    estimate in bytes (0 when the family gives none)."""
    estimate = getattr(estimator, "_memory_estimate", None)
    if estimate is None:
        return 0
    parts = estimate(params, data, **(inputs or {}))
    if parts is None:
        return 0
    if not isinstance(parts, dict):
        parts = {"work arrays": parts}
    parts = {str(k): max(0, int(v)) for k, v in parts.items()}
    needed = sum(parts.values()) + OVERHEAD_BYTES
    limit, source = fit_memory_limit()
    if needed <= limit:
        return needed
    owner = type(estimator).__name__
    largest = max(parts, key=parts.get) if parts else "work arrays"
    if "available" not in source:
        source += f"; {format_bytes(available_memory())} available now"
    raise FitTooLargeError(
        f"{owner}.fit would need about {format_bytes(needed)} of memory, more than the "
        f"per-fit limit of {format_bytes(limit)} ({source}). The largest part: {largest}, {format_bytes(parts.get(largest, 0))}. "
        f"Fix: lower the settings in that part, or use a smaller dataset; to allow more, "
        f"call kmviz.set_memory_limit(...) or set {ENV_VAR} (kmviz app --max-fit-memory).",
        needed=needed, limit=limit, parts=parts)



#: Environment variable: the memory a data load or a generator may use (bytes, or with a
#: suffix such as ``4G``); the per-fit limit does not apply to loading data.
LOAD_ENV_VAR = "KMVIZ_MAX_LOAD_BYTES"


def load_memory_limit() -> tuple[int, str]:
    """(bytes a data load or generator may use, where the limit comes from): the limit of
    :func:`set_memory_limit` if one is set, else ``$KMVIZ_MAX_LOAD_BYTES``, else
    :data:`DEFAULT_FRACTION` of the memory available now."""
    return _limit_from(LOAD_ENV_VAR)


def check_allocation(what: str, parts: dict, *, fix: str, per_fit: bool = False) -> int:
    """Refuse work other than a fit (a generator, a file load) whose memory, estimated as
    ``parts`` (what -> bytes) before anything is allocated, passes
    :func:`load_memory_limit` (``per_fit``: :func:`fit_memory_limit`, for work made of
    fits, such as stability refits). Raises :class:`FitTooLargeError` (a ``ValueError`` and a
    ``MemoryError``) whose message names ``what``, the estimate, the limit and ``fix``;
    returns the estimate in bytes."""
    parts = {str(k): max(0, int(v)) for k, v in parts.items()}
    needed = sum(parts.values()) + OVERHEAD_BYTES
    limit, source = fit_memory_limit() if per_fit else load_memory_limit()
    if needed <= limit:
        return needed
    largest = max(parts, key=parts.get) if parts else "work arrays"
    env = ENV_VAR if per_fit else LOAD_ENV_VAR
    raise FitTooLargeError(
        f"{what} would need about {format_bytes(needed)} of memory, more than the limit of "
        f"{format_bytes(limit)} ({source}); the largest part: {largest}, "
        f"{format_bytes(parts.get(largest, 0))}. Fix: {fix}; to allow more, call "
        f"kmviz.set_memory_limit(...) or set {env}.", needed=needed, limit=limit,
        parts=parts)
