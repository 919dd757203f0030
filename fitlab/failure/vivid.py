"""The blog's "more vivid example", run: an in-place edit of the net's output
before the loss (`label += 1`, `label[0, 0] = label[0, 0] * 2`).

The blog says such edits break backward. They do only when the node that
made the output saved that output: the blog's net ends in addmm, which saves
its inputs, so the edits run; a net ending in ReLU (which saves its result)
raises the in-place error.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from fitlab.blog import setup
from fitlab.config import Config
from fitlab.data import detached_labels

EDITS = {
    "label += 1": lambda label: label.add_(1),
    "label[0, 0] = label[0, 0] * 2": lambda label: label.__setitem__((0, 0), label[0, 0] * 2),
}
NETS = ("blog", "blog_relu")  # the blog's net, and the same ending in a ReLU (the page words them)


@dataclass(frozen=True)
class VividCase:
    """One edit on one net.

    net     which net made `label` (one of NETS)
    edit    the in-place edit (a key of EDITS)
    node    the grad_fn that made `label`, e.g. "AddmmBackward0"
    saved   what that node saved for backward, e.g. ("mat1", "mat2") or ("result",)
    error   torch's message from loss.backward(), or None if it ran
    """

    net: str
    edit: str
    node: str
    saved: tuple[str, ...]
    error: str | None


def vivid_example(config: Config) -> tuple[VividCase, ...]:
    """Each edit of EDITS on each net of NETS (the config's student, from the
    blog's draws), then `loss = MSELoss(label, y)` against the detached
    labels and `loss.backward()`."""
    cases = []
    for net_name in NETS:
        for edit_name, edit in EDITS.items():
            start = setup(config, detached_labels)
            net = start.student if net_name == NETS[0] else nn.Sequential(*start.student, nn.ReLU())
            label = net(start.inputs)
            node = label.grad_fn
            saved = tuple(a.removeprefix("_raw_saved_") for a in dir(node) if a.startswith("_raw_saved_"))
            edit(label)
            loss = nn.MSELoss()(label, start.labels)
            try:
                loss.backward()
                error = None
            except RuntimeError as exc:
                error = str(exc)
            cases.append(VividCase(net_name, edit_name, type(node).__name__, saved, error))
    return tuple(cases)
