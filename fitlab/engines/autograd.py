"""The autograd engine: torch, the blog's way, the reference every other
engine is held to."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import torch
from torch import nn

from fitlab.blog import setup
from fitlab.config import Config
from fitlab.engines.threads import use_torch_threads
from fitlab.frames import FrameRecorder
from fitlab.run import Run, TrainingError, make_run
from fitlab.student.distance import DistanceTracker
from fitlab.training import Progress


def train_autograd(config: Config, progress: Progress | None = None) -> Run:
    """train(config) through torch autograd; the only engine that can keep
    the labels attached, and so raise the blog's error."""
    use_torch_threads()  # per OS thread: each session trains in its own
    start = setup(config)
    student, inputs, labels = start.student, start.inputs, start.labels
    initial_layers = student.layer_arrays()
    tracker = DistanceTracker(start.teacher_layers, config.shared_repeats, config.epochs)
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
    n = config.n_train
    return make_run(
        config, engine="autograd", history=history, error=error,
        blog_test_loss=None if error else blog_test_figure(student, inputs[n:], labels[n:], config.batch_size),
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


def blog_test_figure(net, x, y, batch_size: int) -> float:
    """What the blog's test() prints: per-batch mean losses summed, not
    averaged, so it is about n_batches times the true test MSE."""
    loss_fn = nn.MSELoss()
    with torch.no_grad():
        return sum(loss_fn(net(x[s:s + batch_size]), y[s:s + batch_size]).item()
                   for s in range(0, len(x), batch_size))
