"""An error a worker process raised and handed back: Python's traceback as python prints it, then
the worker's own failing line (from the traceback it sent home) and the function to run in the main
process, where its writes are recorded; a worker's error that is not autograd's stays another error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fitlab.explain.decode import own_line

from .test_cli import CLI, OURS
from .test_explain import marked

pytestmark = pytest.mark.slow  # each test starts worker processes

SCRIPT = "cli/worker_error.py"
LAUNCHERS = {"fork": "multiprocessing.Pool", "spawn": "multiprocessing.Pool",
             "concurrent.futures": "concurrent.futures.ProcessPoolExecutor",
             "torch.multiprocessing": "torch.multiprocessing.spawn"}


def both(tmp_path, forked_explain, forked_python, *args):
    ours = forked_explain("--report", str(tmp_path / "r.json"), "worker_error.py", *args, cwd=CLI)
    alone = forked_python("worker_error.py", *args, cwd=CLI)
    # Python's output, then the report after its traceback.
    assert ours.stdout == alone.stdout == ""
    assert ours.stderr.startswith(alone.stderr.rstrip("\n")) and OURS not in ours.stderr
    return ours, alone, json.loads((tmp_path / "r.json").read_text())


@pytest.mark.parametrize(("launcher", "kind"), [(launcher, "inplace") for launcher in LAUNCHERS]
                         + [("fork", "freed")])
def test_a_workers_autograd_error_names_its_line_and_the_function_to_run_here(
        tmp_path, forked_explain, forked_python, launcher, kind):
    ours, alone, report = both(tmp_path, forked_explain, forked_python, launcher, kind)
    assert alone.returncode == 1 and ours.returncode == 1
    assert report["status"] == ("inplace_error" if kind == "inplace" else "freed_graph")
    assert report["worker"] == {"launcher": LAUNCHERS[launcher], "function": "work"}
    (failed,) = report["failed_at"]
    assert (failed["line"], failed["function"]) == (marked(SCRIPT, "failed-here"), "work")
    assert failed["code"] == "y.sum().backward()  # failed-here"
    if kind == "inplace":  # torch's message, read: the worker's exp output, written once
        assert report["tensor"]["shape"] == [4] and report["tensor"]["saved_version"] == 0
        assert report["saved_at"] == [] and report["writes"] == []  # not recorded, not guessed
    text = ours.stderr[len(alone.stderr.rstrip("\n")):]
    assert f"worker_error.py:{failed['line']}" in text and f"that {LAUNCHERS[launcher]} started" in text
    assert "call `work` directly in the main process" in text


def test_a_workers_other_error_stays_another_error(tmp_path, forked_explain, forked_python):
    ours, alone, report = both(tmp_path, forked_explain, forked_python, "fork", "other")
    assert alone.returncode == 1 and ours.returncode == 2
    assert report["status"] == "other_error" and report["worker"] is None
    assert ours.stderr.strip() == alone.stderr.strip()


@pytest.mark.parametrize("launcher", ["fork", "torch.multiprocessing"])
def test_a_pasted_workers_traceback_names_the_workers_line_not_the_pools_call(forked_python, launcher):
    # A pool prints the worker's traceback first, then the caller's; spawn the caller's, then the worker's.
    text = forked_python("worker_error.py", launcher, "inplace", cwd=CLI).stderr
    own = own_line(text)
    assert (Path(own.file).name, own.line, own.function) == ("worker_error.py", marked(SCRIPT, "failed-here"), "work")
    # Without torch's message in it, the innermost frame of the whole text: the pool's caller's.
    unread = own_line(text.replace("modified by an inplace operation", "changed"))
    assert unread.function == ("<module>" if launcher == "fork" else "work")
