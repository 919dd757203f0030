"""Work that changes process-wide state (torch's anomaly mode,
`warnings.catch_warnings`: switched on for one session, they change every
session's runs), run in a few warm worker processes instead: `run_isolated`.

Each of the pool's slots is a ProcessPoolExecutor of one spawned worker (not
forked: the server's threads and locks stay behind), so a call that overruns
its timeout, or whose worker dies, takes down its own slot only. A worker
imports, as it starts, the modules the pool's calls have needed, and is
renewed after `calls_per_worker` calls (`max_tasks_per_child`).
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
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

WORKERS = 2
# A warm worker is about 300 MiB and keeps under 0.5 MiB a width-256 lesson
# call (tests/lib/serving/test_workers.py): renewed, it stays under 512 MiB.
CALLS_PER_WORKER = 200
DEFAULT_TIMEOUT = 120.0
_SPAWN = multiprocessing.get_context("spawn")


class WorkerDied(RuntimeError):
    """The worker process running a call exited before answering."""


def _start_worker(preload: list[str], server: int) -> None:
    """A worker's initializer: import `preload`, then watch for its server's end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the server's process group: it ends with the shutdown
    for name in preload:
        importlib.import_module(name)
    gc.freeze()  # the imports live as long as the worker: no collection walks them
    threading.Thread(target=_end_with, args=(server,), daemon=True).start()


def _end_with(server: int) -> None:
    # A killed server sends no shutdown: its orphaned worker exits instead of waiting for ever.
    while os.getppid() == server:
        time.sleep(1.0)
    os._exit(0)


def _call(func: Callable, args: tuple, kwargs: dict) -> Any:
    try:
        return func(*args, **kwargs)
    finally:
        # Free the call's cycles now (a failed run's traceback holds its tensors)
        # and freeze what survives (a first call's imports), as the imports were.
        gc.collect()
        gc.freeze()


def _kill(executor: ProcessPoolExecutor) -> None:
    """Stop an executor whose worker may be mid-call: its call is abandoned."""
    if hasattr(executor, "kill_workers"):  # public from Python 3.14
        executor.kill_workers()
    else:  # private, fenced here: before 3.14 nothing public stops a running worker
        for process in list((getattr(executor, "_processes", None) or {}).values()):
            process.kill()
    # Waiting joins the executor's threads, so its queues' named semaphores are
    # unlinked now: a server that stops without atexit would leak them.
    executor.shutdown(wait=True, cancel_futures=True)


# Every pool is closed as its process exits, before multiprocessing's own exit
# unlinks the queues' semaphores: a worker still starting then would fail to
# open them and print a traceback (it is killed instead).
_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()
atexit.register(lambda: [pool.close(final=True) for pool in list(_POOLS)])


class WorkerPool:
    """At most `size` warm worker processes; a call waits for a free one.
    Each executor has one call at a time: CPython 3.11-3.13 may not replace a
    worker renewed by max_tasks_per_child once calls have queued (gh-115634)."""

    def __init__(self, size: int = WORKERS, calls_per_worker: int = CALLS_PER_WORKER,
                 preload: tuple[str, ...] = ()):
        self.size, self.calls_per_worker = size, calls_per_worker
        # One list, handed to every worker's initializer as it is when the worker starts.
        self._preload: list[str] = list(dict.fromkeys(preload))
        # Last in, first out: a call takes the warm worker a call just left, not a cold slot.
        self._free: queue.LifoQueue[ProcessPoolExecutor | None] = queue.LifoQueue()
        for _ in range(size):
            self._free.put(None)  # a slot whose worker starts when first needed
        self._all: set[ProcessPoolExecutor] = set()
        self._lock = threading.Lock()
        self._final = False
        _POOLS.add(self)

    def run(self, func: Callable, *args, timeout: float = DEFAULT_TIMEOUT, **kwargs) -> Any:
        """func(*args, **kwargs) in a worker process (all picklable, `func` a
        top-level function): its result by value, or its exception raised
        here. TimeoutError if it takes longer than `timeout` seconds (the
        worker is killed); WorkerDied if its worker exits during the call, or
        close() stops it before the call runs."""
        module = getattr(func, "__module__", None) or "builtins"
        with self._lock:
            if module not in self._preload:
                self._preload.append(module)
        executor = self._free.get()
        try:
            try:
                executor = executor or self._start()
                future = executor.submit(_call, func, args, kwargs)
            except RuntimeError:  # BrokenProcessPool (it died while idle) or closed: a fresh one
                self._retire(executor)
                executor = self._start()
                future = executor.submit(_call, func, args, kwargs)
            return future.result(timeout)
        except FutureTimeout:
            if future.done():
                raise  # the call's own TimeoutError
            self._retire(executor)
            raise TimeoutError("the isolated call overran its timeout; its worker was replaced") from None
        except (BrokenProcessPool, CancelledError) as died:  # its worker died, or close() stopped it first
            self._retire(executor)
            raise WorkerDied("the worker process exited during the call") from died
        finally:  # a retired (or closed) executor's slot goes back empty
            self._free.put(executor if executor in self._all else None)

    def close(self, final: bool = False) -> None:
        """Stop every worker; the pool starts new ones if used again. After
        `final`, a call raises WorkerDied instead: a stopping server's page
        runs start no worker that would outlive the close."""
        with self._lock:
            executors, self._all = list(self._all), set()
            self._final = self._final or final
        for executor in executors:
            _kill(executor)

    def _start(self) -> ProcessPoolExecutor:
        with self._lock:  # with close's: an executor is either closed by it or never started
            if self._final:
                raise WorkerDied("the pool is closed: its process is stopping")
            executor = ProcessPoolExecutor(1, mp_context=_SPAWN, initializer=_start_worker,
                                           initargs=(self._preload, os.getpid()),
                                           max_tasks_per_child=self.calls_per_worker)
            self._all.add(executor)
        return executor

    def _retire(self, executor: ProcessPoolExecutor | None) -> None:
        with self._lock:
            if executor not in self._all:  # None, or close() stops it: two shutdowns at once race
                return
            self._all.discard(executor)
        _kill(executor)


_POOL = WorkerPool()


def close_workers() -> None:
    """Stop the process's workers. A server calls this as it stops: uvicorn
    ends a server stopped by SIGTERM with that signal, so atexit never runs."""
    _POOL.close(final=True)


def run_isolated(func: Callable, *args, timeout: float = DEFAULT_TIMEOUT, **kwargs) -> Any:
    """func(*args, **kwargs) in one of the process's warm worker processes
    (see WorkerPool.run): for work that changes process-wide state."""
    return _POOL.run(func, *args, timeout=timeout, **kwargs)
