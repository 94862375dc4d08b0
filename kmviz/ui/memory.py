"""Giving memory back to the system after a fit.

A fit runs in a worker thread, and glibc serves a thread from its own malloc arena: the
work arrays of a large fit (a dense 9,066 x 9,066 item kernel and its copies: about 2.9 GB
at the peak of a Kernel MC fit on MovieLens latest-small) are freed when the fit ends, but
the arena keeps the pages, so the server's resident memory stays near the peak.
:func:`release_memory` collects garbage and asks glibc to return free pages
(``malloc_trim``); elsewhere (another C library) it only collects garbage.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

log = logging.getLogger("kmviz.ui")


def _libc():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


_LIBC = _libc()


def release_memory() -> bool:
    """Collect garbage and return free heap pages to the system; True if glibc trimmed."""
    gc.collect()
    if _LIBC is None:
        return False
    try:
        return bool(_LIBC.malloc_trim(0))
    except Exception:  # noqa: BLE001 - only an optimisation
        log.debug("malloc_trim failed", exc_info=True)
        return False
