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
"""

from __future__ import annotations

import contextlib
import threading
import warnings

import torch
from torch.autograd.graph import increment_version as _increment_version


def _takes_lists() -> bool:
    try:
        torch._C._increment_version([torch.empty(0)])
    except (TypeError, RuntimeError):  # torch < 2.5 bumps one tensor per call
        return False
    return True


if _takes_lists():
    # torch's own function, without the Python wrapper that only turns one tensor into a tuple:
    # every write pays it.
    increment_version = torch._C._increment_version
else:
    def increment_version(tensors) -> None:
        """Bump each tensor's version (this torch's increment_version takes one tensor)."""
        for t in tensors:
            _increment_version(t)


# Bound at import, so that a torch without them is refused in one line (see __main__).
_below = torch._C._AutoDispatchBelowADInplaceOrView
_all_schemas, _op_names = torch._C._jit_get_all_schemas, torch._C._dispatch_get_all_op_names
_registered_at = torch._C._dispatch_get_registrations_for_dispatch_key
_has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key

# How a kernel bumps the written tensors' versions, as torch's path without it does:
# ALWAYS for an op torch bumps at this key; PASS for an in-place op torch lets fall through
# this key, whose own kernel bumps or not (a _foreach_ op: per tensor on CPU, inside its
# kernel elsewhere; a _fused_ optimizer step: never), handed on to that kernel as it is;
# NEVER for an op that writes a buffer on the side (batch norm's running stats), as torch.
ALWAYS, PASS, NEVER = range(3)
_after_key = torch._C._after_ADInplaceOrView_keyset
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
    aten op that writes an argument and is not a composite of other ops; cached."""
    if _OPS:
        return _OPS
    names = set(_op_names())
    bumped = set(_registered_at("ADInplaceOrView"))
    for schema in _all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        written = _written(schema)
        name = schema.name + ("." + schema.overload_name if schema.overload_name else "")
        if (not written or name not in names
                or _has_kernel(name, "CompositeImplicitAutograd")):
            continue
        packet = getattr(torch.ops.aten, schema.name[len("aten::"):])
        op = getattr(packet, schema.overload_name or "default")
        inplace = schema.name.endswith("_") or any(a.is_out for a in schema.arguments)
        bump = ALWAYS if name in bumped else PASS if inplace else NEVER
        _OPS.append((schema.name, op, written, inplace, bump))
    return _OPS


def _kernel(name: str, op, written: tuple, inplace: bool, bump: int):
    below, call = _below, op._op

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
    after, redispatch = _after_key, op.redispatch

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


def _tensors(written: tuple, args, kwargs) -> list:
    tensors = []
    for i, arg in written:
        value = args[i] if i < len(args) else kwargs.get(arg)
        if isinstance(value, torch.Tensor):
            tensors.append(value)
        elif isinstance(value, (list, tuple)):
            tensors.extend(t for t in value if isinstance(t, torch.Tensor))
    return tensors


def _register() -> None:
    global _library
    if _library is None:
        library = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            # "Overriding a previously registered kernel": torch's, restored by _destroy.
            warnings.simplefilter("ignore")
            for name, op, written, inplace, bump in written_ops():
                if bump == PASS:
                    library.impl(op, _passing_kernel(name, op, written, inplace), "ADInplaceOrView",
                                 with_keyset=True)
                else:
                    library.impl(op, _kernel(name, op, written, inplace, bump), "ADInplaceOrView")
        _library = library


def _release_if_unused() -> None:
    global _library
    if _library is not None and not ACTIVE and not _kept:
        _library._destroy()
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
