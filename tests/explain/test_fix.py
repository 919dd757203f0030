"""`--fix`: every fixture's edit applied to a copy, rerun and judged against torch.

A verdict here is computed, never declared: PROVED compares the edited copy's gradients, backward by
backward, with the original program rerun with every saved tensor kept by a clone; RUNS says a
cause changes what is computed, and why no reference applies; DID NOT HELP is an edited copy that
still dies or computes other gradients than the reference. The written files are then run as python
runs them (forked_python, tests/explain/conftest.py; --write refuses an edit that did not help)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from fitlab.explain import fix
from fitlab.explain.__main__ import main
from fitlab.explain.causes import CAUSES, REFERENCE
from fitlab.explain.codemods import lines

from .test_explain import SCRIPTS

pytestmark = pytest.mark.slow  # each test reruns scripts; most run the CLI or python as a process
ROOT = Path(__file__).resolve().parents[2]

# Each fixture that dies of the in-place error: the verdict of all its edits together, and its
# culprits' kinds, in the order they were met.
VERDICTS = {
    "exp_augassign.py": (fix.PROVED, ["augmented_assignment"]),
    "residual_add.py": (fix.PROVED, ["augmented_assignment"]),
    "method_exp.py": (fix.PROVED, ["augmented_assignment"]),
    "div_norm.py": (fix.PROVED, ["augmented_assignment"]),
    "double_backward.py": (fix.PROVED, ["augmented_assignment"]),
    "autograd_grad.py": (fix.PROVED, ["augmented_assignment"]),
    "loop_later_write.py": (fix.PROVED, ["augmented_assignment"]),
    "silent_then_error.py": (fix.PROVED, ["augmented_assignment"]),
    "checkpoint_then_error.py": (fix.PROVED, ["augmented_assignment"]),
    "tanh_index.py": (fix.PROVED, ["index_assignment"]),
    "rnn_fill.py": (fix.PROVED, ["index_assignment"]),
    "relu_inplace.py": (fix.PROVED, ["inplace_module"]),
    "dropout_inplace.py": (fix.PROVED, ["inplace_module"]),
    "functional_inplace.py": (fix.PROVED, ["inplace_function"]),
    "relu_underscore.py": (fix.PROVED, ["inplace_function"]),
    "stateful_buffer.py": (fix.PROVED, ["module_buffer"]),
    "embedding_max_norm.py": (fix.PROVED, ["embedding_max_norm"]),
    "refill_noise.py": (fix.PROVED, ["refilled_input"]),
    "view_write.py": (fix.PROVED, ["augmented_assignment"]),
    "view_add.py": (fix.PROVED, ["augmented_assignment"]),
    "view_div_norm.py": (fix.PROVED, ["augmented_assignment"]),
    "view_base_read.py": (fix.PROVED, ["clone_before_write"]),
    "custom_function.py": (fix.PROVED, ["augmented_assignment"]),
    "eigh_write.py": (fix.PROVED, ["augmented_assignment"]),
    "two_culprits.py": (fix.PROVED, ["augmented_assignment", "augmented_assignment"]),
    "unet_two_skips.py": (fix.PROVED, ["augmented_assignment", "augmented_assignment"]),
    "blog_reinit.py": (fix.RUNS, ["detach_labels"]),
    "gan_sgd.py": (fix.RUNS, ["fresh_forward_after_step"]),
    "gan_step.py": (fix.RUNS, ["fresh_forward_after_step"]),
    "retain_step.py": (fix.RUNS, ["fresh_forward_after_step"]),
    "clip_between.py": (fix.RUNS, ["fresh_forward_after_step"]),
    "lightning_gan.py": (fix.RUNS, ["fresh_forward_after_step"]),
    "gan_one_score.py": (fix.RUNS, ["fresh_forward_after_step"]),
    "hand_update.py": (fix.RUNS, ["fresh_forward_after_step"]),
    "dqn_target_sync.py": (fix.RUNS, ["target_network_sync"]),
    "gru_carry.py": (fix.RUNS, ["carried_state"]),
    "lstm_carry.py": (fix.RUNS, ["carried_state"]),
    "ppo_old_logp.py": (fix.RUNS, ["carried_state"]),
    # Real-world cases that ended in no edit though the advice named one.
    "view_arg_div.py": (fix.PROVED, ["clone_before_write", "clone_before_write"]),
    "conv_residual.py": (fix.PROVED, ["clone_before_write"]),
    "relu_dropout_inplace.py": (fix.PROVED, ["inplace_function"]),
    "helper_centre.py": (fix.PROVED, ["clone_before_write"]),
    "transformers_keyword.py": (fix.PROVED, ["clone_before_write", "clone_before_write"]),
    # `total = maps[0]; total += maps[1]`: rebinding total would leave maps[0] unwritten (RUNS with
    # gradients off the reference before): the copy is made where softmax saved it.
    "attention_alias.py": (fix.PROVED, ["clone_before_write"]),
    "retain_second_loss.py": (fix.RUNS, ["fresh_forward_after_step"]),
    # Rebinding the helper's own argument would leave the caller's tensor unhalved: the copy is made
    # where the tensor was saved instead, and every write stays.
    "helper_write.py": (fix.PROVED, ["clone_before_write"]),
    # A tensor held by a dict: no rebinding of the dict's item; the copy is made as it is stored.
    "container_write.py": (fix.PROVED, ["clone_before_write"]),
    # An index assignment into a saved tensor that is no view (torch names CopySlices): `h = h.clone()` first.
    "slice_assign_saved.py": (fix.PROVED, ["index_assignment"]),
    # A forward hook's in-place clamp of its module's output: returned out of place instead.
    "hook_clamp.py": (fix.PROVED, ["hook_output"]),
    # The same hook returning None itself: the clone on the saved line copies another tensor, and the
    # rerun fails the same way (once, not "gone" four times).
    "hook_returns.py": (fix.DID_NOT_HELP, ["clone_before_write"]),
    # Torch's own forward-mode formula wrote: no line of the user's to edit.
    "forward_ad.py": (fix.NO_EDIT, ["unknown"]),
}


def fixed(script: str, folder: Path | None = None, **kw):
    """--fix's report on a fixture (on its copy in `folder`, if given) and its proof."""
    path = SCRIPTS / script
    if folder is not None:
        path = folder / script
        shutil.copy(SCRIPTS / script, path)
    report = fix.run_fixed("script", str(path), **kw)
    assert report.status == "inplace_error" and report.proof is not None
    return report, report.proof


@pytest.mark.parametrize("script", sorted(VERDICTS))
def test_each_fixtures_fix_gets_the_verdict_its_rerun_earns_and_written_runs_under_python(script, tmp_path,
                                                                                       forked_python):
    verdict, kinds = VERDICTS[script]
    report, proof = fixed(script, tmp_path)
    copy = tmp_path / script
    assert (proof.verdict, [c.kind for c in proof.culprits]) == (verdict, kinds), fix.format_proof(proof)
    assert [c.verdict for c in proof.culprits[:-1]] == [fix.NEXT_WRITE] * (len(kinds) - 1)
    assert copy.read_bytes() == (SCRIPTS / script).read_bytes()   # never the user's file without --write
    assert verdict == fix.NO_EDIT or proof.diff.startswith("--- a/") and f"+++ b/{os.path.relpath(copy)}" in proof.diff
    if verdict == fix.PROVED:
        assert all(CAUSES[k].proof == REFERENCE for k in kinds)
        assert "from it on the reference's" in proof.culprits[-1].said
    if verdict in (fix.DID_NOT_HELP, fix.NO_EDIT):
        assert proof.files == {} if verdict == fix.NO_EDIT else proof.files
        return
    # --write's edit, run by plain python, finishes.
    before = copy.read_text()
    [(path, backup)] = fix.write_files(proof)
    assert (path, backup) == (str(copy), str(copy) + ".orig")
    assert Path(backup).read_text() == before and copy.read_text() != before
    ran = forked_python(copy, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr


def test_two_culprits_end_with_both_edits_together():
    _, proof = fixed("two_culprits.py")
    lines = [line for line in proof.diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert lines == ["+a = a + 1  # written-here", "+b = b.mul(2)  # second-written-here"]
    assert "(all the edits together)" in fix.format_proof(proof)


@pytest.fixture
def harmful_rebinding(monkeypatch):
    """The out-of-place edit allowed to rebind any name, a helper's argument included: the edit
    issue 43 found harmful (`batch -= mean` -> `batch = batch - mean` drops the centring for the caller)."""
    monkeypatch.setattr(lines, "rebindable", lambda *a, **k: None)


def test_an_edit_whose_gradients_differ_from_the_reference_did_not_help_and_is_not_shown_as_a_fix(
        harmful_rebinding):
    report, proof = fixed("helper_centre.py")
    assert report.fix.kind == "augmented_assignment" and "batch = batch - mean" in proof.diff
    [culprit] = proof.culprits
    assert (proof.verdict, culprit.verdict) == (fix.DID_NOT_HELP, fix.DID_NOT_HELP), culprit.said
    assert "than the reference" in culprit.said and "changes what your program computes" in culprit.said
    assert "The edit tried (not a fix):" in fix.format_proof(proof)


def test_fix_steps_runs_that_many_backwards_past_the_failing_one():
    _, proof = fixed("gan_sgd.py", steps=2)
    assert "2 past it" in proof.culprits[-1].said


def test_a_rerun_that_runs_on_is_stopped_at_the_timeout(tmp_path):
    script = tmp_path / "sleeps_after.py"
    script.write_text("import time\nimport torch\nx = torch.randn(3, requires_grad=True)\n"
                      "y = torch.exp(x)\ny += 1\ny.sum().backward()\ntime.sleep(600)\n")
    start = time.monotonic()
    report = fix.run_fixed("script", str(script), timeout=3)
    assert time.monotonic() - start < 60
    assert report.proof.verdict == fix.PROVED and "stopped at the timeout" in report.proof.culprits[0].said


def test_cli_fix_prints_the_verdict_and_the_diff_and_the_report_carries_them(tmp_path, forked_explain):
    copy = tmp_path / "exp_augassign.py"
    shutil.copy(SCRIPTS / "exp_augassign.py", copy)
    before = copy.read_bytes()
    proc = forked_explain("--report", tmp_path / "r.json", "--fix", copy, cwd=tmp_path)
    assert proc.returncode == 1
    assert "1. augmented_assignment written at exp_augassign.py:8: PROVED" in proc.stderr
    assert "-y += 1  # written-here\n+y = y + 1  # written-here" in proc.stderr
    assert copy.read_bytes() == before and not list(tmp_path.glob("*.orig*"))
    proof = json.loads((tmp_path / "r.json").read_text())["proof"]
    assert proof["verdict"] == "proved" and "+y = y + 1" in proof["diff"]
    assert proof["culprits"][0]["kind"] == "augmented_assignment"


def test_cli_fix_of_a_module(tmp_path, forked_explain):
    shutil.copytree(SCRIPTS / "cli" / "pkg", tmp_path / "pkg")
    proc = forked_explain("--fix", "-m", "pkg.train", "a", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == "argv ['a'] name __main__\n"   # the first run's output only
    assert "written at train.py:12: PROVED" in proc.stderr


def test_fix_options_are_checked(forked_explain):
    for args in (["--write", "x.py"], ["--fix", "--fix-steps", "-1", "x.py"], ["--fix", "--fix-timeout", "no", "x.py"]):
        proc = forked_explain(*args, cwd=ROOT)
        assert proc.returncode == 2 and proc.stderr.startswith("usage:"), args


def test_cli_fix_write_says_where_the_backup_is(tmp_path, forked_explain):
    copy = tmp_path / "tanh_index.py"
    shutil.copy(SCRIPTS / "tanh_index.py", copy)
    (tmp_path / "tanh_index.py.orig").write_text("an older backup\n")
    before = copy.read_text()
    proc = forked_explain("--fix", "--write", copy, cwd=tmp_path)
    backup = tmp_path / "tanh_index.py.orig.1"
    assert proc.returncode == 1 and f"wrote {copy} (your file before: {backup})" in proc.stderr
    assert backup.read_text() == before and "h = h.clone()" in copy.read_text()
    assert (tmp_path / "tanh_index.py.orig").read_text() == "an older backup\n"


def test_fix_write_writes_nothing_when_the_edit_did_not_help(tmp_path, harmful_rebinding, capsys):
    copy = tmp_path / "helper_centre.py"
    shutil.copy(SCRIPTS / "helper_centre.py", copy)
    before = copy.read_bytes()
    assert main(["--fix", "--write", str(copy)]) == 1
    assert "nothing written: the edit is no fix" in capsys.readouterr().err
    assert copy.read_bytes() == before and not list(tmp_path.glob("*.orig*"))


def test_an_error_while_proving_ends_in_no_edit_and_the_report_and_traceback_still_print(tmp_path, monkeypatch,
                                                                                          capsys):
    from fitlab.explain.fix import verdict

    def broken(*args):
        raise SyntaxError("expression cannot contain assignment")
    monkeypatch.setattr(verdict, "edited", broken)
    copy = tmp_path / "exp_augassign.py"
    shutil.copy(SCRIPTS / "exp_augassign.py", copy)
    assert main(["--fix", str(copy)]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "written at exp_augassign.py:8" in err
    assert "NO EDIT: --fix could not go on (SyntaxError: expression cannot contain assignment)" in err


def test_fix_on_a_script_importing_transformers_edits_the_value_not_the_keyword_and_exits_as_python(
        tmp_path, forked_explain):
    copy = tmp_path / "transformers_keyword.py"
    shutil.copy(SCRIPTS / "transformers_keyword.py", copy)
    proc = forked_explain("--fix", copy, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr and "saved at   transformers_keyword.py:20" in proc.stderr
    assert "+out = model.encoder(hidden_states=hidden_states.clone()).last_hidden_state" in proc.stderr
    assert ": PROVED (all the edits together)" in proc.stderr
