"""The fix gallery: the blog's script and its candidate fixes, each run for real.

Every variant changes one or two lines of the blog's script (Variant.lines):
how the labels are made, whether the student is a copy of the teacher, how it
is re-initialised, or how backward() is called. Each is trained on the same draws as train(config)
and reports what really happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum, auto

import numpy as np
import pandas as pd
import torch
from torch import nn

from fitlab.blog import setup
from fitlab.config import Config
from fitlab.data import attached_labels, detached_labels, make_labels
from fitlab.engines.autograd import fit
from fitlab.explain.decode import freed_graph
from fitlab.failure.versions import named_parameters
from fitlab.model import TiedNet, reinitialise_as_student
from fitlab.run import TrainingError
from fitlab.serving.budget import BUDGET_SECONDS, OverBudget, costly_fields, estimated_seconds, walked_graph_seconds


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

    key           the variant, as an identifier (the page words it: ui/tabs/failure/gallery.py)
    change        what differs from the blog's script
    lines         how many of the script's lines that changes
    make_labels   (teacher, X) -> labels
    copy_teacher  the student is a deep copy of the teacher, taken before the re-init
    reinitialise  the in-place re-init of the student
    retain_graph  passed to loss.backward()
    attached      whether the labels keep the teacher's graph (then backward()
                  walks into it: it fails by the second step, or, with
                  retain_graph, walks it again at every step)
    """

    key: str
    change: str
    make_labels: Callable[[TiedNet, torch.Tensor], torch.Tensor]
    copy_teacher: bool = False
    reinitialise: Callable[[TiedNet, torch.Generator], None] = reinitialise_as_student
    retain_graph: bool = False
    attached: bool = True
    lines: int = 1


BLOG = Variant("blog", "labels = net(X).reshape((-1, 1))", attached_labels)
DETACH = Variant("detach", "labels = net(X).detach().reshape((-1, 1))", detached_labels,
                 attached=False)
HOOKS = Variant("identity_hooks",
                "with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t): labels = …",
                _labels_through_identity_hooks)
VARIANTS: tuple[Variant, ...] = (
    BLOG,
    DETACH,
    Variant("no_grad",
            "with torch.no_grad(): labels = net(X).reshape((-1, 1))", _labels_no_grad, attached=False),
    Variant("clone", "labels = net(X).clone().reshape((-1, 1))", _labels_cloned),
    Variant("no_reshape", "labels = net(X)", _labels_not_reshaped),
    Variant("deep_copy",
            "student = copy.deepcopy(net)  # before the re-init; labels not detached",
            attached_labels, copy_teacher=True),
    Variant("deep_copy_retain_graph", "loss.backward(retain_graph=True)  # with the deep copy",
            attached_labels, copy_teacher=True, retain_graph=True, lines=2),
    Variant("data_reinit", "nn.init.kaiming_normal_(m.weight.data)  # and m.bias.data.zero_()",
            attached_labels, reinitialise=reinitialise_through_data, lines=2),
    HOOKS,
    Variant("identity_hooks_retain_graph", "loss.backward(retain_graph=True)  # with the hooks",
            _labels_through_identity_hooks, retain_graph=True, lines=2),
)


@dataclass(frozen=True)
class FixOutcome:
    """What one variant did.

    config             the settings it ran on
    history            epoch, train_loss, test_loss (epoch 0 before training)
    error              the exception from backward() that stopped it, or None
    first_gradients    the student's gradients after the first backward(), by
                       parameter name (empty if that backward failed)
    teacher_gradient   norm of the gradients that reached the teacher's own
                       weights, when the teacher is a separate net; else None
    """

    config: Config
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
    return FixOutcome(config, variant, history, error, first, teacher_gradient)


def variant_seconds(config: Config, variant: Variant) -> float:
    """An upper bound, as fitlab.serving.budget estimates, of how long `variant`
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


def unchecked_loop(config: Config) -> tuple[FixOutcome, float | None]:
    """The blog's loop with identity saved-tensor hooks around the labels
    (HOOKS), which skip the version check, run on `config`; and how far its
    first gradients are from .detach()'s (gradient_gap). The detached run is
    cut to one epoch: its first step does not depend on how many follow."""
    hooked = run_variant(config, HOOKS)
    return hooked, gradient_gap(hooked, run_variant(replace(config, epochs=1), DETACH))


def unchecked_seconds(config: Config) -> float:
    """An upper bound of how long unchecked_loop(config) takes."""
    return variant_seconds(config, HOOKS) + estimated_seconds(replace(config, epochs=1), "autograd")


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


# The right variants' first gradients equal .detach()'s exactly (the same ops
# on the same values); the wrong ones, from the re-initialised weights, were
# off by 1.6 to 22 at the settings measured (default, width 6 × 3 repeats,
# width 9 with one batch). The tolerance only allows float32 rounding.
GRADIENT_TOLERANCE = 1e-6


class Judgement(Enum):
    """A variant as a fix of the blog's error."""

    FIXES = auto()
    NO_FIX = auto()
    CATCH = auto()


class Failure(Enum):
    """Why a variant that raised is no fix."""

    BLOG = auto()  # the blog's own run: the in-place error
    SAME = auto()  # the blog's very error
    OTHER = auto()  # a different error
    FREED_GRAPH = auto()  # a backward through the graph the first backward freed


class Catch(Enum):
    """Something wrong with a variant beyond whether it raised."""

    WRONG_GRADIENTS = auto()  # the first step's gradients differ from .detach()'s
    TEACHER_GRADIENTS = auto()
    WALKS_LABEL_GRAPH = auto()  # every backward walks the labels' graph again, kept in memory
    TRAINS_ON_WRONG_GRADIENTS = auto()


@dataclass(frozen=True)
class Verdict:
    """What one variant's run says about it, against the blog's run and the
    detached run (the right answer).

    judgement      fixes it, no fix, or runs with a catch
    catches        what is wrong beyond raising, in the order worth reading
    failure        why it is no fix when it raised, else None
    gradient_gap   gradient_gap against the detached run, or None
    identical      it trained, and its history equals the detached run's
    """

    judgement: Judgement
    catches: tuple[Catch, ...] = ()
    failure: Failure | None = None
    gradient_gap: float | None = None
    identical: bool = False


def verdict(outcome: FixOutcome, blog: FixOutcome, detached: FixOutcome) -> Verdict:
    """The verdict on `outcome`, from what the runs measured."""
    err = outcome.error
    gap = gradient_gap(outcome, detached)
    wrong = gap is not None and gap > GRADIENT_TOLERANCE
    catches = [Catch.WRONG_GRADIENTS] if wrong else []
    if outcome.teacher_gradient is not None:
        catches.append(Catch.TEACHER_GRADIENTS)
    if err is None:
        if outcome.variant.retain_graph:
            catches.append(Catch.WALKS_LABEL_GRAPH)
        if wrong:
            catches.append(Catch.TRAINS_ON_WRONG_GRADIENTS)
        identical = outcome.history.equals(detached.history) and outcome is not detached
        return Verdict(Judgement.CATCH if catches else Judgement.FIXES, tuple(catches), None, gap, identical)
    if outcome is blog:
        return Verdict(Judgement.NO_FIX, (), Failure.BLOG, gap)
    if blog.error is not None and err.message == blog.error.message:
        return Verdict(Judgement.NO_FIX, (), Failure.SAME, gap)
    failure = Failure.FREED_GRAPH if freed_graph(err.message) else Failure.OTHER
    return Verdict(Judgement.NO_FIX, tuple(catches), failure, gap)


def references(outcomes: tuple[FixOutcome, ...]) -> tuple[FixOutcome, FixOutcome]:
    """A gallery's BLOG and DETACH outcomes, the two every verdict is judged against."""
    # By value: outcomes that went through a cache hold unpickled copies of the variants.
    return (next(o for o in outcomes if o.variant == BLOG), next(o for o in outcomes if o.variant == DETACH))


def verdicts(outcomes: tuple[FixOutcome, ...]) -> tuple[Verdict, ...]:
    """The verdict on each outcome of a gallery, judged against its references."""
    blog, detached = references(outcomes)
    return tuple(verdict(o, blog, detached) for o in outcomes)
