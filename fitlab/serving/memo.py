"""A bounded memo shared by every session of a server: the least recently used out.

A server keeps what it built once (a run, a chart's spec, a chart's or a
table's message) for every later page run, of every session, to send again:
kept without end, a stream of distinct links would fill its memory. So a memo
holds at most `max_entries` values, or `max_bytes` by the sizes its caller
gives, or both, and forgets the least recently used (stored or found) first:
a class on one link keeps asking for the same few, and what a stranger's
passing link built goes first. A count suits values of about one size;
bytes suit values whose size grows with the run (its width, its epochs).
The newest value is kept even when it alone is over `max_bytes`: its caller
has just built it, and the session that asked will ask again on its next
rerun.

Sessions run in threads of their own, so every read and write holds the
memo's lock; making a value is the caller's, outside it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class Memo:
    """Values by key, the least recently used forgotten first beyond
    `max_entries` values or `max_bytes` (None: no bound of that kind)."""

    def __init__(self, max_entries: int | None = None, max_bytes: int | None = None):
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._kept: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def nbytes(self) -> int:
        """The sizes of the kept values, as their put()s gave them."""
        return self._bytes

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value kept for `key`, now the most recently used, or `default`."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return default
            self._kept.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: Any, nbytes: int = 0) -> None:
        """Keep `value` for `key` (`nbytes` its size), the most recently used,
        and forget the least recently used beyond the bounds."""
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._kept[key] = (value, nbytes)
            self._bytes += nbytes
            while ((self.max_entries is not None and len(self._kept) > self.max_entries)
                   or (self.max_bytes is not None and self._bytes > self.max_bytes and len(self._kept) > 1)):
                _, (_, dropped) = self._kept.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._kept.clear()
            self._bytes = 0
