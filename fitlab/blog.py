"""The blog's setup, written once: generator → teacher → inputs → labels →
the student's in-place re-initialisation (→ untie); and the blog's test
figure, also written once.

Every run, replay and variant of fitlab starts here, so every one draws the
same numbers in the same order as the blog's script does with
`torch.manual_seed` set to the seed: the shared layer, the first layer, the last, X,
then the student's re-initialisation.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch

from fitlab.config import Config
from fitlab.data import draw_inputs, make_labels
from fitlab.model import TiedNet, build_teacher, reinitialise_as_student, untie
from fitlab.numerics.threads import use_torch_threads
from fitlab.weights import Layers

# The error as the blog post quotes it, from an older torch: 2.13 words the
# tensor's origin and the hint differently (the lesson says how).
BLOG_ERROR_MESSAGE = (
    "one of the variables needed for gradient computation has been modified by an inplace "
    "operation: [torch.FloatTensor [5, 1]], which is output 0 of AsStridedBackward0, is at "
    "version 2; expected version 1 instead. Hint: enable anomaly detection to find the "
    "operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).")

# The settings the task is made from: setup draws the teacher and X from the
# seed at these shapes, and the labels are the teacher's outputs through its
# shared layer's uses. Runs that differ in one of them learn different
# teachers; the others (lr, batch size, epochs, rows trained on, tying,
# detach, engine) train on the same task.
TASK_FIELDS = ("seed", "width", "shared_repeats", "n_samples", "in_features")


def task_differences(configs: list[Config]) -> list[str]:
    """The TASK_FIELDS in which `configs` differ: empty if they share a teacher."""
    return [f for f in TASK_FIELDS if len({getattr(c, f) for c in configs}) > 1]


# (teacher, X) -> labels; None when the caller makes them itself.
Labeller = Callable[[TiedNet, torch.Tensor], "torch.Tensor | None"]
Reinitialiser = Callable[[TiedNet, torch.Generator], None]


def no_labels(teacher: TiedNet, inputs: torch.Tensor) -> None:
    """A labeller for callers that compute the labels themselves."""
    return None


@dataclass(frozen=True, eq=False)
class Start:
    """Where a run starts.

    teacher         the net that made the labels; the same object as the
                    student (re-initialised in place) unless it was copied
    teacher_layers  the teacher's (name, weight, bias) as they were when the
                    labels were made (copies: the re-init overwrites them)
    inputs          X, (n_samples, in_features)
    labels          (n_samples, 1), or None from no_labels
    student         the net to train, re-initialised (and untied if asked)
    """

    teacher: TiedNet
    teacher_layers: Layers
    inputs: torch.Tensor
    labels: torch.Tensor | None
    student: TiedNet


def setup(config: Config, labeller: Labeller | None = None, *, copy_teacher: bool = False,
          reinitialise: Reinitialiser = reinitialise_as_student,
          after_labels: Callable[[TiedNet, torch.Tensor | None], None] | None = None) -> Start:
    """The blog's script up to its training loop, for `config`.

    `labeller` makes the labels (default: the blog's, detached as
    config.detach says); `copy_teacher` trains a deep copy instead of the
    teacher itself; `reinitialise` is the in-place re-init;
    `after_labels(teacher, labels)` sees the teacher right after the labels
    were made, before the re-init writes to it. The calling thread gets
    fitlab's torch thread count (fitlab.numerics.threads): every torch job
    starts here, in whichever session's thread runs it.
    """
    use_torch_threads()
    generator = torch.Generator().manual_seed(config.seed)
    teacher = build_teacher(config, generator)
    teacher_layers = teacher.layer_arrays()
    inputs = draw_inputs(config, generator)
    if labeller is None:
        labels = make_labels(teacher, inputs, config.detach)
    else:
        labels = labeller(teacher, inputs)
    if after_labels is not None:
        after_labels(teacher, labels)
    student = copy.deepcopy(teacher) if copy_teacher else teacher
    reinitialise(student, generator)
    if not config.tied:
        student = untie(student)
    return Start(teacher, teacher_layers, inputs, labels, student)


def blog_test_figure(batch_losses, n_test: int) -> float:
    """What the blog's `test()` prints, from its per-batch mean losses (float32
    scalars, in batch order), computed as it computes it: each batch's loss is
    added into every entry of `torch.zeros_like(test_label)` (n_test × 1,
    float32), and the figure is that tensor's sum over its n_test entries.

    So it is the sum of the batch means, not their mean: about n_batches times
    the true test MSE (30 times at the blog's 150 test rows in batches of 5).
    """
    loss_sum = torch.zeros(n_test, 1)
    for loss in batch_losses:
        loss_sum += torch.as_tensor(loss, dtype=torch.float32)
    return (torch.sum(loss_sum) / len(loss_sum)).item()
