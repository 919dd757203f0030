"""The advice, cause by cause: applied to the fixture script, the script runs and computes the
gradients (or, for training loops, the weights) of a reference written by hand without the
in-place write.

Where the fix prints edited lines, the test applies exactly those lines; where the advice is
a change of structure (a fresh forward after a step, detaching carried state or labels), the
test applies it as the advice words it. A reference is the fixture with the write spelt out
of place, a different spelling from the advice's own.
"""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from fitlab.explain import run_script

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def source(script: str) -> str:
    return (SCRIPTS / script).read_text()


def replaced(text: str, pairs: list) -> str:
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def with_edits(text: str, edits: tuple) -> str:
    """The script with each edit's lines in place of its line (the old text checked)."""
    lines = text.splitlines()
    for e in sorted(edits, key=lambda e: -e.line):
        assert lines[e.line - 1] == e.old
        lines[e.line - 1:e.line] = list(e.new)
    return "\n".join(lines) + "\n"


def run_text(text: str, path: Path) -> dict:
    """Write and run a script as __main__ in this process (no recorder); its globals."""
    path.write_text(text)
    argv = sys.argv
    sys.argv = [str(path)]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv = argv


def values(ns: dict, names: list, what: str) -> list:
    """The .grad (what="grad") or the values (what="params") of the named tensors and modules."""
    out = []
    for name in names:
        v = ns[name]
        tensors = list(v.parameters()) if isinstance(v, nn.Module) else [v]
        out += [t.grad if what == "grad" else t.detach() for t in tensors]
    return out


def assert_same(got: list, want: list) -> None:
    assert len(got) == len(want) and got
    for g, w in zip(got, want):
        assert g is not None and w is not None
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


# script, fix kind, compared tensors, reference (the write spelt out of place, by hand)
EDITED = [
    ("exp_augassign.py", "augmented_assignment", ["x"],
     [("y = torch.exp(x)  # saved-here\ny += 1  # written-here", "y = torch.exp(x) + 1")]),
    ("residual_add.py", "augmented_assignment", ["x", "conv"],
     [("out = torch.relu(conv(x))  # saved-here\nout += identity  # written-here",
       "out = torch.relu(conv(x)) + identity")]),
    ("method_exp.py", "augmented_assignment", ["x"],
     [("e = torch.sigmoid(x)  # saved-here\ne.exp_()  # written-here", "e = torch.exp(torch.sigmoid(x))")]),
    ("div_norm.py", "augmented_assignment", ["w"], [("h /= norm  # written-here", "h = h * (1 / norm)")]),
    ("tanh_index.py", "index_assignment", ["w"],
     [("h[:, 0] = 0  # written-here", "h = torch.cat([torch.zeros_like(h[:, :1]), h[:, 1:]], dim=1)")]),
    ("rnn_fill.py", "index_assignment", ["W"],
     [("hs = torch.zeros(T + 1, B, H)\nfor t in range(T):\n"
       "    hs[t + 1] = torch.tanh(x[t] + hs[t] @ W)  # written-here\n",
       "steps = [torch.zeros(B, H)]\nfor t in range(T):\n    steps.append(torch.tanh(x[t] + steps[-1] @ W))\n"
       "hs = torch.stack(steps)\n")]),
    ("relu_inplace.py", "inplace_module", ["net"], [("h = self.act(h)  # written-here", "h = torch.relu(h)")]),
    ("dropout_inplace.py", "inplace_module", ["net"],
     [("net(x).pow(2).mean().backward()  # failed-here",
       "h = nn.functional.dropout(net[1](net[0](x)), 0.5, training=True)\nnet[3](h).pow(2).mean().backward()")]),
    ("functional_inplace.py", "inplace_function", ["w"],
     [("s = F.relu(s, inplace=True)  # written-here", "s = torch.clamp(s, min=0)")]),
    ("relu_underscore.py", "inplace_function", ["w"],
     [("s = F.relu_(s)  # written-here", "s = torch.where(s > 0, s, torch.zeros_like(s))")]),
    ("stateful_buffer.py", "module_buffer", ["m"],
     [("self.state.copy_(out.detach())  # written-here", "self.state = out.detach() + 0")]),
    ("embedding_max_norm.py", "embedding_max_norm", ["W", "embedding"],
     [("a = embedding.weight @ W.t()  # saved-here", "a = (embedding.weight * 1.0) @ W.t()")]),
    ("refill_noise.py", "refilled_input", ["G"], [("z.normal_()  # written-here", "z = torch.randn(5, 4)")]),
    ("double_backward.py", "augmented_assignment", ["w", "x"], [("h.mul_(2)  # written-here", "h = h * 2")]),
    # Writes through a view whose base nothing reads later: the view's name rebound.
    ("view_add.py", "augmented_assignment", ["feats", "block"],
     [("x += x_conv  # written-here", "x = torch.add(x, x_conv)")]),
    ("view_div_norm.py", "augmented_assignment", ["w"],
     [("x /= x.norm(dim=-1, keepdim=True)  # saved-here", "x = x * x.norm(dim=-1, keepdim=True).reciprocal()")]),
    ("view_write.py", "augmented_assignment", ["w"], [("flat.mul_(0.5)  # written-here", "a = a * 0.5")]),
    # A view whose base is read after the write: the copy is made where the base was saved.
    ("view_base_read.py", "clone_before_write", ["w"],
     [("head = h[:, :3]\nhead += torch.ones(3)  # written-here\n",
       "h = torch.cat([h[:, :3] + torch.ones(3), h[:, 3:]], dim=1)\nhead = h[:, :3]\n")]),
]


@pytest.mark.parametrize("script,kind,names,reference", EDITED, ids=[c[0] for c in EDITED])
def test_the_printed_edit_runs_and_gives_the_references_gradients(script, kind, names, reference, tmp_path):
    report = run_script(str(SCRIPTS / script))
    assert report.status == "inplace_error"
    assert report.fix.kind == kind and report.fix.edits
    fixed = with_edits(source(script), report.fix.edits)
    (tmp_path / "fixed").mkdir()
    after = run_text(fixed, tmp_path / "fixed" / script)
    rerun = run_script(str(tmp_path / "fixed" / script))
    assert rerun.status == "finished" and rerun.silent_writes == ()
    want = run_text(replaced(source(script), reference), tmp_path / script)
    assert_same(values(after, names, "grad"), values(want, names, "grad"))


GAN_ADVICE = [(
    "    prob_fake = D(fake)  # saved-here\n"
    "    D_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - prob_fake))\n"
    "    G_loss = torch.mean(torch.log(1.0 - prob_fake))\n"
    "    opt_D.zero_grad()\n"
    "    D_loss.backward(retain_graph=True)\n"
    "    opt_D.step()  # written-here\n"
    "    opt_G.zero_grad()\n"
    "    G_loss.backward()  # failed-here\n",
    # As the advice says: D's loss from fake.detach(), G's loss from a new D(fake) after D's step.
    "    D_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - D(fake.detach())))\n"
    "    opt_D.zero_grad()\n"
    "    D_loss.backward()\n"
    "    opt_D.step()\n"
    "    G_loss = torch.mean(torch.log(1.0 - D(fake)))\n"
    "    opt_G.zero_grad()\n"
    "    G_loss.backward()\n")]
# D's step as new tensors (no write until every backward is done), G's loss through them.
GAN_REFERENCE = [(GAN_ADVICE[0][0],
    "    D_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - D(fake.detach())))\n"
    "    grads = torch.autograd.grad(D_loss, list(D.parameters()))\n"
    "    new_D = {n: p.detach() - 0.05 * g for (n, p), g in zip(D.named_parameters(), grads)}\n"
    "    G_loss = torch.mean(torch.log(1.0 - torch.func.functional_call(D, new_D, (fake,))))\n"
    "    opt_G.zero_grad()\n"
    "    G_loss.backward()\n"
    "    with torch.no_grad():\n"
    "        for n, p in D.named_parameters():\n"
    "            p.copy_(new_D[n])\n")]
# The hint fitlab no longer gives: G's backward moved before D's step.
GAN_MOVED = [("    opt_D.step()  # written-here\n    opt_G.zero_grad()\n    G_loss.backward()  # failed-here\n",
              "    opt_G.zero_grad()\n    G_loss.backward()\n    opt_D.step()\n")]


def test_gan_fresh_forward_trains_as_the_reference_and_moving_backward_does_not(tmp_path):
    report = run_script(str(SCRIPTS / "gan_sgd.py"))
    assert report.fix.kind == "fresh_forward_after_step" and "fake.detach()" in report.fix.text
    text = source("gan_sgd.py")
    advised = run_text(replaced(text, GAN_ADVICE), tmp_path / "advised.py")
    want = run_text(replaced(text, GAN_REFERENCE), tmp_path / "reference.py")
    assert_same(values(advised, ["G", "D"], "params"), values(want, ["G", "D"], "params"))
    assert run_script(str(tmp_path / "advised.py")).status == "finished"
    # Moving G's backward before D's step runs without error, but D trains on other gradients.
    moved = run_text(replaced(text, GAN_MOVED), tmp_path / "moved.py")
    assert not all(torch.allclose(a, b) for a, b in zip(values(moved, ["D"], "params"),
                                                         values(want, ["D"], "params")))


def test_weight_clipping_between_forward_and_backward_is_a_parameter_write():
    report = run_script(str(SCRIPTS / "clip_between.py"))
    assert report.fix.kind == "fresh_forward_after_step" and report.fix.text.startswith("This line")
    # The edit shown is a fresh forward after the clipping, never a backward moved before it.
    assert "score = critic(x).mean()" in report.fix.edits[0].new[-2]


def test_blog_detach_labels_trains_as_labels_made_without_grad(tmp_path):
    report = run_script(str(SCRIPTS / "blog_reinit.py"))
    assert report.fix.kind == "detach_labels"
    text = source("blog_reinit.py")
    advised = run_text(replaced(text, [("labels = get_label(net, X)\n", "labels = get_label(net, X).detach()\n")]),
                       tmp_path / "advised.py")
    want = run_text(replaced(text, [("labels = get_label(net, X)\n",
                                     "with torch.no_grad():\n    labels = get_label(net, X)\n")]),
                    tmp_path / "reference.py")
    assert_same(values(advised, ["net"], "params"), values(want, ["net"], "params"))


def test_carried_state_detached_at_the_boundary_trains_as_the_reference(tmp_path):
    report = run_script(str(SCRIPTS / "gru_carry.py"))
    assert report.fix.kind == "carried_state" and "h = h.detach()" in report.fix.text
    text = source("gru_carry.py")
    advised = run_text(replaced(text, [
        ("    out, h = rnn(batch, h)  # saved-here\n", "    h = h.detach()\n    out, h = rnn(batch, h)\n"),
        ("loss.backward(retain_graph=True)", "loss.backward()")]), tmp_path / "advised.py")
    # Each batch starts from the state's values, a new tensor; without retain_graph.
    want = run_text(replaced(text, [
        ("    out, h = rnn(batch, h)  # saved-here\n", "    out, h = rnn(batch, torch.tensor(h.tolist()))\n"),
        ("loss.backward(retain_graph=True)", "loss.backward()")]), tmp_path / "reference.py")
    assert run_script(str(tmp_path / "advised.py")).status == "finished"
    assert_same(values(advised, ["rnn", "head"], "params"), values(want, ["rnn", "head"], "params"))


def test_a_views_name_is_not_rebound_where_its_base_is_read_later(tmp_path):
    report = run_script(str(SCRIPTS / "view_base_read.py"))
    assert report.fix.kind == "clone_before_write"
    assert "`head` is a view of `h`, which line 12 reads after this write" in report.fix.text
    [edit] = report.fix.edits
    assert edit.line == 9 and edit.new == ("h = torch.tanh(inp @ w).clone()  # saved-here",)
    # The rebinding it refuses runs, but leaves h unwritten for line 12: other gradients.
    text = source("view_base_read.py")
    rebound = run_text(replaced(text, [("head += torch.ones(3)", "head = head + torch.ones(3)")]), tmp_path / "r.py")
    want = run_text(replaced(text, [("head = h[:, :3]\nhead += torch.ones(3)  # written-here\n",
                                     "h = torch.cat([h[:, :3] + torch.ones(3), h[:, 3:]], dim=1)\nhead = h[:, :3]\n")]),
                    tmp_path / "want.py")
    assert not torch.allclose(rebound["w"].grad, want["w"].grad)


VIEW_CASES = [
    # (the lines between the saved tensor and the backward, what the report says instead of an edit)
    ("def add(x, b):\n    x += b\n\nadd(h[:, :3], 1.0)\nloss = h.sum()\n",
     "`x` is an argument of add(): rebinding it would leave the caller's tensor unwritten"),
    ("x = h[:, :3]\nkeep = [h]\nx += 1\nloss = keep[0].sum()\n",
     "`x` is a view of a tensor this line cannot follow (`h`, also kept at line 6)"),
    ("for i in range(2):\n    s = h.sum() if i else 0\n    h = torch.tanh(inp @ w)\n    x = h[:, :3]\n"
     "    x += 1\nloss = s + x.sum()\n", "`x` is a view of `h`, which line 6 reads in the loop's next pass"),
    ("class Box:\n    pass\n\nbox = Box()\nbox.x = h[:, :3]\nbox.x += 1\nloss = h.sum()\n",
     "`box.x` is an attribute: rebinding it would leave the tensor others hold unwritten"),
]


@pytest.mark.parametrize("lines,said", VIEW_CASES)
def test_a_view_the_line_cannot_follow_is_said_in_one_sentence_and_not_rebound(lines, said, tmp_path):
    script = tmp_path / "views.py"
    script.write_text("import torch\ninp = torch.randn(5, 4)\nw = torch.randn(4, 6, requires_grad=True)\n"
                      "h = torch.tanh(inp @ w)\n" + lines + "loss.backward()\n")
    report = run_script(str(script))
    assert report.status == "inplace_error" and report.fix.kind == "clone_before_write", report.fix
    assert said in report.fix.text
    assert all("x = x +" not in line for e in report.fix.edits for line in e.new)
    # What it edits instead: the copy where h was saved, which keeps every write.
    assert [[n.strip() for n in e.new] for e in report.fix.edits] in ([], [["h = torch.tanh(inp @ w).clone()"]])


def test_a_view_saved_and_written_on_one_line_is_named_there():
    # x.norm(...) saved the view x; the division on the same line overwrote it (torch names the view).
    report = run_script(str(SCRIPTS / "view_div_norm.py"))
    line = 9
    assert report.saved_at[-1].line == line == report.writes[0].frames[-1].line
    assert report.tensor.node == "LinalgVectorNormBackward0" and report.tensor.shape == (6, 5)
    assert report.fix.edits[0].new == ("    x = x / x.norm(dim=-1, keepdim=True)  # saved-here",)
