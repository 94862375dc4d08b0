"""Memory bounds of a load, checked before the text is parsed and while an archive
expands: the peak of parsing grows with the text (a measured factor per reader), and an
archive that expands far more than data files compress is refused as it streams."""

from __future__ import annotations

from pathlib import Path

from ..._memory import check_allocation, format_bytes, load_memory_limit

#: Peak bytes of a load per byte of text, by reader: the text's chunks while they are
#: converted, the id and value arrays and the Ratings' checks (RSS measured on 6-53 MB
#: files: triplets 9.3, baskets 14, ratings tables 29; tests/data/test_load_memory.py keeps
#: the estimate above tracemalloc's peak).
TEXT_BYTES_FACTOR = {"basket": 16, "table": 36}
DEFAULT_FACTOR = 12
#: Most bytes an archive may expand to per byte of the archive. Ratings text deflates 2-5
#: times, a 1 %-dense 0/1 table about 80 times; archives made to expand (a 0.3 MB zip of
#: 200 MB) expand about 700 times.
MAX_EXPANSION_RATIO = 200
#: An archive may expand this much before its ratio is held against it (small files of
#: repetitive text expand a lot and cost little).
RATIO_GRACE_BYTES = 64 * 1024 * 1024


def load_factor(fmt: str) -> int:
    return TEXT_BYTES_FACTOR.get(fmt, DEFAULT_FACTOR)


def check_load_memory(path: Path, fmt: str, n_bytes: int) -> int:
    """Refuse to parse ``n_bytes`` of text with the ``fmt`` reader when the estimated peak
    passes the load limit (:func:`kmviz._memory.load_memory_limit`); returns the estimate."""
    return check_allocation(
        f"loading {Path(path).name} ({fmt})",
        {f"parsing {format_bytes(n_bytes)} of text": n_bytes * load_factor(fmt)},
        fix="load a smaller file or a sample of it")


class ExpansionGuard:
    """What an archive's expanded bytes are held to while they stream: the ratio to the
    archive's own size and the memory their parse would need (at the smallest factor)."""

    def __init__(self, archive_bytes: int, max_ratio=None):
        if max_ratio is not None and (isinstance(max_ratio, bool) or
                                      not isinstance(max_ratio, (int, float)) or
                                      not max_ratio > 0):
            from ...exceptions import InvalidParameterError

            raise InvalidParameterError(f"The 'max_expansion_ratio' parameter must be a "
                                        f"positive number. Got {max_ratio!r} instead.")
        self.archive_bytes = max(1, int(archive_bytes))
        self.max_ratio = MAX_EXPANSION_RATIO if max_ratio is None else float(max_ratio)
        self.memory, self.memory_source = load_memory_limit()

    def problem(self, used: int) -> str | None:
        """Why ``used`` expanded bytes are too many, or None."""
        ratio = used / self.archive_bytes
        if used > RATIO_GRACE_BYTES and ratio > self.max_ratio:
            return (f"expands more than {self.max_ratio:g} times its own size "
                    f"({format_bytes(self.archive_bytes)} to over {format_bytes(used)}), far "
                    "more than data files compress")
        needed = used * min(DEFAULT_FACTOR, *TEXT_BYTES_FACTOR.values())
        if needed > self.memory:
            return (f"expands to over {format_bytes(used)}, whose parse would need about "
                    f"{format_bytes(needed)} of memory, more than the load limit of "
                    f"{format_bytes(self.memory)} ({self.memory_source})")
        return None
