"""The blog's script run through fitlab.explain, and once more under torch's
anomaly mode: which of its lines saved the stale tensor, which wrote it, and
where backward() failed.

Running a script as `__main__` changes sys.argv, sys.modules and sys.path;
anomaly mode, `warnings.catch_warnings` and the redirected stdout act on the
whole process. So `explained_blog` belongs in a process of its own (a
worker), never in a server that serves other sessions.
"""

from __future__ import annotations

import contextlib
import gc
import io
import linecache
import os
import runpy
import tempfile
import warnings
from dataclasses import dataclass, replace

import torch

from fitlab.config import Config
from fitlab.explain import Report, run_script
from fitlab.failure.anomaly import parse_anomaly_warning
from fitlab.failure.blog_script import blog_script

SCRIPT_NAME = "blog.py"
# With the labels detached the script trains: the page runs its first epoch only.
DETACHED_EPOCHS = 1
# What the script prints (the teacher's parameters) is kept up to this length.
MAX_PRINTED = 20_000
ROLES = ("saved", "written", "failed")


@dataclass(frozen=True)
class Mark:
    """A line of the script that the report points at.

    role    "saved" (the forward call that saved the tensor), "written" (the
            in-place write that made it stale) or "failed" (the backward call)
    caller  False for the line itself, True for a line that called it (e.g.
            `net.apply(init_weight)` for the write inside init_weight)
    code    the line's code, as the report quotes it
    """

    line: int
    role: str
    caller: bool
    code: str


@dataclass(frozen=True)
class ExplainedBlog:
    """The blog's script for a Config, and what happened when it ran.

    config          the settings it ran with (epochs cut to DETACHED_EPOCHS
                    when the labels are detached)
    script          its text, as run (the file was SCRIPT_NAME)
    report          fitlab.explain's Report of the run
    marks           the script lines the report points at, in ROLES order
    printed         what the script printed, cut to MAX_PRINTED characters
    anomaly_node    the node anomaly mode said failed (e.g. "AddmmBackward0"),
                    or None if backward() did not fail under it
    anomaly_frames  the script's frames of the forward traceback anomaly mode
                    attached to that node, outermost first
    """

    config: Config
    script: str
    report: Report
    marks: tuple[Mark, ...]
    printed: str
    anomaly_node: str | None
    anomaly_frames: tuple


def _in_script(report: Report, path: str) -> Report:
    """The report with only the script's own frames (the worker's frames
    that called run_script are not the script's), without Python's traceback
    of the error, which the CLI prints before the report: the page shows
    the script itself, its lines marked."""
    target = os.path.realpath(path)

    def ours(chain: tuple) -> tuple:
        return tuple(f for f in chain if os.path.realpath(f.file) == target)

    return replace(report, traceback=None if report.status == "inplace_error" else report.traceback,
                   saved_at=ours(report.saved_at), failed_at=ours(report.failed_at),
                   writes=tuple(replace(w, frames=ours(w.frames)) for w in report.writes),
                   silent_writes=tuple(replace(s, frames=ours(s.frames)) for s in report.silent_writes))


def script_marks(report: Report, path: str) -> tuple[Mark, ...]:
    """The lines of the script at `path` in the report's saved-at, first
    write's and failed-at frames."""
    first_write = report.writes[0].frames if report.writes else ()
    chains = zip(ROLES, (report.saved_at, first_write, report.failed_at))
    target = os.path.realpath(path)
    marks = []
    for role, chain in chains:
        ours = [f for f in chain if os.path.realpath(f.file) == target]
        marks += [Mark(f.line, role, i < len(ours) - 1, f.code) for i, f in enumerate(ours)]
    return tuple(marks)


def _under_anomaly_mode(path: str) -> tuple[str | None, tuple]:
    """Run the script as `__main__` under anomaly mode, on from its first
    line; the failing node and the script's frames of its forward traceback."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.autograd.detect_anomaly(check_nan=False):
                try:
                    runpy.run_path(path, run_name="__main__")
                except RuntimeError:
                    pass  # the error itself is the plain run's; here only the warning counts
    finally:
        _release_parent_links()
    target = os.path.realpath(path)
    for warning in caught:
        parsed = parse_anomaly_warning(str(warning.message))
        if parsed is not None:
            node, frames = parsed
            return node, tuple(f for f in frames if os.path.realpath(f.file) == target)
    return None, ()


def _release_parent_links() -> None:
    """Break the cycles anomaly mode leaves behind when backward() fails.

    Under anomaly mode, a node made during backward() keeps the node running
    then in its metadata (`parent_`). The failing backward() makes one: its
    message names the saved `weight.t()`'s grad_fn, regenerated as
    AsStridedBackward0 after the in-place write, whose parent is the
    AddmmBackward0 that saved the view. That node keeps the view, the view
    its grad_fn, the grad_fn its parent: a cycle through C++ that Python's
    garbage collector cannot see, so every replay left its net, inputs and
    graph alive (1.3–1.8 MiB a call at width 256, tests/lib/serving/test_workers.py).
    Anomaly mode reads the link only to print a failure in that node, which
    has been printed; without it the cycle is freed."""
    for obj in gc.get_objects():
        if type(obj) is dict and isinstance(obj.get("parent_"), torch.autograd.graph.Node):
            del obj["parent_"]


def explained_blog(config: Config) -> ExplainedBlog:
    """Write the blog's script for `config` to a temporary folder, run it
    through fitlab.explain.run_script and then under anomaly mode, and say
    what happened. Changes process-wide state while it runs: call it in a
    worker process."""
    runs = replace(config, epochs=min(config.epochs, DETACHED_EPOCHS)) if config.detach else config
    script = blog_script(runs)
    with tempfile.TemporaryDirectory(prefix="fitlab-blog-") as folder:
        path = os.path.join(folder, SCRIPT_NAME)
        with open(path, "w", encoding="utf-8") as f:
            f.write(script)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            report = _in_script(run_script(path), path)
        with contextlib.redirect_stdout(io.StringIO()):
            node, frames = _under_anomaly_mode(path)
        marks = script_marks(report, path)
    # The tracebacks that quoted the script cached its lines under its
    # temporary path, one more entry every call: they go with the file.
    linecache.checkcache(path)
    return ExplainedBlog(runs, script, report, marks, printed.getvalue()[:MAX_PRINTED], node, frames)
