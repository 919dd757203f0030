"""Graphs made during backward (create_graph=True) and saved-tensor hooks (checkpointing)."""

from __future__ import annotations

import contextlib
import io

import pytest

from fitlab.explain import format_report, run_script

from .test_explain import SCRIPTS, assert_at


def run(script: str, *args: str):
    with contextlib.redirect_stdout(io.StringIO()):
        return run_script(str(SCRIPTS / script), list(args))


def test_nodes_made_by_a_create_graph_backward_belong_to_its_line():
    report = run("double_backward.py")
    assert report.status == "inplace_error" and report.tensor.node == "TanhBackwardBackward0"
    assert_at(report.saved_at[-1].to_dict(), "double_backward.py", "saved-here")
    assert_at(report.writes[0].frames[-1].to_dict(), "double_backward.py", "written-here")
    assert_at(report.failed_at[-1].to_dict(), "double_backward.py", "failed-here")
    assert report.writes_missing == 0 and "recorded)" not in format_report(report)


@pytest.mark.parametrize("args", [(), ("reentrant",)])
def test_correct_checkpointed_loop_prints_nothing_extra(args):
    report = run("checkpointed.py", *args)
    assert report.status == "finished" and report.silent_writes == () and report.notes == ()
    assert format_report(report) == ""


def test_a_write_under_a_saved_tensor_hook_is_a_silent_write():
    report = run("checkpoint_silent.py")
    [silent] = report.silent_writes
    assert_at(silent.frames[-1].to_dict(), "checkpoint_silent.py", "silent-here")


def test_tensors_out_of_reach_are_said_once_in_an_error_report():
    report = run("checkpoint_then_error.py")
    assert report.status == "inplace_error" and report.unchecked > 0
    assert_at(report.writes[0].frames[-1].to_dict(), "checkpoint_then_error.py", "written-here")
    assert format_report(report).count("could not be checked for silent writes") == 1
