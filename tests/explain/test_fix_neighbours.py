"""`--fix` for autograd's neighbouring errors: the cause's codemod applied to a copy, the copy rerun
to the line that failed and a backward past it, and a verdict earned by the rerun. No reference
exists for these (the original dies at that line whatever it keeps), so the best verdict is RUNS,
with the sentence why; never PROVED."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys

import pytest

from fitlab.explain import fix
from fitlab.explain.causes import CAUSES, REFERENCE
from fitlab.explain.codemods import Codemod, Site, Tree, parse_statements
from fitlab.explain.codemods.lines import OutOfPlace

from .test_explain import SCRIPTS, marked
from .test_fix import ENV, cli

pytestmark = pytest.mark.slow  # each test reruns a script; most run the CLI or python as a process

# Each neighbour fixture whose cause has a codemod: its cause, the mark of the line the verdict
# names (the write, or the line that built a freed graph), and a line of the edit's diff.
EDITED = {
    "leaf_sgd_update.py": ("leaf_update", "written-here", "+        with torch.no_grad():"),
    "leaf_weight_slice.py": ("leaf_view_write", "written-here", "+with torch.no_grad():"),
    "leaf_embeds_accumulate.py": ("leaf_accumulate", "written-here",
                                  "+inputs_embeds = inputs_embeds + (image_embeds.mean() * 0.)  # written-here"),
    "view_custom_function.py": ("function_view_write", "written-here", "+x = Alias.apply(z).clone()  # made-here"),
    "freed_hidden_carried.py": ("freed_carried_state", "built-here",
                                "+    h_state = None if h_state is None else h_state.detach()"),
    "freed_labels_once.py": ("freed_computed_once", "built-here",
                             "+Y = (torch.mm(X, true_W) + true_b).detach()  # built-here"),
}
# What the verdict says of a REFERENCE cause, for which the original computed no gradients to compare.
NO_REFERENCE = "so it never computed the gradients past it"


@pytest.mark.parametrize("script", sorted(EDITED))
def test_cli_fix_of_a_neighbouring_error_prints_the_diff_and_runs_with_why_no_reference_applies(script, tmp_path):
    cause, mark, added = EDITED[script]
    copy = tmp_path / script
    shutil.copy(SCRIPTS / script, copy)
    before = copy.read_bytes()
    proc = cli("--fix", copy, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("Traceback (most recent call last)")
    assert f"1. {cause} written at {script}:{marked(script, mark)}: RUNS: the error is gone" in proc.stderr
    assert f"--- a/{script}\n+++ b/{script}\n" in proc.stderr and f"\n{added}\n" in proc.stderr
    why = NO_REFERENCE if CAUSES[cause].proof == REFERENCE else CAUSES[cause].changes
    assert "no reference applies: " in proc.stderr and why in proc.stderr and "PROVED" not in proc.stderr
    assert copy.read_bytes() == before and not list(tmp_path.glob("*.orig*"))


@pytest.mark.parametrize("script", sorted(EDITED))
def test_cli_fix_write_on_a_neighbouring_error_leaves_a_file_python_runs(script, tmp_path):
    copy = tmp_path / script
    shutil.copy(SCRIPTS / script, copy)
    proc = cli("--fix", "--write", copy, cwd=tmp_path)
    assert proc.returncode == 1 and f"wrote {copy} (your file before: {copy}.orig)" in proc.stderr, proc.stderr
    assert (tmp_path / f"{script}.orig").read_bytes() == (SCRIPTS / script).read_bytes()
    ran = subprocess.run([sys.executable, str(copy)], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                         timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr


# Each neighbour fixture whose cause has no codemod (its fix needs a choice no edit can make alone).
UNEDITED = {"view_unbind_denormalize.py": "multi_view_write", "view_backward_hook.py": "hook_view_write",
            "freed_gan_no_detach.py": "freed_shared_forward", "freed_loss_accumulated.py": "freed_accumulated_loss"}


@pytest.mark.parametrize("script", sorted(UNEDITED))
def test_a_neighbouring_cause_without_a_codemod_ends_in_no_edit_with_its_reason(script):
    report = fix.run_fixed("script", str(SCRIPTS / script))
    assert report.neighbour is not None and report.proof is not None
    [culprit] = report.proof.culprits
    assert (report.proof.verdict, culprit.kind) == (fix.NO_EDIT, UNEDITED[script])
    assert culprit.said == "no mechanical edit applies to these lines; the advice above stands"
    assert report.proof.files == {}


class _PassAfter(Codemod):
    """An edit that applies and fixes nothing: `pass` after the written line."""

    name = "pass_after"

    def find(self, tree: Tree, site: Site) -> None:
        st, _ = tree.simple(site.written[-1])
        tree.mark(st, [st, *parse_statements("pass")])


def test_an_edit_that_leaves_the_neighbouring_error_did_not_help_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setitem(CAUSES, "leaf_update", dataclasses.replace(CAUSES["leaf_update"], codemod=_PassAfter()))
    copy = tmp_path / "leaf_sgd_update.py"
    shutil.copy(SCRIPTS / "leaf_sgd_update.py", copy)
    report = fix.run_fixed("script", str(copy))
    [culprit] = report.proof.culprits
    assert (report.proof.verdict, culprit.verdict) == (fix.DID_NOT_HELP, fix.DID_NOT_HELP)
    assert culprit.said == "the edited copy fails the same way: this edit is no fix"
    assert "+pass" in report.proof.diff.replace(" ", "")
    assert "The edit tried (not a fix):" in fix.format_proof(report.proof)


class _OutOfPlaceAndEarlier(Codemod):
    """The out-of-place edit, and a change of the loss of the backward before the failing line."""

    name = "out_of_place_and_earlier"

    def find(self, tree: Tree, site: Site) -> None:
        OutOfPlace().find(tree, site)
        st, _ = tree.simple(3)
        tree.mark(st, parse_statements("loss = (w * 3).sum()", like=st))


def test_a_reference_causes_edit_that_changes_the_gradients_before_the_failing_line_did_not_help(tmp_path,
                                                                                                    monkeypatch):
    monkeypatch.setitem(CAUSES, "leaf_accumulate",
                        dataclasses.replace(CAUSES["leaf_accumulate"], codemod=_OutOfPlaceAndEarlier()))
    script = tmp_path / "accumulate_after_backward.py"
    script.write_text("import torch\nw = torch.ones(3, requires_grad=True)\nloss = (w * 2).sum()\nloss.backward()\n"
                      "total = torch.zeros(3, requires_grad=True)\ntotal += w * 2\ntotal.sum().backward()\n")
    report = fix.run_fixed("script", str(script))
    assert report.neighbour.fix.kind == "leaf_accumulate"
    [culprit] = report.proof.culprits
    assert culprit.verdict == fix.DID_NOT_HELP and "+total = total + (w * 2)" in report.proof.diff
    assert "before the line that failed it computes gradients off by up to 1 than your program did" in culprit.said


def test_two_hand_written_updates_are_edited_one_after_the_other_and_run_together(tmp_path):
    script = tmp_path / "two_updates.py"
    script.write_text("import torch\nw = torch.ones(3, requires_grad=True)\nb = torch.ones(3, requires_grad=True)\n"
                      "(w * b).sum().backward()\nw -= 0.1 * w.grad\nb -= 0.1 * b.grad\nprint(w, b)\n")
    report = fix.run_fixed("script", str(script))
    proof = report.proof
    # The second write's line is that of the copy as edited so far (the first edit added a line), as
    # for the in-place error's culprits.
    assert [(c.kind, c.written_at, c.verdict) for c in proof.culprits] == [
        ("leaf_update", "two_updates.py:5", fix.NEXT_WRITE), ("leaf_update", "two_updates.py:7", fix.RUNS)]
    assert proof.culprits[0].said == "this failure is gone; another write now fails (below)"
    assert proof.diff.count("+with torch.no_grad():") == 2
    ran = subprocess.run([sys.executable, "-c", proof.files[str(script)]], capture_output=True, text=True,
                         timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr
