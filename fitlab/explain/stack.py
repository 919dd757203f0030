"""Cheap Python stacks: captured as (code, instruction offset) pairs, resolved to lines and
frames only for a report (a frame's line number costs a walk of its line table).

A frame is the user's unless its file belongs to torch, the standard library, fitlab,
or any installed package (site-packages: Lightning, transformers, accelerate...).
A report leads with the innermost frame of the user's; the library frames between it
and the op are summed up per package ("via pytorch_lightning (3 frames)").
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
import threading
import types
from dataclasses import dataclass

import torch

# Deep recursion in a user's model must not make every recorded op pay for it;
# deep enough for a Lightning training_step called from its trainer.
MAX_DEPTH = 96
# Code objects that run the user's program (the runner's exec), by id (a code object's
# hash walks its contents: a microsecond each, on every frame captured): frames outside
# them (the runner, runpy, a console-script wrapper) are not the program's.
_BOUNDARIES: dict = {}


def add_boundary(code) -> None:
    """Stop captured stacks at frames running `code` (kept alive here, so its id stays its own)."""
    _BOUNDARIES[id(code)] = code


@dataclass(frozen=True)
class Frame:
    """One line of the user's code: where a tensor was saved, written, or differentiated."""

    file: str
    line: int
    function: str
    code: str

    def to_dict(self) -> dict:
        """The frame as the report's JSON object."""
        return {"file": self.file, "line": self.line, "function": self.function, "code": self.code}


@dataclass(frozen=True)
class Via:
    """Library frames run between the innermost user frame and the op: a package, how many."""

    package: str
    frames: int

    def to_dict(self) -> dict:
        """The JSON object of one entry of a "via" list."""
        return {"package": self.package, "frames": self.frames}

    def __str__(self) -> str:
        return f"{self.package} ({self.frames} frame{'s' if self.frames != 1 else ''})"


class _Steps(threading.local):
    """The optimizer steps running on this thread: each step's wrapper frame (alive while the
    step runs, so `is` cannot confuse it with another) and the stack captured above it."""

    frames: tuple = ()
    above: tuple = ()


_STEPS = _Steps()


def step_started(wrapper) -> None:
    """Called from an optimizer step's wrapper frame (a global step pre-hook): captures the stack
    above it once for all the step's writes, which would otherwise each walk every frame up to
    the program's start."""
    steps = _STEPS
    if steps.frames and steps.frames[-1] is wrapper:  # another recorder's hook came first
        return
    above = capture_from(wrapper.f_back)
    keep = []
    if steps.frames:  # a step that raised never reached its post-hook: it is not on the stack any more
        live = {id(f) for f in _frames(wrapper)}
        keep = [i for i, f in enumerate(steps.frames) if id(f) in live]
    steps.frames = (*(steps.frames[i] for i in keep), wrapper)
    steps.above = (*(steps.above[i] for i in keep), above)


def step_ended(wrapper) -> None:
    """Called from the step's wrapper frame (a global step post-hook) as the step returns."""
    steps = _STEPS
    if steps.frames and steps.frames[-1] is wrapper:
        steps.frames, steps.above = steps.frames[:-1], steps.above[:-1]


def stepping() -> bool:
    """Whether an optimizer step is running on this thread (its pre-hook ran, its post-hook not yet)."""
    return bool(_STEPS.frames)


def frame(skip: int):
    """The frame `skip` levels above the caller's (0: the caller's), or None when the stack is not
    that deep: a write torch makes on a thread of its own (c10d's, under DistributedDataParallel)
    runs the write kernel with no Python frame below it."""
    try:
        return sys._getframe(skip + 1)
    except ValueError:
        return None


def in_steps_own_code(skip: int) -> bool:
    """Whether the frame `skip` levels up runs an optimizer step's own code: an optimizer step is
    running on this thread and only torch's frames (and the recorder's) lie between that frame
    and the step's: not a closure's line, nor another package's optimizer."""
    steps = _STEPS.frames
    if not steps:
        return False
    step, f = steps[-1], frame(skip)
    while f is not None:
        if f is step:
            return True
        filename = f.f_code.co_filename
        if owner(filename) != "torch" and not filename.startswith(_EXPLAIN):
            return False
        f = f.f_back
    return False


def _frames(f):
    while f is not None:
        yield f
        f = f.f_back


def capture(skip: int = 1) -> tuple:
    """The caller's stack, innermost first, as (code object, instruction offset) pairs, up to the
    program's start (see line_of)."""
    return capture_from(frame(skip))


def capture_from(f) -> tuple:
    """The stack from frame f outward, as capture: inside an optimizer step, the frames above
    the step's wrapper are those its pre-hook captured (they wait for the step to return, at the
    same instructions)."""
    steps = _STEPS.frames
    step = steps[-1] if steps else None
    out = []
    while f is not None and len(out) < MAX_DEPTH:
        code = f.f_code
        if id(code) in _BOUNDARIES:
            break
        out.append((code, f.f_lasti))
        if f is step:
            out.extend(_STEPS.above[-1][:MAX_DEPTH - len(out)])
            break
        f = f.f_back
    return tuple(out)


def _prefix(path: str) -> str:
    return os.path.realpath(path) + os.sep


_PATHS = sysconfig.get_paths()
_TORCH = _prefix(os.path.dirname(torch.__file__))
_FITLAB = _prefix(os.path.dirname(os.path.dirname(__file__)))
_EXPLAIN = os.path.dirname(os.path.abspath(__file__)) + os.sep
_SITE = tuple({_prefix(p) for p in (_PATHS["purelib"], _PATHS["platlib"])}
              | {_prefix(p) for p in sys.path if p and os.path.basename(p) in ("site-packages", "dist-packages")})
_STDLIB = tuple({_prefix(_PATHS["stdlib"]), _prefix(_PATHS["platstdlib"])})
_owner_cache: dict = {}


def owner(filename: str) -> str | None:
    """None for the user's file, else the package it belongs to ("torch", "python", "fitlab",
    or an installed package's top-level name, e.g. "pytorch_lightning")."""
    known = _owner_cache.get(filename, False)
    if known is not False:
        return known
    if filename.startswith("<frozen"):
        known = "python"
    elif filename.startswith("<"):  # <stdin>, <string>, a notebook cell
        known = None
    else:
        path = os.path.realpath(filename)
        known = None
        if path.startswith(_TORCH):
            known = "torch"
        elif path.startswith(_FITLAB):
            known = "fitlab"
        else:
            # site-packages first: it usually sits inside the standard library's folder.
            for site in _SITE:
                if path.startswith(site):
                    known = path[len(site):].split(os.sep)[0].removesuffix(".py")
                    break
            else:
                if path.startswith(_STDLIB):
                    known = "python"
    _owner_cache[filename] = known
    return known


def is_user_file(filename: str) -> bool:
    """Whether a file is the user's own code (see owner)."""
    return owner(filename) is None


def line_of(code, lasti: int) -> int | None:
    """The source line of the instruction at offset `lasti` in `code`."""
    for start, end, line in code.co_lines():
        if start <= lasti < end:
            return line
    return None


def _frame(code, line: int) -> Frame:
    return Frame(code.co_filename, line, code.co_name, linecache.getline(code.co_filename, line).strip())


def user_frames(stack: tuple) -> tuple:
    """The user's frames of a captured stack, outermost first."""
    out = []
    for code, lasti in reversed(stack):
        if is_user_file(code.co_filename):
            line = line_of(code, lasti)
            if line is not None:
                out.append(_frame(code, line))
    return tuple(out)


# Packages whose frames below the user's line say nothing the user can act on.
_QUIET = frozenset({"torch", "python", "fitlab"})


def via(stack: tuple) -> tuple:
    """The installed packages' frames between the innermost user frame and the op, outermost
    first, one Via per run of frames of one package (torch and the standard library left out)."""
    inner = []
    for code, _ in stack:
        pkg = owner(code.co_filename)
        if pkg is None:
            break
        inner.append(pkg)
    out: list = []
    for pkg in reversed(inner):
        if pkg in _QUIET:
            continue
        if out and out[-1][0] == pkg:
            out[-1][1] += 1
        else:
            out.append([pkg, 1])
    return tuple(Via(p, n) for p, n in out)


OVERRIDES = os.path.join(os.path.dirname(torch.__file__), "overrides.py")
_DYNAMO_WRAPPER = os.path.join(os.path.dirname(torch.__file__), "_dynamo", "eval_frame.py")


def inserted(filename: str, callee: str | None) -> bool:
    """Whether a frame (its file; callee: the file of the frame it called, or None) is one the
    recorder put on the stack: fitlab's (its function mode, its write kernels), torch's dispatch
    into the mode (overrides.py), the torch function whose call was handed to the mode, or
    Dynamo's wrapper that keeps the mode out of its traces (compat.dynamo_opaque)."""
    if filename == OVERRIDES or owner(filename) == "fitlab" and filename.startswith(_EXPLAIN):
        return True
    if filename == _DYNAMO_WRAPPER and callee is not None and callee.startswith(_EXPLAIN):
        return True
    return callee == OVERRIDES and owner(filename) == "torch"


# An entry of traceback.format_stack(), as anomaly mode keeps it for each node.
_ENTRY = re.compile(r'  File "(?P<file>[^"]*)", line \d+, in (?P<name>.*)')


def as_python_trace(entries: list) -> list:
    """Anomaly mode's trace of a node's forward call (format_stack's entries, which torch keeps in
    grad_fn.metadata["traceback_"] and prints when that node's backward fails) as under python:
    without the runner's frames above the program and the recorder's inside it."""
    parsed = [_ENTRY.match(e) if isinstance(e, str) else None for e in entries]
    files = [m["file"] if m else None for m in parsed]
    start = 0
    for i, m in enumerate(parsed):
        if m and any(c.co_filename == m["file"] and c.co_name == m["name"] for c in _BOUNDARIES.values()):
            start = i + 1
    return [e for i, e in enumerate(entries) if i >= start and not (
        files[i] is not None and inserted(files[i], files[i + 1] if i + 1 < len(files) else None))]


def without_inserted(tb):
    """A traceback (types.TracebackType chain) without the frames the recorder inserted."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    keep = []
    for i, t in enumerate(entries):
        callee = None if i + 1 == len(entries) else entries[i + 1].tb_frame.f_code.co_filename
        if not inserted(t.tb_frame.f_code.co_filename, callee):
            keep.append(t)
    out = None
    for t in reversed(keep):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def runs_torch_file(stack: tuple, relative: str) -> bool:
    """Whether a captured stack runs torch code under `relative` (e.g. "optim/", "nn/init.py")."""
    prefix = os.path.join(os.path.dirname(torch.__file__), relative)
    return any(code.co_filename.startswith(prefix) for code, _ in stack)
