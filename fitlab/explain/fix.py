"""`--fix`: apply the cause's edit to a copy of the user's files, rerun the copy, and say what it proved.

A compiler's fix-it is advice; here the edited program is run. After the recorded run died of the
in-place error, the cause's edit (causes.py's `edit`, a codemod of codemods.py) is applied to a
temporary copy of the files it touches, and the copy is rerun under the recorder with the same
arguments and the same random state, up to the backward that failed and `steps` past it (and a
timeout). Then one verdict:

- PROVED: the error is gone; each backward before the one that failed computes the gradients it
  computed in the first run, and from it on each computes the reference's: those of the original
  program when every saved tensor keeps the value it had when saved (the original rerun with
  torch.autograd.graph.saved_tensors_hooks packing a clone), to float tolerance;
- RUNS: the error is gone, but the edit changes what is computed (causes.py's RUNS causes: a
  detach, a fresh forward), so no reference applies; or a reference applies and differs;
- NEXT_WRITE: the edit removed this failure and another write now fails: that one is explained
  and edited too (up to MAX_CULPRITS), the last verdict given with all the edits together;
- DID_NOT_HELP: the same failure remains, or the edited copy dies of another error: the edit is
  not presented as a fix.

The user's files are never written here; `write()` does that, on request, keeping a backup. The
cost: one rerun of the program to the failure per culprit, plus one clone-on-save run of the
original for a verdict that needs a reference.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import difflib
import io
import linecache
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import types
import warnings
from dataclasses import dataclass, field, replace

import torch

from fitlab.explain import codemods, modes, runner
from fitlab.explain import stack as stacks
from fitlab.explain.causes import CAUSES, DID_NOT_HELP, NEXT_WRITE, NO_EDIT, PROVED, REFERENCE, RUNS
from fitlab.explain.graph import storage_key, walk
from fitlab.explain.recorder import Recorder
from fitlab.explain.report import Report

__all__ = ["DID_NOT_HELP", "NEXT_WRITE", "NO_EDIT", "PROVED", "RUNS", "BoundedRecorder", "Culprit", "Program",
           "Proof", "format_proof", "prove", "run_fixed", "write_files"]
# Backwards run past the one that failed, by default (--fix-steps), and the seconds a rerun may take.
STEPS = 1
TIMEOUT = 120.0
# Culprits edited one after another before giving up.
MAX_CULPRITS = 4
# Float tolerance of "equal to the reference": the same ops in another order round differently.
RTOL, ATOL = 1e-5, 1e-6
# Backward calls before the failing one whose gradients are kept and compared (each keeps a copy
# of the model's gradients).
BEFORE = 2


class _Stop(BaseException):
    """Raised into the program at the bound (a BaseException: the program's `except Exception` lets it by)."""


class BoundedRecorder(Recorder):
    """A recorder that counts backward calls, stops the program after `stop_after` of them (or at
    `deadline`, a time.monotonic()), and, if `keep_grads`, keeps what each backward computed:
    from call `keep_from` on, or without it the last BEFORE calls."""

    def __init__(self, stop_after: int | None = None, deadline: float | None = None, keep_grads: bool = False,
                 keep_from: int | None = None, check_contents: bool = False):
        super().__init__(check_contents=check_contents)
        self.stop_after, self.deadline, self.keep_grads = stop_after, deadline, keep_grads
        self.backwards = 0
        self.stopped: str | None = None   # "bound" or "timeout" once the program was stopped
        self.keep_from = keep_from
        # backward call number -> [(the leaf's fingerprint, or None for autograd.grad, gradient)]
        self.grads: dict = {}

    def stop(self, why: str) -> None:
        self.stopped = why
        raise _Stop(why)

    def _differentiate(self, func, args, kwargs):
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.stop("timeout")
        self.backwards += 1
        keep = self.keep_grads and (self.keep_from is None or self.backwards >= self.keep_from)
        grad = func is torch.autograd.grad
        leaves = before = ()
        if keep and not grad:
            leaves = [n.variable for n in walk(modes.roots(func, args, kwargs)) if hasattr(n, "variable")]
            before = [None if leaf.grad is None else leaf.grad.detach().clone() for leaf in leaves]
        out = super()._differentiate(func, args, kwargs)
        if keep:
            # What this backward computed: autograd.grad's results, or what it added to each .grad.
            self.grads[self.backwards] = (
                [(None, g.detach().clone()) for g in out if isinstance(g, torch.Tensor)] if grad else
                [(_fingerprint(leaf), leaf.grad.detach() - (0 if old is None else old))
                 for leaf, old in zip(leaves, before) if leaf.grad is not None])
            if self.keep_from is None:
                self.grads.pop(self.backwards - BEFORE, None)
        if self.stop_after is not None and self.backwards >= self.stop_after:
            self.stop("bound")
        return out


def _fingerprint(t: torch.Tensor) -> tuple:
    """A leaf's first values, rounded: what matches it to its counterpart in another run."""
    return tuple(round(float(x), 4) for x in t.detach().flatten()[:16].tolist())


@dataclass(frozen=True)
class Culprit:
    """One write edited: its cause (causes.py key), where it was written (file:line, the user's
    file), the verdict of the rerun with this edit and the ones before it, and that in words."""

    kind: str
    written_at: str
    verdict: str
    said: str

    def to_dict(self) -> dict:
        """The JSON object of one entry of the fix's "culprits"."""
        return {"kind": self.kind, "written_at": self.written_at, "verdict": self.verdict, "said": self.said}


@dataclass(frozen=True)
class Proof:
    """What --fix found: the verdict of all the edits together (the last culprit's), each culprit,
    the unified diff of the user's files, and the edited files' text (path -> text)."""

    verdict: str
    culprits: tuple
    diff: str
    files: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON object of the report's "proof" field."""
        return {"verdict": self.verdict, "culprits": [c.to_dict() for c in self.culprits], "diff": self.diff,
                "files": sorted(self.files)}


class Program:
    """How to run the user's program again: a script, a module (kind "script", "module"; target
    its path or name) or a notebook cell (kind "cell"; target the file name its frames carry,
    source its text, namespace its inputs, copied for every run), with some of its files' text
    replaced (path -> text, compiled from a temporary copy)."""

    def __init__(self, kind: str, target: str, args=(), source: str | None = None, namespace: dict | None = None,
                 label: str | None = None, seed: tuple | None = None):
        self.kind, self.target, self.args = kind, target, list(args)
        self.source, self.namespace, self.label = source, namespace, label
        # The file the program starts in (a label, if given, names it).
        self.path = target if kind == "cell" else None if kind == "module" else os.path.abspath(target)
        self.seed = random_state() if seed is None else seed   # the first run's, taken before it
        self.folder = tempfile.mkdtemp(prefix="fitlab-fix-")
        self.copies: dict = {}              # original path -> its copy's path
        self._modules = set(sys.modules)

    def close(self) -> None:
        """Remove the temporary copies."""
        shutil.rmtree(self.folder, ignore_errors=True)
        for copy_path in self.copies.values():
            linecache.checkcache(copy_path)   # the copies' lines go with their files

    def copy_of(self, path: str) -> str:
        """The temporary copy's path of a user's file (its name kept: the report names it)."""
        if path not in self.copies:
            sub = os.path.join(self.folder, str(len(self.copies)))
            os.makedirs(sub)
            self.copies[path] = os.path.join(sub, "cell.py" if self.kind == "cell" else os.path.basename(path))
        return self.copies[path]

    def original_of(self, path: str) -> str:
        """The user's path of a file or of its copy."""
        return next((orig for orig, c in self.copies.items() if c == path), path)

    def text_of(self, path: str) -> str | None:
        """The user's own text of a file of the program (a cell's source), or None."""
        if self.kind == "cell" and path == self.target:
            return self.source
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
        return None

    def run(self, texts: dict, recorder: Recorder, hooks: bool = False, quiet: bool = True):
        """Run the program with `texts` (original path -> text) in place of those files' own,
        from the random state of the first run, quietly (its output is the first run's);
        (Report, the namespace it ended with)."""
        for path, text in texts.items():
            with open(self.copy_of(path), "w", encoding="utf-8") as f:
                f.write(text)
            linecache.checkcache(self.copies[path])
        self._forget_user_modules()
        _set_random_state(self.seed)
        finder = _Copies({p: self.copies[p] for p in texts})
        if texts:
            sys.meta_path.insert(0, finder)
        out = io.StringIO()
        try:
            with contextlib.ExitStack() as stack:
                if quiet:
                    stack.enter_context(contextlib.redirect_stdout(out))
                    stack.enter_context(contextlib.redirect_stderr(out))
                    stack.enter_context(warnings.catch_warnings())
                    warnings.simplefilter("ignore")
                if hooks:
                    stack.enter_context(_clone_on_save())
                return self._run(texts, recorder)
        finally:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            self._forget_user_modules()

    def _run(self, texts: dict, recorder: Recorder):
        if self.kind == "cell":
            filename = self.copies.get(self.target) if self.target in texts else self.target
            code = compile(texts.get(self.target, self.source), filename, "exec")
            module = types.ModuleType("__main__")
            module.__dict__.update(_copied(self.namespace))
            main = (code, module, list(sys.argv), os.getcwd())
        else:
            path = runner.find_module(self.target).origin if self.kind == "module" else os.path.abspath(self.target)
            edited = {"source": texts[path], "filename": self.copies[path]} if path in texts else {}
            make = runner.module_main if self.kind == "module" else runner.script_main
            main = make(self.target, self.args, **edited)
        return runner._run(*main, recorder), main[1].__dict__

    def _forget_user_modules(self) -> None:
        """The user's own modules a run imported: imported anew by the next run, as `python` would."""
        for name in set(sys.modules) - self._modules:
            f = getattr(sys.modules[name], "__file__", None)
            if f and (stacks.is_user_file(f) or f.startswith(self.folder)):
                del sys.modules[name]


class _Copies:
    """A meta-path finder: a user's module whose file has an edited copy is imported from it."""

    def __init__(self, copies: dict):
        self.copies = copies

    def find_spec(self, name, path=None, target=None):
        import importlib.machinery
        import importlib.util
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.origin not in self.copies:
            return None
        return importlib.util.spec_from_file_location(name, self.copies[spec.origin])


@contextlib.contextmanager
def _clone_on_save():
    """Every tensor saved for backward keeps the value it had when saved: the reference run."""
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        yield


def random_state() -> tuple:
    """The random state a run starts from: torch's, Python's `random`, numpy's (if imported)."""
    np = sys.modules.get("numpy")
    return (torch.get_rng_state(), random.getstate(), np.random.get_state() if np is not None else None)


def _set_random_state(state: tuple) -> None:
    torch.set_rng_state(state[0])
    random.setstate(state[1])
    np = sys.modules.get("numpy")
    if state[2] is not None and np is not None:
        np.random.set_state(state[2])


def _copied(ns: dict) -> dict:
    """A cell's inputs, deep-copied where they can be (modules, functions and classes shared)."""
    out = {}
    for k, v in ns.items():
        if isinstance(v, (types.ModuleType, types.FunctionType, type)):
            out[k] = v
            continue
        try:
            out[k] = copy.deepcopy(v)
        except Exception:  # noqa: BLE001 - an object that cannot be copied is shared
            out[k] = v
    return out


def cell_inputs(cell: str, user_ns: dict) -> dict:
    """The names of the user's namespace a cell reads, copied now, before it runs (a rerun starts
    from them, not from what the cell made of them)."""
    try:
        names = {n.id for n in ast.walk(ast.parse(cell)) if isinstance(n, ast.Name)}
    except SyntaxError:
        names = set()
    inputs = {k: user_ns[k] for k in names if k in user_ns}
    return {**_copied(inputs), "__builtins__": builtins, "__name__": "__main__"}


@contextlib.contextmanager
def _alarm(rec: BoundedRecorder, deadline: float):
    """Stop a program busy between backwards at the deadline (SIGALRM, on the main thread only)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum, frame):
        rec.stop("timeout")
    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _bounded(program: Program, texts: dict, stop_after: int, timeout: float, hooks: bool = False,
             keep_from: int | None = None):
    """(Report, namespace, recorder) of one bounded run, keeping the gradients of the backward
    calls from `keep_from` on; a stop at the bound is no error."""
    deadline = time.monotonic() + timeout
    rec = BoundedRecorder(stop_after=stop_after, deadline=deadline, keep_grads=True, keep_from=keep_from)
    try:
        with _alarm(rec, deadline):
            report, ns = program.run(texts, rec, hooks)
    except _Stop as stop:  # rang between the program's end and the alarm's
        rec.stopped = rec.stopped or str(stop)
        report, ns = Report("finished"), {}
    if rec.stopped is not None:
        report = replace(report, status="finished", error=None, traceback=None)
    return report, ns, rec


def _innermost(chain: tuple):
    return chain[-1] if chain else None


def _where(program: Program, frame) -> str:
    if frame is None:
        return "(no line of yours)"
    path = program.original_of(frame.file)
    if program.label is not None and path == program.path:
        return f"{program.label}, line {frame.line}" if program.kind == "cell" else f"{program.label}:{frame.line}"
    return f"{os.path.basename(path) if not path.startswith('<') else path}:{frame.line}"


def _sources(program: Program, texts: dict, paths) -> dict:
    """path -> text of each file named (an edited copy's text where there is one)."""
    out = {}
    for p in paths:
        orig = program.original_of(p)
        text = texts.get(orig, program.text_of(orig))
        if text is not None:
            out[orig] = text
    return out


def _stale_name(report: Report, ns: dict, storage) -> str | None:
    """The name, at the saved line, whose tensor shares the written storage (from the namespace
    the run ended with), or None."""
    frame = _innermost(report.saved_at)
    if frame is None or storage is None:
        return None
    try:
        names = [n.id for n in ast.walk(ast.parse(frame.code)) if isinstance(n, ast.Name)]
    except SyntaxError:
        return None
    for name in names:
        v = ns.get(name)
        if isinstance(v, torch.Tensor) and storage_key(v) == storage:
            return name
    return None


def edited(program: Program, report: Report, texts: dict, ns: dict, storage) -> dict | None:
    """The files' text (path -> text, the earlier edits kept) with the cause's edit applied, or
    None if it does not apply (no edit is mechanical, or the lines are not the user's)."""
    fix = report.fix
    if fix is None:
        return None
    kind = CAUSES[fix.kind].edit
    new = dict(texts)

    def one(path: str, make) -> bool:
        path = program.original_of(path)
        source = _sources(program, new, [path]).get(path)
        if source is None:
            return False
        got = make(source)
        if got is None or got == source:
            return False
        new[path] = got
        return True

    saved, failed = _innermost(report.saved_at), _innermost(report.failed_at)
    written = _innermost(report.writes[0].frames) if report.writes else None
    if fix.edits and kind == "drop_inplace":
        done = [one(e.file, lambda s, e=e: codemods.drop_inplace(s, e.line)) for e in fix.edits]
        return new if all(done) else None
    if fix.edits:
        done = [one(e.file, lambda s, e=e: codemods.line_edit(s, e.line, e.old, e.new)) for e in fix.edits]
        return new if all(done) else None
    if kind == "detach_value" and failed is not None:
        # The outermost line that made the saved graph's value, in the failing line's file.
        lines = tuple(f.line for f in report.saved_at if f.file == failed.file)
        return new if one(failed.file, lambda s: codemods.detach_value(s, lines)) else None
    if kind == "fresh_forward" and None not in (saved, written, failed):
        same = tuple(f.line for f in report.saved_at if f.file == failed.file)
        wrote = tuple(f.line for f in report.writes[0].frames if f.file == failed.file)
        return new if one(failed.file, lambda s: codemods.fresh_forward(s, same, wrote, failed.line)) else None
    if kind == "detach_state" and saved is not None:
        return new if one(saved.file, lambda s: codemods.detach_state(s, saved.line)) else None
    if kind == "clone_at_save" and saved is not None:
        name = _stale_name(report, ns, storage)
        if name is not None:
            return new if one(saved.file, lambda s: codemods.clone_at_save(s, saved.line, name)) else None
    return None


def _key(report: Report) -> tuple:
    """What makes a failure the same one: the code of its saved and written lines."""
    saved = _innermost(report.saved_at)
    written = _innermost(report.writes[0].frames) if report.writes else None
    return (saved.code if saved else None, written.code if written else None, report.tensor and report.tensor.node)


def _sorted(grads: list) -> list:
    """One backward's gradients in an order both programs share: by shape, then the leaf's values."""
    def key(pair):
        leaf, g = pair
        return (tuple(g.shape), str(g.dtype), leaf or (), _fingerprint(g))
    return sorted(grads, key=key)


def gradient_gap(got: dict, want: dict, calls) -> float | None:
    """The largest difference between two runs' gradients (backward call number -> what it
    computed) at the given calls, beyond the float tolerance (0.0 when they agree), or None when
    they do not even have the same gradients."""
    worst = 0.0
    for i in calls:
        a, b = got.get(i), want.get(i)
        if a is None or b is None or len(a) != len(b):
            return None
        for (_, ga), (_, gb) in zip(_sorted(a), _sorted(b)):
            if ga.shape != gb.shape:
                return None
            if not torch.allclose(ga, gb, rtol=RTOL, atol=ATOL):
                worst = max(worst, float((ga - gb).abs().max()))
    return worst


def run_fixed(kind: str, target: str, args=(), steps: int = STEPS, timeout: float = TIMEOUT,
              label: str | None = None, check_contents: bool = False) -> Report:
    """Run a script or module (kind "script" or "module") as run_script/run_module do; if it dies
    of the in-place error, prove its cause's edit (see the module's docstring): the Report, with
    the Proof as its `proof` when there is one. label: the script's name in the verdict and the
    diff (its path relative to the current folder without it). check_contents: the first run's
    recorder checks saved tensors' contents (Recorder)."""
    program = Program(kind, target, args, label=label)
    rec = BoundedRecorder(keep_grads=True, check_contents=check_contents)
    try:
        report, ns = program.run({}, rec, quiet=False)
    except BaseException:
        program.close()
        raise
    if report.status != "inplace_error" or rec.failure is None:
        program.close()
        return report
    return replace(report, proof=prove(program, report, rec, ns, steps, timeout))


def prove(program: Program, report: Report, first: BoundedRecorder, ns: dict, steps: int = STEPS,
          timeout: float = TIMEOUT) -> Proof:
    """Edit, rerun and judge (see the module's docstring), starting from the first run's report,
    its recorder (kept gradients, the backward calls it made, the last one failed) and the
    namespace it ended with."""
    texts: dict = {}
    backwards, storage = first.backwards, first.failure.storage if first.failure is not None else None
    # What the program computed before it failed: an edit must not change it.
    computed = first.grads
    culprits: list = []
    try:
        for _ in range(MAX_CULPRITS):
            kind = report.fix.kind if report.fix else None
            written = _where(program, _innermost(report.writes[0].frames) if report.writes else None)
            new = edited(program, report, texts, ns, storage) if kind else None
            if new is None:
                culprits.append(Culprit(kind or "unknown", written, NO_EDIT,
                                        "no mechanical edit applies to these lines; the advice above stands"))
                break
            bound = backwards + steps
            again, again_ns, rec = _bounded(program, new, bound, timeout, keep_from=first.backwards - BEFORE)
            texts = new
            if again.status == "inplace_error":
                if _key(again) == _key(report) or again.fix is None:
                    culprits.append(Culprit(kind, written, DID_NOT_HELP,
                                            "the edited copy fails the same way: this edit is no fix"))
                    break
                culprits.append(Culprit(kind, written, NEXT_WRITE,
                                        "this failure is gone; another write now fails (below)"))
                report, backwards, ns = again, rec.backwards, again_ns
                storage = rec.failure.storage if rec.failure is not None else None
                continue
            if again.status != "finished":
                culprits.append(Culprit(kind, written, DID_NOT_HELP,
                                        f"the edited copy dies of another error: {again.error}"))
                break
            culprits.append(_judged(program, texts, rec, computed, bound, steps, timeout,
                                    [c.kind for c in culprits] + [kind], written))
            break
    finally:
        program.close()
    final = culprits[-1].verdict if culprits else NO_EDIT
    return Proof(final, tuple(culprits), unified_diff(program, texts), texts)


def _judged(program: Program, texts: dict, rec: BoundedRecorder, computed: list, bound: int, steps: int,
            timeout: float, kinds: list, written: str) -> Culprit:
    """The verdict of an edited copy that ran to the bound (or to its end): before the backward
    that failed it must compute what the program computed (`computed`, the first run's
    gradients), from it on what the reference computes."""
    kind = kinds[-1]
    past = rec.backwards - (bound - steps)
    until = ("stopped at the timeout, " if rec.stopped == "timeout" else "") + (
        f"{rec.backwards} backward call{'s' if rec.backwards != 1 else ''} run, the one that failed"
        + (f" and {past} past it" if past > 0 else "") if past >= 0 else
        f"the program ended after {rec.backwards} backward call{'s' if rec.backwards != 1 else ''}")
    changing = [CAUSES[k] for k in dict.fromkeys(kinds) if CAUSES[k].proof != REFERENCE]
    if changing:
        why = "; ".join(c.changes for c in changing)
        return Culprit(kind, written, RUNS, f"the error is gone ({until}); no reference applies: {why}")
    failed = bound - steps
    if rec.backwards < failed:
        return Culprit(kind, written, RUNS, f"the error is gone, but the edited copy ended ({until}) before the "
                                            "backward that failed: nothing to compare")
    first = max(computed, default=0) + 1   # the first run's failing backward
    _, _, ref = _bounded(program, {}, bound, timeout, hooks=True, keep_from=first)
    gap = gradient_gap(rec.grads, computed, sorted(computed))
    if gap == 0.0:
        gap = gradient_gap(rec.grads, ref.grads, range(first, rec.backwards + 1))
    if gap == 0.0:
        return Culprit(kind, written, PROVED,
                       f"the error is gone ({until}); the gradients of each backward equal, to float tolerance, "
                       "your program's before the failure and from it on the reference's (the original "
                       "program with every saved tensor keeping its value)")
    differ = "other gradients" if gap is None else f"gradients off by up to {gap:.3g}"
    return Culprit(kind, written, RUNS, f"the error is gone ({until}), but it computes {differ} than the "
                                        "reference (the original with every saved tensor keeping its value)")


def unified_diff(program: Program, texts: dict) -> str:
    """The unified diff of the user's files against the edited text."""
    out = []
    for path, new in sorted(texts.items()):
        old = _sources(program, {}, [path]).get(path, "")
        name = program.label if program.label and path == program.path else os.path.relpath(path)
        out += difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}")
    return "".join(out)


def write_files(proof: Proof) -> list:
    """Write the edited files over the user's, each first copied to PATH.orig (or .orig.N if
    that exists); (path, its backup's path) of each."""
    backups = []
    for path, text in sorted(proof.files.items()):
        if path.startswith("<") or not os.path.isfile(path):
            continue
        backup, n = path + ".orig", 1
        while os.path.exists(backup):
            backup, n = f"{path}.orig.{n}", n + 1
        shutil.copy2(path, backup)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        backups.append((path, backup))
    return backups


def format_proof(proof: Proof) -> str:
    """The text --fix prints after the report: each culprit's verdict, then the diff (an edit
    that did not help is shown as tried, not as a fix)."""
    out = ["", "--fix: the edit applied to a copy of your files, rerun:"]
    for i, c in enumerate(proof.culprits, 1):
        together = " (all the edits together)" if i == len(proof.culprits) > 1 else ""
        out.append(f"  {i}. {c.kind} written at {c.written_at}: {c.verdict.upper()}{together}: {c.said}")
    if proof.diff and proof.verdict != DID_NOT_HELP:
        out += ["", proof.diff.rstrip("\n")]
    elif proof.diff:
        out += ["", "The edit tried (not a fix):", proof.diff.rstrip("\n")]
    return "\n".join(out)
