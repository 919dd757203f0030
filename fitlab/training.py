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
from fitlab.student_teacher import student_teacher_fields
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
    teacher_params = parameter_table(teacher.named_layers())
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

    train_x, train_y = inputs[: config.n_train], labels[: config.n_train]
    test_x, test_y = inputs[config.n_train:], labels[config.n_train:]
    optimiser = torch.optim.SGD(student.parameters(), lr=config.lr)
    loss_fn = nn.MSELoss()

    def losses(epoch: int) -> dict:
        with torch.no_grad():
            return {"epoch": epoch,
                    "train_loss": loss_fn(student(train_x), train_y).item(),
                    "test_loss": loss_fn(student(test_x), test_y).item()}

    rows, error = [losses(0)], None
    for epoch in range(1, config.epochs + 1):
        error = _train_epoch(student, optimiser, loss_fn, train_x, train_y, config.batch_size, epoch)
        if error is not None:
            break
        rows.append(losses(epoch))
        if tracker.wants(epoch):
            tracker.record(epoch, student.layer_arrays())
        if progress is not None:
            progress(epoch, config.epochs)

    return Run(
        config=config,
        history=pd.DataFrame(rows, columns=["epoch", "train_loss", "test_loss"]),
        teacher_params=teacher_params,
        student_params=parameter_table(student.named_layers()),
        error=error,
        blog_test_loss=None if error else _blog_test_figure(student, loss_fn, test_x, test_y, config.batch_size),
        engine="autograd",
        **student_teacher_fields(config, tracker, initial_layers, student.layer_arrays(),
                                 teacher_layers, inputs.numpy(), labels.detach().numpy()),
    )


def _train_epoch(net, optimiser, loss_fn, x, y, batch_size: int, epoch: int) -> TrainingError | None:
    """One pass over the rows in order, the last batch possibly short."""
    for batch, start in enumerate(range(0, len(x), batch_size), start=1):
        optimiser.zero_grad()
        loss = loss_fn(net(x[start:start + batch_size]), y[start:start + batch_size])
        try:
            loss.backward()
        except RuntimeError as exc:
            return TrainingError(type(exc).__name__, str(exc), epoch, batch)
        optimiser.step()
    return None


def _blog_test_figure(net, loss_fn, x, y, batch_size: int) -> float:
    """What the blog's test() prints: per-batch mean losses summed, not
    averaged, so it is about n_batches times the true test MSE."""
    with torch.no_grad():
        return sum(loss_fn(net(x[s:s + batch_size]), y[s:s + batch_size]).item()
                   for s in range(0, len(x), batch_size))
