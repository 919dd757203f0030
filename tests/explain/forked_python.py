"""Run `python SCRIPT ARGS` and `python -m MODULE ARGS` (`python -m fitlab.explain ...` among
them) as python runs them, each in a fork of one process that imported torch and fitlab.explain's
recorder and runner once (a fresh interpreter and `import torch` cost seconds of CPU per run;
tests/explain/differential.py does the same for its corpus).

    python tests/explain/forked_python.py

reads one JSON request a line on stdin, [argv after `python`, cwd, environment, stdout path,
stderr path], and answers each with the run's exit status on a line of stdout. The child takes
the folder and the environment (PYTHONPATH and PYTHONDONTWRITEBYTECODE applied as python applies
them), stdin from /dev/null, stdout and stderr to the files, fresh random seeds (torch, random,
numpy) and a fresh `__main__`; it sets sys.argv and sys.path as python does (sys.path[0] the
script's folder, or the current folder for -m; then PYTHONPATH's; then the site's) and runs the
file as `__main__`, or the module through runpy._run_module_as_main as `python -m` does. An
uncaught exception is printed as python prints it (the server's frame left out; runpy's kept
for -m, as python's) and exits 1, a KeyboardInterrupt by SIGINT; then non-daemon threads are
joined, atexit handlers run and the streams flushed, as the interpreter does on its way out.
Checked byte-equal against python (output, traceback, exit status) for the tests' runs.

What it is not: a fresh interpreter. torch, fitlab.explain's recorder and runner (torch's
schemas read: writes.written_ops()) and what they import are imported already, whatever the
run's sys.path, and what python or torch reads from the environment as they start
(PYTHONHASHSEED, PYTHONWARNINGS, PYTHONUNBUFFERED, LANG, OMP_NUM_THREADS, TORCH_*) is the
server's: the conftest refuses a run that changes one. The process group is the server's, signal
dispositions are as pytest left them (the server sets none), and stdin is never a terminal or a
pipe. The CLI itself imports torch and the recorder before it runs the script, so that torch is
imported early changes nothing it does; tests whose claim is the process (signals and Ctrl-C, a
closed stdout, forks and threads of the script, `os._exit`, a clean `sys.modules`, the console
script) start a real python.
"""

from __future__ import annotations

import atexit
import builtins
import importlib
import io
import json
import os
import random
import runpy
import signal
import sys
import threading
import types
from importlib.machinery import SourceFileLoader

import torch  # imported once, before the forks


def pythonpath() -> list[str]:
    """PYTHONPATH's entries, as python reads them into sys.path."""
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


# The site's path, without this folder and without PYTHONPATH's entries (each run puts its own).
SITE = [p for p in sys.path[1:] if p not in pythonpath()]
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import fitlab.explain.runner  # noqa: E402, F401 - as `python -m fitlab.explain` imports it, before the script
from fitlab.explain import writes  # noqa: E402

writes.written_ops()  # torch's schemas read once, not in every run
del sys.path[0]


def as_python(argv: list) -> int:
    """Run `python *argv` here; its exit status (-SIGINT: to end by SIGINT)."""
    module = argv[1] if argv[0] == "-m" else None
    path = None if module else os.path.abspath(argv[0])
    sys.argv = ["-m", *argv[2:]] if module else list(argv)
    sys.path[:] = [os.getcwd() if module else os.path.dirname(os.path.realpath(path)), *pythonpath(), *SITE]
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    importlib.invalidate_caches()
    torch.seed()  # random generators seeded afresh, as a new interpreter's are
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    main = sys.modules["__main__"] = types.ModuleType("__main__")   # this file's no more
    main.__builtins__ = builtins
    try:
        if module:
            runpy._run_module_as_main(module)   # what `python -m` calls: its frames in a traceback
        else:
            main.__dict__.update(__file__=path, __cached__=None, __loader__=SourceFileLoader("__main__", path))
            try:
                with io.open_code(path) as f:
                    source = f.read()
            except OSError as exc:
                why = f"can't open file {path!r}: [Errno {exc.errno}] {exc.strerror}"
                print(f"{sys.executable}: {why}", file=sys.stderr)
                return 2
            exec(compile(source, path, "exec"), main.__dict__)  # noqa: S102 - as python runs it
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException as exc:  # noqa: BLE001 - as the interpreter reports any
        if exc.__traceback__.tb_frame.f_code is as_python.__code__:
            exc.__traceback__ = exc.__traceback__.tb_next  # the hook prints the program's frames only
        sys.excepthook(type(exc), exc, exc.__traceback__)
        return -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    return 0


def run(argv: list, cwd: str, env: dict, out: str, err: str) -> int:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            for fd, name in enumerate((os.devnull, out, err)):  # no other descriptor left open
                opened = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC if fd else os.O_RDONLY)
                os.dup2(opened, fd)
                os.close(opened)
            code = as_python(argv)
            threading._shutdown()  # non-daemon threads joined, as python's exit does
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (ValueError, OSError):
                    pass
            if code == -signal.SIGINT:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    for line in sys.stdin:
        print(run(*json.loads(line)), flush=True)
