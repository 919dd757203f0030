"""The failure replayed under torch's anomaly mode, and the forward traceback
torch attaches to the node whose backward failed.

Anomaly mode records a traceback for each node while the forward pass builds
it, so it must be on before the teacher's forward pass: turned on only around
the training line, it has nothing to show for the labels' graph.
"""

from __future__ import annotations

import re
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from fitlab.config import Config
from fitlab.failure.autopsy import autopsy

_DETECTED = re.compile(r"Error detected in (\w+)\. Traceback of forward call that caused the error:\n")
_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\n'
                    r"(?:    (?P<code>.*)\n)?", re.MULTILINE)
_HERE = Path(__file__).resolve()
_LIBRARY = _HERE.parent
# Frames of nn.Module's call machinery say nothing about this net.
_PLUMBING = ("module.py",)
_ONE_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class Frame:
    """One frame of a traceback: file (as torch wrote it), line, function, code."""

    file: str
    line: int
    function: str
    code: str

    @property
    def short_file(self) -> str:
        """The path from the package down: fitlab/data.py, torch/nn/modules/linear.py."""
        parts = Path(self.file).parts
        for root in ("fitlab", "torch"):
            if root in parts:
                return "/".join(parts[len(parts) - parts[::-1].index(root) - 1:])
        return Path(self.file).name


@dataclass(frozen=True)
class AnomalyTrace:
    """What anomaly mode said.

    node     the grad_fn whose backward failed, e.g. "AddmmBackward0"
    frames   the whole forward traceback torch attached to it
    error    torch's error message under anomaly mode
    """

    node: str
    frames: tuple[Frame, ...]
    error: str

    @property
    def trimmed(self) -> tuple[Frame, ...]:
        """The frames that help: fitlab's own, and torch's layer code that
        built the failing node, without nn.Module's call plumbing or whoever
        called fitlab (a page, a test runner, a worker process, this
        module's replay)."""
        replay = [i for i, f in enumerate(self.frames) if Path(f.file).resolve() == _HERE]
        after = replay[-1] + 1 if replay else 0
        start = next((i for i, f in enumerate(self.frames[after:], after) if _in_library(f)), 0)
        return tuple(f for f in self.frames[start:] if Path(f.file).name not in _PLUMBING)

    @property
    def label_frame(self) -> Frame | None:
        """The innermost frame in fitlab/data.py: the line that computed the labels."""
        return next((f for f in reversed(self.frames) if f.short_file == "fitlab/data.py"), None)


def _in_library(frame: Frame) -> bool:
    return Path(frame.file).resolve().is_relative_to(_LIBRARY)


def parse_anomaly_warning(text: str) -> tuple[str, tuple[Frame, ...]] | None:
    """(failing node, frames) from the text of torch's "Error detected in …"
    warning, or None if the text is not one."""
    found = _DETECTED.search(text)
    if found is None:
        return None
    frames = tuple(Frame(m["file"], int(m["line"]), m["function"], (m["code"] or "").strip())
                   for m in _FRAME.finditer(text, found.end()))
    return found.group(1), frames


def anomaly_trace(config: Config) -> AnomalyTrace | None:
    """Replay `config` with the labels attached under
    torch.autograd.detect_anomaly(), turned on before the teacher's forward
    pass, and return the forward traceback torch attached to the failing
    node; None if backward() did not fail."""
    # Anomaly mode is process-wide: one replay at a time, so one replay's exit
    # cannot switch it off under another; and no NaN check, so another
    # session's diverging run is not turned into an error meanwhile.
    with _ONE_AT_A_TIME, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly(check_nan=False):
            found = autopsy(config)
    if found.error is None:
        return None
    for warning in caught:
        parsed = parse_anomaly_warning(str(warning.message))
        if parsed is not None:
            return AnomalyTrace(parsed[0], parsed[1], found.error)
    return None
