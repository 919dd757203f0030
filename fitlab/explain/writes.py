"""Seeing every in-place write while running no Python for the ops that write nothing.

Each aten op whose schema marks an argument written (`alias_info.is_write`: `add_`, `copy_`,
out= forms, `_foreach_*_`, the running stats of `_native_batch_norm_legit`; eager's
`native_batch_norm` marks none) gets a Python kernel at torch's ADInplaceOrView key, where
torch bumps the version counters of in-place and out= ops. The kernel reports the write to
every active recorder, runs the op below that key, and bumps the versions as torch's own
kernel did. An op torch lets fall through the key (`_foreach_*_`, a fused optimizer step) is
reported, then handed on as it is, so versions move exactly as without fitlab: a fused step
bumps none (the recorder reports the saved tensors it wrote as silent writes), a CPU foreach
op's per-tensor writes bump theirs. Ops that write nothing never reach Python, and the ops an
op runs inside itself are not reported (torch excludes the key below autograd; a foreach
op's, by a per-thread depth), so a write is seen once, as the program or the autograd engine
asked for it. Composite ops (`clip_`, `dropout_`) are left
to the ops they decompose into.

Kernels are process-wide: every thread's writes are seen while a recorder is active. They
are registered when a recording starts (about 25 ms for the 1244 ops of torch 2.13.0+cpu, after a
scan of torch's schemas once per process) and released, on the same thread, when the last
one ends: nothing of fitlab's stays in a notebook between recordings, and no kernel is
swapped under a thread that is running ops from this one. `keep()` holds them across
recordings (a benchmark's rounds). A forked child records nothing: its copy of the kernels
only passes writes on.

Where torch cannot redispatch from Python (2.1), a kernel runs its op from the top with the keys
torch's guard excludes excluded (compat.below), and an op torch lets fall through bumps itself
(_calling_kernel). Where even that is missing, WriteMode, a dispatch mode, is the public path.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

import torch
from torch.autograd.graph import increment_version as _increment_version
from torch.utils._python_dispatch import TorchDispatchMode

from fitlab.explain import compat

# How a kernel bumps the written tensors' versions, as torch's path without it does:
# ALWAYS for an op torch bumps at this key; PASS for an in-place op torch lets fall through
# this key, whose own kernel bumps or not (a _foreach_ op: per tensor on CPU, inside its
# kernel elsewhere; a _fused_ optimizer step: never), handed on to that kernel as it is;
# NEVER for an op that writes a buffer on the side (batch norm's running stats), as torch.
ALWAYS, PASS, NEVER = range(3)
# Depth of foreach/fused ops running on this thread: the ops they run inside are not reported.
class _Inside(threading.local):
    depth = 0


_INSIDE = _Inside()

# The recorders now recording, in the order they started.
ACTIVE: list = []
_LOCK = threading.RLock()
_OPS: list = []
_library = None
_kept = 0


def _written(schema) -> tuple:
    return tuple((i, a.name) for i, a in enumerate(schema.arguments)
                 if a.alias_info is not None and a.alias_info.is_write)


def written_ops() -> list:
    """(name, op overload, written (index, name) pairs, in-place or out=, bump) of every
    aten op that writes an argument and is not a composite of other ops; cached (none where
    the kernels' APIs are missing, compat.KERNELS)."""
    if _OPS or not compat.KERNELS:
        return _OPS
    names = set(compat.op_names())
    bumped = set(compat.registered_at("ADInplaceOrView"))
    for schema in compat.all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        written = _written(schema)
        name = schema.name + ("." + schema.overload_name if schema.overload_name else "")
        if (not written or name not in names
                or compat.has_kernel(name, "CompositeImplicitAutograd")):
            continue
        packet = getattr(torch.ops.aten, schema.name[len("aten::"):])
        op = getattr(packet, schema.overload_name or "default")
        inplace = schema.name.endswith("_") or any(a.is_out for a in schema.arguments)
        bump = ALWAYS if name in bumped else PASS if inplace else NEVER
        _OPS.append((schema.name, op, written, inplace, bump))
    return _OPS


def _kernel(name: str, op, written: tuple, inplace: bool, bump: int):
    below, call, increment_version = compat.below, op._op, compat.increment_version

    def kernel(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
        if _INSIDE.depth:  # an op a foreach or fused op runs inside itself: it was reported
            with below():
                out = call(*args, **kwargs)
            if bump == ALWAYS:
                increment_version(_tensors(written, args, kwargs))
            return out
        tensors = _tensors(written, args, kwargs)
        for rec in ACTIVE:
            rec._record_write(name, inplace, tensors)
        with below():
            out = call(*args, **kwargs)
        if bump == ALWAYS:
            increment_version(tensors)
        return out
    return kernel


def _passing_kernel(name: str, op, written: tuple, inplace: bool):
    """For an op torch does not bump at this key (foreach, fused): report, then hand the op to
    the next key as torch's fallthrough does, so that whatever it runs inside itself bumps as it
    would (a CPU foreach op's per-tensor `add_`s do; a fused optimizer step bumps nothing)."""
    after, redispatch = compat.after_key, op.redispatch

    def kernel(keyset, *args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
        if not _INSIDE.depth:
            tensors = _tensors(written, args, kwargs)
            for rec in ACTIVE:
                rec._record_write(name, inplace, tensors)
        _INSIDE.depth += 1
        try:
            return redispatch(keyset & after, *args, **kwargs)
        finally:
            _INSIDE.depth -= 1
    return kernel


def _calling_kernel(name: str, op, written: tuple, inplace: bool):
    """_passing_kernel where torch cannot hand an op on (2.1): the op runs below the key, where the
    writes a foreach or out= op makes through other ops (a CPU foreach op's per-tensor `add_`s)
    bump nothing, so it bumps each tensor its kernel left as it was, as those would have; a fused
    step (not an out= op) still bumps none."""
    below, call = compat.below, op._op
    through = name.startswith("aten::_foreach_") or any(a.is_out for a in op._schema.arguments)

    def kernel(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
        tensors = _tensors(written, args, kwargs)
        for rec in ACTIVE:
            rec._record_write(name, inplace, tensors)
        versions = [t._version for t in tensors] if through else ()
        with below():
            out = call(*args, **kwargs)
        _bump_unmoved(tensors, versions)
        return out
    return kernel


def _tensors(written: tuple, args, kwargs) -> list:
    tensors = []
    for i, arg in written:
        value = args[i] if i < len(args) else kwargs.get(arg)
        if isinstance(value, torch.Tensor):
            tensors.append(value)
        elif isinstance(value, (list, tuple)):
            tensors.extend(t for t in value if isinstance(t, torch.Tensor))
    return tensors


# Per op overload seen by WriteMode: (name, written (index, name) pairs, in-place or out=, an
# in-place foreach op), or None.
_SEEN: dict = {}


def _writes_of(func):
    known = _SEEN.get(func, False)
    if known is False:
        schema = func._schema
        written = _written(schema)
        inplace = schema.name.endswith("_") or any(a.is_out for a in schema.arguments)
        foreach = inplace and schema.name.startswith("aten::_foreach_")
        known = (schema.name, written, inplace, foreach) if written and schema.name.startswith("aten::") else None
        _SEEN[func] = known
    return known


class WriteMode(TorchDispatchMode):
    """The public path where the kernels' APIs are missing (compat.KERNELS false): a dispatch mode,
    on each recorded thread, sees every op below autograd and reports those whose schema writes an
    argument, before the op runs (torch bumps the version after it, above this mode)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
        kwargs = kwargs or {}
        known = _writes_of(func)
        if known is None:
            return func(*args, **kwargs)
        tensors = _tensors(known[1], args, kwargs)
        for rec in ACTIVE:
            rec._record_write(known[0], known[2], tensors)
        if not known[3]:
            return func(*args, **kwargs)
        # A foreach op's own per-tensor writes, which bump each tensor without a mode, bump none
        # under one (they run below ADInplaceOrView): bump as torch would have.
        versions = [t._version for t in tensors]
        out = func(*args, **kwargs)
        _bump_unmoved(tensors, versions)
        return out


def _bump_unmoved(tensors: list, versions) -> None:
    """Bump each tensor whose version is still the one in `versions` (paired; none if empty)."""
    for t, v in zip(tensors, versions):
        if t._version == v:
            _increment_version(t)  # one tensor a call: torch 2.1's takes no list


def thread_mode():
    """What a recorded thread runs under to see its writes: WriteMode on the public path, nothing
    with the kernels (they see every thread's)."""
    return contextlib.nullcontext() if compat.KERNELS else WriteMode()


def _register() -> None:
    global _library
    if _library is None and compat.KERNELS:
        library = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            # "Overriding a previously registered kernel": torch's, restored by compat.release.
            warnings.simplefilter("ignore")
            for name, op, written, inplace, bump in written_ops():
                if bump == PASS and compat.REDISPATCH:
                    library.impl(op, _passing_kernel(name, op, written, inplace), "ADInplaceOrView",
                                 with_keyset=True)
                elif bump == PASS:
                    library.impl(op, _calling_kernel(name, op, written, inplace), "ADInplaceOrView")
                else:
                    library.impl(op, _kernel(name, op, written, inplace, bump), "ADInplaceOrView")
        _library = library


def _release_if_unused() -> None:
    global _library
    if _library is not None and not ACTIVE and not _kept:
        compat.release(_library)
        _library = None


def start(recorder) -> None:
    """Report every write, on any thread, to `recorder._record_write(op name, in-place or
    out=, written tensors)` until `stop(recorder)`."""
    with _LOCK:
        _register()
        ACTIVE.append(recorder)


def stop(recorder) -> None:
    """Stop reporting to `recorder`; torch's own kernels come back if no recorder is left."""
    with _LOCK:
        if recorder in ACTIVE:
            ACTIVE.remove(recorder)
        _release_if_unused()


@contextlib.contextmanager
def keep():
    """Keep the kernels registered while the block runs, recorders starting and stopping in it."""
    global _kept
    with _LOCK:
        _register()
        _kept += 1
    try:
        yield
    finally:
        with _LOCK:
            _kept -= 1
            _release_if_unused()


def registered() -> bool:
    """Whether fitlab's kernels are registered now."""
    return _library is not None


def forked_child() -> None:
    """In a forked child: record nothing (the kernels stay, passing writes on)."""
    global _LOCK
    ACTIVE.clear()
    _LOCK = threading.RLock()  # another of the parent's threads may have held it
