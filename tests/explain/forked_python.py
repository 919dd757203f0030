"""Run scripts as `python SCRIPT` runs them, each in a fork of one process that imported torch
once (a fresh interpreter and `import torch` cost seconds of CPU per script; tests/explain/
differential.py does the same for its corpus).

    python tests/explain/forked_python.py

reads one JSON request a line on stdin, [script, cwd, stdout path, stderr path], and answers
each with the script's exit status on a line of stdout. The child runs the file as `__main__`
with sys.argv and sys.path[0] as python sets them, prints an uncaught exception as python does
(its traceback from the script's own frame, runpy's left out) and exits 1, runs atexit handlers
and flushes, as the interpreter does on its way out.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys

import torch  # noqa: F401 - imported once, before the forks


def as_python(path: str) -> int:
    sys.argv = [path]
    sys.path[0] = os.path.dirname(path)
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException as exc:  # noqa: BLE001 - as the interpreter reports any
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next
        if tb is not None:
            exc.__traceback__ = tb  # the hook prints the exception's own traceback
        sys.excepthook(type(exc), exc, exc.__traceback__)
        return 1
    return 0


def run(path: str, cwd: str, out: str, err: str) -> int:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.chdir(cwd)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
            os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            code = as_python(os.path.abspath(path))
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (ValueError, OSError):
                    pass
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    for line in sys.stdin:
        print(run(*json.loads(line)), flush=True)
