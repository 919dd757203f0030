"""Running work that changes process-wide state where it cannot leak: in a
few warm worker processes, reused.

Torch's anomaly mode and `warnings.catch_warnings` act on the whole process,
not the calling thread: switched on for one session's replay, they change
every other session's runs (their error messages, their warnings, their
speed). `WorkerPool.run(func, *args)` runs `func(*args)` in a worker process
instead and returns its result by value, or raises its exception.

The workers are fresh interpreters (`python -m fitlab.serving.isolation`, spawned,
never forked: the server's threads and locks stay behind). Each imports as
it starts the modules its pool's calls have needed so far (and any named by
`warm`), so a call does not wait for imports, a renewed worker included.
There are at most `size` of them; more callers wait for a free one. A worker
that dies, or overruns its call's timeout, is killed and replaced by a fresh
one; one found dead while idle (killed, out of memory) is replaced before it
is handed a call. A worker is renewed after `calls_per_worker` calls, or
as soon as a call leaves it over `max_rss` bytes resident (read from /proc,
where there is one), which bounds whatever a long-lived process accumulates.

`func` must be picklable: a top-level function of an importable module; its
arguments and result must be picklable too.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import pickle
import queue
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORKERS = 2
CALLS_PER_WORKER = 500
# A worker with torch imported is about 300 MiB resident, and one lesson call
# at width 256 adds about 15 MiB that stays (allocator pools); over this cap
# something is accumulating, and the worker is renewed.
MAX_RSS = 512 * 2**20
DEFAULT_TIMEOUT = 120.0
_ROOT = Path(__file__).resolve().parents[2]  # where `fitlab` is importable from
_HEADER = struct.Struct("!Q")  # each message: its length, then a pickle
_READY = "ready"


class WorkerDied(RuntimeError):
    """The worker process running a call exited before answering."""


class IsolatedError(RuntimeError):
    """An exception of the isolated call that could not be sent back as
    itself (not picklable); its message is the worker's traceback."""


def _send(stream, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream, size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError("the other end closed the pipe")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(stream) -> object:
    (size,) = _HEADER.unpack(_read_exactly(stream, _HEADER.size))
    return pickle.loads(_read_exactly(stream, size))


def resident_bytes(pid: int) -> int | None:
    """The resident memory of process `pid` in bytes, or None where /proc
    cannot tell (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, preload: tuple[str, ...]):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fitlab.serving.isolation", *preload], cwd=_ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.calls = 0
        self.ready = False

    def call(self, func: Callable, args: tuple, kwargs: dict, timeout: float) -> tuple[str, Any]:
        """("ok", result) or ("error", exception) of func(*args, **kwargs) in
        this worker, within `timeout` seconds (counted from now, including
        the worker's start if it is new)."""
        deadline = time.monotonic() + timeout
        self.calls += 1
        try:
            if not self.ready:
                if self._wait(deadline) != _READY:
                    raise WorkerDied("the worker did not start")
                self.ready = True
            _send(self.process.stdin, (func, args, kwargs))
            return self._wait(deadline)
        except TimeoutError:
            raise
        except (EOFError, OSError) as exc:
            raise WorkerDied(f"the worker process exited (code {self.process.poll()})") from exc

    def _wait(self, deadline: float) -> object:
        remaining = deadline - time.monotonic()
        readable, _, _ = select.select([self.process.stdout], [], [], max(0.0, remaining))
        if not readable:
            raise TimeoutError("the isolated call overran its timeout; its worker was replaced")
        return _receive(self.process.stdout)

    def alive(self) -> bool:
        """Whether the process is still running (it may have been killed while idle)."""
        return self.process.poll() is None

    def stop(self) -> None:
        """Kill the process (it may be mid-call) and reap it."""
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            stream.close()


class WorkerPool:
    """At most `size` warm worker processes; a call waits for a free one.
    Each worker imports `preload`, and the modules of the functions the pool
    has run, as it starts."""

    def __init__(self, size: int = WORKERS, calls_per_worker: int = CALLS_PER_WORKER,
                 max_rss: int | None = MAX_RSS, preload: tuple[str, ...] = ()):
        self.size, self.calls_per_worker, self.max_rss = size, calls_per_worker, max_rss
        self._preload = dict.fromkeys(preload)  # an ordered set of module names
        self._idle: queue.LifoQueue[_Worker | None] = queue.LifoQueue()
        for _ in range(size):
            self._idle.put(None)  # a slot whose worker is started when first needed
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()

    @property
    def preload(self) -> tuple[str, ...]:
        """The modules a worker starting now imports first."""
        with self._lock:
            return tuple(self._preload)

    def warm(self, count: int | None = None, preload: tuple[str, ...] = ()) -> None:
        """Start `count` workers (default: all) now, if not yet running,
        without waiting for their imports; they and every later worker
        import the modules `preload` first."""
        with self._lock:
            self._preload.update(dict.fromkeys(preload))
        free = []
        while True:
            try:
                free.append(self._idle.get_nowait())
            except queue.Empty:
                break
        missing = self.size - len(self.pids()) if count is None else count - len(self.pids())
        ready = []
        for worker in free:
            if worker is None and missing > 0:
                worker, missing = self._start(), missing - 1
            ready.append(worker)
        # The queue hands out the last put first: the workers go back last, so
        # the next call takes one, not an empty slot that starts another.
        for worker in sorted(ready, key=lambda w: w is not None):
            self._idle.put(worker)

    def run(self, func: Callable, *args, timeout: float = DEFAULT_TIMEOUT, **kwargs) -> Any:
        """func(*args, **kwargs) in a worker process: its result by value, or
        its exception raised here. TimeoutError if it takes longer than
        `timeout` seconds (the worker is killed); WorkerDied if its worker
        exits during the call."""
        with self._lock:
            self._preload.setdefault(getattr(func, "__module__", None) or "builtins")
        worker = self._idle.get()
        try:
            if worker is not None and not worker.alive():
                self._retire(worker)  # died while idle: this call gets a fresh one
                worker = None
            if worker is None:
                worker = self._start()
            status, value = worker.call(func, args, kwargs, timeout)
        except BaseException:
            # Timed out, died, or interrupted mid-call: its answer, if any,
            # would be read by the next call. A fresh worker takes the slot.
            if worker is not None:
                self._retire(worker)
            self._idle.put(None)
            raise
        if worker.calls >= self.calls_per_worker or self._over_memory(worker):
            self._retire(worker)
            worker = None
        self._idle.put(worker)
        if status == "error":
            raise value
        return value

    def pids(self) -> list[int]:
        """The process ids of the live workers."""
        with self._lock:
            return [w.process.pid for w in self._all]

    def close(self) -> None:
        """Stop every worker; the pool starts new ones if used again."""
        with self._lock:
            workers, self._all = list(self._all), set()
        for worker in workers:
            worker.stop()

    def _over_memory(self, worker: _Worker) -> bool:
        if self.max_rss is None:
            return False
        rss = resident_bytes(worker.process.pid)
        return rss is not None and rss > self.max_rss

    def _start(self) -> _Worker:
        worker = _Worker(self.preload)
        with self._lock:
            self._all.add(worker)
        return worker

    def _retire(self, worker: _Worker) -> None:
        with self._lock:
            self._all.discard(worker)
        worker.stop()


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


def _serve(preload: list[str]) -> None:
    """A worker's life: import the `preload` modules, say ready, then answer
    calls until the parent closes the pipe (or dies)."""
    # Ctrl-C on the server reaches its whole process group: the worker ends
    # when the server closes the pipe instead, as it does when killed.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot corrupt the answers
    for name in preload:
        importlib.import_module(name)
    # What the imports made lives as long as the worker: collections, and
    # scans of the heap (fitlab.failure.explained), skip it from now on.
    gc.freeze()
    try:
        _answer(requests, answers)
    except BrokenPipeError:
        # The server closed the pool (it stops) while this worker started or
        # answered: end as on EOF, with no traceback in the server's log and
        # no flush of the unsent answer at exit.
        os._exit(0)


def _answer(requests, answers) -> None:
    """Say ready, then answer calls until the parent closes the pipe."""
    _send(answers, _READY)
    while True:
        try:
            func, args, kwargs = _receive(requests)
        except EOFError:
            return
        try:
            result = func(*args, **kwargs)
        except Exception as exc:  # the caller's to handle, raised there
            _send_error(answers, exc)
        else:
            try:
                _send(answers, ("ok", result))
            except BrokenPipeError:
                raise
            except Exception as exc:  # the result does not pickle
                _send_error(answers, exc)
        # What the call left in reference cycles (a failed run's traceback
        # holds its frames, and they its tensors) is freed now, while the
        # worker waits, not whenever the collector next sweeps everything:
        # otherwise a width-256 lesson call kept 0.6 MiB until then.
        gc.collect()


def _send_error(answers, exc: Exception) -> None:
    try:
        _send(answers, ("error", exc))
    except BrokenPipeError:
        raise
    except Exception:  # the exception itself does not pickle
        _send(answers, ("error", IsolatedError(traceback.format_exc())))


if __name__ == "__main__":
    _serve(sys.argv[1:])
