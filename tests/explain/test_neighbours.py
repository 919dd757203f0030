"""Autograd's errors next to the in-place one, explained as it is: the CLI names the lines that
matter (the fixtures' `# built-here`, `# joined-here`, `# freed-here`, `# failed-here`,
`# made-here`, `# written-here`) and the fix for each fixture's cause, and the fix, applied by
hand as its advice says, makes the fixture run. Each fixture is reduced from the public report its
first line names."""

import json
import subprocess
import sys

import pytest

from fitlab.explain import format_report, run_script
from fitlab.explain.causes import CAUSES
from fitlab.explain.neighbours.messages import LIKELY, neighbour

from .test_explain import ROOT, SCRIPTS, marked

LABELS = {"built-here": "built at", "joined-here": "used again", "freed-here": "freed by",
          "failed-here": "failed at", "made-here": "view made", "written-here": "written at",
          "hooked-here": "hook set"}

CASES = [
    # script, status, cause, the marks it carries
    ("freed_gan_no_detach.py", "freed_graph", "freed_shared_forward",
     ("built-here", "joined-here", "freed-here", "failed-here")),
    ("freed_hidden_carried.py", "freed_graph", "freed_carried_state", ("built-here", "failed-here")),
    ("freed_labels_once.py", "freed_graph", "freed_computed_once", ("built-here", "joined-here", "failed-here")),
    ("freed_loss_accumulated.py", "freed_graph", "freed_accumulated_loss",
     ("built-here", "joined-here", "freed-here", "failed-here")),
    ("leaf_sgd_update.py", "leaf_inplace", "leaf_update", ("written-here",)),
    ("leaf_embeds_accumulate.py", "leaf_inplace", "leaf_accumulate", ("written-here",)),
    ("leaf_weight_slice.py", "leaf_view_inplace", "leaf_view_write", ("written-here",)),
    ("view_unbind_denormalize.py", "multi_view_inplace", "multi_view_write", ("made-here", "written-here")),
    ("view_custom_function.py", "function_view_inplace", "function_view_write", ("made-here", "written-here")),
    ("view_backward_hook.py", "function_view_inplace", "hook_view_write", ("hooked-here", "written-here")),
]


def _place(report: dict, label: str) -> dict:
    [place] = [p for p in report["neighbour"]["places"] if p["label"] == label]
    return place["frames"][-1]


@pytest.mark.parametrize("script,status,cause,marks", CASES, ids=[c[0] for c in CASES])
def test_each_neighbouring_error_names_its_lines_and_the_fix_for_its_cause(script, status, cause, marks):
    report = run_script(str(SCRIPTS / script))
    data = json.loads(report.to_json())
    assert (report.exit_code, data["status"]) == (1, status), format_report(report)
    assert data["neighbour"]["fix"]["kind"] == cause
    assert cause in LIKELY[data["status"]] and neighbour(data["error"]).kind == status
    for mark in marks:
        frame = _place(data, LABELS[mark])
        assert frame["line"] == marked(script, mark) and frame["file"].endswith(script), (mark, frame)
    if script == "view_backward_hook.py":  # the module's call made the view its ReLU wrote
        assert _place(data, "view made")["line"] == marked(script, "written-here")
    if "freed-here" not in marks and status == "freed_graph":  # a loop: the same line freed and failed
        assert _place(data, "freed by")["line"] == marked(script, "failed-here")
    text = format_report(report)
    assert text.startswith(report.traceback.rstrip("\n")) and text.count("Fix: ") == 1
    # The advice is the registry's, filled in: its words up to the first placeholder are there.
    assert CAUSES[cause].advice.split("{")[0].strip() in text


# Each fixture with its cause's fix applied as the advice words it: (old text, new text).
APPLIED = {
    "freed_gan_no_detach.py": [("bce(D(fake), zeros)", "bce(D(fake.detach()), zeros)")],
    "freed_hidden_carried.py": [("    prediction = out(r_out)\n",
                                 "    prediction = out(r_out)\n    h_state = h_state.detach()\n")],
    "freed_labels_once.py": [("Y = torch.mm(X, true_W) + true_b  # built-here",
                              "Y = (torch.mm(X, true_W) + true_b).detach()")],
    "freed_loss_accumulated.py": [("output = model(image)\nfor t in range(3):\n    loss_t = ((output[:, t] - "
                                   "target[:, t]) ** 2).mean()\n    loss += loss_t  # joined-here",
                                   "output = model(image)\nloss = 0\nfor t in range(3):\n    loss_t = ((output[:, t] - "
                                   "target[:, t]) ** 2).mean()\n    loss += loss_t")],
    "leaf_sgd_update.py": [("    for p in model.parameters():\n        p.add_(",
                            "    with torch.no_grad():\n      for p in model.parameters():\n        p.add_(")],
    "leaf_embeds_accumulate.py": [("inputs_embeds += image_embeds.mean() * 0.",
                                   "inputs_embeds = inputs_embeds + image_embeds.mean() * 0.")],
    "leaf_weight_slice.py": [("model[2].weight[:, pos] -= ori_pred_emb * 0.5",
                              "with torch.no_grad():\n    model[2].weight[:, pos] -= ori_pred_emb * 0.5")],
    "view_unbind_denormalize.py": [("    for channel, mean, std in zip(denormalized[0], means, stds):"
                                    "  # made-here\n"
                                    "        channel.mul_(std).add_(mean)  # written-here\n    return denormalized",
                                    "    return torch.stack([c.mul(s).add(m) for c, m, s in "
                                    "zip(denormalized[0], means, stds)]).unsqueeze(0)")],
    "view_custom_function.py": [("x = Alias.apply(z)", "x = Alias.apply(z).clone()")],
    "view_backward_hook.py": [("nn.ReLU(inplace=True))", "nn.ReLU())")],
}


@pytest.mark.parametrize("script", sorted(APPLIED))
def test_the_fix_applied_as_advised_runs(script, tmp_path):
    text = (SCRIPTS / script).read_text()
    for old, new in APPLIED[script]:
        assert old in text
        text = text.replace(old, new)
    fixed = tmp_path / script
    fixed.write_text(text)
    report = run_script(str(fixed))
    assert (report.status, report.exit_code) == ("finished", 0), format_report(report)


@pytest.mark.slow  # runs the CLI and python as processes
def test_the_cli_prints_pythons_traceback_first_then_the_lines_and_exits_1():
    script = str(SCRIPTS / "freed_gan_no_detach.py")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    ours = subprocess.run([sys.executable, "-m", "fitlab.explain", script], env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    alone = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=240,
                           check=False)
    assert (ours.returncode, alone.returncode) == (1, 1) and ours.stdout == alone.stdout
    assert ours.stderr.startswith(alone.stderr.rstrip("\n") + "\n\n")
    assert f"freed by   freed_gan_no_detach.py:{marked('freed_gan_no_detach.py', 'freed-here')}" in ours.stderr


@pytest.mark.parametrize("script", ["leaf_sgd_update.py", "leaf_embeds_accumulate.py", "leaf_weight_slice.py",
                                    "view_custom_function.py"])
def test_the_printed_edit_itself_makes_the_script_run(script, tmp_path):
    report = run_script(str(SCRIPTS / script))
    [edit] = report.neighbour.fix.edits
    lines = (SCRIPTS / script).read_text().splitlines()
    assert lines[edit.line - 1] == edit.old
    lines[edit.line - 1:edit.line] = list(edit.new)
    fixed = tmp_path / script
    fixed.write_text("\n".join(lines) + "\n")
    again = run_script(str(fixed))
    assert (again.status, again.exit_code) == ("finished", 0), format_report(again)


def test_an_analysis_that_fails_leaves_pythons_traceback_exit_1_and_a_note(monkeypatch):
    from fitlab.explain.neighbours import written

    def broken(exc, kind):
        raise ValueError("no frame")

    monkeypatch.setattr(written, "analyse", broken)
    report = run_script(str(SCRIPTS / "leaf_sgd_update.py"))
    assert (report.status, report.exit_code, report.neighbour) == ("leaf_inplace", 1, None)
    text = format_report(report)
    assert text.startswith(report.traceback.rstrip("\n")) and "note: analysis failed: ValueError('no frame')" in text
