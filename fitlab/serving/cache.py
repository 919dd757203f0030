"""A bounded, thread-safe memo of runs keyed by Config, shared by all sessions.

Streamlit's st.cache_data cannot show a progress bar from inside the cached
call (it replays the elements a call created) and bounds entries, not bytes;
this cache does both, and trains a Config once even when two sessions ask for
it at the same moment.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from fitlab.config import Config
from fitlab.run import Run


def run_nbytes(run: Run) -> int:
    """Approximate memory held by a run's tables and arrays."""
    return int(sum(frame.memory_usage(deep=True).sum()
                   for frame in (run.history, run.teacher_params, run.student_params))
               + run.student_teacher.nbytes + run.frames.nbytes)


class RunCache:
    """Least-recently-used runs, at most `max_entries` and `max_bytes`."""

    def __init__(self, max_entries: int = 64, max_bytes: int = 256 * 2**20):
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._runs: OrderedDict[Config, tuple[Run, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._training: dict[Config, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._runs)

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached runs, as run_nbytes counts them."""
        with self._lock:
            return sum(size for _, size in self._runs.values())

    def peek(self, config: Config) -> Run | None:
        """The cached run for `config`, or None; never waits for a make()."""
        with self._lock:
            return self._lookup(config)

    def get(self, config: Config, make: Callable[[Config], Run]) -> Run:
        """The cached run for `config`, or make(config) stored and returned.
        Concurrent callers for one config wait for a single make()."""
        with self._lock:
            found = self._lookup(config)
            if found is not None:
                return found
            key_lock = self._training.setdefault(config, threading.Lock())
        with key_lock:
            with self._lock:
                found = self._lookup(config)
                if found is not None:
                    return found
            try:
                run = make(config)
                self._store(config, run)
            finally:
                with self._lock:
                    self._training.pop(config, None)
        return run

    def clear(self) -> None:
        """Forget every run."""
        with self._lock:
            self._runs.clear()

    def _lookup(self, config: Config) -> Run | None:
        if config not in self._runs:
            return None
        self._runs.move_to_end(config)
        return self._runs[config][0]

    def _store(self, config: Config, run: Run) -> None:
        size = run_nbytes(run)
        with self._lock:
            self._runs[config] = (run, size)
            total = sum(s for _, s in self._runs.values())
            while len(self._runs) > self.max_entries or (total > self.max_bytes and len(self._runs) > 1):
                _, (_, dropped) = self._runs.popitem(last=False)
                total -= dropped
