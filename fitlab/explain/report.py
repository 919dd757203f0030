"""The report of one explained run: frozen dataclasses, their JSON, and the human text."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from fitlab.explain import frames
from fitlab.explain.frames import Frame

# Random fills only re-initialise; fill_/zero_ could just as well be `h[:, 0] = 0`.
_REINIT_OPS = frozenset({"aten::normal_", "aten::uniform_", "aten::bernoulli_", "aten::exponential_",
                         "aten::cauchy_", "aten::log_normal_", "aten::geometric_", "aten::random_"})
_ACTIVATION_OPS = frozenset({
    "aten::relu_", "aten::leaky_relu_", "aten::elu_", "aten::celu_", "aten::selu_", "aten::hardtanh_",
    "aten::threshold_", "aten::sigmoid_", "aten::tanh_", "aten::silu_", "aten::gelu_", "aten::mish_",
    "aten::hardsigmoid_", "aten::hardswish_", "aten::rrelu_with_noise_", "aten::relu6_"})

FIXES = {
    "detach_labels": (
        "The graph that saved this tensor was built before the weights were re-initialised in place. "
        "Detach what was computed with the old weights (e.g. `labels = net(X).detach()`, or compute it "
        "under `torch.no_grad()`), so backward never reaches that graph."),
    "step_after_backward": (
        "optimizer.step() wrote the weights in place after this graph saved them. Run every backward() "
        "that needs this graph before optimizer.step(), or redo the forward pass after the step."),
    "drop_inplace": (
        "An in-place activation overwrote a tensor the previous op saved for its gradient. Drop "
        "inplace=True (or call the out-of-place function, e.g. F.relu(x) instead of relu_)."),
    "clone_before_write": (
        "This line overwrote a tensor autograd saved for the backward pass. Write to a copy "
        "(`x = x.clone()` before the write) or use the out-of-place form (`x = x + 1` instead of "
        "`x += 1`, `torch.where`/`torch.cat` instead of `h[:, 0] = 0`)."),
}


@dataclass(frozen=True)
class TensorFacts:
    """The saved tensor that went stale (or, for a silent write, was overwritten)."""

    shape: tuple | None
    node: str | None
    saved_as: str | None
    version: int | None = None
    saved_version: int | None = None
    type: str | None = None

    def to_dict(self) -> dict:
        """The JSON object of the report's "tensor" field."""
        return {"shape": None if self.shape is None else list(self.shape), "version": self.version,
                "saved_version": self.saved_version, "node": self.node, "saved_as": self.saved_as,
                "type": self.type}


@dataclass(frozen=True)
class WriteFacts:
    """One in-place write: its aten op, the version it found, and the user's frames (outermost first)."""

    op: str
    version_before: int
    frames: tuple

    def to_dict(self) -> dict:
        """The JSON object of one entry of "writes"."""
        return {"op": self.op, "version_before": self.version_before,
                "frames": [f.to_dict() for f in self.frames]}


@dataclass(frozen=True)
class SilentWrite:
    """A write (through `.data` or another alias with its own version counter) to a saved tensor
    whose graph was then differentiated: no error, but backward used the new values."""

    op: str
    frames: tuple
    tensor: TensorFacts

    def to_dict(self) -> dict:
        """The JSON object of one entry of "silent_writes"."""
        t = self.tensor
        return {"op": self.op, "frames": [f.to_dict() for f in self.frames],
                "tensor": {"shape": list(t.shape), "node": t.node, "saved_as": t.saved_as}}


@dataclass(frozen=True)
class Fix:
    """The fix that fits the kind of the first write: a key and the CLI's sentence."""

    kind: str
    text: str

    def to_dict(self) -> dict:
        """The JSON object of the "fix" field."""
        return {"kind": self.kind, "text": self.text}


@dataclass(frozen=True)
class Report:
    """What happened to one script. status is "inplace_error", "finished" or "other_error".

    saved_at, failed_at and each write's frames are the user's frames, outermost first.
    writes are those that moved the saved tensor past its saved version, oldest first;
    writes_missing counts those the bounded history no longer held. exit_code is the
    script's own (SystemExit) or the CLI's; traceback is Python's text for other_error.
    """

    status: str
    error: str | None = None
    tensor: TensorFacts | None = None
    saved_at: tuple = ()
    writes: tuple = ()
    failed_at: tuple = ()
    silent_writes: tuple = ()
    fix: Fix | None = None
    exit_code: int = 0
    traceback: str | None = None
    writes_missing: int = 0
    notes: tuple = ()

    def to_dict(self) -> dict:
        """The report as plain JSON-ready data."""
        return {
            "status": self.status, "error": self.error,
            "tensor": None if self.tensor is None else self.tensor.to_dict(),
            "saved_at": [f.to_dict() for f in self.saved_at],
            "writes": [w.to_dict() for w in self.writes],
            "failed_at": [f.to_dict() for f in self.failed_at],
            "silent_writes": [s.to_dict() for s in self.silent_writes],
            "fix": None if self.fix is None else self.fix.to_dict(),
            "exit_code": self.exit_code, "traceback": self.traceback,
            "writes_missing": self.writes_missing, "notes": list(self.notes),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)


def choose_fix(op: str, stack: tuple) -> Fix:
    """The fix for the write that broke the saved tensor, judged by its op and who called it."""
    if frames.runs_torch_file(stack, "optim" + os.sep):
        kind = "step_after_backward"
    elif op in _REINIT_OPS or frames.runs_torch_file(stack, os.path.join("nn", "init.py")):
        kind = "detach_labels"
    elif op in _ACTIVATION_OPS or frames.runs_torch_file(stack, os.path.join("nn", "modules", "activation.py")):
        kind = "drop_inplace"
    else:
        kind = "clone_before_write"
    return Fix(kind, FIXES[kind])


def _where(frame: Frame) -> str:
    return f"{os.path.basename(frame.file)}:{frame.line}"


def _lines(label: str, chain: tuple, suffix: str = "", callers: int = 3) -> list:
    """A frame chain, innermost first, as `label file:line  code` plus a few callers."""
    if not chain:
        return [f"  {label:<10} (no frame of yours){suffix}"]
    inner = list(reversed(chain))
    out = [f"  {label:<10} {_where(inner[0]):<13}  {inner[0].code}{suffix}"]
    out += [f"  {'':<10} called from {_where(f)}  {f.code}" for f in inner[1:1 + callers]]
    return out


def format_report(report: Report) -> str:
    """The short human report the CLI prints."""
    out = []
    if report.status == "inplace_error":
        t = report.tensor
        if t is not None and t.node is not None:
            shape = list(t.shape) if t.shape is not None else "?"
            out.append(f"[{t.type} {shape}] saved by {t.node} (as {t.saved_as}) at version {t.saved_version}")
            out += _lines("saved at", report.saved_at)
            for i, w in enumerate(report.writes):
                label = "written at" if i == 0 else "then at"
                out += _lines(label, w.frames, f"   ({w.op}, version {w.version_before} -> {w.version_before + 1})",
                              callers=3 if i == 0 else 1)
            if report.writes_missing > 0:
                out.append(f"  ({report.writes_missing} earlier write(s) no longer recorded)")
        else:
            out.append(report.error or "")
            out.append("  (could not find the stale tensor in the graph)")
        out += _lines("failed at", report.failed_at, callers=0)
        if report.fix is not None:
            out.append(f"Fix: {report.fix.text}")
    elif report.status == "other_error" and report.traceback:
        out.append(report.traceback.rstrip("\n"))
    if report.silent_writes:
        out.append("Silent writes (no error, but backward used the overwritten values):")
        for s in report.silent_writes:
            where = f"   ({s.op} on {list(s.tensor.shape)} saved by {s.tensor.node} as {s.tensor.saved_as})"
            out += _lines("written at", s.frames, where, callers=1)
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out)
