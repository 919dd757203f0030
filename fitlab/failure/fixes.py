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
from fitlab.budget import BUDGET_SECONDS, OverBudget, costly_fields, estimated_seconds, walked_graph_seconds
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
    attached      whether the labels keep the teacher's graph (then backward()
                  walks into it: it fails by the second step, or, with
                  retain_graph, walks it again at every step)
    """

    name: str
    change: str
    make_labels: Callable[[TiedNet, torch.Tensor], torch.Tensor]
    copy_teacher: bool = False
    reinitialise: Callable[[TiedNet, torch.Generator], None] = reinitialise_as_student
    retain_graph: bool = False
    attached: bool = True


BLOG = Variant("as the blog wrote it", "labels = net(X).reshape((-1, 1))", attached_labels)
DETACH = Variant(".detach() the labels", "labels = net(X).detach().reshape((-1, 1))", detached_labels,
                 attached=False)
VARIANTS: tuple[Variant, ...] = (
    BLOG,
    DETACH,
    Variant("labels under torch.no_grad()",
            "with torch.no_grad(): labels = net(X).reshape((-1, 1))", _labels_no_grad, attached=False),
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


def variant_seconds(config: Config, variant: Variant) -> float:
    """An upper bound, as fitlab.budget estimates, of how long `variant`
    takes on `config`. Detached labels train to the end: one run. Attached
    labels with retain_graph train to the end too, and every step walks the
    teacher's graph again. Attached labels without it stop by the second
    step: the first backward() into the labels' graph either fails or frees
    it, so the second raises; that is at most one epoch, or two of one batch."""
    run = estimated_seconds(config, "autograd")
    if not variant.attached:
        return run
    if variant.retain_graph:
        return run + walked_graph_seconds(config)
    stopped = replace(config, epochs=min(config.epochs, 1 if config.batches_per_epoch > 1 else 2))
    return estimated_seconds(stopped, "autograd")


def gallery_seconds(config: Config) -> float:
    """An upper bound of how long the whole gallery takes on `config`."""
    return sum(variant_seconds(config, v) for v in VARIANTS)


def gallery_config(config: Config) -> Config:
    """`config` with its epochs cut, if need be, so that the whole gallery
    stays within the work budget (BUDGET_SECONDS), like a single run.
    OverBudget if even one epoch of it is over."""
    if gallery_seconds(config) <= BUDGET_SECONDS:
        return config
    affordable, over = 0, config.epochs  # the cost grows with the epochs
    while over - affordable > 1:
        middle = (affordable + over) // 2
        if gallery_seconds(replace(config, epochs=middle)) <= BUDGET_SECONDS:
            affordable = middle
        else:
            over = middle
    if affordable == 0:
        raise OverBudget(gallery_seconds(replace(config, epochs=1)), BUDGET_SECONDS,
                         costly_fields(replace(config, epochs=1)))
    return replace(config, epochs=affordable)


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
