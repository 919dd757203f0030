"""Running work that changes process-wide state where it cannot leak: in a
few warm worker processes of the standard library's ProcessPoolExecutor.

Torch's anomaly mode and `warnings.catch_warnings` act on the whole process,
not the calling thread: switched on for one session's replay, they change
every other session's runs (their error messages, their warnings, their
speed). `WorkerPool.run(func, *args)` runs `func(*args)` in a worker process
instead and returns its result by value, or raises its exception.

Each of the pool's `size` slots is an executor of one spawned worker (never
forked: the server's threads and locks stay behind), so a call that overruns
its timeout, or whose worker dies, takes down its own slot only; a fresh
executor takes the slot. A worker imports as it starts the modules its pool's
calls have needed so far (and any named by `warm`), so a call does not wait
for imports, and is renewed after `calls_per_worker` calls
(`max_tasks_per_child`), which bounds what a long-lived worker accumulates.

`func` must be picklable: a top-level function of an importable module; its
arguments and result must be picklable too.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

WORKERS = 2
# A worker with torch imported is about 300 MiB resident; a width-256 lesson
# call leaves under 0.5 MiB once the worker is warm (tests/lib/serving/test_workers.py):
# renewed after this many calls, a worker stays well under 512 MiB.
CALLS_PER_WORKER = 200
DEFAULT_TIMEOUT = 120.0
_SPAWN = multiprocessing.get_context("spawn")


class WorkerDied(RuntimeError):
    """The worker process running a call exited before answering."""


def _start_worker(preload: list[str], server: int) -> None:
    """A worker's initializer: import the `preload` modules, then watch for
    its server's end."""
    # Ctrl-C on the server reaches its whole process group: the worker ends
    # with the executor's shutdown instead, as it does when the server is killed.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in preload:
        importlib.import_module(name)
    # What the imports made lives as long as the worker: collections, and
    # scans of the heap (fitlab.failure.explained), skip it from now on.
    gc.freeze()
    threading.Thread(target=_end_with, args=(server,), daemon=True).start()


def _end_with(server: int) -> None:
    # A server killed (kill -9, a crash) sends no shutdown: the worker, now an
    # orphan, exits quietly rather than wait on its queue for ever.
    while os.getppid() == server:
        time.sleep(1.0)
    os._exit(0)


def _call(func: Callable, args: tuple, kwargs: dict) -> Any:
    try:
        return func(*args, **kwargs)
    finally:
        # What the call left in reference cycles (a failed run's traceback
        # holds its frames, and they its tensors) is freed now, not whenever
        # the collector next sweeps everything. What survives (modules a first
        # call imported, their caches) is frozen, as the imports were: the
        # next call's collection walks that call's objects only.
        gc.collect()
        gc.freeze()


def _kill(executor: ProcessPoolExecutor) -> None:
    """Stop an executor whose worker is mid-call: its call is abandoned."""
    kill = getattr(executor, "kill_workers", None)  # public from Python 3.14
    if kill is not None:
        kill()
    else:  # before 3.14 no public call stops a running worker
        for process in list((getattr(executor, "_processes", None) or {}).values()):
            process.kill()
    executor.shutdown(wait=False, cancel_futures=True)


class WorkerPool:
    """At most `size` warm worker processes; a call waits for a free one.
    Each worker imports `preload`, and the modules of the functions the pool
    has run, as it starts."""

    def __init__(self, size: int = WORKERS, calls_per_worker: int = CALLS_PER_WORKER,
                 preload: tuple[str, ...] = ()):
        self.size, self.calls_per_worker = size, calls_per_worker
        # One list, passed to every executor's initializer: a worker spawned
        # later (renewed, or replacing one) is handed it as it is then.
        self._preload: list[str] = list(dict.fromkeys(preload))
        self._free: queue.LifoQueue[ProcessPoolExecutor | None] = queue.LifoQueue()
        for _ in range(size):
            self._free.put(None)  # a slot whose worker is started when first needed
        self._all: set[ProcessPoolExecutor] = set()
        self._starting: dict[ProcessPoolExecutor, Future] = {}  # warmed, their first call not yet done
        self._lock = threading.Lock()

    def _learn(self, modules: tuple[str, ...]) -> None:
        with self._lock:
            self._preload.extend(m for m in modules if m not in self._preload)

    def warm(self, count: int | None = None, preload: tuple[str, ...] = ()) -> None:
        """Start `count` workers (default: all) now, if not yet running,
        without waiting for their imports; they and every later worker
        import the modules `preload` first."""
        self._learn(preload)
        free = []
        while True:
            try:
                free.append(self._free.get_nowait())
            except queue.Empty:
                break
        with self._lock:
            missing = (self.size if count is None else count) - len(self._all)
        ready = []
        for executor in free:
            if executor is None and missing > 0:
                executor, missing = self._start(), missing - 1
                self._starting[executor] = executor.submit(int)  # it spawns its worker for a first call
            ready.append(executor)
        # The queue hands out the last put first: the workers go back last, so
        # the next call takes one, not an empty slot that starts another.
        for executor in sorted(ready, key=lambda e: e is not None):
            self._free.put(executor)

    def run(self, func: Callable, *args, timeout: float = DEFAULT_TIMEOUT, **kwargs) -> Any:
        """func(*args, **kwargs) in a worker process: its result by value, or
        its exception raised here. TimeoutError if it takes longer than
        `timeout` seconds (the worker is killed); WorkerDied if its worker
        exits during the call."""
        self._learn((getattr(func, "__module__", None) or "builtins",))
        executor, future = self._free.get(), None
        try:
            if executor is None:
                executor = self._start()
            try:
                # One call at a time per executor, a warming worker's start included:
                # CPython 3.11-3.13 may not replace a worker renewed by
                # max_tasks_per_child once calls have queued in it (gh-115634).
                starting = self._starting.pop(executor, None)
                if starting is not None:
                    starting.result(timeout)
                future = executor.submit(_call, func, args, kwargs)
            except (BrokenProcessPool, RuntimeError):  # died while idle, or closed: a fresh one
                self._retire(executor)
                executor = self._start()
                future = executor.submit(_call, func, args, kwargs)
            return future.result(timeout)
        except FutureTimeout:
            if future is not None and future.done():
                raise  # the call's own TimeoutError
            self._retire(executor)
            executor = None
            raise TimeoutError("the isolated call overran its timeout; its worker was replaced") from None
        except BrokenProcessPool as died:
            self._retire(executor)
            executor = None
            raise WorkerDied("the worker process exited during the call") from died
        finally:
            self._free.put(executor)

    def close(self) -> None:
        """Stop every worker; the pool starts new ones if used again."""
        with self._lock:
            executors, self._all = list(self._all), set()
        for executor in executors:
            _kill(executor)

    def _start(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(1, mp_context=_SPAWN, initializer=_start_worker,
                                       initargs=(self._preload, os.getpid()),
                                       max_tasks_per_child=self.calls_per_worker)
        with self._lock:
            self._all.add(executor)
        return executor

    def _retire(self, executor: ProcessPoolExecutor) -> None:
        with self._lock:
            self._all.discard(executor)
        _kill(executor)


_POOL = WorkerPool()
atexit.register(_POOL.close)


def run_isolated(func: Callable, *args, timeout: float = DEFAULT_TIMEOUT, **kwargs) -> Any:
    """func(*args, **kwargs) in one of the process's warm worker processes
    (see WorkerPool.run): for work that changes process-wide state."""
    return _POOL.run(func, *args, timeout=timeout, **kwargs)


def warm(count: int | None = None, preload: tuple[str, ...] = ()) -> None:
    """Start `count` of the process's workers (default: all) now, importing
    the modules `preload`, so that the first isolated call does not wait
    for a worker to import them (see WorkerPool.warm)."""
    _POOL.warm(count, preload)
