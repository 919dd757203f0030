"""`--check-contents`: a write the version counter cannot see, found by comparing each saved
tensor's bytes at backward with a copy taken when it was saved.

The fixture is reduced from openai/baselines#418 (DummyVecEnv's step refills the numpy buffer
that torch.from_numpy shares with the policy's input): python and the plain CLI are silent, and
the gradient really is another one; --check-contents names the line that saved the batch. A
write torch's ops make through an alias (`.data`, a fused step) stays the silent-write check's
(its line is known); batch norm's running stats, updated by a second forward without a bump but
not read by a training backward, are no finding.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from fitlab.explain import Recorder, format_report, run_script
from fitlab.explain.records import CONTENTS
from tests.explain.test_advice import replaced, run_text, source
from tests.explain.test_explain import ROOT, SCRIPTS, marked

SCRIPT = "reused_obs_buffer.py"


@pytest.mark.slow  # python and the CLI, each run in a fork (tests/explain/conftest.py)
def test_python_and_plain_explain_are_silent_and_check_contents_names_the_save(tmp_path, forked_python,
                                                                               forked_explain):
    path = str(SCRIPTS / SCRIPT)
    alone, plain = forked_python(path, cwd=ROOT), forked_explain(path, cwd=ROOT)
    checked = forked_explain("--check-contents", "--report", str(tmp_path / "r.json"), path, cwd=ROOT)
    assert alone.returncode == plain.returncode == checked.returncode == 0
    assert alone.stdout == plain.stdout == checked.stdout and alone.stdout.startswith("weight grad 0x")
    assert alone.stderr == plain.stderr == ""
    line = marked(SCRIPT, "saved-here")
    assert checked.stderr.startswith("Contents changed without a version bump (--check-contents")
    said = f"the contents of the tensor saved at {SCRIPT}:{line} changed between the save and backward"
    assert said in checked.stderr
    [changed] = json.loads((tmp_path / "r.json").read_text())["changed_contents"]
    assert changed["saved_at"][-1]["line"] == line and changed["writes"] == []
    assert changed["tensor"] == {"shape": [8, 4], "node": "AddmmBackward0", "saved_as": "mat1"}


def test_the_gradient_it_reports_is_really_another_one(tmp_path):
    text = source(SCRIPT)
    wrong = run_text(text, tmp_path / "wrong.py")
    # The buffer copied before it becomes the policy's input: what baselines' fix does.
    right = run_text(replaced(text, [("obs = torch.from_numpy(env.reset())",
                                      "obs = torch.from_numpy(env.reset().copy())")]), tmp_path / "right.py")
    assert not torch.allclose(wrong["policy"].weight.grad, right["policy"].weight.grad)
    assert run_script(str(tmp_path / "right.py"), recorder=Recorder(check_contents=True)).changed_contents == ()


def test_a_numpy_write_through_tensor_numpy_is_found_in_process():
    w = torch.randn(3, requires_grad=True, generator=torch.Generator().manual_seed(0))
    x = torch.ones(3)
    with Recorder(check_contents=True) as rec:
        y = (w * x).sum()   # mul saves x for w's gradient
        x.numpy()[:] = 5.0  # numpy's alias of x's memory: no version bump
        y.backward()
    [changed] = rec.changed.values()
    assert (changed.node, changed.saved_as, changed.shape, changed.writes) == ("MulBackward0", "other", (3,), ())
    assert torch.equal(w.grad, torch.full((3,), 5.0))  # backward used the new values, as without the recorder


def test_writes_torch_ran_stay_silent_writes_and_nothing_is_said_twice():
    for script in ("finishes_silent.py", "gan_fused.py"):
        report = run_script(str(SCRIPTS / script), recorder=Recorder(check_contents=True))
        assert report.silent_writes and report.changed_contents == (), script
        assert "Contents changed" not in format_report(report)


def test_batch_norm_running_stats_and_correct_loops_are_no_finding():
    g = torch.Generator().manual_seed(0)
    bn, lin = nn.BatchNorm1d(4), nn.Linear(4, 4)
    opt = torch.optim.SGD([*bn.parameters(), *lin.parameters()], lr=0.1)
    with Recorder(check_contents=True) as rec:
        for _ in range(3):
            a, b = bn(lin(torch.randn(8, 4, generator=g))), bn(lin(torch.randn(8, 4, generator=g)))
            opt.zero_grad()
            (a.pow(2).sum() + b.sum()).backward()   # two forwards through bn: its stats moved between
            opt.step()
    assert rec.changed == {} and rec.silent == {} and rec.notes == []


def test_without_the_flag_nothing_is_copied():
    x = torch.ones(3, requires_grad=True)
    with Recorder():
        y = x.exp()
    assert CONTENTS not in y.grad_fn.metadata
    with Recorder(check_contents=True):
        z = x.exp()
    assert z.grad_fn.metadata[CONTENTS][0][0] == "result"
