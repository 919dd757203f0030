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
import dataclasses
import inspect
import os
import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import NamedTuple, Self

import torch

from fitlab.explain import modes, writes
from fitlab.explain import stack as stacks
from fitlab.explain.decode import decode
from fitlab.explain.graph import hooked, saved_tensors, slots, stale_error, storage_key, walk
from fitlab.explain.neighbours import freed

KEY = "fitlab.explain"
# Node metadata: the sequence number when a backward call first walked the node.
WALKED = "fitlab.explain.walked"
# Node metadata (check_contents): a copy of each saved tensor's bytes, taken when the node was tagged.
CONTENTS = "fitlab.explain.contents"
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


class Write(NamedTuple):  # a tuple: three times cheaper to make than a frozen dataclass, per write
    """One in-place write to a storage, as recorded (stack not yet resolved).

    target: "parameter" (a leaf that requires grad), "leaf" (an input, a buffer), "view"
    (of any tensor: `h[:, 0] = 0` writes one) or "activation" (computed by autograd). modules: weak references to
    the modules whose forward was running, innermost first (in-place writes only).
    """

    seq: int
    op: str
    version_before: int
    # An in-place or out= op, as opposed to one that updates a buffer on the side
    # without a version bump (batch norm's running stats), which backward ignores.
    inplace: bool
    shape: tuple
    stack: tuple
    target: str
    modules: tuple


@dataclass(frozen=True, slots=True)
class Failure:
    """What the recorder learnt when a backward call raised the in-place error.

    carried: the stale node had been walked by an earlier backward and the failing
    backward's roots were made after that (a state carried from an earlier batch).
    """

    exc: BaseException
    node: str | None
    saved_as: str | None
    saved_version: int | None
    version: int | None
    shape: tuple | None
    saved_stack: tuple
    writes: tuple
    failed_stack: tuple
    writes_missing: int
    carried: bool = False
    storage: int | None = None
    # False when the node that saved was made by a call the mode did not see (its line unknown).
    saved_seen: bool = True
    # The graph's other stale saved tensors (one per storage), each as a Failure of its own.
    also: tuple = ()


@dataclass(frozen=True, slots=True)
class Silent:
    """A write that a graph's saved tensor will see without a version bump."""

    write: Write
    node: str
    saved_as: str
    shape: tuple


@dataclass(frozen=True, slots=True)
class Changed:
    """A saved tensor whose contents changed between its save and a backward through it, its
    version unchanged (check_contents): a write no op torch ran made, or none that bumped.
    writes: the recorded writes to its storage since the save that bump no version (none for a
    write through numpy's memory, ctypes, another process)."""

    node: str
    saved_as: str
    shape: tuple
    saved_stack: tuple
    writes: tuple


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's values as bytes (NaN equal to itself), contiguous."""
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


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
        self.history: dict = {}
        self.silent: dict = {}
        self.failure: Failure | None = None
        self.notes: list = []
        # Saved tensors a saved-tensor hook (e.g. checkpoint's) kept out of reach, so unchecked,
        # counted where a write came after the save (elsewhere there is nothing to check).
        self.unchecked = 0
        self._mode = modes.GraphMode(self)
        self._showwarning = None
        self._thread_hooks = (threading.Thread._bootstrap_inner, threading.excepthook)
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
        self._mode.__enter__()
        self._showwarning = warnings.showwarning
        warnings.showwarning = self._show_warning
        # Writes are seen on every thread, but the function mode is per thread: threads started
        # while recording get one of their own (their nodes are tagged), and an error
        # that ends one is kept (after Python's own hook printed it) to be explained.
        self._thread_hooks = (threading.Thread._bootstrap_inner, threading.excepthook)
        threading.Thread._bootstrap_inner = self._thread_body()
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
            threading.Thread._bootstrap_inner = self._thread_hooks[0]
            threading.excepthook = self._thread_hooks[1]
        if getattr(torch.autograd.Function.apply, "__func__", None) is getattr(self, "_applied_fn", None):
            if self._apply is None:
                del torch.autograd.Function.apply
            else:
                torch.autograd.Function.apply = self._apply
        for hook in self._step_hooks:
            hook.remove()
        _ACTIVE.discard(self)
        if not self.forked:
            self._mode.__exit__(None, None, None)
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

    def _thread_body(self):
        """Thread._bootstrap_inner (which runs the thread and its excepthook) under modes of the
        thread's own, taken off again when it ends: a thread must not die with them on."""
        body, recorder = self._thread_hooks[0], self

        def recorded(thread) -> None:
            recorder.recorded_threads.add(threading.get_ident())
            with modes.GraphMode(recorder):
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
        """A forked child does not record (its parent does): the mode comes off its stack."""
        if self.forked:
            return
        self.forked = True
        try:
            self._mode.__exit__(None, None, None)
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
        # Most of a step's writes go to the optimizer's state and scratch tensors, which no graph
        # saves: recording them would be most of the step's cost.
        if (stacks.stepping() and not torch.is_grad_enabled() and modes.scratch(tensors)
                and stacks.in_steps_own_code(3)):
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
                stack = stacks.capture(3)
                modules = modes.modules(3) if inplace and modes.in_module(stack) else ()
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
        todo = [grad_fn]
        pop, push = todo.pop, todo.append
        while todo:
            node = pop()
            meta = node.metadata
            if KEY in meta:
                continue
            meta[KEY] = entry if since is None or node._sequence_nr() >= since else unseen
            if check_contents:
                self._copy_saved(node)
            for n, _ in node.next_functions:  # loops and bound methods: this runs on every new node
                if n is not None:
                    push(n)

    @staticmethod
    def _copy_saved(node) -> None:
        """A copy of the bytes of each tensor the node saved (check_contents)."""
        copies = []
        for name, raw_attr, _ in slots(node):
            # Batch norm saves its running stats, which a training backward does not read and the
            # next forward updates without a version bump.
            if name.startswith("running_") or hooked(node, raw_attr):
                continue
            for i, t in enumerate(saved_tensors(node, raw_attr)[0]):
                try:
                    copies.append((name, raw_attr, i, t._version,
                                   _bytes(t.detach().clone(memory_format=torch.contiguous_format))))
                except (RuntimeError, NotImplementedError, TypeError):  # inference, sparse, meta tensors
                    continue
        if copies:
            node.metadata[CONTENTS] = copies

    def _check_contents(self, nodes) -> None:
        """Saved tensors whose bytes changed since their copy while their version did not."""
        for node in nodes:
            copies = node.metadata.get(CONTENTS)
            entry = node.metadata.get(KEY)
            if not copies or entry is None:
                continue
            for name, raw_attr, i, version, before in copies:
                tensors = saved_tensors(node, raw_attr)[0]
                if i >= len(tensors) or tensors[i]._version != version:
                    continue  # freed, or written by an op that bumped it: torch checks that itself
                t = tensors[i]
                if torch.equal(_bytes(t), before):
                    continue
                later = self._later_writes(t, entry[0])
                if any(w.inplace for w in later):
                    continue  # an op torch ran through an alias: the silent-write check names it
                key = (node.name(), name, entry[1])
                if key not in self.changed and len(self.changed) < self.max_silent:
                    self.changed[key] = Changed(node.name(), name, tuple(t.shape), entry[1] or (), tuple(later))

    def _differentiate(self, func, args, kwargs):
        __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
        roots = modes.roots(func, args, kwargs)
        failed_stack = stacks.capture(3)
        nodes = walk(roots)
        for node in nodes:
            node.metadata.setdefault(WALKED, self.seq)
        try:
            if self.check_contents:
                self._check_contents(nodes)
            self._find_silent(nodes)
        except Exception as exc:  # noqa: BLE001 - a diagnostic must never break the user's run
            self.notes.append(f"silent-write check failed: {exc!r}")
        try:
            out = func(*args, **kwargs)
        except RuntimeError as exc:
            facts = decode(str(exc))
            if facts is not None and facts.shape is not None:
                try:
                    self.failure = self._explain(exc, facts, roots, failed_stack)
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

    def _later_writes(self, t: torch.Tensor, after: int) -> list:
        hist = self.history.get(storage_key(t))
        return [w for w in hist if w.seq > after] if hist else []

    def _find_silent(self, nodes) -> None:
        for node in nodes:
            entry = node.metadata.get(KEY)
            # A node whose call was not seen: when it saved is unknown, so no write is "after" it.
            if entry is None or entry[1] is None or entry[0] >= self.last_inplace:
                continue
            for name, raw_attr, checked_attr in slots(node):
                tensors, hidden = saved_tensors(node, raw_attr)
                self.unchecked += hidden
                for t in tensors:
                    later = [w for w in self._later_writes(t, entry[0]) if w.inplace]
                    # A write after the save that bumped a counter, yet the saved tensor
                    # unpacks: the write went through an alias with its own counter (or a
                    # saved-tensor hook, with which torch checks no version at all).
                    if not later or (not hooked(node, raw_attr) and stale_error(node, checked_attr) is not None):
                        continue
                    for w in later:
                        key = (w.op, tuple((c, n) for c, n in w.stack))
                        if key not in self.silent and len(self.silent) < self.max_silent:
                            self.silent[key] = Silent(w, node.name(), name, tuple(t.shape))

    def _explain(self, exc, facts, roots, failed_stack) -> Failure:
        stale = []  # (rank, node, slot name, tensor, facts of its error)
        for node in walk(roots):
            for name, raw_attr, checked_attr in slots(node):
                if hooked(node, raw_attr):
                    continue
                err = stale_error(node, checked_attr)
                got = None if err is None else decode(str(err))
                if got is None:
                    continue
                candidates = [t for t in saved_tensors(node, raw_attr)[0]
                              if tuple(t.shape) == got.shape and t._version == got.version]
                if candidates:
                    stale.append((node._sequence_nr(), node, name, candidates[0], got))
        # The engine runs the newest node first, so that is the one that raised.
        stale.sort(key=lambda s: -s[0])
        best = next((s for s in stale if (s[4].shape, s[4].version, s[4].expected_version)
                     == (facts.shape, facts.version, facts.expected_version)), None)
        if best is None:
            return Failure(exc, None, None, facts.expected_version, facts.version, facts.shape,
                           (), (), failed_stack, facts.gap or 0)
        # Other saved tensors of this graph already stale: backward would fail on each next, so a
        # script with two culprits gets both in one run (one per storage, the newest node's).
        # A tensor written by a line already named (an optimizer step writes every weight) adds nothing.
        main = self._failure(exc, *best[1:], roots, failed_stack, notes=True)
        storages, lines, also = {storage_key(best[3])}, {w.stack for w in main.writes}, []
        for s in stale:
            key = storage_key(s[3])
            if key in storages:
                continue
            storages.add(key)
            other = self._failure(exc, *s[1:], roots, failed_stack, notes=False)
            if other.writes and other.writes[0].stack not in lines:
                lines.update(w.stack for w in other.writes)
                also.append(other)
        return dataclasses.replace(main, also=tuple(also))

    def _failure(self, exc, node, name, tensor, facts, roots, failed_stack, notes: bool) -> Failure:
        entry = node.metadata.get(KEY)
        seq, saved_stack = entry if entry is not None else (None, None)
        seen = saved_stack is not None
        before = entry is None or (not seen and self.started_nr is not None
                                   and node._sequence_nr() < self.started_nr)
        if notes and before:
            self.notes.append(
                f"{node.name()} was made before the recording started (the forward ran outside the recorded "
                "block): record the forward too, e.g. the whole cell or training step, to see where it saved "
                "the tensor and every write since")
        elif notes and not seen:
            self.notes.append(
                f"{node.name()} was made inside a call fitlab.explain does not see (inside torch, e.g. "
                "forward-mode AD's formulas): the line that saved the tensor is not known")
        if not seen:  # which writes came after the save is then told by the versions alone
            seq, saved_stack = None, ()
        writes, complete = self._chain(tensor, seq, facts.expected_version, facts.version)
        carried = self._new_forward_since(node.metadata.get(WALKED), roots)
        # Writes before an unseen save were maybe never recorded: the note says so, not a count.
        missing = 0 if complete or not seen else max((facts.gap or 0) - len(writes), 0)
        return Failure(exc, node.name(), name, facts.expected_version, facts.version, facts.shape,
                       saved_stack, tuple(writes), failed_stack, missing, carried, storage_key(tensor), seen)

    @staticmethod
    def _new_forward_since(walked, roots) -> bool:
        """Whether the failing graph holds a new forward built after an earlier backward walked
        the stale node: a node made since that uses a parameter (a leaf that requires grad). A
        state carried from an earlier batch feeds such a forward; a new loss built on an old output
        (a GAN's one `score = D(G(z))` used for both losses, a loss recomputed from an old
        prediction) adds none."""
        if walked is None:
            return False
        for n in walk(roots):
            entry = n.metadata.get(KEY)
            if entry is not None and entry[0] > walked and any(
                    hasattr(m, "variable") for m, _ in n.next_functions if m is not None):
                return True
        return False

    def _chain(self, t, seq, saved_version, version) -> tuple:
        """The recorded writes that took the saved tensor from its saved version to now, and
        whether the history is complete (it never dropped a write of this storage)."""
        hist = self.history.get(storage_key(t))
        complete = hist is not None and len(hist) < hist.maxlen
        hist = hist or ()
        if seq is not None:
            hist = [w for w in hist if w.seq > seq]
        return [w for w in hist if w.inplace and saved_version <= w.version_before < version], complete
