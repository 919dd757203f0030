"""A bounded, thread-safe memo of runs keyed by Config, shared by all sessions.

Streamlit's st.cache_data cannot show a progress bar from inside the cached
call (it replays the elements a call created) and bounds entries, not bytes;
cachetools does both, and its `cached(condition=)` trains a Config once even
when two sessions ask for it at the same moment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from cachetools import Cache, LFUCache, cached

from fitlab.config import Config
from fitlab.run import Run


def run_nbytes(run: Run) -> int:
    """Approximate memory held by a run's tables and arrays."""
    return int(sum(frame.memory_usage(deep=True).sum()
                   for frame in (run.history, run.teacher_params, run.student_params))
               + run.student_teacher.nbytes + run.frames.nbytes)


class RunCache:
    """Runs, at most `max_entries` and `max_bytes` (as run_nbytes counts them:
    each run weighs at least max_bytes / max_entries), each made once. The least
    often asked for goes first: a class's link outlives a burst of one-off runs."""

    def __init__(self, max_entries: int = 64, max_bytes: int = 256 * 2**20):
        self.max_bytes = max_bytes
        least = max_bytes / max_entries
        self._runs: LFUCache[Config, Run] = LFUCache(max_bytes, getsizeof=lambda run: max(run_nbytes(run), least))
        self._changed = threading.Condition()
        # One make() per config at a time: the others wait on the condition.
        self._made_once = cached(self._runs, key=lambda config, make: config,
                                 condition=self._changed)(lambda config, make: make(config))

    def __len__(self) -> int:
        return len(self._runs)

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached runs, as run_nbytes counts them."""
        with self._changed:
            # Cache's own lookup: LFUCache's would count each run as asked for once more.
            return sum(run_nbytes(Cache.__getitem__(self._runs, config)) for config in self._runs)

    def get(self, config: Config, make: Callable[[Config], Run]) -> Run:
        """The cached run for `config`, or make(config) stored and returned.
        Concurrent callers for one config wait for a single make()."""
        return self._made_once(config, make)

    def peek(self, config: Config) -> Run | None:
        """The cached run for `config`, or None; never waits for a make()."""
        with self._changed:
            return self._runs.get(config)
