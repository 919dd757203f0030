"""A bounded memo shared by every session of a server: cachetools' LRUCache
behind one lock.

A server keeps what it built once (a run, a chart, a refused setting's
offers) for every later page run of every session: kept without end, a
stream of distinct links would fill its memory. A memo holds at most
`max_entries` values, or `max_bytes` by the sizes its caller gives, or both,
and forgets the least recently used first. With both bounds each value weighs
at least max_bytes / max_entries, so neither bound is passed. A value alone
over `max_bytes` is returned by its maker but not kept.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

from cachetools import Cache, LRUCache


class Memo:
    """Values by key, the least recently used forgotten first beyond
    `max_entries` values or `max_bytes` (None: no bound of that kind)."""

    def __init__(self, max_entries: int | None = None, max_bytes: int | None = None):
        self.max_entries, self.max_bytes = max_entries, max_bytes
        if max_bytes is None:
            least, maxsize = 1, max_entries if max_entries is not None else float("inf")
        else:
            least, maxsize = (0 if max_entries is None else max_bytes / max_entries), max_bytes
        # Values are kept as (value, nbytes): the cache weighs each by its nbytes.
        self._kept = LRUCache(maxsize, getsizeof=lambda kept: max(kept[1], least))
        self._lock = threading.Lock()  # LRUCache is not thread-safe; sessions are threads

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def nbytes(self) -> int:
        """The sizes of the kept values, as their put()s gave them."""
        with self._lock:
            # Cache's own lookup: LRUCache's would make each one the most recent.
            return sum(Cache.__getitem__(self._kept, key)[1] for key in self._kept)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value kept for `key`, now the most recently used, or `default`."""
        with self._lock:
            kept = self._kept.get(key)
        return default if kept is None else kept[0]

    def put(self, key: Hashable, value: Any, nbytes: int = 0) -> None:
        """Keep `value` for `key` (`nbytes` its size), the most recently used,
        forgetting the least recently used beyond the bounds."""
        with self._lock:
            try:
                self._kept[key] = (value, nbytes)
            except ValueError:  # alone over max_bytes: not kept, nothing forgotten for it
                self._kept.pop(key, None)

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._kept.clear()
