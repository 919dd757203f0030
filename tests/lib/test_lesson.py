"""The lesson's claims about torch, each checked against torch itself: why
the message says AsStrided, what the labels' graph saved, what saved-tensor
hooks do, how torch's wording changed, and what set_grad_enabled does not do."""

import threading

import numpy as np
import pytest
import torch
from torch import nn

from fitlab import Config, train
from fitlab.blog import BLOG_ERROR_MESSAGE, setup
from fitlab.data import attached_labels
from fitlab.engines.autograd import fit
from fitlab.failure.autopsy import autopsy
from fitlab.failure.graph import grad_fns, named_in_error
from fitlab.failure.vivid import EDITS, NETS, vivid_example
from ui.tabs.failure.lesson import error_explanation, wording_note
from ui.tabs.failure.views import GRAD_MODE_NOTE, vivid_note, vivid_table


def test_a_views_history_is_regenerated_as_asstrided_by_an_in_place_write_to_its_base():
    weight = nn.Linear(5, 1).weight
    view = weight.t()
    assert type(view.grad_fn).__name__ == "TBackward0"
    with torch.no_grad():
        weight.mul_(1.0)  # any in-place write to the base
    assert type(view.grad_fn).__name__ == "AsStridedBackward0"
    untouched = nn.Linear(5, 1).weight.t()
    assert type(untouched.grad_fn).__name__ == "TBackward0"


@pytest.mark.parametrize("width", [5, 9])
def test_the_saved_view_torch_names_was_tbackward_when_saved(width):
    config = Config(detach=False, width=width)
    found = autopsy(config)
    culprit = named_in_error(found.graph, found.error)
    assert (culprit.saved_grad_fn, culprit.grad_fn) == ("TBackward0", "AsStridedBackward0")
    assert "output 0 of AsStrided" in found.error
    text = error_explanation(train(config), found)
    assert "`TBackward0`" in text and "`AsStridedBackward0`" in text and "trace of the write" in text
    assert "a strided view, hence" not in text  # the old, wrong reason


def test_the_lesson_names_exactly_what_the_graph_saved():
    config = Config(detach=False, shared_repeats=3)
    start = setup(config, attached_labels)
    # Independently: the storages of every tensor the labels' graph saved.
    raw = [getattr(fn, a) for fn in grad_fns(start.labels) for a in dir(fn) if a.startswith("_raw_saved_")]
    saved = {r.data.untyped_storage().data_ptr() for r in raw if isinstance(getattr(r, "data", None), torch.Tensor)}
    named = dict(start.teacher.named_layers())
    weights_saved = {name for name, layer in named.items() if layer.weight.untyped_storage().data_ptr() in saved}
    biases_saved = {name for name, layer in named.items() if layer.bias.untyped_storage().data_ptr() in saved}
    assert weights_saved == {"shared", "last"} and biases_saved == set()
    text = error_explanation(train(config), autopsy(config))
    said, _, _ = text.partition("Not saved:")
    assert "`shared.weight`" in said and "`last.weight`" in said
    assert "`first.weight`" not in said and ".bias`" not in said
    assert "the weights it multiplied by" not in text


def hooked_labels(teacher, inputs):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return attached_labels(teacher, inputs)


def first_grads(config, labeller, retain_graph=False):
    start = setup(config, labeller)
    grads = {}

    def keep():
        grads.update({n: p.grad.clone() for n, p in start.student.named_parameters()})

    history, error = fit(config, start.student, start.inputs, start.labels, retain_graph=retain_graph,
                         after_first_backward=keep)
    return history, error, grads


def test_identity_hooks_skip_the_check_then_the_loop_fails_at_batch_2():
    config = Config(detach=False, epochs=3)
    _, error, grads = first_grads(config, hooked_labels)
    _, _, right = first_grads(Config(epochs=3), None)
    assert max((grads[k] - right[k]).abs().max().item() for k in right) > 1e-3  # wrong gradients
    assert (error.epoch, error.batch) == (1, 2)
    assert error.message.startswith("Trying to backward through the graph a second time")


def test_identity_hooks_with_retain_graph_train_on_wrong_gradients():
    history, error, _ = first_grads(Config(detach=False, epochs=3), hooked_labels, retain_graph=True)
    detached, _, _ = first_grads(Config(epochs=3), None)
    assert error is None and np.isfinite(history.train_loss).all()
    assert not np.allclose(history.train_loss[1:], detached.train_loss[1:], rtol=1e-3)


def test_torchs_wording_differs_from_the_blogs_and_the_note_says_how():
    message = train(Config(detach=False)).error.message
    assert "output 0 of AsStrided," in message and "AsStridedBackward0" not in message
    assert "set_detect_anomaly(True, check_nan=False)" in message
    assert "output 0 of AsStridedBackward0," in BLOG_ERROR_MESSAGE
    note = wording_note(message, torch.__version__)
    assert "`AsStrided` where the blog's reads `AsStridedBackward0`" in note
    assert "`torch.autograd.set_detect_anomaly(True, check_nan=False)`" in note and torch.__version__ in note
    assert wording_note(BLOG_ERROR_MESSAGE, "old") is None  # the same wording: nothing to say


def test_set_grad_enabled_true_changes_nothing_here():
    out = {}

    def fresh_thread():  # grad mode is per thread: see its default where the blog's script starts
        out["default"] = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        out["anomaly"] = torch.is_anomaly_enabled()
        out["error"] = train(Config(detach=False)).error.message

    thread = threading.Thread(target=fresh_thread)
    thread.start()
    thread.join()
    assert out["default"] is True and out["anomaly"] is False
    assert out["error"] == train(Config(detach=False)).error.message
    assert "`torch.is_grad_enabled()` is `True`" in GRAD_MODE_NOTE
    assert "torch.autograd.set_detect_anomaly(True)" in GRAD_MODE_NOTE


# ---- the blog's "more vivid example" -----------------------------------------

@pytest.mark.parametrize("overrides", [{}, dict(width=7, shared_repeats=0)])
def test_the_vivid_example_runs_on_the_blogs_net_and_raises_after_a_relu(overrides):
    cases = {(c.net, c.edit): c for c in vivid_example(Config(detach=False, **overrides))}
    assert set(cases) == {(n, e) for n in NETS for e in EDITS}
    for edit in EDITS:
        plain, relu = cases[(NETS[0], edit)], cases[(NETS[1], edit)]
        assert plain.error is None and plain.node == "AddmmBackward0" and "result" not in plain.saved
        assert relu.node == "ReluBackward0" and relu.saved == ("result",)
        assert "output 0 of Relu, is at version 1; expected version 0" in relu.error


def test_the_vivid_example_independently():
    # The blog's snippet as written, on a fresh net and a net ending in ReLU.
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(10, 5), nn.ReLU(), nn.Linear(5, 1))
    x, y = torch.randn(20, 10), torch.randn(20, 1)
    label = net(x)
    label += 1
    nn.MSELoss()(label, y).backward()  # runs: addmm saved its inputs, not its output
    label = nn.Sequential(net, nn.ReLU())(x)
    label[0, 0] = label[0, 0] * 2
    with pytest.raises(RuntimeError, match="output 0 of Relu, is at version 1; expected version 0"):
        nn.MSELoss()(label, y).backward()


def test_the_vivid_page_words_come_from_the_runs():
    cases = vivid_example(Config(detach=False))
    note = vivid_note(cases)
    assert "2 of 4 edits run and 2 raise" in note and "`AddmmBackward0`" in note and "`result`" in note
    table = vivid_table(cases)
    assert list(table["loss.backward()"]) == ["✓ runs", "✓ runs"] + [
        "✗ RuntimeError: [torch.FloatTensor [200, 1]], which is output 0 of Relu, is at version 1; "
        "expected version 0"] * 2
