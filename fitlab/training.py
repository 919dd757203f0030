"""train(config): the blog's fit, step for step, captured as a Run."""

from __future__ import annotations

from typing import Callable

import pandas as pd
import torch
from torch import nn

from fitlab.config import Config
from fitlab.data import draw_inputs, make_labels
from fitlab.distance import DistanceTracker
from fitlab.model import build_teacher, reinitialise_as_student, untie
from fitlab.run import Run, TrainingError
from fitlab.student_teacher import StudentTeacher
from fitlab.tables import parameter_table
from fitlab.threads import use_torch_threads

Progress = Callable[[int, int], None]


def train(config: Config, progress: Progress | None = None) -> Run:
    """Make labels with the teacher, re-initialise it in place as the student,
    and fit it with SGD on the first n_train rows, as the blog does.

    `progress(done, total)` is called after each epoch. An exception from
    backward() (the blog's error when labels are not detached) ends training
    and is returned in `run.error`, never raised. config.runs_engine picks
    the engine: "fast" hands the same math to fitlab.fast.
    """
    use_torch_threads()  # per OS thread: each session trains in its own
    if config.runs_engine == "fast":
        from fitlab.fast import train_fast
        return train_fast(config, progress)
    generator = torch.Generator().manual_seed(config.seed)
    teacher = build_teacher(config, generator)
    teacher_layers = teacher.layer_arrays()  # copied now: the re-init below overwrites them
    inputs = draw_inputs(config, generator)
    labels = make_labels(teacher, inputs, config.detach)
    # The blog re-initialises the very object that made the labels.
    student = teacher
    reinitialise_as_student(student, generator)
    if not config.tied:
        student = untie(student)
    initial_layers = student.layer_arrays()
    tracker = DistanceTracker(teacher_layers, config.shared_repeats, config.epochs)
    tracker.record(0, initial_layers)

    def after_epoch(epoch: int) -> None:
        if tracker.wants(epoch):
            tracker.record(epoch, student.layer_arrays())
        if progress is not None:
            progress(epoch, config.epochs)

    history, error = fit(config, student, inputs, labels, after_epoch=after_epoch)
    final_layers = student.layer_arrays()
    return Run(
        config=config,
        history=history,
        teacher_params=parameter_table(teacher_layers),
        student_params=parameter_table(final_layers),
        error=error,
        blog_test_loss=None if error else _blog_test_figure(student, inputs[config.n_train:],
                                                            labels[config.n_train:], config.batch_size),
        engine="autograd",
        student_teacher=StudentTeacher(tracker.records(), initial_layers, final_layers, teacher_layers,
                                       inputs.numpy(), labels.detach().numpy()[:, 0],
                                       config.n_train, config.shared_repeats),
    )


def fit(config: Config, student: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, *,
        retain_graph: bool = False, after_first_backward: Callable[[], None] | None = None,
        after_epoch: Callable[[int], None] | None = None) -> tuple[pd.DataFrame, TrainingError | None]:
    """The blog's training loop: SGD on the mean squared error, the first
    n_train rows in order, the last batch possibly short; the train and test
    loss after each epoch (epoch 0 before training).

    Returns the history and the exception from backward() that stopped it,
    or None. `after_first_backward()` runs once the first backward() has
    filled the gradients, before the first step; `after_epoch(epoch)` after
    each epoch's losses are taken.
    """
    train_x, train_y = inputs[: config.n_train], labels[: config.n_train]
    test_x, test_y = inputs[config.n_train:], labels[config.n_train:]
    optimiser = torch.optim.SGD(student.parameters(), lr=config.lr)
    loss_fn = nn.MSELoss()

    def losses(epoch: int) -> dict:
        with torch.no_grad():
            return {"epoch": epoch,
                    "train_loss": loss_fn(student(train_x), train_y).item(),
                    "test_loss": loss_fn(student(test_x), test_y).item()}

    rows = [losses(0)]

    def history() -> pd.DataFrame:
        return pd.DataFrame(rows, columns=["epoch", "train_loss", "test_loss"])

    for epoch in range(1, config.epochs + 1):
        for batch, start in enumerate(range(0, config.n_train, config.batch_size), start=1):
            optimiser.zero_grad()
            stop = start + config.batch_size
            loss = loss_fn(student(train_x[start:stop]), train_y[start:stop])
            try:
                loss.backward(retain_graph=retain_graph)
            except RuntimeError as exc:
                return history(), TrainingError(type(exc).__name__, str(exc), epoch, batch)
            if after_first_backward is not None and (epoch, batch) == (1, 1):
                after_first_backward()
            optimiser.step()
        rows.append(losses(epoch))
        if after_epoch is not None:
            after_epoch(epoch)
    return history(), None


def _blog_test_figure(net, x, y, batch_size: int) -> float:
    """What the blog's test() prints: per-batch mean losses summed, not
    averaged, so it is about n_batches times the true test MSE."""
    loss_fn = nn.MSELoss()
    with torch.no_grad():
        return sum(loss_fn(net(x[s:s + batch_size]), y[s:s + batch_size]).item()
                   for s in range(0, len(x), batch_size))
