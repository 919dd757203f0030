"""A bounded, thread-safe memo of runs keyed by Config, shared by all sessions.

Streamlit's st.cache_data cannot show a progress bar from inside the cached
call (it replays the elements a call created) and bounds entries, not bytes;
this cache does both, and trains a Config once even when two sessions ask for
it at the same moment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from fitlab.config import Config
from fitlab.run import Run
from fitlab.serving.memo import Memo


def run_nbytes(run: Run) -> int:
    """Approximate memory held by a run's tables and arrays."""
    return int(sum(frame.memory_usage(deep=True).sum()
                   for frame in (run.history, run.teacher_params, run.student_params))
               + run.student_teacher.nbytes + run.frames.nbytes)


class RunCache:
    """Least-recently-used runs, at most `max_entries` and `max_bytes` (a
    fitlab.serving.memo.Memo, sized by run_nbytes), each made once."""

    def __init__(self, max_entries: int = 64, max_bytes: int = 256 * 2**20):
        self._runs = Memo(max_entries, max_bytes)
        self._lock = threading.Lock()  # over _training
        self._training: dict[Config, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._runs)

    @property
    def max_entries(self) -> int:
        return self._runs.max_entries

    @property
    def max_bytes(self) -> int:
        return self._runs.max_bytes

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached runs, as run_nbytes counts them."""
        return self._runs.nbytes

    def peek(self, config: Config) -> Run | None:
        """The cached run for `config`, or None; never waits for a make()."""
        return self._runs.get(config)

    def get(self, config: Config, make: Callable[[Config], Run]) -> Run:
        """The cached run for `config`, or make(config) stored and returned.
        Concurrent callers for one config wait for a single make()."""
        found = self._runs.get(config)
        if found is not None:
            return found
        with self._lock:
            key_lock = self._training.setdefault(config, threading.Lock())
        with key_lock:
            found = self._runs.get(config)  # made while this caller waited
            if found is not None:
                return found
            try:
                run = make(config)
                self._runs.put(config, run, run_nbytes(run))
            finally:
                with self._lock:
                    self._training.pop(config, None)
        return run

    def clear(self) -> None:
        """Forget every run."""
        self._runs.clear()
