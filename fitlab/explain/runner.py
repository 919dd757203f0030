"""Run a script as `__main__` under the recorder and turn what happened into a Report."""

from __future__ import annotations

import builtins
import os
import sys
import tokenize
import traceback
import types

from fitlab.explain import frames
from fitlab.explain.decode import decode
from fitlab.explain.recorder import Recorder
from fitlab.explain.report import Report, SilentWrite, TensorFacts, WriteFacts, choose_fix

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _strip_ours(te: traceback.TracebackException, seen: set) -> None:
    """Drop fitlab.explain's frames from a traceback (and its causes), as if Python ran the script."""
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list(
            [f for f in te.stack if not os.path.abspath(f.filename).startswith(_HERE)])
        _strip_ours(te.__cause__, seen)
        te = te.__context__


def python_traceback(exc: BaseException) -> str:
    """The traceback Python would print for an exception the script raised."""
    te = traceback.TracebackException.from_exception(exc)
    _strip_ours(te, set())
    return "".join(te.format())


def _exit_code(exc: SystemExit) -> int:
    """The process exit code Python gives a SystemExit (a non-int code is printed, exit 1)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _silent(rec: Recorder) -> tuple:
    return tuple(SilentWrite(s.write.op, frames.user_frames(s.write.stack),
                             TensorFacts(s.shape, s.node, s.saved_as)) for s in rec.silent.values())


def _inplace_report(exc: BaseException, rec: Recorder) -> Report:
    message = str(exc)
    facts = decode(message)
    fail = rec.failure if rec.failure is not None and rec.failure.exc is exc else None
    if fail is None:
        return Report("inplace_error", message, TensorFacts(facts.shape, None, None, facts.version,
                                                            facts.expected_version, facts.tensor_type),
                      silent_writes=_silent(rec), exit_code=1, notes=tuple(rec.notes))
    writes = tuple(WriteFacts(w.op, w.version_before, frames.user_frames(w.stack)) for w in fail.writes)
    fix = choose_fix(fail.writes[0].op, fail.writes[0].stack) if fail.writes else None
    return Report(
        "inplace_error", message,
        TensorFacts(fail.shape, fail.node, fail.saved_as, fail.version, fail.saved_version,
                    facts.tensor_type),
        saved_at=frames.user_frames(fail.saved_stack), writes=writes,
        failed_at=frames.user_frames(fail.failed_stack), silent_writes=_silent(rec), fix=fix,
        exit_code=1, writes_missing=max(fail.writes_missing, 0), notes=tuple(rec.notes))


def run_script(path: str, argv=(), recorder: Recorder | None = None) -> Report:
    """Run the script at `path` as `__main__` with sys.argv = [path, *argv], like `python path`,
    recording in-place writes; return what happened.

    Everything global it changes is restored afterwards: sys.argv, sys.path,
    sys.modules["__main__"] and the torch modes. KeyboardInterrupt propagates.
    """
    rec = recorder if recorder is not None else Recorder()
    abspath = os.path.abspath(path)
    saved_argv, saved_path = sys.argv, list(sys.path)
    had_main, saved_main = "__main__" in sys.modules, sys.modules.get("__main__")
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=abspath, __builtins__=builtins, __cached__=None)
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(abspath))
    sys.modules["__main__"] = module
    try:
        with tokenize.open(abspath) as f:
            code = compile(f.read(), abspath, "exec")
        with rec:
            exec(code, module.__dict__)  # noqa: S102 - running the user's script is the point
    except SystemExit as exc:
        return Report("finished", silent_writes=_silent(rec), exit_code=_exit_code(exc), notes=tuple(rec.notes))
    except Exception as exc:  # noqa: BLE001 - whatever the script dies of is reported
        if isinstance(exc, RuntimeError) and decode(str(exc)) is not None:
            return _inplace_report(exc, rec)
        return Report("other_error", f"{type(exc).__name__}: {exc}", silent_writes=_silent(rec),
                      exit_code=2, traceback=python_traceback(exc), notes=tuple(rec.notes))
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if had_main:
            sys.modules["__main__"] = saved_main
        else:
            sys.modules.pop("__main__", None)
    return Report("finished", silent_writes=_silent(rec), notes=tuple(rec.notes))
