"""Run a script (or a module, as `python -m`) as `__main__` under the recorder, and turn what
happened into a Report."""

from __future__ import annotations

import builtins
import dataclasses
import importlib.machinery
import importlib.util
import io
import linecache
import os
import pkgutil
import sys
import tokenize
import traceback
import types

from fitlab.explain import stack as stacks
from fitlab.explain.advice import choose_fix
from fitlab.explain.decode import decode
from fitlab.explain.neighbours.facts import report as neighbour_report
from fitlab.explain.neighbours.messages import neighbour
from fitlab.explain.recorder import Recorder
from fitlab.explain.remote import worker_error
from fitlab.explain.report import ChangedContents, Report, SilentWrite, StaleTensor, TensorFacts, WriteFacts

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Exit status of a process Ctrl-C ended, as a shell reports it.
INTERRUPTED = 130


def _as_python(stack: traceback.StackSummary) -> traceback.StackSummary:
    frames = list(stack)
    keep = []
    for i, f in enumerate(frames):
        callee = frames[i + 1].filename if i + 1 < len(frames) else None
        if (stacks.inserted(f.filename, callee) or os.path.abspath(f.filename).startswith(_HERE)
                or f.filename.startswith("<frozen runpy")):
            continue
        keep.append(f)
    return traceback.StackSummary.from_list(keep)


def _strip_ours(te: traceback.TracebackException, seen: set) -> None:
    """Drop the frames fitlab.explain and its modes added to a traceback (and its causes), as if
    Python ran the script alone."""
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        te.stack = _as_python(te.stack)
        _strip_ours(te.__cause__, seen)
        te = te.__context__


def _script_traceback(tb):
    """A traceback without the runner's frames above the script's and the modes' inside it."""
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_HERE):
        tb = tb.tb_next
    return stacks.without_inserted(tb)


def _hooked(exc: BaseException, hook, plain: str) -> str:
    """What `hook`, a sys.excepthook the script installed, prints for `exc` as python calls it at
    exit; if it raises, what python prints then: the hook's own output so far, its error, and
    `plain`, the original traceback."""
    chain, kept = [exc], {}
    while chain:
        e = chain.pop()
        if e is not None and id(e) not in kept:
            kept[id(e)] = (e, e.__traceback__)
            e.__traceback__ = _script_traceback(e.__traceback__)
            chain += [e.__cause__, e.__context__]
    saved, sys.stderr = sys.stderr, io.StringIO()
    try:
        hook(type(exc), exc, exc.__traceback__)
        return sys.stderr.getvalue()
    except Exception as error:  # noqa: BLE001 - as python reports any error of the hook
        error.__traceback__ = error.__traceback__.tb_next  # from the hook's frame on, as python's
        if error.__context__ is exc:  # python calls the hook with no exception being handled
            error.__context__ = None
        return (f"{sys.stderr.getvalue()}Error in sys.excepthook:\n{_formatted(error)}"
                f"\nOriginal exception was:\n{plain}")
    finally:
        sys.stderr = saved
        for e, tb in kept.values():  # the analysis after reads the frames as they were
            e.__traceback__ = tb


def python_traceback(exc: BaseException, hook=None) -> str:
    """The traceback Python would print for an exception the script raised; through `hook`, the
    sys.excepthook the script installed (torch.distributed's prefixes each line with the rank)."""
    plain = _formatted(exc)
    return plain if hook is None else _hooked(exc, hook, plain)


def _formatted(exc: BaseException) -> str:
    te = traceback.TracebackException.from_exception(exc)
    _strip_ours(te, set())
    return "".join(te.format())


def error_line(exc: BaseException) -> str:
    """`Type: message` as Python's traceback ends, even when the exception's __str__ raises."""
    return "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]


def _exit_code(exc: SystemExit) -> int:
    """The process exit code Python gives a SystemExit (a non-int code is printed, exit 1)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    try:
        print(exc.code, file=sys.stderr)
    except (ValueError, OSError):  # the script closed stderr
        pass
    return 1


def _silent(rec: Recorder) -> tuple:
    return tuple(SilentWrite(s.write.op, stacks.user_frames(s.write.stack),
                             TensorFacts(s.shape, s.node, s.saved_as)) for s in rec.silent.values())


def _changed(rec: Recorder) -> tuple:
    return tuple(ChangedContents(TensorFacts(c.shape, c.node, c.saved_as), stacks.user_frames(c.saved_stack),
                                 tuple(WriteFacts(w.op, w.version_before, stacks.user_frames(w.stack),
                                                  stacks.via(w.stack)) for w in c.writes))
                 for c in rec.changed.values())


def _common(rec: Recorder) -> dict:
    return {"silent_writes": _silent(rec), "notes": tuple(rec.notes), "changed_contents": _changed(rec)}


def _stale(fail, tensor_type) -> StaleTensor:
    """One stale saved tensor of the failing graph: where it was saved, its writes, its fix."""
    writes = tuple(WriteFacts(w.op, w.version_before, stacks.user_frames(w.stack), stacks.via(w.stack))
                   for w in fail.writes)
    # Without the saving call, the cause is a guess: no fix rather than a wrong one.
    fix = (choose_fix(fail.writes[0], fail.saved_stack, fail.failed_stack, fail.carried, fail.storage)
           if fail.writes and fail.saved_seen and not fail.formula else None)
    return StaleTensor(TensorFacts(fail.shape, fail.node, fail.saved_as, fail.version, fail.saved_version, tensor_type),
                       stacks.user_frames(fail.saved_stack), writes, fix, stacks.via(fail.saved_stack),
                       fail.writes_missing)


def _raised_from(exc: BaseException, inner: BaseException) -> bool:
    """Whether `inner` is `exc` or in its chain: an error wrapped as it was raised on
    (`raise RuntimeError(str(e)) from e`) is still the one backward raised."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if exc is inner:
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _inplace_report(exc: BaseException, rec: Recorder, tb: str | None) -> Report:
    message = str(exc)
    facts = decode(message)
    fail = rec.failure if rec.failure is not None and _raised_from(exc, rec.failure.exc) else None
    if fail is None:
        return Report("inplace_error", message, TensorFacts(facts.shape, None, None, facts.version,
                                                            facts.expected_version, facts.tensor_type),
                      exit_code=1, traceback=tb, **_common(rec))
    main = _stale(fail, facts.tensor_type)
    return Report(
        "inplace_error", message, main.tensor, saved_at=main.saved_at, writes=main.writes,
        failed_at=stacks.user_frames(fail.failed_stack), fix=main.fix, exit_code=1, traceback=tb,
        writes_missing=fail.writes_missing, saved_via=main.saved_via,
        failed_via=stacks.via(fail.failed_stack), unchecked=rec.unchecked,
        also=tuple(_stale(f, facts.tensor_type) for f in fail.also), **_common(rec))


def _worker_report(worker, rec: Recorder, tb: str) -> Report | None:
    """The in-place error, or a neighbour, that another process raised: its own line, not recorded
    (None for another error)."""
    facts = decode(worker.error)
    near = neighbour(worker.error) if facts is None else None
    if facts is None and near is None:
        return None
    status = "inplace_error" if facts is not None else near.kind
    tensor = None if facts is None else TensorFacts(facts.shape, None, None, facts.version,
                                                    facts.expected_version, facts.tensor_type)
    return Report(status, worker.error, tensor, failed_at=worker.frames, exit_code=1,
                  traceback=tb, worker=worker, **_common(rec))


def report_of(exc: BaseException | None, rec: Recorder, hook=None) -> Report:
    """The Report of a recorded run that ended with `exc` (None: it finished); hook: the
    sys.excepthook the script installed, which python would print its traceback with."""
    if exc is None or isinstance(exc, SystemExit):
        code = 0 if exc is None else _exit_code(exc)
        if rec.thread_errors:
            # Python's threading.excepthook printed its traceback; the exit status stays the script's.
            return dataclasses.replace(_inplace_report(rec.thread_errors[0], rec, None), exit_code=code)
        return Report("finished", exit_code=code, **_common(rec))
    tb = python_traceback(exc, hook)
    if isinstance(exc, KeyboardInterrupt):
        return Report("interrupted", "KeyboardInterrupt", exit_code=INTERRUPTED, traceback=tb, **_common(rec))
    worker = worker_error(exc)
    explained = None if worker is None else _worker_report(worker, rec, tb)
    if explained is not None:
        return explained
    if isinstance(exc, RuntimeError) and decode(str(exc)) is not None:
        return _inplace_report(exc, rec, tb)
    explained = neighbour_report(exc, rec, tb, _common(rec))
    if explained is not None:
        return explained
    return Report("other_error", error_line(exc), exit_code=2, traceback=tb, **_common(rec))


def _run(code, module: types.ModuleType, argv: list, path0: str | None, recorder: Recorder | None) -> Report:
    rec = recorder if recorder is not None else Recorder()
    saved_argv, saved_path = sys.argv, list(sys.path)
    had_main, saved_main = "__main__" in sys.modules, sys.modules.get("__main__")
    hook = sys.excepthook
    sys.argv = argv
    if path0 is not None:
        sys.path.insert(0, path0)
    sys.modules["__main__"] = module
    try:
        _exec(code, module, rec)
    except BaseException as exc:  # noqa: BLE001 - whatever the script dies of is reported
        return report_of(exc, rec, sys.excepthook if sys.excepthook is not hook else None)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if had_main:
            sys.modules["__main__"] = saved_main
        else:
            sys.modules.pop("__main__", None)
    return report_of(None, rec)


def _exec(code, module: types.ModuleType, rec: Recorder) -> None:
    with rec:
        exec(code, module.__dict__)  # noqa: S102 - running the user's program is the point


# Frames outside _exec's are the runner's (and a console script's), never the program's.
stacks.add_boundary(_exec.__code__)


def first_path(folder: str) -> str | None:
    """`folder`, which python puts first on sys.path for a script or a module, or None under
    `python -P`, which puts none (a folder or zip file run by its `__main__.py` goes first all the
    same)."""
    return None if sys.flags.safe_path else folder


def main_spec(path: str):
    """The spec of the `__main__` module that `python path` runs when `path` is a folder or a zip
    file (its `__main__.py`, found as runpy finds it), or None when it is a script. ImportError
    when the folder or zip file has none."""
    importer = pkgutil.get_importer(os.path.join(os.getcwd(), path))
    if importer is None:
        return None
    spec = importer.find_spec("__main__")
    if spec is None or spec.loader is None:
        raise ImportError(f"can't find '__main__' module in {path!r}")
    return spec


def script_file(path: str) -> str:
    """The file whose code `python path` runs first: the script, or a folder's `__main__.py`."""
    spec = main_spec(path)
    return os.path.abspath(path) if spec is None else spec.origin


def script_main(path: str, argv=(), source: str | None = None, filename: str | None = None) -> tuple:
    """(code, module, argv, sys.path[0] or None) that run the script at `path` as `python path`
    does (a folder's or zip file's `__main__` module too); `source` (compiled as `filename`) in
    place of the file's own text, for an edited copy."""
    spec = main_spec(path)
    if spec is not None:
        code, module = _spec_main(spec, source, filename)
        # A zip file's lines are read through its loader: the report quotes them too.
        linecache.lazycache(spec.origin, module.__dict__)
        return code, module, [path, *argv], os.path.join(os.getcwd(), path)
    module = types.ModuleType("__main__")
    abspath = os.path.abspath(path)
    module.__dict__.update(__file__=abspath, __builtins__=builtins, __cached__=None,
                           __loader__=importlib.machinery.SourceFileLoader("__main__", abspath))
    if source is None:
        with tokenize.open(abspath) as f:
            source = f.read()
    code = compile(source, filename or abspath, "exec")
    # A symlinked script's own folder: python resolves the link (its siblings import).
    return code, module, [path, *argv], first_path(os.path.dirname(os.path.realpath(abspath)))


def run_script(path: str, argv=(), recorder: Recorder | None = None) -> Report:
    """Run the script at `path` (or a folder's or zip file's `__main__.py`) as `__main__` with
    sys.argv = [path, *argv], like `python path`, recording in-place writes; return what happened
    (a KeyboardInterrupt is an "interrupted" Report).

    Everything global it changes is restored afterwards: sys.argv, sys.path,
    sys.modules["__main__"] and the torch modes.
    """
    return _run(*script_main(path, argv), recorder)


def find_module(name: str):
    """The spec of module `name` as `python -m` finds it (sys.path[0] the current folder; a
    package's `__main__` submodule). ImportError if not found."""
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(name + ".__main__")
    finally:
        sys.path.pop(0)
    if spec is None or spec.loader is None or spec.origin is None:
        raise ImportError(f"No module named {name}")
    return spec


def module_main(name: str, argv=(), source: str | None = None, filename: str | None = None) -> tuple:
    """(code, module, argv, sys.path[0] or None) that run module `name` as `python -m name` does;
    `source` (compiled as `filename`) in place of its file's own text, for an edited copy."""
    spec = find_module(name)
    code, module = _spec_main(spec, source, filename)
    return code, module, [spec.origin, *argv], first_path(os.getcwd())


def _spec_main(spec, source: str | None, filename: str | None) -> tuple:
    """(code, module) of a module found by its spec, run as `__main__` as runpy runs it (`python
    -m`, a folder's `__main__.py`); `source` (compiled as `filename`) in place of its own text."""
    if source is None:
        code = spec.loader.get_code(spec.name)
        if code is None:
            raise ImportError(f"No code object available for {spec.name}")
    else:
        code = compile(source, filename or spec.origin, "exec")
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=spec.origin, __builtins__=builtins, __cached__=spec.cached,
                           __package__=spec.parent, __spec__=spec, __loader__=spec.loader)
    return code, module


def run_module(name: str, argv=(), recorder: Recorder | None = None) -> Report:
    """Run module `name` as `__main__` (sys.path[0] the current folder, sys.argv[0] its file),
    like `python -m name`; a package runs its `__main__` submodule. ImportError if not found."""
    return _run(*module_main(name, argv), recorder)
