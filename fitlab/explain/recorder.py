"""Record in-place writes (with their stacks) and where each autograd node's forward ran.

While active, writes.py's kernels report every write here and the function mode of
modes.py every new node: a write goes into its storage's bounded history, a node is tagged
with the op sequence number and the stack of its forward call. Before each backward call
the graph is checked for silent writes; when one raises the in-place error, the stale saved
tensor is found and its writes since the save are the answer. Writes are recorded on every thread (the kernels are
process-wide), nodes on the recording thread and on threads started while recording; a
forked child records nothing.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import os
import threading
import warnings
import weakref
from typing import Self

import torch

from fitlab.explain import compat, modes, stale, writes
from fitlab.explain import stack as stacks
from fitlab.explain.decode import decode
from fitlab.explain.graph import storage_key, walk
from fitlab.explain.neighbours import freed
from fitlab.explain.records import CONTENTS, HOOKED, KEY, WALKED, Failure, Write

# Where torch keeps a node's forward trace under anomaly mode (torch/csrc/autograd/python_anomaly_mode.h).
ANOMALY_TRACE = "traceback_"
# Recorders now recording, for the fork hook.
_ACTIVE: weakref.WeakSet = weakref.WeakSet()


def _forked_child() -> None:
    writes.forked_child()
    for rec in list(_ACTIVE):
        rec._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child)


class Recorder:
    """Records writes and forward locations while active (`with Recorder() as rec:`).

    Memory is bounded: each storage keeps its last `per_storage` writes, and only the
    `max_storages` storages written most recently keep any; silent writes are kept
    once per distinct (op, stack), at most `max_silent` of them. With `check_contents`, every
    saved tensor is also copied when saved (as much memory again as the graphs hold, freed with
    them) and compared at each backward through it (Changed).
    """

    def __init__(self, per_storage: int = 8, max_storages: int = 4096, max_silent: int = 32,
                 check_contents: bool = False):
        self.per_storage = per_storage
        # Opt-in: copy each saved tensor when its node is tagged, compare at each backward through it.
        self.check_contents = check_contents
        self.changed: dict = {}
        self.max_storages = max_storages
        self.max_silent = max_silent
        self.seq = 0
        self.started_nr = None
        # The sequence number of the latest in-place or out= write: a node tagged at or after it
        # cannot hold a silently written tensor.
        self.last_inplace = 0
        # (first node number, next node number, tag entry) of recent calls made while forward-mode
        # AD was on: a node made in one that its outputs did not reach is still that call's.
        self.dual_calls: collections.deque = collections.deque(maxlen=256)
        # The sequence number when the latest backward call started.
        self.backward_seq = 0
        self.history: dict = {}
        self.silent: dict = {}
        self.failure: Failure | None = None
        self.notes: list = []
        # Saved tensors a saved-tensor hook (e.g. checkpoint's) kept out of reach, so unchecked,
        # counted where a write came after the save (elsewhere there is nothing to check).
        self.unchecked = 0
        # The modes this thread runs under while recording (the function mode; WriteMode where
        # writes.py has no kernels), entered in __enter__.
        self._modes = contextlib.ExitStack()
        self._showwarning = None
        self._thread_hooks = (None, threading.excepthook)
        self._hooks_counted = None
        # In-place errors that ended a thread (threading.excepthook), oldest first.
        self.thread_errors: list = []
        # Idents of the threads that ran under a mode of their own (started while recording).
        self.recorded_threads: set = set()
        # True in a forked child, which records nothing.
        self.forked = False
        self._step_hooks: tuple = ()
        # The neighbouring "backward through the graph a second time" error: the backwards that
        # freed their graphs, and what a failing one met (neighbours.freed).
        self.freeing = freed.Backwards()
        self.freed: freed.Freed | None = None

    def __enter__(self) -> Self:
        # Nodes numbered below this (on the recording thread) were made before the recording.
        self.started_nr = modes.sequence_nr()
        writes.start(self)
        self._modes = contextlib.ExitStack()
        self._modes.enter_context(modes.GraphMode(self))
        self._modes.enter_context(writes.thread_mode())
        if not compat.SAVED_DATA:
            self._hooks_counted = modes.count_saved_tensors_hooks()
        self._showwarning = warnings.showwarning
        warnings.showwarning = self._show_warning
        # Writes are seen on every thread, but the function mode is per thread: threads started
        # while recording get one of their own (their nodes are tagged), and an error
        # that ends one is kept (after Python's own hook printed it) to be explained.
        self._thread_hooks = (compat.patch_thread_bootstrap(self._thread_body), threading.excepthook)
        threading.excepthook = self._thread_died
        # A classmethod (Python) or, in newer torch, a classmethod_descriptor of torch's C base.
        self._apply = torch.autograd.Function.__dict__.get("apply")
        original = inspect.getattr_static(torch.autograd.Function, "apply")
        torch.autograd.Function.apply = classmethod(self._applied(
            lambda cls, *args, **kwargs: original.__get__(None, cls)(*args, **kwargs)))
        self._step_hooks = modes.step_hooks()
        _ACTIVE.add(self)
        return self

    def __exit__(self, *exc) -> None:
        if warnings.showwarning == self._show_warning:
            warnings.showwarning = self._showwarning
        if threading.excepthook == self._thread_died:
            compat.restore_thread_bootstrap(self._thread_hooks[0])
            threading.excepthook = self._thread_hooks[1]
        if self._hooks_counted is not None:
            modes.uncount_saved_tensors_hooks(self._hooks_counted)
            self._hooks_counted = None
        if getattr(torch.autograd.Function.apply, "__func__", None) is getattr(self, "_applied_fn", None):
            if self._apply is None:
                del torch.autograd.Function.apply
            else:
                torch.autograd.Function.apply = self._apply
        for hook in self._step_hooks:
            hook.remove()
        _ACTIVE.discard(self)
        if not self.forked:
            self._modes.close()
            writes.stop(self)

    def _applied(self, apply):
        """Function.apply that tags the node a custom autograd.Function made with its caller's line:
        the function mode does not see apply, and the next call it sees would otherwise claim it."""
        recorder = self

        def applied(cls, *args, **kwargs):
            __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
            out = apply(cls, *args, **kwargs)
            for o in out if isinstance(out, (tuple, list)) else (out,):
                gf = modes.grad_fn(o) if isinstance(o, torch.Tensor) else None
                if gf is not None:
                    recorder._tag(gf, (recorder.seq, stacks.capture(2)))
            return out
        self._applied_fn = applied
        return applied

    def _thread_body(self, body):
        """Thread._bootstrap_inner (`body`, which runs the thread and its excepthook) under modes
        of the thread's own, taken off again when it ends: a thread must not die with them on."""
        recorder = self

        def recorded(thread) -> None:
            recorder.recorded_threads.add(threading.get_ident())
            with modes.GraphMode(recorder), writes.thread_mode():
                body(thread)
        return recorded

    def _thread_died(self, args) -> None:
        if args.exc_value is not None:
            # Python's hook prints the thread's traceback: as it would without the modes.
            tb = stacks.without_inserted(args.exc_traceback)
            args.exc_value.__traceback__ = tb
            args = threading.ExceptHookArgs([args.exc_type, args.exc_value, tb, args.thread])
        self._thread_hooks[1](args)
        if isinstance(args.exc_value, RuntimeError) and decode(str(args.exc_value)) is not None:
            self.thread_errors.append(args.exc_value)
            if self.failure is None or self.failure.exc is not args.exc_value:
                unseen = args.thread is None or args.thread.ident not in self.recorded_threads
                self.notes.append(
                    f"the error was raised in thread {getattr(args.thread, 'name', '?')!r}"
                    + (", started before the recording: its calls and backward() were not seen (start it inside "
                       "the recorded block)" if unseen else ""))

    def _forked(self) -> None:
        """A forked child does not record (its parent does): the modes come off its stack."""
        if self.forked:
            return
        self.forked = True
        try:
            self._modes.close()
        except (RuntimeError, AssertionError):  # not on this thread's stack
            pass

    def _show_warning(self, message, category, filename, lineno, file=None, line=None):
        """A warning raised by an op the modes ran keeps the line that ran the op."""
        if stacks.owner(filename) in ("fitlab", "torch"):
            where = modes.warned_from(filename, lineno)
            if where is not None:
                filename, lineno, line = *where, None
        self._showwarning(message, category, filename, lineno, file, line)

    def _record_write(self, name: str, inplace: bool, tensors: list) -> None:
        try:
            self._record(name, inplace, tensors)
        except Exception as exc:  # noqa: BLE001 - a diagnostic must never break the user's write
            note = f"recording a write failed: {exc!r}"
            if note not in self.notes:
                self.notes.append(note)

    def _record(self, name: str, inplace: bool, tensors: list) -> None:
        # Most of a step's writes go to the optimizer's state and scratch tensors, which no graph
        # saves: recording them would be most of the step's cost.
        if (stacks.stepping() and not torch.is_grad_enabled() and modes.scratch(tensors)
                and stacks.in_steps_own_code(4)):
            return
        self.seq += 1
        if inplace:
            self.last_inplace = self.seq
        stack = modules = None
        for t in tensors:
            key = storage_key(t)
            if key is None:
                continue
            if stack is None:
                stack = stacks.capture(4)
                modules = modes.modules(4) if inplace and modes.in_module(stack) else ()
            try:
                version = t._version
            except RuntimeError:  # inference tensors have no version counter
                version = -1
            hist = self.history.pop(key, None)
            if hist is None:
                hist = collections.deque(maxlen=self.per_storage)
                if len(self.history) >= self.max_storages:
                    del self.history[next(iter(self.history))]
            self.history[key] = hist
            hist.append(Write(self.seq, name, version, inplace, tuple(t.shape), stack,
                              modes.target(t), modules))

    def _tag(self, grad_fn, entry=None, since=None) -> None:
        """Tag grad_fn and its untagged ancestors with (op sequence number, stack of the call).

        since: the thread's autograd sequence number before the call; an ancestor numbered
        below it was made by a call the mode did not see (inside torch: forward-mode AD's
        formulas; before the recording), and is tagged (number, None): its line is unknown.
        """
        if KEY in grad_fn.metadata:
            return
        entry = entry or (self.seq, stacks.capture(3))
        unseen = (entry[0], None)
        check_contents = self.check_contents
        # Where torch cannot tell a hooked saved tensor, the nodes this call made under hooks are marked.
        hooks_on = not compat.SAVED_DATA and modes.hooks_on()
        # Anomaly mode keeps each node's forward trace to print if its backward fails: as python's.
        anomaly = torch.is_anomaly_enabled()
        todo = [grad_fn]
        pop, push = todo.pop, todo.append
        while todo:
            node = pop()
            meta = node.metadata
            if KEY in meta:
                continue
            if anomaly and ANOMALY_TRACE in meta:
                meta[ANOMALY_TRACE] = stacks.as_python_trace(meta[ANOMALY_TRACE])
            mine = since is None or node._sequence_nr() >= since
            meta[KEY] = entry if mine else self._made_during(node._sequence_nr()) or unseen
            if hooks_on and mine:
                meta[HOOKED] = True
            if check_contents:
                stale.copy_saved(node)
            for n, _ in node.next_functions:  # loops and bound methods: this runs on every new node
                if n is not None:
                    push(n)

    def _made_during(self, nr: int):
        """The tag entry of the forward-mode AD call during which node number `nr` was made, or None."""
        for since, until, entry in reversed(self.dual_calls):
            if since <= nr < until:
                return entry
        return None

    def _differentiate(self, func, args, kwargs):
        __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
        roots = modes.roots(func, args, kwargs)
        failed_stack = stacks.capture(3)
        nodes = walk(roots)
        for node in nodes:
            node.metadata.setdefault(WALKED, self.seq)
        try:
            if self.check_contents:
                stale.check_contents(self, nodes)
            stale.find_silent(self, nodes)
        except Exception as exc:  # noqa: BLE001 - a diagnostic must never break the user's run
            self.notes.append(f"silent-write check failed: {exc!r}")
        self.backward_seq = self.seq
        try:
            out = func(*args, **kwargs)
        except RuntimeError as exc:
            facts = decode(str(exc))
            if facts is not None and facts.shape is not None:
                if threading.current_thread() is not threading.main_thread():
                    self.notes.append(f"the error was raised in thread {threading.current_thread().name!r}")
                try:
                    self.failure = stale.explain(self, exc, facts, roots, failed_stack)
                except Exception as inner:  # noqa: BLE001 - keep torch's error; say why ours is missing
                    self.notes.append(f"analysis failed: {inner!r}")
            elif freed.is_freed(exc):
                try:
                    self.freed = freed.explain(self.freeing, exc, roots, failed_stack)
                except Exception as inner:  # noqa: BLE001 - keep torch's error; say why ours is missing
                    self.notes.append(f"analysis failed: {inner!r}")
            raise
        try:
            self.freeing.done(func, args, kwargs, roots, failed_stack)
            if self.check_contents and not freed.retains(func, args, kwargs):
                # The log keeps this graph's nodes; the copies of what it saved, freed now, need not stay.
                for node in nodes:
                    node.metadata.pop(CONTENTS, None)
        except Exception as exc:  # noqa: BLE001 - a diagnostic must never break the user's run
            self.notes.append(f"backward log failed: {exc!r}")
        if modes.creates_graph(func, args, kwargs):
            self._tag_made_in_backward(func, out, nodes, (self.seq, failed_stack))
        return out

    def _tag_made_in_backward(self, func, out, nodes, entry) -> None:
        """Nodes a create_graph=True backward made belong to the line that called it (the modes
        see no call inside the engine)."""
        if func is torch.autograd.grad:
            made = [g for g in out if isinstance(g, torch.Tensor)]
        else:
            made = [n.variable.grad for n in nodes if hasattr(n, "variable")]
        for g in made:
            if g is not None and g.grad_fn is not None:
                self._tag(g.grad_fn, entry)
