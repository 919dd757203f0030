"""Cheap Python stacks: captured as (code, line) pairs, resolved to frames only for a report."""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
from dataclasses import dataclass

import torch

# Deep recursion in a user's model must not make every recorded op pay for it.
MAX_DEPTH = 64


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


def capture(skip: int = 1) -> tuple:
    """The caller's stack, innermost first, as (code object, line) pairs."""
    f = sys._getframe(skip)
    out = []
    while f is not None and len(out) < MAX_DEPTH:
        out.append((f.f_code, f.f_lineno))
        f = f.f_back
    return tuple(out)


def _prefixes(*paths: str) -> tuple:
    return tuple(os.path.realpath(p) + os.sep for p in paths)


_PATHS = sysconfig.get_paths()
_OURS = _prefixes(os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)))
_SITE = _prefixes(_PATHS["purelib"], _PATHS["platlib"])
_STDLIB = _prefixes(_PATHS["stdlib"], _PATHS["platstdlib"])
_user_cache: dict = {}


def is_user_file(filename: str) -> bool:
    """Whether a file is the user's: not torch, the standard library or fitlab.

    Other packages count as the user's; site-packages is tested before the standard
    library because it usually sits inside the standard library's folder."""
    known = _user_cache.get(filename)
    if known is None:
        if filename.startswith("<frozen"):
            known = False
        elif filename.startswith("<"):
            known = True
        else:
            path = os.path.realpath(filename)
            known = not path.startswith(_OURS) and (path.startswith(_SITE) or not path.startswith(_STDLIB))
        _user_cache[filename] = known
    return known


def user_frames(stack: tuple) -> tuple:
    """The user's frames of a captured stack, outermost first."""
    frames = []
    for code, line in reversed(stack):
        if line is None or not is_user_file(code.co_filename):
            continue
        frames.append(Frame(code.co_filename, line, code.co_name,
                            linecache.getline(code.co_filename, line).strip()))
    return tuple(frames)


def runs_torch_file(stack: tuple, relative: str) -> bool:
    """Whether a captured stack runs torch code under `relative` (e.g. "optim/", "nn/init.py")."""
    prefix = os.path.join(os.path.dirname(torch.__file__), relative)
    return any(code.co_filename.startswith(prefix) for code, _ in stack)
