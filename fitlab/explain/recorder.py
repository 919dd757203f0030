"""Record in-place writes (with their stacks) and where each autograd node's forward ran.

Two modes run while the script does. The dispatch mode sits below autograd and sees
every aten op, so it sees each write, however it was spelled (`x += 1`, `h[:, 0] = 0`,
an optimiser's `_foreach_add_`). The function mode sits above autograd: after a call
returns, its outputs have their `grad_fn`, which it tags with the op sequence number
and the stack; and it sees `backward`/`autograd.grad` with their roots.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Self

import torch
from torch.autograd.graph import increment_version
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from fitlab.explain import frames
from fitlab.explain.decode import decode

KEY = "fitlab.explain"
BACKWARDS = frozenset({torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad})


@dataclass(frozen=True, slots=True)
class Write:
    """One in-place write to a storage, as recorded (stack not yet resolved)."""

    seq: int
    op: str
    version_before: int
    # An in-place or out= op, as opposed to one that updates a buffer on the side
    # without a version bump (batch norm's running stats), which backward ignores.
    inplace: bool
    shape: tuple
    stack: tuple


@dataclass(frozen=True, slots=True)
class Failure:
    """What the recorder learnt when a backward call raised the in-place error."""

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


@dataclass(frozen=True, slots=True)
class Silent:
    """A write that a graph's saved tensor will see without a version bump."""

    write: Write
    node: str
    saved_as: str
    shape: tuple


_WRITTEN: dict = {}


def _written_args(op) -> tuple:
    """(index, name) of the arguments op writes, its name, whether in-place/out=; cached per op."""
    info = _WRITTEN.get(op)
    if info is None:
        schema = op._schema
        written = tuple((i, a.name) for i, a in enumerate(schema.arguments)
                        if a.alias_info is not None and a.alias_info.is_write)
        inplace = schema.name.endswith("_") or any(a.is_out for a in schema.arguments)
        info = (written, schema.name, inplace)
        _WRITTEN[op] = info
    return info


def storage_key(t: torch.Tensor):
    """The storage's address: shared by a tensor, its views and its `.data`; None if it has none."""
    try:
        storage = t.untyped_storage()
        return storage.data_ptr() if storage.nbytes() else None
    except (RuntimeError, NotImplementedError):
        return None


class _WriteMode(TorchDispatchMode):
    def __init__(self, recorder: Recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        info = _written_args(func)
        if info[0]:
            self.recorder._record_write(info, args, kwargs)
        return func(*args, **kwargs)


class _GraphMode(TorchFunctionMode):
    def __init__(self, recorder: Recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in BACKWARDS:
            return self.recorder._differentiate(func, args, kwargs)
        out = func(*args, **kwargs)
        if self.recorder.unbumped:
            self.recorder._bump()
        if isinstance(out, torch.Tensor):
            gf = out.grad_fn
            if gf is not None:
                self.recorder._tag(gf)
        elif type(out) in (tuple, list):
            for o in out:
                if isinstance(o, torch.Tensor) and o.grad_fn is not None:
                    self.recorder._tag(o.grad_fn)
        return out


def walk(roots) -> list:
    """Every autograd node reachable from the root tensors."""
    seen = set()
    todo = [r.grad_fn for r in roots if r.grad_fn is not None]
    out = []
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        out.append(node)
        todo.extend(n for n, _ in node.next_functions if n is not None and n not in seen)
    return out


_SLOTS: dict = {}


def slots(node) -> tuple:
    """(name, raw attribute, checked attribute) of each tensor slot a node saved; cached per type."""
    cached = _SLOTS.get(type(node))
    if cached is None:
        attrs = set(dir(type(node)))
        names = [a[len("_raw_saved_"):] for a in attrs if a.startswith("_raw_saved_")]
        cached = tuple(
            # Custom autograd.Function nodes unpack with the version check as `saved_tensors`.
            (n, "_raw_saved_" + n, "_saved_" + n if "_saved_" + n in attrs else "saved_tensors")
            for n in sorted(names))
        _SLOTS[type(node)] = cached
    return cached


def saved_tensors(node, raw_attr: str) -> list:
    """The tensors in a saved slot, read without the version check (empty once freed)."""
    try:
        raw = getattr(node, raw_attr)
        raws = raw if isinstance(raw, (tuple, list)) else (raw,)
        tensors = [r.data for r in raws if r is not None]
    except RuntimeError:
        return []
    return [t for t in tensors if t is not None]


def stale_error(node, checked_attr: str) -> RuntimeError | None:
    """The in-place error torch raises on unpacking this slot, or None if it unpacks."""
    try:
        getattr(node, checked_attr)
    except RuntimeError as exc:
        return exc if decode(str(exc)) is not None else None
    return None


def _roots(func, args, kwargs) -> list:
    if func is torch.Tensor.backward:
        value = args[0] if args else kwargs.get("self")
    elif func is torch.autograd.grad:
        value = args[0] if args else kwargs.get("outputs")
    else:
        value = args[0] if args else kwargs.get("tensors")
    values = value if isinstance(value, (tuple, list)) else (value,)
    return [v for v in values if isinstance(v, torch.Tensor)]


class Recorder:
    """Records writes and forward locations while active (`with Recorder() as rec:`).

    Memory is bounded: each storage keeps its last `per_storage` writes, and only the
    `max_storages` storages written most recently keep any; silent writes are kept
    once per distinct (op, stack), at most `max_silent` of them.
    """

    def __init__(self, per_storage: int = 8, max_storages: int = 4096, max_silent: int = 32):
        self.per_storage = per_storage
        self.max_storages = max_storages
        self.max_silent = max_silent
        self.seq = 0
        self.history: dict = {}
        self.silent: dict = {}
        self.failure: Failure | None = None
        self.notes: list = []
        self.unbumped: list = []
        self._modes = (_GraphMode(self), _WriteMode(self))

    def __enter__(self) -> Self:
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(None, None, None)

    def _record_write(self, info, args, kwargs) -> None:
        written, name, inplace = info
        # Under a dispatch mode torch skips the version bump of _foreach_ ops' tensors
        # (torch 2.13); without it the script would not fail as it does when run alone.
        foreach = name.startswith("aten::_foreach_")
        self.seq += 1
        stack = None
        for i, arg_name in written:
            value = args[i] if i < len(args) else kwargs.get(arg_name)
            for t in value if isinstance(value, (list, tuple)) else (value,):
                if not isinstance(t, torch.Tensor):
                    continue
                key = storage_key(t)
                if key is None:
                    continue
                if stack is None:
                    stack = frames.capture(2)
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
                hist.append(Write(self.seq, name, version, inplace, tuple(t.shape), stack))
                if foreach:
                    self.unbumped.append((t, version))

    def _bump(self) -> None:
        """Give the tensors a _foreach_ op wrote the version bump torch skipped under the mode."""
        for t, version in self.unbumped:
            if t._version == version:
                increment_version(t)
        self.unbumped.clear()

    def _tag(self, grad_fn) -> None:
        if KEY in grad_fn.metadata:
            return
        entry = (self.seq, frames.capture(2))
        todo = [grad_fn]
        while todo:
            node = todo.pop()
            meta = node.metadata
            if KEY in meta:
                continue
            meta[KEY] = entry
            todo.extend(n for n, _ in node.next_functions if n is not None)

    def _differentiate(self, func, args, kwargs):
        roots = _roots(func, args, kwargs)
        failed_stack = frames.capture(2)
        try:
            self._find_silent(roots)
        except Exception as exc:  # noqa: BLE001 - a diagnostic must never break the user's run
            self.notes.append(f"silent-write check failed: {exc!r}")
        try:
            return func(*args, **kwargs)
        except RuntimeError as exc:
            facts = decode(str(exc))
            if facts is not None and facts.shape is not None:
                try:
                    self.failure = self._explain(exc, facts, roots, failed_stack)
                except Exception as inner:  # noqa: BLE001 - keep torch's error; say why ours is missing
                    self.notes.append(f"analysis failed: {inner!r}")
            raise

    def _later_writes(self, t: torch.Tensor, after: int) -> list:
        hist = self.history.get(storage_key(t))
        return [w for w in hist if w.seq > after] if hist else []

    def _find_silent(self, roots) -> None:
        for node in walk(roots):
            entry = node.metadata.get(KEY)
            if entry is None:
                continue
            for name, raw_attr, checked_attr in slots(node):
                for t in saved_tensors(node, raw_attr):
                    later = [w for w in self._later_writes(t, entry[0]) if w.inplace]
                    # A write after the save that bumped a counter, yet the saved tensor
                    # unpacks: the write went through an alias with its own counter.
                    if not later or stale_error(node, checked_attr) is not None:
                        continue
                    for w in later:
                        key = (w.op, tuple((c, n) for c, n in w.stack))
                        if key not in self.silent and len(self.silent) < self.max_silent:
                            self.silent[key] = Silent(w, node.name(), name, tuple(t.shape))

    def _explain(self, exc, facts, roots, failed_stack) -> Failure:
        best = None
        for node in walk(roots):
            for name, raw_attr, checked_attr in slots(node):
                err = stale_error(node, checked_attr)
                if err is None:
                    continue
                got = decode(str(err))
                if (got.shape, got.version, got.expected_version) != (
                        facts.shape, facts.version, facts.expected_version):
                    continue
                candidates = [t for t in saved_tensors(node, raw_attr)
                              if tuple(t.shape) == facts.shape and t._version == facts.version]
                # The engine runs the newest node first, so that is the one that raised.
                rank = node._sequence_nr()
                if candidates and (best is None or rank > best[0]):
                    best = (rank, node, name, candidates[0])
        if best is None:
            return Failure(exc, None, None, facts.expected_version, facts.version, facts.shape,
                           (), (), failed_stack, facts.gap or 0)
        _, node, name, tensor = best
        seq, saved_stack = node.metadata.get(KEY, (None, ()))
        writes = self._chain(tensor, seq, facts.expected_version, facts.version)
        return Failure(exc, node.name(), name, facts.expected_version, facts.version, facts.shape,
                       saved_stack, tuple(writes), failed_stack, facts.gap - len(writes))

    def _chain(self, t, seq, saved_version, version) -> list:
        """The recorded writes that took the saved tensor from its saved version to now."""
        hist = self.history.get(storage_key(t)) or ()
        if seq is not None:
            hist = [w for w in hist if w.seq > seq]
        return [w for w in hist if w.inplace and saved_version <= w.version_before < version]
