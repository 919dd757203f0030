"""Rerunning the user's program for --fix: from a temporary copy of its edited files, with the first
run's random state, quietly, bounded (a number of backward calls, a timeout), keeping what each
backward computed; or, for the reference, with every saved tensor kept by a clone."""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
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
from dataclasses import replace

import torch

from fitlab.explain import modes, runner
from fitlab.explain import stack as stacks
from fitlab.explain.graph import walk
from fitlab.explain.neighbours import freed
from fitlab.explain.recorder import Recorder
from fitlab.explain.report import Report

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
                 keep_from: int | None = None, check_contents: bool = False, retain: bool = False,
                 keep_weights: bool = False):
        super().__init__(check_contents=check_contents)
        self.stop_after, self.deadline, self.keep_grads = stop_after, deadline, keep_grads
        # retain: every backward keeps its graph (causes.RETAINED's reference); keep_weights: the leaves
        # each kept backward reached are kept, with their values when first reached (weights()).
        self.retain, self.keep_weights = retain, keep_weights
        self.leaves: dict = {}
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
        if keep and not grad and self.keep_weights:
            for leaf in leaves:
                self.leaves.setdefault(id(leaf), (fingerprint(leaf), leaf))
        if self.retain:
            args, kwargs = freed.retaining(func, args, kwargs)
        out = super()._differentiate(func, args, kwargs)
        if keep:
            # What this backward computed: autograd.grad's results, or what it added to each .grad.
            self.grads[self.backwards] = (
                [(None, g.detach().clone()) for g in out if isinstance(g, torch.Tensor)] if grad else
                [(fingerprint(leaf), leaf.grad.detach() - (0 if old is None else old))
                 for leaf, old in zip(leaves, before) if leaf.grad is not None])
            if self.keep_from is None:
                self.grads.pop(self.backwards - BEFORE, None)
        if self.stop_after is not None and self.backwards >= self.stop_after:
            self.stop("bound")
        return out


    def weights(self) -> list:
        """(shape, the values when first reached, the values now) of each leaf a kept backward reached."""
        return [(tuple(leaf.shape), first, leaf.detach().clone()) for first, leaf in self.leaves.values()]


def fingerprint(t: torch.Tensor) -> tuple:
    """A leaf's first values, rounded: what matches it to its counterpart in another run."""
    return tuple(round(float(x), 4) for x in t.detach().flatten()[:16].tolist())


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
            main = (code, module, list(sys.argv), runner.first_path(os.getcwd()))
        else:
            path = runner.find_module(self.target).origin if self.kind == "module" else runner.script_file(self.target)
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


def bounded(program: Program, texts: dict, stop_after: int, timeout: float, hooks: bool = False,
             keep_from: int | None = None, retain: bool = False, weights: bool = False):
    """(Report, namespace, recorder) of one bounded run, keeping the gradients of the backward
    calls from `keep_from` on (retain: every backward keeping its graph; weights: the leaves they
    reached, BoundedRecorder.weights); a stop at the bound is no error."""
    deadline = time.monotonic() + timeout
    rec = BoundedRecorder(stop_after=stop_after, deadline=deadline, keep_grads=True, keep_from=keep_from,
                          retain=retain, keep_weights=weights)
    try:
        with _alarm(rec, deadline):
            report, ns = program.run(texts, rec, hooks)
    except _Stop as stop:  # rang between the program's end and the alarm's
        rec.stopped = rec.stopped or str(stop)
        report, ns = Report("finished"), {}
    if rec.stopped is not None:
        report = replace(report, status="finished", error=None, traceback=None)
    return report, ns, rec
