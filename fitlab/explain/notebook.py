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
    from fitlab.explain.ipython import _cell_names, named_for_ipython
    return named_for_ipython(report, _cell_names(shell))


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
