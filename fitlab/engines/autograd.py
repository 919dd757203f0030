"""The autograd engine: torch, the blog's way, the reference every other
engine is held to."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import torch
from torch import nn

from fitlab.blog import blog_test_figure, setup
from fitlab.config import Config
from fitlab.frames import FrameRecorder
from fitlab.run import Progress, Run, TrainingError, diverged, make_run
from fitlab.student.distance import DistanceTracker


def train_autograd(config: Config, progress: Progress | None = None) -> Run:
    """train(config) through torch autograd; the only engine that can keep
    the labels attached, and so raise the blog's error."""
    start = setup(config)
    student, inputs, labels = start.student, start.inputs, start.labels
    initial_layers = student.layer_arrays()
    tracker = DistanceTracker(start.teacher_layers, config.shared_repeats, config.epochs,
                              tied=config.tied)
    tracker.record(0, initial_layers)
    recorder = FrameRecorder(initial_layers, config.epochs)
    recorder.record(0, initial_layers)

    def after_epoch(epoch: int) -> None:
        if tracker.wants(epoch) or recorder.wants(epoch):
            layers = student.layer_arrays()
            if tracker.wants(epoch):
                tracker.record(epoch, layers)
            if recorder.wants(epoch):
                recorder.record(epoch, layers)
        if progress is not None:
            progress(epoch, config.epochs)

    history, error = fit(config, student, inputs, labels, after_epoch=after_epoch)
    last = int(history.epoch.iloc[-1])
    if error is None and last and not recorder.wants(last):   # stopped early, diverged: a frame too
        recorder.record(last, student.layer_arrays())
    n = config.n_train
    return make_run(
        config, engine="autograd", history=history, error=error,
        blog_test_loss=None if error else blog_test_figure(
            batch_test_losses(student, inputs[n:], labels[n:], config.batch_size), config.n_test),
        teacher=start.teacher_layers, initial=initial_layers, final=student.layer_arrays(),
        records=tracker.records(), frames=recorder.frames(config.shared_repeats),
        inputs=inputs.numpy(), labels=labels.detach().numpy())


def fit(config: Config, student: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, *,
        retain_graph: bool = False, after_first_backward: Callable[[], None] | None = None,
        after_epoch: Callable[[int], None] | None = None) -> tuple[pd.DataFrame, TrainingError | None]:
    """The blog's training loop: SGD on the mean squared error, the first
    n_train rows in order, the last batch possibly short; the train and test
    loss after each epoch (epoch 0 before training).

    Returns the history and the exception from backward() that stopped it,
    or None. A run that diverges (fitlab.run.diverged) stops after that
    epoch. `after_first_backward()` runs once the first backward() has
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
            x, y = batch_rows(train_x, train_y, start, config.batch_size)
            loss = loss_fn(student(x), y)
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
        if diverged(rows[-1]["train_loss"], rows[-1]["test_loss"]):
            break
    return history(), None


def batch_rows(x: torch.Tensor, y: torch.Tensor, start: int, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows start to start + batch_size of x and y in fresh memory, as the
    blog's DataLoader stacks them: the kernels then see the blog's very
    layout, not a view at an offset into X, whatever path they pick by it."""
    stop = start + batch_size
    return x[start:stop].clone(), y[start:stop].clone()


def batch_test_losses(net: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> list[torch.Tensor]:
    """The per-batch mean losses the blog's test() adds up, batch by batch as
    its DataLoader makes them."""
    loss_fn = nn.MSELoss()
    with torch.no_grad():
        return [loss_fn(net(bx), by) for bx, by in
                (batch_rows(x, y, s, batch_size) for s in range(0, len(x), batch_size))]
