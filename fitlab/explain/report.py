"""The report of one explained run: frozen dataclasses, their JSON, and the human text."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from fitlab.explain.advice import Fix
from fitlab.explain.stack import Frame


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
    """One in-place write: its aten op, the version it found, the user's frames (outermost first)
    and the installed packages' frames it ran through below the innermost of them (stack.Via)."""

    op: str
    version_before: int
    frames: tuple
    via: tuple = ()

    def to_dict(self) -> dict:
        """The JSON object of one entry of "writes"."""
        return {"op": self.op, "version_before": self.version_before,
                "frames": [f.to_dict() for f in self.frames], "via": [v.to_dict() for v in self.via]}


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
class ChangedContents:
    """`--check-contents`: a saved tensor whose contents changed between its save and a backward
    through it without a version bump; writes: the recorded writes since that bump none, if any
    (none for a write outside torch's ops: numpy through `torch.from_numpy`, ctypes, another process)."""

    tensor: TensorFacts
    saved_at: tuple = ()
    writes: tuple = ()

    def to_dict(self) -> dict:
        """The JSON object of one entry of "changed_contents"."""
        t = self.tensor
        return {"tensor": {"shape": list(t.shape), "node": t.node, "saved_as": t.saved_as},
                "saved_at": [f.to_dict() for f in self.saved_at], "writes": [w.to_dict() for w in self.writes]}


@dataclass(frozen=True)
class StaleTensor:
    """Another saved tensor of the failing graph already written since its save: backward would
    fail on it next (a script with two culprits). Fields as the Report's own."""

    tensor: TensorFacts
    saved_at: tuple = ()
    writes: tuple = ()
    fix: Fix | None = None
    saved_via: tuple = ()
    writes_missing: int = 0

    def to_dict(self) -> dict:
        """The JSON object of one entry of "also"."""
        return {"tensor": self.tensor.to_dict(), "saved_at": [f.to_dict() for f in self.saved_at],
                "writes": [w.to_dict() for w in self.writes],
                "fix": None if self.fix is None else self.fix.to_dict(),
                "saved_via": [v.to_dict() for v in self.saved_via], "writes_missing": self.writes_missing}


@dataclass(frozen=True)
class Report:
    """What happened to one script. status is "inplace_error", "finished", "other_error", or the kind
    of a neighbouring error the tool explains ("freed_graph", "leaf_inplace"...: neighbours.messages).

    saved_at, failed_at and each write's frames are the user's frames, outermost first;
    saved_via, failed_via (and each write's via) the installed packages' frames below the
    innermost of them. writes are those that moved the saved tensor past its saved version,
    oldest first; writes_missing counts those the bounded history no longer held. exit_code
    is the script's own (SystemExit) or the CLI's (1 this error, 2 another, 130 interrupted);
    traceback is the text Python prints for the exception the script died of. unchecked
    counts saved tensors a saved-tensor hook (checkpoint) kept out of the silent-write check.
    also: the graph's other stale saved tensors (StaleTensor), which backward would fail on next.
    proof is what `--fix` found (fix.Proof), None without it. changed_contents: what
    `--check-contents` found (ChangedContents), empty without it. worker: when the error was
    raised in another process and handed back (remote.WorkerError), that process's launcher,
    failing line (failed_at) and function; its writes were not recorded.
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
    saved_via: tuple = ()
    failed_via: tuple = ()
    unchecked: int = 0
    also: tuple = ()
    proof: object = None
    changed_contents: tuple = ()
    # A neighbouring autograd error's lines and fix (neighbours.facts.Neighbour; status its kind).
    neighbour: object = None
    worker: object = None

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
            "saved_via": [v.to_dict() for v in self.saved_via],
            "failed_via": [v.to_dict() for v in self.failed_via], "unchecked": self.unchecked,
            "also": [a.to_dict() for a in self.also],
            "proof": None if self.proof is None else self.proof.to_dict(),
            "changed_contents": [c.to_dict() for c in self.changed_contents],
            "neighbour": None if self.neighbour is None else self.neighbour.to_dict(),
            "worker": None if self.worker is None else {"launcher": self.worker.launcher,
                                                        "function": self.worker.function},
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)


def _where(frame: Frame) -> str:
    if frame.file.startswith("Cell In["):  # a notebook cell, as IPython names it
        return f"{frame.file}, line {frame.line}"
    return f"{os.path.basename(frame.file)}:{frame.line}"


def _lines(label: str, chain: tuple, suffix: str = "", callers: int = 3, via: tuple = ()) -> list:
    """A frame chain, innermost first, as `label file:line  code`, the library frames below it
    collapsed ("via pytorch_lightning (3 frames)"), then a few callers."""
    if not chain:
        out = [f"  {label:<10} (no frame of yours){suffix}"]
    else:
        inner = list(reversed(chain))
        out = [f"  {label:<10} {_where(inner[0]):<13}  {inner[0].code}{suffix}"]
    if via:
        out.append(f"  {'':<10} via {', '.join(map(str, via))}")
    if chain:
        out += [f"  {'':<10} called from {_where(f)}  {f.code}" for f in inner[1:1 + callers]]
    return out


def _fix_lines(fix: Fix) -> list:
    out = [f"Fix: {fix.text}"]
    for e in fix.edits:
        out.append(f"  {_where(e)} becomes:")
        pad = len(e.old) - len(e.old.lstrip())
        out += [f"      {n[pad:]}" for n in e.new]
    return out


def _stale_lines(s) -> list:
    """A stale tensor (a Report or a StaleTensor): what saved it, where, and each write since."""
    t = s.tensor
    shape = list(t.shape) if t.shape is not None else "?"
    out = [f"[{t.type} {shape}] saved by {t.node} (as {t.saved_as}) at version {t.saved_version}"]
    out += _lines("saved at", s.saved_at, via=s.saved_via)
    for i, w in enumerate(s.writes):
        label = "written at" if i == 0 else "then at"
        out += _lines(label, w.frames, f"   ({w.op}, version {w.version_before} -> {w.version_before + 1})",
                      callers=3 if i == 0 else 1, via=w.via)
    if s.writes_missing > 0 and s.writes:
        out.append(f"  ({s.writes_missing} earlier write(s) no longer recorded)")
    elif s.writes_missing > 0:  # evicted, or never recorded (an optimizer's write to its own state)
        out.append(f"  ({s.writes_missing} write(s) since the save not recorded)")
    return out


def _worker_lines(report: Report) -> list:
    """An error another process raised: where, and how to have its writes recorded."""
    w = report.worker
    run = f"`{w.function}`" if w.function else "the function it ran"
    return [f"(raised in a worker process that {w.launcher} started; fitlab.explain records only this one)",
            *_lines("failed at", report.failed_at, "   (in the worker)", callers=1),
            f"To have it recorded, call {run} directly in the main process (once, with one worker's "
            "arguments) and run the script under fitlab-explain again."]


def format_report(report: Report) -> str:
    """The human text the CLI prints: Python's traceback of the error, then where the stale
    tensor was saved, written and differentiated, and the fix."""
    out = []
    if report.traceback:
        out.append(report.traceback.rstrip("\n"))
    if report.worker is not None:
        out += ([""] if out else []) + _worker_lines(report)
    elif report.status == "inplace_error":
        if out:
            out.append("")  # after Python's traceback, as a paragraph of its own
        t = report.tensor
        if t is not None and t.node is not None:
            out += _stale_lines(report)
        else:
            out.append("(fitlab.explain could not find the stale tensor in the graph)")
        out += _lines("failed at", report.failed_at, callers=0, via=report.failed_via)
        if report.fix is not None:
            out += _fix_lines(report.fix)
        if report.also:
            out.append(f"Also stale in this graph ({len(report.also)} more; backward would fail on each next):")
            for a in report.also:
                out += _stale_lines(a)
                if a.fix is not None:
                    out += _fix_lines(a.fix)
        if report.unchecked:
            out.append(f"note: {report.unchecked} saved tensor(s) were packed by a saved-tensor hook "
                       "(e.g. torch.utils.checkpoint) and could not be checked for silent writes")
    if report.neighbour is not None:
        out += ([""] if out else []) + report.neighbour.lines()
    if report.silent_writes:
        out.append("Silent writes (no error, but backward used the overwritten values):")
        for s in report.silent_writes:
            where = f"   ({s.op} on {list(s.tensor.shape)} saved by {s.tensor.node} as {s.tensor.saved_as})"
            out += _lines("written at", s.frames, where, callers=1)
    if report.changed_contents:
        out.append("Contents changed without a version bump (--check-contents; backward used the new values):")
        for c in report.changed_contents:
            t = c.tensor
            where = f"   ({list(t.shape)} saved by {t.node} as {t.saved_as})"
            out += _lines("saved at", c.saved_at, where, callers=1)
            for w in c.writes:
                out += _lines("written at", w.frames, f"   ({w.op}, no version bump)", callers=1)
            if not c.writes:
                line = _where(c.saved_at[-1]) if c.saved_at else "its save"
                out.append(f"  {'':<10} the contents of the tensor saved at {line} changed between the save and "
                           "backward, and no op torch ran wrote them: a write through another alias of its memory "
                           "(numpy after torch.from_numpy, ctypes, an extension, another process); "
                           "the line is not known")
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out)
