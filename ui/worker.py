"""Work that changes process-wide state, run in a worker process, not the server's.

Running the blog's script as `__main__`, anomaly mode and warning filters
act on the whole process: done here they would change every other session's
runs. `in_worker(func, *args)` runs `func(*args)` in one spawned worker
process per server and returns its result. fitlab.isolation.run_isolated
(issue #13: a bounded pool of warm workers) is meant to replace its body.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

# A replay of the blog's first batch takes a few seconds, the worker's first
# start (importing torch) a few more.
TIMEOUT_SECONDS = 120.0
T = TypeVar("T")
_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _worker() -> ProcessPoolExecutor:
    """The server's one worker: a module global, so that clearing Streamlit's
    caches does not start another."""
    global _pool
    with _lock:
        if _pool is None:
            # Spawned, never forked: the server's threads and locks stay behind.
            # Spawning re-imports the page module in the worker (Streamlit makes
            # it __main__), which only builds an unused st.App there.
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return _pool


def in_worker(func: Callable[..., T], *args) -> T:
    """func(*args) in the worker process; raises what it raised, or
    TimeoutError. A worker that died is replaced for the next call."""
    global _pool
    pool = _worker()
    try:
        return pool.submit(func, *args).result(timeout=TIMEOUT_SECONDS)
    except BrokenProcessPool:
        with _lock:
            if _pool is pool:
                _pool = None
        raise
