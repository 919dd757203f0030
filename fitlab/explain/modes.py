"""The function mode that watches the program's calls, and what the recorder reads off them.

The function mode sits above autograd: after a call returns, its outputs have their
`grad_fn`, which the recorder tags; and it sees `backward`/`autograd.grad` with their roots.
(Writes are seen by writes.py's kernels.)
"""

from __future__ import annotations

import sys
import threading
import weakref

import torch
from torch.overrides import TorchFunctionMode

from fitlab.explain import compat, writes
from fitlab.explain import stack as stacks

BACKWARDS = frozenset({torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad})
# Where create_graph sits among each backward function's positional arguments.
_CREATE_GRAPH_AT = {torch.Tensor.backward: 3, torch.autograd.backward: 3, torch.autograd.grad: 4}
_MODULE_CALL = torch.nn.Module._call_impl.__code__


# The third item of a node's tag entry when forward-mode AD's formula inside the call made it.
FORMULA = "forward-mode AD"
_compiling = compat.is_compiling
sequence_nr = compat.sequence_nr


class GraphMode(TorchFunctionMode):
    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    @compat.dynamo_opaque
    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
        kwargs = kwargs or {}
        if _compiling():  # Dynamo traces this mode: tagging would put stack walks in the graph
            return func(*args, **kwargs)
        if func in BACKWARDS:
            return self.recorder._differentiate(func, args, kwargs)
        since, seq, dual = sequence_nr(), self.recorder.seq, compat.forward_ad_on()
        if dual and not compat.KERNELS:
            # Under any dispatch mode torch's forward-mode formulas run otherwise (softmax's no longer
            # writes what it saved, pytorch#162350): the call runs without writes.WriteMode.
            with compat.popped(writes.WriteMode):
                out = func(*args, **kwargs)
        else:
            out = func(*args, **kwargs)
        if dual and since is not None:
            # Forward-mode AD's formulas make nodes the call's outputs may not reach (a tangent's
            # graph): the numbers they got are kept, so that a later call reaching one names this one.
            # From the call's first write on: a formula may write what it saved (pytorch#162350).
            self.recorder.dual_calls.append((since, sequence_nr(), (seq, stacks.capture(2), FORMULA)))
        if isinstance(out, torch.Tensor):
            try:  # inline, not grad_fn(out): a call per op costs on loops of tiny ops
                gf = out.grad_fn
            except RuntimeError:  # see grad_fn
                gf = None
            if gf is not None:
                self.recorder._tag(gf, since=since)
        elif isinstance(out, (tuple, list)):  # torch.return_types (max, topk, eigh...) are tuples
            for o in out:
                gf = grad_fn(o) if isinstance(o, torch.Tensor) else None
                if gf is not None:
                    self.recorder._tag(gf, since=since)
        return out


def _step_started(optimizer, args, kwargs) -> None:
    __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
    if not _compiling():  # Dynamo traces the step's hooks: a frame walk would break its graph
        stacks.step_started(sys._getframe(1))


def _step_ended(optimizer, args, kwargs) -> None:
    __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
    if not _compiling():
        stacks.step_ended(sys._getframe(1))


def step_hooks() -> tuple:
    """Global optimizer step pre- and post-hooks (their handles) that let every write of a step
    share one capture of the frames above it (stack.step_started)."""
    from torch.optim import optimizer  # torch imports it lazily: a program without one need not

    return (optimizer.register_optimizer_step_pre_hook(_step_started),
            optimizer.register_optimizer_step_post_hook(_step_ended))


class _Hooks(threading.local):
    depth = 0


_HOOKS = _Hooks()


def hooks_on() -> bool:
    """Whether saved-tensor hooks entered while recording are on, on this thread."""
    return _HOOKS.depth > 0


def count_saved_tensors_hooks() -> tuple:
    """Make saved_tensors_hooks (checkpoint's, save_on_cpu's) count themselves per thread while
    recording, where torch cannot tell a hooked saved tensor (compat.SAVED_DATA false); returns
    what to give uncount_saved_tensors_hooks."""
    hooks = torch.autograd.graph.saved_tensors_hooks
    enter, leave = hooks.__enter__, hooks.__exit__

    def entered(self):
        out = enter(self)
        _HOOKS.depth += 1
        return out

    def left(self, *exc):
        _HOOKS.depth = max(_HOOKS.depth - 1, 0)
        return leave(self, *exc)
    hooks.__enter__, hooks.__exit__ = entered, left
    return enter, leave, entered


def uncount_saved_tensors_hooks(patched: tuple) -> None:
    """Undo count_saved_tensors_hooks."""
    hooks = torch.autograd.graph.saved_tensors_hooks
    if hooks.__enter__ is patched[2]:
        hooks.__enter__, hooks.__exit__ = patched[0], patched[1]


def grad_fn(t: torch.Tensor):
    """t.grad_fn, or None where reading it would raise what the program never asked for: a view
    made under no_grad whose base was written since (`w[0].fill_(0)` in a no_grad block returns
    it; nn.Embedding(padding_idx=...) does that) raises torch's "view was created in no_grad
    mode" error when its grad_fn is read with grad mode on."""
    try:
        return t.grad_fn
    except RuntimeError:
        return None


def roots(func, args, kwargs) -> list:
    if func is torch.Tensor.backward:
        value = args[0] if args else kwargs.get("self")
    elif func is torch.autograd.grad:
        value = args[0] if args else kwargs.get("outputs")
    else:
        value = args[0] if args else kwargs.get("tensors")
    values = value if isinstance(value, (tuple, list)) else (value,)
    return [v for v in values if isinstance(v, torch.Tensor)]



def creates_graph(func, args, kwargs) -> bool:
    at = _CREATE_GRAPH_AT[func]
    return bool(args[at] if len(args) > at else kwargs.get("create_graph", False))


def target(t: torch.Tensor) -> str:
    if t._is_view():
        return "view"
    if not t.is_leaf:  # a grad_fn, read without making its Python object: every write asks
        return "activation"
    return "parameter" if t.requires_grad or isinstance(t, torch.nn.Parameter) else "leaf"


def scratch(tensors: list) -> bool:
    """Whether every tensor is a leaf that needs no gradient and is no view: written by an
    optimizer's own code (grad mode off), its state or a scratch tensor, which no graph saved."""
    for t in tensors:  # a loop, not all() over a generator: every write in a step asks
        if not t.is_leaf or t.requires_grad or t._is_view():
            return False
    return True


def in_module(stack: tuple) -> bool:
    """Whether a captured stack runs a module's forward (cheaper than walking the frames)."""
    for code, _ in stack:  # a loop, not any() over a generator: every in-place write asks
        if code is _MODULE_CALL:
            return True
    return False


def modules(skip: int) -> tuple:
    """Weak references to the modules whose forward is running, innermost first."""
    f = stacks.frame(skip)
    out = []
    while f is not None and len(out) < 8:
        if f.f_code is _MODULE_CALL:
            module = f.f_locals.get("self")
            if module is not None:
                out.append(weakref.ref(module))
        f = f.f_back
    return tuple(out)


def warned_from(filename: str, lineno: int) -> tuple | None:
    """For a warning that points at a frame the modes inserted: the file and line outside
    them, the line that ran the op, as Python names it without the modes; else None."""
    f, callee = stacks.frame(2), None

    def mode_frame(f, callee) -> bool:
        return stacks.inserted(f.f_code.co_filename, None if callee is None else callee.f_code.co_filename)

    while f is not None and not (f.f_code.co_filename == filename and f.f_lineno == lineno):
        f, callee = f.f_back, f
    if f is None or not mode_frame(f, callee):
        return None
    while f is not None and mode_frame(f, callee):
        f, callee = f.f_back, f
    return None if f is None else (f.f_code.co_filename, f.f_lineno)
