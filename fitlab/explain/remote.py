"""An error raised in another process and handed back to this one as its traceback's text.

A multiprocessing pool's worker, a `concurrent.futures` process pool's and a process that
`torch.multiprocessing.spawn` started each send their error home: the pools raise it again here
with the worker's traceback as its cause, spawn raises ProcessRaisedException holding it. What
that process wrote was not recorded (a forked child records nothing, a spawned one is a new
interpreter), but its traceback still names the line that failed there and the function the
process ran, which the user can run here to have its writes recorded:

    >>> worker = worker_error(exc)    # what pool.map(work, ...) raised
    >>> worker.launcher, worker.frames[-1].line, worker.function
    ('multiprocessing.Pool', 12, 'work')
"""

from __future__ import annotations

from dataclasses import dataclass

from fitlab.explain import stack as stacks
from fitlab.explain.decode import pasted_lines

# The module of the exception a pool chains the worker's traceback to (its text in `.tb`).
_POOLS = {
    "multiprocessing.pool": "multiprocessing.Pool",
    "concurrent.futures.process": "concurrent.futures.ProcessPoolExecutor",
}
_SPAWN = "torch.multiprocessing.spawn"
_TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True)
class WorkerError:
    """The error of another process: who started it, its message (without the type), its user's
    frames outermost first (stack.Frame, as its traceback printed them) and the function the
    process ran (the outermost of them), None if its traceback shows none of the user's."""

    launcher: str
    error: str
    frames: tuple
    function: str | None


def _message(text: str) -> str:
    """The message of a traceback's last line, `Type: message` -> `message` (a pool's text is
    wrapped in triple quotes)."""
    last = next((line for line in reversed(text.splitlines()) if line.strip() not in ("", '"""')), "")
    kind, sep, message = last.partition(": ")
    return message if sep and kind.replace(".", "").replace("_", "").isalnum() else last


def worker_error(exc: BaseException) -> WorkerError | None:
    """The other process's error `exc` carries home, or None if it is this process's own.
    Never raises."""
    cause = exc.__cause__
    launcher = _POOLS.get(type(cause).__module__) if cause is not None else None
    if launcher is not None and isinstance(cause.__dict__.get("tb"), str):
        text = cause.__dict__["tb"]
    elif type(exc).__module__ == _SPAWN and type(exc).__name__ == "ProcessRaisedException":
        # Its message is the worker's traceback, after a line naming the process.
        launcher, text = _SPAWN, exc.__dict__.get("msg")
        if not isinstance(text, str) or _TRACEBACK not in text:
            return None
        text = text[text.index(_TRACEBACK):]
    else:
        return None
    frames = tuple(stacks.Frame(f.file, f.line, f.function, f.code) for f in pasted_lines(text)
                   if stacks.is_user_file(f.file))
    return WorkerError(launcher, _message(text), frames, frames[0].function if frames else None)
