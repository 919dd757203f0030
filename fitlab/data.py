"""The inputs and labels: X drawn from the run's generator, labels from the teacher."""

from __future__ import annotations

import torch

from fitlab.config import Config
from fitlab.model import TiedNet


def draw_inputs(config: Config, generator: torch.Generator) -> torch.Tensor:
    """X, shape (n_samples, in_features), standard normal: the blog's `torch.randn`."""
    return torch.randn(config.n_samples, config.in_features, generator=generator)


def make_labels(teacher: TiedNet, inputs: torch.Tensor, detach: bool) -> torch.Tensor:
    """The blog's `get_label`: the teacher's outputs as a column.

    With detach=False the labels stay attached to the teacher's graph, which
    keeps references to the teacher's weights as they are now. That is the
    blog's bug: any later in-place change to those weights makes backward()
    through the labels fail.
    """
    out = teacher(inputs)
    if detach:
        out = out.detach()
    return out.reshape((-1, 1))


def attached_labels(teacher: TiedNet, inputs: torch.Tensor) -> torch.Tensor:
    """The blog's labels as it wrote them: attached to the teacher's graph."""
    return make_labels(teacher, inputs, detach=False)


def detached_labels(teacher: TiedNet, inputs: torch.Tensor) -> torch.Tensor:
    """The blog's fix: the labels cut off the teacher's graph."""
    return make_labels(teacher, inputs, detach=True)
