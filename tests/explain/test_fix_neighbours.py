"""`--fix` for autograd's neighbouring errors: the cause's codemod applied to a copy, the copy rerun
to the line that failed and a backward past it, and a verdict earned by the rerun. No reference
exists for these (the original dies at that line whatever it keeps), so the best verdict is RUNS,
with the sentence why; never PROVED."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from fitlab.explain import fix
from fitlab.explain.causes import CAUSES, REFERENCE
from fitlab.explain.codemods import Codemod, Site, Tree, parse_statements
from fitlab.explain.codemods.flow import DetachValue
from fitlab.explain.codemods.lines import OutOfPlace

from .test_explain import SCRIPTS, marked

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
def test_cli_fix_of_a_neighbouring_error_prints_the_diff_and_runs_with_why_no_reference_applies(script, tmp_path,
                                                                                               forked_explain):
    cause, mark, added = EDITED[script]
    copy = tmp_path / script
    shutil.copy(SCRIPTS / script, copy)
    before = copy.read_bytes()
    proc = forked_explain("--fix", copy, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("Traceback (most recent call last)")
    label = "built at" if mark == "built-here" else "written at"
    assert f"1. {cause} {label} {script}:{marked(script, mark)}: RUNS: the error is gone" in proc.stderr
    assert f"--- a/{script}\n+++ b/{script}\n" in proc.stderr and f"\n{added}\n" in proc.stderr
    why = NO_REFERENCE if CAUSES[cause].proof == REFERENCE else CAUSES[cause].changes
    assert "no reference applies: " in proc.stderr and why in proc.stderr and "PROVED" not in proc.stderr
    assert copy.read_bytes() == before and not list(tmp_path.glob("*.orig*"))


@pytest.mark.parametrize("script", sorted(EDITED))
def test_cli_fix_write_on_a_neighbouring_error_leaves_a_file_python_runs(script, tmp_path, forked_explain,
                                                                         forked_python):
    copy = tmp_path / script
    shutil.copy(SCRIPTS / script, copy)
    proc = forked_explain("--fix", "--write", copy, cwd=tmp_path)
    assert proc.returncode == 1 and f"wrote {copy} (your file before: {copy}.orig)" in proc.stderr, proc.stderr
    assert (tmp_path / f"{script}.orig").read_bytes() == (SCRIPTS / script).read_bytes()
    ran = forked_python(copy, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr


# Each neighbour fixture whose cause has no codemod (its fix needs a choice no edit can make alone: `no_edit`).
UNEDITED = {"view_unbind_denormalize.py": "multi_view_write", "view_backward_hook.py": "hook_view_write",
            "freed_loss_accumulated.py": "freed_accumulated_loss"}


@pytest.mark.parametrize("script", sorted(UNEDITED))
def test_a_neighbouring_cause_without_a_codemod_ends_in_no_edit_with_its_reason(script):
    report = fix.run_fixed("script", str(SCRIPTS / script))
    assert report.neighbour is not None and report.proof is not None
    [culprit] = report.proof.culprits
    assert (report.proof.verdict, culprit.kind) == (fix.NO_EDIT, UNEDITED[script])
    # The cause's own one-line reason: for a loss accumulated across iterations, why no edit keeps your intent.
    assert culprit.said == f"no edit: {CAUSES[UNEDITED[script]].no_edit}; the advice above stands"
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


def test_two_hand_written_updates_are_edited_one_after_the_other_and_run_together(tmp_path, forked_python):
    script = tmp_path / "two_updates.py"
    script.write_text("import torch\nw = torch.ones(3, requires_grad=True)\nb = torch.ones(3, requires_grad=True)\n"
                      "(w * b).sum().backward()\nw -= 0.1 * w.grad\nb -= 0.1 * b.grad\nprint(w, b)\n")
    report = fix.run_fixed("script", str(script))
    proof = report.proof
    # The second write's line is that of the copy as edited so far (the first edit added a line), as
    # for the in-place error's culprits.
    assert [(c.kind, c.at, c.verdict) for c in proof.culprits] == [
        ("leaf_update", "two_updates.py:5", fix.NEXT_WRITE), ("leaf_update", "two_updates.py:7", fix.RUNS)]
    assert proof.culprits[0].said == "this failure is gone; another write now fails (below)"
    assert proof.diff.count("+with torch.no_grad():") == 2
    edited = tmp_path / "edited.py"
    edited.write_text(proof.files[str(script)])
    ran = forked_python(edited, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr


GAN = "freed_gan_no_detach.py"


def test_cli_fix_of_a_gan_detaches_the_fake_in_d_loss_only_and_proves_it_against_the_graph_kept(tmp_path,
                                                                                                forked_explain):
    copy = tmp_path / GAN
    shutil.copy(SCRIPTS / GAN, copy)
    proc = forked_explain("--fix", copy, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    # The line a freed graph's fix is for is labelled as the report labels it: where the graph was built.
    built = f"{GAN}:{marked(GAN, 'built-here')}"
    assert f"1. freed_shared_forward built at {built}: PROVED: the error is gone" in proc.stderr
    assert "every weight ends as there" in proc.stderr
    assert "\n+    errD = bce(D(real), ones) + bce(D(fake.detach()), zeros)\n" in proc.stderr
    # Not where the fake is made (G would never learn), and G's loss untouched.
    assert "+    fake = G(" not in proc.stderr and "+    errG" not in proc.stderr


def _verdict_with(codemod, monkeypatch, script: str = str(SCRIPTS / GAN)):
    monkeypatch.setitem(CAUSES, "freed_shared_forward",
                        dataclasses.replace(CAUSES["freed_shared_forward"], codemod=codemod))
    report = fix.run_fixed("script", script)
    [culprit] = report.proof.culprits
    return culprit


def test_a_detach_where_the_fake_is_made_starves_the_generator_and_did_not_help(monkeypatch):
    culprit = _verdict_with(DetachValue(), monkeypatch)   # `fake = G(...).detach()`: the error is gone too
    assert culprit.verdict == fix.DID_NOT_HELP, culprit.said
    assert "get no gradient at all: this edit cuts a gradient your program needs" in culprit.said


class _GBackwardFirst(Codemod):
    """G's loss and backward moved before D's step (the other "fix" people try)."""

    name = "g_backward_first"

    def find(self, tree: Tree, site: Site) -> None:
        step, g_loss, g_backward = (tree.simple(n)[0] for n in (21, 23, 24))
        tree.mark(step, [g_loss, g_backward, step])
        tree.mark(g_loss, [])
        tree.mark(g_backward, [])


def test_moving_g_backward_before_d_step_leaves_the_freed_graph_and_did_not_help(monkeypatch):
    culprit = _verdict_with(_GBackwardFirst(), monkeypatch)   # D's backward has freed G's graph already
    assert culprit.verdict == fix.DID_NOT_HELP
    assert culprit.said == "the edited copy fails the same way: this edit is no fix"


def test_a_gan_that_steps_g_on_d_loss_gradient_too_runs_and_says_what_the_detach_changes(tmp_path):
    # opt_G.zero_grad() before D's backward: with the graph kept, G's step would add D's loss's gradient.
    script = tmp_path / "gan_zero_first.py"
    script.write_text((SCRIPTS / GAN).read_text().replace("    opt_D.zero_grad()\n", "    opt_D.zero_grad()\n"
                                                          "    opt_G.zero_grad()\n").replace(
        "    opt_G.zero_grad()\n    errG", "    errG"))
    report = fix.run_fixed("script", str(script))
    [culprit] = report.proof.culprits
    assert culprit.verdict == fix.RUNS, culprit.said
    assert "ends with weights off by up to" in culprit.said and CAUSES["freed_shared_forward"].changes in culprit.said


def test_a_user_discriminator_class_and_a_d_loss_helper_get_the_detach_at_the_callers_line(tmp_path):
    script = tmp_path / "gan_classes.py"
    script.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Disc(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))\n\n"
        "    def forward(self, x):\n        return torch.sigmoid(self.net(x))\n\n\n"
        "def d_loss(D, real, fake):\n    return -(torch.log(D(real)) + torch.log(1 - D(fake))).mean()\n\n\n"
        "g = torch.Generator().manual_seed(0)\nG, D = nn.Linear(4, 6), Disc()\n"
        "opt_D, opt_G = torch.optim.SGD(D.parameters(), lr=0.1), torch.optim.SGD(G.parameters(), lr=0.1)\n"
        "real = torch.randn(8, 6, generator=g)\nfor step in range(2):\n"
        "    fake = G(torch.randn(8, 4, generator=g))\n    opt_D.zero_grad()\n    d_loss(D, real, fake).backward()\n"
        "    opt_D.step()\n    opt_G.zero_grad()\n    (-torch.log(D(fake)).mean()).backward()\n    opt_G.step()\n")
    report = fix.run_fixed("script", str(script))
    [culprit] = report.proof.culprits
    assert culprit.verdict == fix.PROVED, culprit.said
    assert "+    d_loss(D, real, fake.detach()).backward()" in report.proof.diff
