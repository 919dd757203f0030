"""Autograd's errors next to the in-place one, explained as it is: the CLI names the lines that
matter (the fixtures' `# built-here`, `# joined-here`, `# freed-here`, `# failed-here`,
`# made-here`, `# written-here`) and the fix for each fixture's cause, and the fix, applied by
hand as its advice says, makes the fixture run. Each fixture is reduced from the public report its
first line names."""

import json

import pytest
import torch

from fitlab.explain import decode, format_report, run_script
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


@pytest.mark.slow  # runs the CLI and python (forked_explain, forked_python: tests/explain/conftest.py)
def test_the_cli_prints_pythons_traceback_first_then_the_lines_and_exits_1(forked_explain, forked_python):
    script = str(SCRIPTS / "freed_gan_no_detach.py")
    ours, alone = forked_explain(script, cwd=ROOT), forked_python(script, cwd=ROOT)
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


def _message(run) -> str:
    with pytest.raises(RuntimeError) as info:
        run()
    return str(info.value)


def _twice():
    y = torch.ones(2, requires_grad=True).exp().sum()
    y.backward()
    y.backward()


def _leaf():
    torch.ones(2, requires_grad=True).add_(1)


def _leaf_view():
    torch.ones(2, requires_grad=True)[0].zero_()


def _split():
    torch.ones(4, requires_grad=True).mul(2).split(2)[0].add_(1)


def _hooked():
    m = torch.nn.Linear(2, 2)
    m.register_full_backward_hook(lambda *a: None)
    m(torch.ones(1, 2, requires_grad=True)).add_(1)


@pytest.mark.parametrize("run,kind,producer", [
    (_twice, "freed_graph", None), (_leaf, "leaf_inplace", None), (_leaf_view, "leaf_view_inplace", None),
    (_split, "multi_view_inplace", "Split"), (_hooked, "function_view_inplace", "BackwardHookFunction")])
def test_this_torchs_messages_are_told_apart(run, kind, producer):
    found = neighbour("Traceback (most recent call last):\n  ...\nRuntimeError: " + _message(run))
    assert (found.kind, found.producer) == (kind, producer)
    assert decode(_message(run)) is None  # none is the in-place error


@pytest.mark.parametrize("text,kind,producer", [
    # torch 0.2's wording (pytorch/examples#116), 1.x's view messages (paarthneekhara/AdversarialDeepFakes#23,
    # kail8/UnsupDIS-pytorch#26: "is an output", "Inplace operators on such views is forbidden").
    ("RuntimeError: Trying to backward through the graph second time, but the buffers have already been freed.",
     "freed_graph", None),
    ("RuntimeError: Output 0 of UnbindBackward is a view and is being modified inplace. This view is the output "
     "of a function that returns multiple views.", "multi_view_inplace", "UnbindBackward"),
    ("RuntimeError: Output 0 of ViewBackward is a view and is being modified inplace. This view is an output of "
     "a function that returns multiple views. Inplace operators on such views is forbidden.",
     "multi_view_inplace", "ViewBackward"),
    ("RuntimeError: one of the variables needed for gradient computation has been modified by an inplace "
     "operation", None, None),
])
def test_older_wordings_are_told_apart_too(text, kind, producer):
    found = neighbour(text)
    assert (None if found is None else (found.kind, found.producer)) == (None if kind is None else (kind, producer))


def test_a_graph_built_and_freed_before_the_recording_gets_the_general_advice_not_a_guess():
    from fitlab.explain import recording
    from fitlab.explain.causes import FREED_GRAPH

    y = torch.ones(3, requires_grad=True).exp().sum()
    y.backward()
    with pytest.raises(RuntimeError), recording() as rec:
        y.backward()
    report = rec.report
    assert (report.status, report.exit_code) == ("freed_graph", 1)
    assert report.neighbour.fix.text == FREED_GRAPH
    assert "made before the recording started" in format_report(report)


def test_the_backward_log_keeps_no_copy_check_contents_took_of_a_freed_graph():
    from fitlab.explain import Recorder
    from fitlab.explain.recorder import CONTENTS

    with Recorder(check_contents=True) as rec:
        y = torch.ones(100, requires_grad=True).exp().sum()
        node = y.grad_fn.next_functions[0][0]
        assert CONTENTS in node.metadata
        y.backward()
    assert rec.freeing.walked[-1].roots == (y.grad_fn,) and CONTENTS not in node.metadata
