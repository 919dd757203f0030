"""Run scripts as `python` runs them, or under `python -m fitlab.explain`, each in a fork of
this one process (which imports torch and transformers once: a fresh interpreter per script
and side costs seconds each on a shared machine).

    python tests/explain/differential.py (python|explain|fix|contents) OUTDIR SCRIPT...

For each SCRIPT, OUTDIR/NAME.out, .err and .rc hold its stdout, stderr and exit status. The
python side runs the file with runpy as `__main__` (sys.argv and sys.path[0] as python sets
them), prints an uncaught exception with sys.excepthook and exits 1, runs atexit handlers and
flushes, as the interpreter does on its way out; the explain side calls the CLI's main(), the
fix side main() with --fix (which keeps each backward's gradients while recording), the contents
side main() with --check-contents (which copies every saved tensor).
"""

import atexit
import os
import runpy
import sys

import torch  # noqa: F401 - imported once, before the forks
import transformers  # noqa: F401


def as_python(path: str) -> int:
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(os.path.abspath(path), run_name="__main__")  # __file__ absolute, as python's
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - as the interpreter reports any
        sys.excepthook(*sys.exc_info())
        return 1
    return 0


def as_explain(path: str, *options: str) -> int:
    from fitlab.explain.__main__ import main
    return main([*options, path])


SIDES = {"python": as_python, "explain": as_explain, "fix": lambda path: as_explain(path, "--fix"),
         "contents": lambda path: as_explain(path, "--check-contents")}


def run(side: str, path: str, outdir: str) -> None:
    name = os.path.splitext(os.path.basename(path))[0]
    base = os.path.join(outdir, name)
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            out, err = (os.open(base + ext, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) for ext in (".out", ".err"))
            os.dup2(out, 1)
            os.dup2(err, 2)
            code = SIDES[side](path)
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (ValueError, OSError):
                    pass
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    with open(base + ".rc", "w") as f:
        f.write(str(os.waitstatus_to_exitcode(status)))


if __name__ == "__main__":
    side, outdir, *paths = sys.argv[1:]
    if side != "python":
        import fitlab.explain.runner  # noqa: F401 - imported, and torch's schemas read, before the forks
        from fitlab.explain import writes
        writes.written_ops()
    for p in paths:
        run(side, p, outdir)
