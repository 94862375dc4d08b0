"""One copy of each loaded dataset in the server, shared by the sessions that use it.

``st.cache_data`` keeps a pickled copy of every value it caches and gives each caller its
own unpickled copy, so a served dataset cost three copies (the cache's, and one in each
session that loaded it): about 55 MB each for a 20,000-user planted set of 2.4M ratings
(bench/app/session_memory.py). A loaded :class:`~kmviz.data.Ratings` is immutable (its arrays
are read-only), so sessions can share one object instead: :class:`SharedDatasets` hands
every caller with the same key the same object while any session still holds it (a weak
reference), and keeps the most recent ones alive (strong references) only up to
:data:`KEEP_BYTES` in all, so repeated loads of small datasets (the default MovieLens
latest-small of every new session) stay instant while a large one is freed as soon as no
session uses it. No Streamlit in here: the tests drive it directly.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

#: Bytes of arrays kept alive by the cache itself (most recent first) when no session
#: holds them; larger datasets live only as long as a session uses them.
KEEP_BYTES = 64 * 2**20


def dataset_bytes(ratings) -> int:
    """Bytes of a dataset's arrays (entries, ids, names' pointers)."""
    total = 0
    for name in ("users", "items", "values", "user_ids", "item_ids", "user_names",
                 "item_names"):
        a = getattr(ratings, name, None)
        if isinstance(a, np.ndarray):
            total += a.nbytes
    return total


class SharedDatasets:
    """``get(key, make)``: the dataset ``make()`` returns, made once per key while it is
    in use (see the module docstring). Thread-safe; ``make`` runs outside the lock, so a
    slow load does not hold up other keys (two callers of one new key may both make it;
    the first stored wins)."""

    def __init__(self, keep_bytes: int = KEEP_BYTES):
        self.keep_bytes = int(keep_bytes)
        self._lock = threading.Lock()
        self._weak: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._strong: OrderedDict = OrderedDict()  # key -> (value, bytes), newest last

    def get(self, key, make):
        try:
            hash(key)
        except TypeError:  # an option that cannot be a key: load without sharing
            return make()
        with self._lock:
            found = self._weak.get(key)
            if found is not None:
                self._keep(key, found)
                return found
        value = make()
        with self._lock:
            found = self._weak.get(key)
            if found is not None:  # made meanwhile by another caller: share theirs
                value = found
            else:
                self._weak[key] = value
            self._keep(key, value)
        return value

    def _keep(self, key, value) -> None:
        size = dataset_bytes(value)
        self._strong.pop(key, None)
        if size > self.keep_bytes:
            return
        self._strong[key] = (value, size)
        total = sum(s for _, s in self._strong.values())
        while total > self.keep_bytes:
            _, (_, s) = self._strong.popitem(last=False)
            total -= s

    def clear(self) -> None:
        with self._lock:
            self._weak.clear()
            self._strong.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._weak)
