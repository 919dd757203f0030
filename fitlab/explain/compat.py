"""Every private torch or CPython API fitlab.explain touches, probed once at import, each with a
public fallback: a torch that lacks one still gets the report (slower, or with a line less).

Private touch                                  | why it stays                     | public fallback
-----------------------------------------------|----------------------------------|---------------------------------
write kernels at ADInplaceOrView (schemas,     | ops that write nothing run no    | a TorchDispatchMode per recorded
registrations, _ExcludeDispatchKeyGuard,       | Python (the dispatch mode runs   | thread, reading each op's schema
_increment_version); then, where found,        | Python on every op: on 2.1.2 a   | (writes.WriteMode)
_AutoDispatchBelowADInplaceOrView,             | pass-through one alone costs     |
_after_ADInplaceOrView_keyset, with_keyset,    | more than anomaly mode)          |
OpOverload.redispatch                          |                                  |
SavedTensor.data, SavedTensor.unpack_hook      | reads a stale saved tensor       | unpack a fresh one (`_saved_x`);
                                               | without unpacking it             | find a stale one's storage by its
                                               |                                  | versions among the recorded writes
torch._C._autograd._get_sequence_nr            | tells a call's own nodes from    | every node reached from a call's
                                               | older ones                       | outputs is the call's
forward_ad._current_level                      | a node forward-mode AD's formula  | its line unknown (a note says so)
                                               | made is the formula's call's     |
_python_dispatch._pop_mode_temporarily         | a forward-mode AD call runs       | the call runs under WriteMode
                                               | without WriteMode (a dispatch    | (forward-mode AD formulas run
                                               | mode changes what formulas do)   | otherwise)
torch._dynamo.is_compiling (before 2.3)        | Dynamo must not trace the modes  | torch.compiler.is_compiling
torch._dynamo.disable on the function mode     | Dynamo 2.1 mistraces the mode     | (2.2 and newer: not needed)
(2.1 only)                                     | inside a compiled optimizer step |
threading.Thread._bootstrap_inner              | threads started while recording  | such a thread's calls are not
                                               | get modes of their own           | seen (a note says so)

`PATHS` says which path this torch runs (tools/torch_versions.py prints it per release).
"""

from __future__ import annotations

import contextlib
import threading

import torch
import torch.autograd.forward_ad

# Below this release the public APIs themselves are missing (saved_tensors_hooks' node metadata,
# TorchDispatchMode's schema info as used here): __main__ refuses in one line.
LOWEST = (2, 1)


def _probe(*names: str) -> bool:
    """Whether every dotted name resolves (from torch)."""
    for name in names:
        obj = torch
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return False
    return True


def _takes_keyset() -> bool:
    import inspect
    try:
        return "with_keyset" in inspect.signature(torch.library.Library.impl).parameters
    except (TypeError, ValueError):
        return False


# The write kernels (writes.py): each op that writes gets a Python kernel at ADInplaceOrView.
KERNELS = _probe("_C._jit_get_all_schemas", "_C._dispatch_get_all_op_names",
                 "_C._dispatch_get_registrations_for_dispatch_key", "_C._dispatch_has_kernel_for_dispatch_key",
                 "_C._increment_version", "_C._ExcludeDispatchKeyGuard", "_C.DispatchKeySet",
                 "_C.DispatchKey.ADInplaceOrView", "_C.DispatchKey.AutogradFunctionality",
                 "_C.DispatchKey.AutogradOther")
# How a kernel runs its op below the key: torch's own guard and a redispatch to the keys after it
# (REDISPATCH), or, where those are missing (torch 2.1), the same keys excluded and a call from
# the top, which meets only keys above autograd again (autocast, tracing: fallthroughs there).
REDISPATCH = KERNELS and _probe("_C._AutoDispatchBelowADInplaceOrView", "_C._after_ADInplaceOrView_keyset",
                                "_ops.OpOverload.redispatch") and _takes_keyset()
if KERNELS:
    all_schemas, op_names = torch._C._jit_get_all_schemas, torch._C._dispatch_get_all_op_names
    registered_at = torch._C._dispatch_get_registrations_for_dispatch_key
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
if REDISPATCH:
    below = torch._C._AutoDispatchBelowADInplaceOrView
    after_key = torch._C._after_ADInplaceOrView_keyset
elif KERNELS:
    _BELOW = torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView)
    for _key in ("AutogradFunctionality", "AutogradOther", "AutogradNestedTensor"):  # C++'s
        if hasattr(torch._C.DispatchKey, _key):  # autograd_dispatch_keyset_with_ADInplaceOrView
            _BELOW = _BELOW.add(getattr(torch._C.DispatchKey, _key))

    def below():
        """What torch's _AutoDispatchBelowADInplaceOrView excludes, excluded while the block runs."""
        return torch._C._ExcludeDispatchKeyGuard(_BELOW)


def _takes_lists() -> bool:
    try:
        torch._C._increment_version([torch.empty(0)])
    except (TypeError, RuntimeError):  # torch < 2.5 bumps one tensor per call
        return False
    return True


if KERNELS and _takes_lists():
    # torch's own function, without the Python wrapper that only turns one tensor into a tuple:
    # every write pays it.
    increment_version = torch._C._increment_version
elif KERNELS:
    def increment_version(tensors) -> None:
        """Bump each tensor's version (this torch's _increment_version takes one tensor)."""
        for t in tensors:
            torch._C._increment_version(t)


def release(library) -> None:
    """Deregister what `library` registered (torch 2.1 has no Library._destroy: there its
    registrations go with the Library object, which the caller drops)."""
    destroy = getattr(library, "_destroy", None)
    if destroy is not None:
        destroy()


# Saved tensors read without the version check (graph.py).
SAVED_DATA = _probe("_C._autograd.SavedTensor.data", "_C._autograd.SavedTensor.unpack_hook")


def saved_data(raw):
    """The object a SavedTensor holds (a tensor, or what a hook packed), unchecked; SAVED_DATA only."""
    return raw.data


def unpack_hook(raw):
    """The saved-tensor hook's unpack function of a SavedTensor, or None; SAVED_DATA only."""
    return raw.unpack_hook


# The number the thread's next autograd node will get, or None where torch does not say.
sequence_nr = getattr(torch._C._autograd, "_get_sequence_nr", lambda: None)

# Whether a forward-mode AD level is open (torch.autograd.forward_ad.dual_level); where torch
# moves it, False: a node its formulas make is then of an unknown line.
def forward_ad_on() -> bool:
    """Whether forward-mode AD is on (a dual_level is open) on this process."""
    return getattr(torch.autograd.forward_ad, "_current_level", -1) >= 0


try:  # the dispatch mode stack's top, and taking it off for a while
    from torch.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode_temporarily
except ImportError:
    _get_current_dispatch_mode = _pop_mode_temporarily = None


def popped(mode_type):
    """A context in which the top dispatch mode is off if it is a `mode_type` (else nothing changes);
    where torch has no way, nothing changes either."""
    if _get_current_dispatch_mode is not None and isinstance(_get_current_dispatch_mode(), mode_type):
        return _pop_mode_temporarily()
    return contextlib.nullcontext()


# True while Dynamo traces (constant in its graph): torch.compiler's since 2.3, Dynamo's before.
is_compiling = (getattr(getattr(torch, "compiler", None), "is_compiling", None)
                or getattr(getattr(torch, "_dynamo", None), "is_compiling", None)
                or (lambda: False))

# Dynamo 2.1 inlines a function mode's __torch_function__ into what it traces, and an optimizer
# step traced under the recorder's mode lost its no_grad (tests/explain/correct/compiled.py:
# "a leaf Variable that requires grad is being used in an in-place operation"; a pass-through
# mode alone does not trip it). There the mode runs outside Dynamo's traces (torch._dynamo.disable).
_RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2] if p.isdigit())
DYNAMO_OPAQUE = _RELEASE < (2, 3) and _probe("_dynamo.disable")


def dynamo_opaque(fn):
    """fn, kept out of Dynamo's traces where Dynamo mistraces the recorder's mode (DYNAMO_OPAQUE)."""
    return torch._dynamo.disable(fn) if DYNAMO_OPAQUE else fn


# Thread._bootstrap_inner runs a thread's body and its excepthook: replaced while recording so
# that threads started then run under modes of their own.
THREAD_BOOTSTRAP = callable(getattr(threading.Thread, "_bootstrap_inner", None))


def patch_thread_bootstrap(wrap) -> tuple:
    """Replace Thread._bootstrap_inner by wrap(original); returns the original (to restore), or
    None where this Python has none (threads started while recording are then not recorded)."""
    if not THREAD_BOOTSTRAP:
        return None
    original = threading.Thread._bootstrap_inner
    threading.Thread._bootstrap_inner = wrap(original)
    return original


def restore_thread_bootstrap(original) -> None:
    """Put back what patch_thread_bootstrap replaced."""
    if original is not None:
        threading.Thread._bootstrap_inner = original


PATHS = {
    "writes": ("kernels" if REDISPATCH else "kernels (called from the top)") if KERNELS else "dispatch mode",
    "saves": "SavedTensor.data" if SAVED_DATA else "unpack + versions",
    "threads": "bootstrap" if THREAD_BOOTSTRAP else "main thread only",
    "function mode": "kept out of Dynamo" if DYNAMO_OPAQUE else "traced by Dynamo",
}


def path_line() -> str:
    """The paths this torch runs, in one line (tools/torch_versions.py's table)."""
    return ", ".join(f"{k}: {v}" for k, v in PATHS.items())
