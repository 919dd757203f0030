"""Record a block of code, not a script: a notebook cell, a function's body.

    import fitlab.explain
    with fitlab.explain.recording() as rec:
        loss.backward()            # or a whole training loop
    print(rec.report)              # None when nothing failed and nothing was silently written

The error still propagates (the block behaves as it would without the recorder); when the
block caught the in-place error itself, `rec.report` explains it all the same.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from dataclasses import dataclass, field

from fitlab.explain.recorder import Recorder
from fitlab.explain.report import Report, format_report
from fitlab.explain.runner import report_of


@dataclass
class Recording:
    """What `recording()` yields: the recorder while the block runs, the report after it."""

    recorder: Recorder = field(default_factory=Recorder)
    report: Report | None = None

    def __str__(self) -> str:
        return "" if self.report is None else format_report(self.report)


def _report(exc: BaseException | None, rec: Recorder) -> Report | None:
    report = recorded(exc, rec)
    return None if report is None else _named_as_ipython_names(report)


def recorded(exc: BaseException | None, rec: Recorder) -> Report | None:
    """The block's report with its frames named by their files, as the recorder saw them
    (what `--fix` edits), or None if nothing failed or was written silently."""
    if exc is None and rec.failure is not None:
        exc = rec.failure.exc  # the block caught the error it raised
    if exc is None:
        return report_of(None, rec) if rec.silent or rec.thread_errors else None
    return report_of(exc, rec)


def _named_as_ipython_names(report: Report) -> Report:
    """In IPython, a cell's lines as its tracebacks name them (`Cell In[3], line 8`)."""
    if "IPython" not in sys.modules:
        return report
    shell = sys.modules["IPython"].get_ipython()
    if shell is None or not hasattr(shell, "compile"):
        return report
    return named_for_ipython(report, cell_names(shell))


@contextlib.contextmanager
def recording(recorder: Recorder | None = None):
    """Record in-place writes while the block runs; yields a Recording whose `.report` is set
    when the block ends (the same Report as `run_script`'s, or None)."""
    __tracebackhide__ = True  # noqa: F841 - IPython hides the recorder's frames
    rec = Recording(recorder if recorder is not None else Recorder())
    try:
        with rec.recorder:
            yield rec
    except BaseException as exc:
        rec.report = _report(exc, rec.recorder)
        raise
    rec.report = _report(None, rec.recorder)


def cell_names(shell) -> dict:
    """Cell file name -> "Cell In[N]", from IPython's compiler (as its tracebacks name cells)."""
    names = getattr(shell.compile, "_filename_map", {}) or {}
    return {path: f"Cell In[{n}]" for path, n in names.items()}


def _renamed(chain: tuple, names: dict) -> tuple:
    return tuple(dataclasses.replace(f, file=names.get(f.file, f.file)) for f in chain)


def _named_fix(fix, names: dict):
    return None if fix is None else dataclasses.replace(fix, edits=tuple(
        dataclasses.replace(e, file=names.get(e.file, e.file)) for e in fix.edits))


def named_for_ipython(report, names: dict):
    """The report with each frame in a cell named "Cell In[N]"."""
    if not names:
        return report
    also = tuple(dataclasses.replace(
        a, saved_at=_renamed(a.saved_at, names), fix=_named_fix(a.fix, names),
        writes=tuple(dataclasses.replace(w, frames=_renamed(w.frames, names)) for w in a.writes))
        for a in report.also)
    return dataclasses.replace(
        report, saved_at=_renamed(report.saved_at, names), failed_at=_renamed(report.failed_at, names),
        writes=tuple(dataclasses.replace(w, frames=_renamed(w.frames, names)) for w in report.writes),
        silent_writes=tuple(dataclasses.replace(s, frames=_renamed(s.frames, names))
                            for s in report.silent_writes),
        fix=_named_fix(report.fix, names), also=also,
        neighbour=None if report.neighbour is None else report.neighbour.renamed(names))
