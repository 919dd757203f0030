"""The fix gallery: the blog's script and its candidate fixes, each run for real.

Every variant changes one line of the blog's script: how the labels are made,
whether the student is a copy of the teacher, how it is re-initialised, or
how backward() is called. Each is trained on the same draws as train(config)
and reports what really happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch
from torch import nn

from fitlab.blog import setup
from fitlab.budget import BUDGET_SECONDS, estimated_seconds
from fitlab.config import Config
from fitlab.data import attached_labels, detached_labels, make_labels
from fitlab.engines.autograd import fit
from fitlab.failure.versions import named_parameters
from fitlab.model import TiedNet, reinitialise_as_student
from fitlab.run import TrainingError


def _labels_no_grad(teacher: TiedNet, inputs: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return make_labels(teacher, inputs, detach=False)


def _labels_cloned(teacher: TiedNet, inputs: torch.Tensor) -> torch.Tensor:
    return teacher(inputs).clone().reshape((-1, 1))


def _labels_not_reshaped(teacher: TiedNet, inputs: torch.Tensor) -> torch.Tensor:
    return teacher(inputs)


def _labels_through_identity_hooks(teacher: TiedNet, inputs: torch.Tensor) -> torch.Tensor:
    # Hooks that hand back the very tensor: torch then keeps no version to check.
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return attached_labels(teacher, inputs)


def reinitialise_through_data(net: TiedNet, generator: torch.Generator) -> None:
    """The student's re-init with the same draws as reinitialise_as_student,
    written through `.data`: the values change, the version counters do not."""
    for _, layer in net.named_layers():
        nn.init.kaiming_normal_(layer.weight.data, generator=generator)
        nn.init.zeros_(layer.bias.data)


@dataclass(frozen=True)
class Variant:
    """One way to write the script.

    name          what the variant is, in a few words
    change        the one line that differs from the blog's script
    make_labels   (teacher, X) -> labels
    copy_teacher  the student is a deep copy of the teacher, taken before the re-init
    reinitialise  the in-place re-init of the student
    retain_graph  passed to loss.backward()
    """

    name: str
    change: str
    make_labels: Callable[[TiedNet, torch.Tensor], torch.Tensor]
    copy_teacher: bool = False
    reinitialise: Callable[[TiedNet, torch.Generator], None] = reinitialise_as_student
    retain_graph: bool = False


BLOG = Variant("as the blog wrote it", "labels = net(X).reshape((-1, 1))", attached_labels)
DETACH = Variant(".detach() the labels", "labels = net(X).detach().reshape((-1, 1))", detached_labels)
VARIANTS: tuple[Variant, ...] = (
    BLOG,
    DETACH,
    Variant("labels under torch.no_grad()",
            "with torch.no_grad(): labels = net(X).reshape((-1, 1))", _labels_no_grad),
    Variant(".clone() the labels", "labels = net(X).clone().reshape((-1, 1))", _labels_cloned),
    Variant("no reshape (the blog's suspect)", "labels = net(X)", _labels_not_reshaped),
    Variant("deep copy of the teacher",
            "student = copy.deepcopy(net)  # before the re-init; labels not detached",
            attached_labels, copy_teacher=True),
    Variant("deep copy + retain_graph=True", "loss.backward(retain_graph=True)  # with the deep copy",
            attached_labels, copy_teacher=True, retain_graph=True),
    Variant("re-init through .data", "nn.init.kaiming_normal_(m.weight.data)  # and m.bias.data.zero_()",
            attached_labels, reinitialise=reinitialise_through_data),
    Variant("identity saved-tensor hooks",
            "with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t): labels = …",
            _labels_through_identity_hooks),
    Variant("identity hooks + retain_graph=True", "loss.backward(retain_graph=True)  # with the hooks",
            _labels_through_identity_hooks, retain_graph=True),
)


@dataclass(frozen=True)
class FixOutcome:
    """What one variant did.

    history            epoch, train_loss, test_loss (epoch 0 before training)
    error              the exception from backward() that stopped it, or None
    first_gradients    the student's gradients after the first backward(), by
                       parameter name (empty if that backward failed)
    teacher_gradient   norm of the gradients that reached the teacher's own
                       weights, when the teacher is a separate net; else None
    """

    variant: Variant
    history: pd.DataFrame
    error: TrainingError | None
    first_gradients: dict[str, np.ndarray]
    teacher_gradient: float | None


def run_variant(config: Config, variant: Variant) -> FixOutcome:
    """Train `config` the way `variant` writes the script."""
    start = setup(config, variant.make_labels, copy_teacher=variant.copy_teacher,
                  reinitialise=variant.reinitialise)
    teacher, student, inputs, labels = start.teacher, start.student, start.inputs, start.labels
    first: dict[str, np.ndarray] = {}

    def keep_first_gradients() -> None:
        first.update({name: p.grad.detach().numpy().copy()
                      for name, p in named_parameters(student.named_layers())})

    history, error = fit(config, student, inputs, labels, retain_graph=variant.retain_graph,
                         after_first_backward=keep_first_gradients)
    separate = {id(p) for p in teacher.parameters()}.isdisjoint(id(p) for p in student.parameters())
    grads = [p.grad for p in teacher.parameters() if p.grad is not None]
    teacher_gradient = (float(torch.sqrt(sum((g ** 2).sum() for g in grads))) if separate and grads else None)
    return FixOutcome(variant, history, error, first, teacher_gradient)


# The gallery costs about this many runs of the settings: five variants
# train to the end, and the two with retain_graph re-walk the teacher's graph
# every step (one to three runs' worth more each); the variants that fail stop
# at once.
GALLERY_RUNS = 8


def gallery_config(config: Config) -> Config:
    """`config` with its epochs cut, if need be, so that the whole gallery
    stays within the work budget (BUDGET_SECONDS), like a single run."""
    affordable = int(config.epochs * BUDGET_SECONDS / (GALLERY_RUNS * estimated_seconds(config, "autograd")))
    return replace(config, epochs=max(1, min(config.epochs, affordable)))


def fix_gallery(config: Config) -> tuple[FixOutcome, ...]:
    """Every variant of VARIANTS, run for gallery_config(config)."""
    return tuple(run_variant(gallery_config(config), v) for v in VARIANTS)


def gradient_gap(outcome: FixOutcome, reference: FixOutcome) -> float | None:
    """Largest absolute difference between the first backward's gradients of
    two outcomes, or None if either first backward failed."""
    if not outcome.first_gradients or not reference.first_gradients:
        return None
    return max(float(np.abs(outcome.first_gradients[k] - reference.first_gradients[k]).max())
               for k in reference.first_gradients)
