"""Issue 29's causes, each from what happened rather than a heuristic: the saving op a custom
autograd.Function or a torch.return_types structseq, forward-mode AD (the saving call unseen:
said so, no line named), a new loss on an old output (not a carried state), a target network
synced inside optimizer.step(closure) (not the optimizer's write). Each advice is applied and
the training compared with a reference written without the write."""

from __future__ import annotations

import pytest
import torch

from fitlab.explain import Recorder, compat, run_script
from fitlab.explain.records import KEY
from tests.explain.test_advice import assert_same, replaced, run_text, source, values, with_edits
from tests.explain.test_explain import SCRIPTS, assert_at, explain, innermost

LINES = [
    # script, first write's op, fix kind
    ("custom_function.py", "aten::add_", "augmented_assignment"),
    ("eigh_write.py", "aten::mul_", "augmented_assignment"),
    ("gan_one_score.py", "aten::add_", "fresh_forward_after_step"),
    ("hand_update.py", "aten::sub_", "fresh_forward_after_step"),
    ("dqn_target_sync.py", "aten::copy_", "target_network_sync"),
]


@pytest.mark.parametrize("script,op,fix", LINES)
def test_saved_written_and_failed_lines_and_the_cause(script, op, fix):
    code, report, text = explain(script)
    assert code == 1, text
    assert_at(innermost(report["saved_at"]), script, "saved-here")
    assert_at(innermost(report["writes"][0]["frames"]), script, "written-here")
    assert report["writes"][0]["op"] == op
    assert_at(innermost(report["failed_at"]), script, "failed-here")
    assert report["fix"]["kind"] == fix, text
    assert report["notes"] == [] and report["also"] == []


@pytest.mark.parametrize("op", ["max", "topk", "sort", "eigh", "qr", "svd"])
def test_structseq_outputs_are_tagged_by_the_call_that_made_them(op):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(4, 4, generator=g, requires_grad=True)
    calls = {"max": lambda: torch.max(a, dim=1), "topk": lambda: torch.topk(a, 2), "sort": lambda: torch.sort(a),
             "eigh": lambda: torch.linalg.eigh(a @ a.T), "qr": lambda: torch.linalg.qr(a),
             "svd": lambda: torch.linalg.svd(a)}
    with Recorder():
        out = calls[op]()
        before = {id(o.grad_fn): o.grad_fn.metadata.get(KEY) for o in out if o.grad_fn is not None}
    assert type(out).__module__ == "torch.return_types"
    assert before and all(entry is not None and entry[1] for entry in before.values())


def test_forward_mode_ad_names_the_call_that_saved_and_wrote():
    # torch's own forward-mode formula for softmax saved and then wrote the tensor (pytorch#162350),
    # inside the one call of the user's: that line is where it was saved and written.
    code, report, text = explain("forward_ad.py")
    assert code == 1
    assert_at(innermost(report["saved_at"]), "forward_ad.py", "written-here")
    if compat.KERNELS:
        assert_at(innermost(report["writes"][0]["frames"]), "forward_ad.py", "written-here")
    else:  # the public path runs forward-mode AD's calls without its dispatch mode (compat.popped)
        assert report["writes"] == [] and report["writes_missing"] == 1
    assert_at(innermost(report["failed_at"]), "forward_ad.py", "failed-here")
    assert report["fix"] is None  # torch's formula wrote it: no edit of the user's is the cause
    [note] = report["notes"]
    assert "forward-mode AD's formula" in note


GAN_ADVICE = [(
    "    score = D(fake)  # saved-here\n"
    "    D_loss = bce(D(real), torch.ones(32, 1)) + bce(score, torch.zeros(32, 1))\n",
    # As the advice says: D's loss from fake.detach(), G's loss from a new D(fake) after D's step.
    "    D_loss = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))\n"),
    ("D_loss.backward(retain_graph=True)", "D_loss.backward()"),
    ("    G_loss = bce(score, torch.ones(32, 1))\n", "    G_loss = bce(D(fake), torch.ones(32, 1))\n")]
# D's step spelt as new tensors, G's loss through them, then the step written into D.
GAN_REFERENCE = [(
    "    score = D(fake)  # saved-here\n"
    "    D_loss = bce(D(real), torch.ones(32, 1)) + bce(score, torch.zeros(32, 1))\n"
    "    opt_D.zero_grad()\n"
    "    D_loss.backward(retain_graph=True)\n"
    "    opt_D.step()  # written-here\n"
    "    G_loss = bce(score, torch.ones(32, 1))\n",
    "    D_loss = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))\n"
    "    grads = torch.autograd.grad(D_loss, list(D.parameters()))\n"
    "    new_D = {n: p.detach() - 0.05 * g for (n, p), g in zip(D.named_parameters(), grads)}\n"
    "    G_loss = bce(torch.func.functional_call(D, new_D, (fake,)), torch.ones(32, 1))\n"
    "    with torch.no_grad():\n"
    "        for n, p in D.named_parameters():\n"
    "            p.copy_(new_D[n])\n")]


def test_gan_one_score_fresh_forward_trains_as_the_reference(tmp_path):
    report = run_script(str(SCRIPTS / "gan_one_score.py"))
    assert report.fix.kind == "fresh_forward_after_step" and "fake.detach()" in report.fix.text
    text = source("gan_one_score.py")
    advised = run_text(replaced(text, GAN_ADVICE), tmp_path / "advised.py")
    want = run_text(replaced(text, GAN_REFERENCE), tmp_path / "reference.py")
    assert run_script(str(tmp_path / "advised.py")).status == "finished"
    assert_same(values(advised, ["G", "D"], "params"), values(want, ["G", "D"], "params"))


def test_hand_update_fresh_forward_trains_as_plain_gradient_descent(tmp_path):
    report = run_script(str(SCRIPTS / "hand_update.py"))
    assert report.fix.kind == "fresh_forward_after_step" and report.fix.text.startswith("This line")
    text = source("hand_update.py")
    forward = "pred = torch.tanh(x @ w1) @ w2  # saved-here\n"
    advised = run_text(replaced(text, [(forward, ""), ("for step in range(3):\n",
                                                       "for step in range(3):\n    " + forward)]),
                       tmp_path / "advised.py")
    # Gradient descent on new tensors, no write at all.
    want = run_text(replaced(text, [(text[text.index(forward):], (
        "for step in range(3):\n"
        "    loss = ((torch.tanh(x @ w1) @ w2 - y) ** 2).mean()\n"
        "    g1, g2 = torch.autograd.grad(loss, [w1, w2])\n"
        "    w1 = (w1 - lr * g1).detach().requires_grad_()\n"
        "    w2 = (w2 - lr * g2).detach().requires_grad_()\n"))]), tmp_path / "reference.py")
    assert run_script(str(tmp_path / "advised.py")).status == "finished"
    assert_same(values(advised, ["w1", "w2"], "params"), values(want, ["w1", "w2"], "params"))


def test_dqn_target_under_no_grad_trains_the_online_net_as_the_reference(tmp_path):
    report = run_script(str(SCRIPTS / "dqn_target_sync.py"))
    assert report.fix.kind == "target_network_sync" and "torch.no_grad()" in report.fix.text
    text = source("dqn_target_sync.py")
    line = "    next_q = target(s2).max(dim=1).values  # saved-here\n"
    advised = run_text(replaced(text, [(line, "    with torch.no_grad():\n    " + line)]), tmp_path / "advised.py")
    # The target's values as plain numbers, taken before the sync.
    want = run_text(replaced(text, [(line, "    next_q = torch.tensor(target(s2).max(dim=1).values.tolist())\n")]),
                    tmp_path / "reference.py")
    assert run_script(str(tmp_path / "advised.py")).status == "finished"
    assert_same(values(advised, ["online"], "params"), values(want, ["online"], "params"))
    # The advice given before (a fresh forward after the sync) runs, but trains the online net
    # on the synced target's values: other gradients.
    fresh = run_text(replaced(text, [
        (line, ""), ("    q = online(s)", "    next_q = target(s2).max(dim=1).values.detach()\n    q = online(s)")]),
        tmp_path / "fresh.py")
    assert not all(torch.allclose(a, b) for a, b in zip(values(fresh, ["online"], "params"),
                                                         values(want, ["online"], "params")))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the thread dies of it
def test_an_error_in_a_thread_started_before_the_recording_is_said_plainly():
    import threading

    import fitlab.explain

    go = threading.Event()

    def work():
        go.wait(60)
        x = torch.randn(4, requires_grad=True)
        y = torch.exp(x)
        y += 1
        y.sum().backward()

    worker = threading.Thread(target=work, name="loader")
    worker.start()
    with fitlab.explain.recording() as rec:
        go.set()
        worker.join(60)
    report = rec.report
    assert report.status == "inplace_error" and report.saved_at == ()
    [note] = report.notes
    assert "'loader', started before the recording" in note
    assert "could not find the stale tensor" in fitlab.explain.format_report(report)


def test_two_culprits_are_named_in_one_run_and_both_edits_fix_it(tmp_path):
    code, report, text = explain("unet_two_skips.py")
    assert code == 1
    assert_at(innermost(report["writes"][0]["frames"]), "unet_two_skips.py", "written-here")
    [other] = report["also"]
    # h1 went stale too: the newest node that saved it is conv2's (its input), on the saved line.
    assert other["tensor"]["node"] == "ConvolutionBackward0" and other["tensor"]["saved_as"] == "input"
    assert_at(innermost(other["saved_at"]), "unet_two_skips.py", "saved-here")
    assert_at(innermost(other["writes"][0]["frames"]), "unet_two_skips.py", "written-2-here")
    assert "Also stale in this graph (1 more" in text
    full = run_script(str(SCRIPTS / "unet_two_skips.py"))
    fixed = with_edits(source("unet_two_skips.py"), full.fix.edits + full.also[0].fix.edits)
    (tmp_path / "fixed").mkdir()
    after = run_text(fixed, tmp_path / "fixed" / "unet_two_skips.py")
    assert run_script(str(tmp_path / "fixed" / "unet_two_skips.py")).status == "finished"
    want = run_text(replaced(source("unet_two_skips.py"), [
        ("h1 += skip1  # written-2-here", "h1 = torch.add(h1, skip1)"),
        ("h2 += skip2  # written-here", "h2 = torch.add(h2, skip2)")]), tmp_path / "reference.py")
    assert_same(values(after, ["conv1", "conv2", "conv3"], "grad"), values(want, ["conv1", "conv2", "conv3"], "grad"))
