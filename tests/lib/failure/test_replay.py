"""The debugger's views of the failure, checked against torch itself: version
ledger, the labels' graph, the anomaly trace, the fix gallery, tied gradients."""

import re
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch import nn

from fitlab import Config, train
from fitlab.blog import setup
from fitlab.data import attached_labels, draw_inputs, make_labels
from fitlab.failure.anomaly import parse_anomaly_warning
from fitlab.failure.autopsy import autopsy
from fitlab.failure.fixes import (
    VARIANTS,
    fix_gallery,
    gallery_config,
    gallery_seconds,
    gradient_gap,
    run_variant,
    variant_seconds,
)
from fitlab.failure.graph import grad_fns, graph_dot, named_in_error
from fitlab.failure.versions import MOMENTS
from fitlab.figures.charts import tying_curves
from fitlab.figures.tables import MOMENT_HEADERS, ledger_summary, ledger_table, tying_summary
from fitlab.model import build_teacher, reinitialise_as_student
from fitlab.serving.budget import BUDGET_SECONDS, OverBudget, estimated_seconds, walked_graph_seconds
from fitlab.shared_layer.gradients import tied_gradient_ledger
from tests.reference.blog_variants import blog_variant

# --- a small DOT reader for the one-statement-per-line DOT graph_dot writes ---
_NODE = re.compile(r'^\s*"([^"]+)" \[(.*)\];$')
_EDGE = re.compile(r'^\s*"([^"]+)" -> "([^"]+)"')
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,\s]+)')


def parse_dot(dot):
    """{node id: attrs}, [(from, to)] of a DOT text."""
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    nodes, edges = {}, []
    for line in dot.splitlines():
        if (e := _EDGE.match(line)) is not None:
            edges.append(e.groups())
        elif (n := _NODE.match(line)) is not None:
            nodes[n.group(1)] = {k: v.strip('"') for k, v in _ATTR.findall(n.group(2))}
    for a, b in edges:
        assert a in nodes and b in nodes, (a, b)
    return nodes, edges


def red(attrs):
    return attrs.get("color") == "#d62728"


# --- 1. version ledger ---------------------------------------------------------

@pytest.mark.parametrize("repeats", [0, 2, 8])
def test_ledger_versions_and_stale_rows(repeats):
    ledger = autopsy(Config(detach=False, shared_repeats=repeats)).ledger
    # nn.Linear leaves 1; kaiming_normal_/zeros_ under no_grad still bump to 2.
    assert (ledger[MOMENTS[0]] == 1).all() and (ledger[MOMENTS[1]] == 2).all()
    assert (ledger[MOMENTS[2]] == 2).all()
    expected_stale = ["last.weight"] + (["shared.weight"] if repeats else [])
    assert sorted(ledger.parameter[ledger.stale]) == sorted(expected_stale)
    saved = ledger.set_index("parameter")["saved"]
    assert saved["first.weight"] == () and saved["last.bias"] == ()
    if repeats:
        assert saved["shared.weight"] == (("mat2", (5, 5), 1),) * repeats
    assert saved["last.weight"] == (("mat2", (5, 1), 1),)
    # The table the page shows says it in words.
    words = ledger_table(ledger).set_index("parameter")["saved by the labels' graph"]
    assert words["first.weight"] == "not saved" and words["last.bias"] == "not saved"
    if repeats:
        assert words["shared.weight"] == (
            "mat2 [5, 5] at v1" + (f", ×{repeats} (one per use)" if repeats > 1 else ""))
    assert words["last.weight"] == "mat2 [5, 1] at v1"
    assert list(ledger_table(ledger).columns[3:6]) == list(MOMENT_HEADERS.values())


def test_ledger_agrees_with_torchs_message():
    config = Config(detach=False, width=7)
    found = autopsy(config)
    message = train(config).error.message
    assert found.error == message
    now, expected = map(int, re.search(r"is at version (\d+); expected version (\d+)", message).groups())
    row = found.ledger.set_index("parameter").loc["last.weight"]
    assert (row[MOMENTS[0]], row[MOMENTS[2]]) == (expected, now)


def test_untied_student_fails_the_same_way():
    config = Config(detach=False, tied=False, shared_repeats=3)
    assert autopsy(config).error == train(config).error.message


# --- 2. the labels' graph ----------------------------------------------------

@pytest.mark.parametrize("width,repeats", [(5, 2), (7, 3), (4, 0), (5, 8)])
def test_graph_nodes_leaves_and_stale_tensors(width, repeats):
    found = autopsy(Config(detach=False, width=width, shared_repeats=repeats))
    nodes, edges = parse_dot(graph_dot(found.graph))
    boxes = [a["label"].split("\\n") for a in nodes.values() if a.get("shape") == "box"]
    kinds = [lines[0] for lines in boxes]
    linears = repeats + 2
    assert kinds.count("AddmmBackward0") == linears and kinds.count("TBackward0") == linears
    assert kinds.count("ReluBackward0") == linears - 1 and kinds.count("ViewBackward0") == 1
    leaves = {a["label"].split("\\n")[0]: n for n, a in nodes.items() if a.get("shape") == "ellipse"}
    assert len(leaves) == (6 if repeats else 4)
    if repeats:
        shared = leaves["shared.weight"]
        # one leaf for the shared weight, one edge into it per use
        assert sum(1 for _, b in edges if b == shared) == repeats
    # Activations are listed in their node's box: every Addmm saved its input, every ReLU its result.
    activations = [line for lines in boxes for line in lines[1:]]
    assert len(activations) == linears + (linears - 1)
    assert all(line.endswith("now v0, saved v0") for line in activations)
    # All Addmm but the first (X needs no grad) saved weight.t(): a note each.
    notes = {n: a for n, a in nodes.items() if a.get("shape") == "note"}
    assert len(notes) == linears - 1
    stale = sorted(a["label"].split("\\n")[0] for a in notes.values() if red(a))
    assert stale == sorted(["mat2 = last.weight"] + ["mat2 = shared.weight"] * repeats)
    assert all(f"[{width}, 1]  now v2, saved v1" in a["label"]
               for a in notes.values() if "last.weight" in a["label"])
    assert len(found.graph.stale) == repeats + 1


def test_the_tensor_torch_names_is_last_weight_transposed():
    found = autopsy(Config(detach=False, width=9))
    culprit = named_in_error(found.graph, found.error)
    assert culprit.parameter == "last.weight" and culprit.shape == (9, 1) and culprit.name == "mat2"


def test_raw_saved_reads_what_saved_would_refuse():
    config = Config(detach=False)
    generator = torch.Generator().manual_seed(config.seed)
    teacher = build_teacher(config, generator)
    labels = make_labels(teacher, draw_inputs(config, generator), detach=False)
    reinitialise_as_student(teacher, generator)
    addmm = next(fn for fn in grad_fns(labels) if type(fn).__name__ == "AddmmBackward0")
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        addmm._saved_mat2
    assert torch.equal(addmm._raw_saved_mat2.data, teacher.last.weight.t())


# --- 3. anomaly trace (on the blog's script: tests/page/test_script.py) ---------------

def test_parse_anomaly_warning_ignores_other_warnings():
    assert parse_anomaly_warning("Anomaly Detection has been enabled.") is None


# --- 4. fix gallery ----------------------------------------------------------

SMALL = dict(epochs=3, width=6, shared_repeats=3)


@pytest.fixture(scope="module")
def gallery():
    return {o.variant.key: o for o in fix_gallery(Config(detach=False, **SMALL))}


REFERENCE = {
    "blog": dict(labels="attached"),
    "detach": dict(labels="detach"),
    "no_grad": dict(labels="no_grad"),
    "clone": dict(labels="clone"),
    "no_reshape": dict(labels="no_reshape"),
    "deep_copy": dict(labels="attached", copy_teacher=True),
    "deep_copy_retain_graph": dict(labels="attached", copy_teacher=True, retain_graph=True),
    "data_reinit": dict(labels="attached", reinit_data=True),
    "identity_hooks": dict(hooks=True),
    "identity_hooks_retain_graph": dict(hooks=True, retain_graph=True),
}


def test_every_variant_has_a_reference():
    assert set(REFERENCE) == {v.key for v in VARIANTS}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_variant_matches_the_blog_script_written_that_way(gallery, name):
    ours, ref = gallery[name], blog_variant(**REFERENCE[name], **SMALL)
    if ref["exception"] is None:
        assert ours.error is None
        assert np.allclose(ours.history.train_loss[1:], ref["losses"], rtol=1e-4, atol=1e-7)
    else:
        assert ours.error.message == str(ref["exception"])
        assert (ours.error.epoch, ours.error.batch) == ref["where"]
    if ref["first_grads"] is not None:
        for ours_grad, ref_grad in zip(ours.first_gradients.values(), ref["first_grads"]):
            assert np.allclose(ours_grad, ref_grad.numpy(), atol=1e-6)
    if ref["teacher_grads"] is not None:
        norm = float(torch.sqrt(sum((g ** 2).sum() for g in ref["teacher_grads"] if g is not None)))
        assert ours.teacher_gradient == pytest.approx(norm, rel=1e-5)


def test_gallery_outcomes_tell_the_story(gallery):
    blog, detached = gallery["blog"], gallery["detach"]
    assert "modified by an inplace operation" in blog.error.message
    assert blog.error.message == train(Config(detach=False, **SMALL)).error.message
    assert detached.history.equals(train(Config(engine="autograd", **SMALL)).history)
    assert gallery["no_grad"].history.equals(detached.history)
    for same in ("clone", "no_reshape"):
        assert gallery[same].error.message == blog.error.message
    copied = gallery["deep_copy"]
    assert (copied.error.epoch, copied.error.batch) == (1, 2)
    assert copied.error.message.startswith("Trying to backward through the graph a second time")
    assert copied.teacher_gradient > 0
    retained = gallery["deep_copy_retain_graph"]
    assert retained.error is None and retained.history.equals(detached.history)
    assert retained.teacher_gradient != copied.teacher_gradient  # summed over every step, not one
    through_data = gallery["data_reinit"]
    assert gradient_gap(through_data, detached) > 1e-3
    assert (through_data.error.epoch, through_data.error.batch) == (1, 2)


def test_the_labels_share_one_graph_and_the_first_backward_frees_it():
    config = Config(detach=False)
    start = setup(config, attached_labels, copy_teacher=True)
    first, second = start.labels[:5], start.labels[5:10]
    shared = set(grad_fns(first)) & set(grad_fns(second))
    assert any(type(fn).__name__ == "AddmmBackward0" for fn in shared)  # one graph behind both batches
    addmm = next(fn for fn in grad_fns(start.labels) if type(fn).__name__ == "AddmmBackward0")
    nn.MSELoss()(start.student(start.inputs[:5]), first).backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        addmm._saved_mat2


# --- 5. tied gradients -------------------------------------------------------

@pytest.mark.parametrize("width,repeats", [(5, 2), (7, 3)])
def test_tied_gradients_add_up(width, repeats):
    tied = tied_gradient_ledger(Config(width=width, shared_repeats=repeats))
    assert tied.uses == repeats and len(tied.table) == width * width
    uses = tied.table[[f"use {k}" for k in range(1, repeats + 1)]].to_numpy()
    assert np.allclose(uses.sum(1), tied.table[".grad"], atol=1e-6)
    assert tied.max_difference < 1e-6
    # An independent reference: untied copies start from the same values, and
    # autograd alone (no hooks) fills each copy's .grad with its use's gradient.
    untied = tied_gradient_ledger(Config(width=width, shared_repeats=repeats, tied=False))
    for k in range(1, repeats + 1):
        assert np.allclose(tied.table[f"use {k}"], untied.table[f"copy {k} .grad"], atol=1e-6)


def test_tied_grad_equals_the_blog_scripts_first_batch_gradient():
    tied = tied_gradient_ledger(Config(width=6, shared_repeats=3))
    ref = blog_variant(labels="detach", width=6, shared_repeats=3, epochs=1)
    assert np.allclose(tied.table[".grad"], ref["first_grads"][2].reshape(-1).numpy(), atol=1e-6)


def test_ledger_summary_and_no_shared_layer():
    tied = tied_gradient_ledger(Config())
    summary = ledger_summary(tied).set_index("gradient")
    assert list(summary.index) == ["use 1", "use 2", "sum of uses", ".grad"]
    assert summary.loc["sum of uses", "norm"] == pytest.approx(summary.loc[".grad", "norm"], rel=1e-6)
    assert tied_gradient_ledger(Config(shared_repeats=0)) is None


def test_tying_comparison_counts_parameters_and_draws_both_students():
    tied, untied = train(Config(epochs=3, shared_repeats=3)), train(Config(epochs=3, shared_repeats=3, tied=False))
    summary = tying_summary([tied, untied]).set_index("student")
    assert summary.loc["untied", "parameters"] - summary.loc["tied", "parameters"] == 2 * (5 * 5 + 5)
    assert summary.loc["tied", "final train MSE"] == tied.history.train_loss.iloc[-1]
    curves = tying_curves([tied, untied])
    assert set(curves.student) == {"tied", "untied"} and len(curves) == 4 * len(tied.history)


def test_the_gallery_stays_within_the_work_budget():
    small = Config(detach=False)
    assert gallery_config(small) == small  # cheap settings run whole
    big = Config(detach=False, epochs=900)
    capped = gallery_config(big)
    assert 1 <= capped.epochs < big.epochs
    assert gallery_seconds(capped) <= BUDGET_SECONDS < gallery_seconds(replace(capped, epochs=capped.epochs + 1))
    assert capped == replace(big, epochs=capped.epochs)


# The gallery: 14.4 s, retain_graph alone 10.7 s, against the 8 s promised.
COSTLIEST = Config(detach=False, width=256, shared_repeats=8, n_train=199, batch_size=1, epochs=2000)


def test_the_gallery_budget_counts_retain_graphs_walk_through_the_teachers_graph():
    retained = next(v for v in VARIANTS if v.retain_graph)
    run = estimated_seconds(COSTLIEST, "autograd")
    assert variant_seconds(COSTLIEST, retained) == run + walked_graph_seconds(COSTLIEST)
    # Every step differentiates the teacher's forward over all 200 rows again:
    # at batch 1 that is many times the run's own work.
    assert walked_graph_seconds(COSTLIEST) > 5 * run
    capped = gallery_config(COSTLIEST)  # the page's costliest settings still get a gallery
    assert capped.epochs >= 1 and gallery_seconds(capped) <= BUDGET_SECONDS


@pytest.mark.parametrize("shape", [dict(n_train=12, batch_size=5), dict(n_train=12, batch_size=12)],
                         ids=["three batches", "one batch"])
def test_attached_labels_without_retain_graph_stop_by_the_second_step(shape):
    """What the gallery's budget assumes of torch: the first backward() into
    the labels' graph fails or frees it, so the second step raises."""
    config = Config(detach=False, epochs=50, width=6, **shape)
    for variant in VARIANTS:
        if variant.attached and not variant.retain_graph:
            error = run_variant(config, variant).error
            assert error is not None and (error.epoch - 1) * config.batches_per_epoch + error.batch <= 2
            assert variant_seconds(config, variant) < estimated_seconds(replace(config, epochs=3), "autograd")


def test_a_gallery_over_budget_even_for_one_epoch_is_refused():
    huge = Config(detach=False, width=256, shared_repeats=8, n_samples=20_000, n_train=19_999,
                  batch_size=1, epochs=5)
    with pytest.raises(OverBudget, match="n_samples=20000"):
        gallery_config(huge)
