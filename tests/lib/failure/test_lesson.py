"""The lesson's claims about torch, each checked against torch itself: why
the message says AsStrided, what the labels' graph saved, what saved-tensor
hooks do, how torch's wording changed, and what set_grad_enabled does not do."""


import numpy as np
import pytest
import torch
from torch import nn

from fitlab import Config
from fitlab.blog import setup
from fitlab.data import attached_labels
from fitlab.engines.autograd import fit
from fitlab.failure.vivid import EDITS, NETS, vivid_example


def test_a_views_history_is_regenerated_as_asstrided_by_an_in_place_write_to_its_base():
    weight = nn.Linear(5, 1).weight
    view = weight.t()
    assert type(view.grad_fn).__name__ == "TBackward0"
    with torch.no_grad():
        weight.mul_(1.0)  # any in-place write to the base
    assert type(view.grad_fn).__name__ == "AsStridedBackward0"
    untouched = nn.Linear(5, 1).weight.t()
    assert type(untouched.grad_fn).__name__ == "TBackward0"


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
