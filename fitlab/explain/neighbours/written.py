"""An in-place write autograd refused as it ran (to a leaf that requires grad, to a view of one, to
a view it cannot rebase): the call, the tensor, its name in the user's code, and what made the view.

The error is raised inside the call the recorder's function mode handed on, so the traceback holds
the mode's frame with the call's function and arguments: the tensor written and the value written
into it are read there, nothing is rerun. A view's node carries the recorder's tag, the stack of the
forward call that made it (a custom Function's, its caller's line).
"""

from __future__ import annotations

import linecache
import re
import types
from dataclasses import dataclass

import torch

from fitlab.explain import modes
from fitlab.explain import stack as stacks
from fitlab.explain.neighbours.freed import TAG
from fitlab.explain.neighbours.messages import LEAF, LEAF_VIEW, MULTI_VIEW

# The function mode's frame, which holds the raising call's arguments (None if the mode is renamed:
# the report then names no tensor rather than the tool failing to start).
_MODE_CALL = getattr(getattr(getattr(modes, "GraphMode", None), "__torch_function__", None), "__code__", None)
# torch wraps a module's inputs and outputs in this Function when a full backward hook is registered.
HOOK_FUNCTION = "BackwardHookFunctionBackward"


@dataclass(frozen=True)
class Written:
    """The refused write. cause: a key of causes.py; written: the user's stack at the write;
    name: the written tensor's (or its base's) name in the user's code, in code spans, None if not found;
    value: the name of the value written, for an accumulation; maker: the view's node;
    made: the stack of the call that made the view; for a backward hook's view, registered: the
    user's lines that register a full backward hook (Frames), writer: the torch module that wrote."""

    exc: BaseException
    cause: str
    written: tuple
    name: str | None = None
    value: str | None = None
    maker: str | None = None
    made: tuple = ()
    registered: tuple = ()
    writer: str | None = None


def _frames(tb: types.TracebackType | None) -> list:
    out = []
    while tb is not None:
        out.append(tb.tb_frame)
        tb = tb.tb_next
    return out


def _named(t: torch.Tensor, frame) -> str | None:
    """t's name in the frame, in code spans: "`w`", its path in a module the frame holds
    ("`model[2].weight`"), or both ("`p` (`model[0].weight`)") for a loop's name of a parameter."""
    scopes = (frame.f_locals, frame.f_globals)
    name = next((k for scope in scopes for k, v in list(scope.items()) if v is t), None)
    path = _path(t, scopes)
    spans = [f"`{n}`" for n in (name, path) if n]
    return None if not spans else spans[0] if len(spans) == 1 else f"{spans[0]} ({spans[1]})"


def _path(t: torch.Tensor, scopes: tuple) -> str | None:
    for scope in scopes:
        for name, value in list(scope.items()):
            if isinstance(value, torch.nn.Module):
                for path, p in value.named_parameters():
                    if p is t:  # `model[2].weight`, as the code indexes a Sequential
                        return name + "".join(f"[{part}]" if part.isdigit() else f".{part}"
                                              for part in path.split("."))
    return None


def analyse(exc: BaseException, kind: str) -> Written | None:
    """The write that raised `exc` (a LEAF, LEAF_VIEW, MULTI_VIEW or FUNCTION_VIEW message), or None
    when the raising call was not seen (raised outside the recording)."""
    frames = _frames(exc.__traceback__)
    calls = [f for f in frames if _MODE_CALL is not None and f.f_code is _MODE_CALL]
    users = [f for f in frames if stacks.is_user_file(f.f_code.co_filename)]
    if not calls or not users:
        return None
    args = calls[-1].f_locals.get("args") or ()
    kwargs = calls[-1].f_locals.get("kwargs") or {}
    target = next((a for a in args if isinstance(a, torch.Tensor)), None)
    if target is None:
        return None
    user = users[-1]
    written = stacks.capture_from(user)
    if kind in (LEAF, LEAF_VIEW):
        leaf = target._base if target._is_view() and target._base is not None else target
        name = _named(leaf, user)
        if kind == LEAF_VIEW:
            return Written(exc, "leaf_view_write", written, name)
        values = [a for a in (*args[1:], *kwargs.values()) if isinstance(a, torch.Tensor) and a.requires_grad]
        if values:
            return Written(exc, "leaf_accumulate", written, name, _named(values[0], user))
        return Written(exc, "leaf_update", written, name)
    node = modes.grad_fn(target)
    tag = None if node is None else node.metadata.get(TAG)
    made = () if tag is None or tag[1] is None else tag[1]
    maker = None if node is None else node.name()
    if maker == HOOK_FUNCTION:
        return Written(exc, "hook_view_write", written, _named(target, user), None, maker, made,
                       _registrations(made, written), _writer(frames))
    cause = "multi_view_write" if kind == MULTI_VIEW else "function_view_write"
    return Written(exc, cause, written, _named(target, user), None, maker, made)


_REGISTER = re.compile(r"\.register_(?:full_)?backward_hook\(")


def _registrations(*stack_lists) -> tuple:
    """The lines of the user's files on these stacks that register a module's backward hook: torch
    keeps no record of where a hook was registered, so the source is read (the hook's registration
    names no tensor, and a file registering several lists each)."""
    paths = dict.fromkeys(code.co_filename for stack in stack_lists for code, _ in stack
                          if stacks.is_user_file(code.co_filename))
    return tuple(stacks.Frame(path, i, "", line.strip()) for path in paths
                 for i, line in enumerate(linecache.getlines(path), start=1) if _REGISTER.search(line))


def _writer(frames: list) -> str | None:
    """The torch module whose forward made the write (`nn.ReLU(inplace=True)`), innermost, or None."""
    for f in reversed(frames):
        module = f.f_locals.get("self")
        if isinstance(module, torch.nn.Module) and stacks.owner(f.f_code.co_filename) == "torch":
            return repr(module)
    return None
