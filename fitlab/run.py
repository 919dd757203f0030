"""What a training run returns: plain values, picklable, no live tensors."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from fitlab.baseline import Baseline, constant_baseline
from fitlab.config import Config
from fitlab.frames import Frames
from fitlab.student.distance import DistanceRecords
from fitlab.student.records import StudentTeacher
from fitlab.weights import Layers, parameter_table

# progress(done, total): what an engine (or a sweep) reports after each epoch.
Progress = Callable[[int, int], None]


def diverged(train_loss, test_loss) -> bool:
    """Whether training has blown up: the train or test loss is NaN or inf
    (for a stack of runs, arrays of their losses: in every run). Engines stop
    at the epoch this first holds, as the run's last: once a loss is not
    finite SGD's next steps give NaN for ever, so more epochs only cost time
    (a width-256 run NaN from epoch 1 took 21 s to reach epoch 1200)."""
    if not isinstance(train_loss, np.ndarray):   # one run's two scalars, checked every epoch
        return not (math.isfinite(train_loss) and math.isfinite(test_loss))
    return bool(np.all(~(np.isfinite(train_loss) & np.isfinite(test_loss))))


@dataclass(frozen=True)
class TrainingError:
    """An exception raised by the real backward() of a run, as torch said it."""

    type: str      # the exception's class name, e.g. "RuntimeError"
    message: str   # torch's own message, unedited
    epoch: int     # 1-based epoch in which it was raised
    batch: int     # 1-based batch within that epoch


@dataclass(frozen=True, eq=False)
class Run:
    """The outcome of train(config).

    history         DataFrame: epoch, train_loss, test_loss; epoch 0 is before
                    training, epoch e after e passes. Stops early on an
                    error, and at the epoch training diverged (diverged()).
    teacher_params  tidy DataFrame (parameter, uses, row, col, value) of the
                    teacher the labels came from; a bias has col 0, uses is
                    how often the forward pass applies the layer.
    student_params  the same for the student at the end of training.
    error           None, or the exception that stopped training.
    blog_test_loss  the test figure the blog's script would print for the
                    final student: the sum of per-batch mean losses.
    engine          the engine that actually trained it: "fast" or "autograd".
    student_teacher what the student-versus-teacher views are computed from
                    (fitlab.student.records); the views are the properties
                    distances, test_predictions and loss_slices, computed on
                    first use.
    frames          the student's parameters at evenly spaced epochs
                    (fitlab.frames), epoch 0 and the last included.
    """

    config: Config
    history: pd.DataFrame
    teacher_params: pd.DataFrame
    student_params: pd.DataFrame
    error: TrainingError | None
    blog_test_loss: float | None
    engine: str
    student_teacher: StudentTeacher
    frames: Frames

    @property
    def distances(self) -> pd.DataFrame:
        """epoch, layer, raw, matched: each layer's distance from the teacher,
        raw and after matching hidden units (fitlab.student.distance), at a bounded
        set of epochs."""
        return self.student_teacher.distances

    @property
    def test_predictions(self) -> pd.DataFrame:
        """label, prediction: the final student on the test rows."""
        return self.student_teacher.test_predictions

    @property
    def loss_slices(self) -> pd.DataFrame:
        """path, t, train_loss, test_loss: the loss along the straight lines
        from the initial and from the final student (t = 0) to the teacher
        (t = 1)."""
        return self.student_teacher.loss_slices

    @cached_property
    def baseline(self) -> Baseline:
        """The constant predictor (the training labels' mean) on this run's
        rows, and the labels' variances R² is measured against."""
        return constant_baseline(self.student_teacher.labels, self.config.n_train)

    @property
    def last_epoch(self) -> int:
        """The epoch training ended at: config.epochs, or earlier if it
        diverged or failed."""
        return int(self.history.epoch.iloc[-1])

    @cached_property
    def diverged_at(self) -> int | None:
        """The first epoch whose train or test loss is not a finite number
        (NaN or inf: training blew up), or None if every loss is finite.
        Found once per run: a cached page asks a dozen times."""
        history = self.history
        finite = np.isfinite(history.train_loss) & np.isfinite(history.test_loss)
        if finite.all():
            return None
        return int(history.epoch[~finite].iloc[0])


def make_run(config: Config, *, engine: str, history: pd.DataFrame, error: TrainingError | None,
             blog_test_loss: float | None, teacher: Layers, initial: Layers, final: Layers,
             records: DistanceRecords, frames: Frames, inputs: np.ndarray, labels: np.ndarray) -> Run:
    """The one place a Run is built, from what every engine has at the end:
    the teacher's, the initial and the final student's (name, weight, bias),
    the distance records, the frames, and X and its labels (n_samples, 1) as
    arrays."""
    repeats = config.shared_repeats
    return Run(
        config=config, history=history,
        teacher_params=parameter_table(teacher, repeats), student_params=parameter_table(final, repeats),
        error=error, blog_test_loss=blog_test_loss, engine=engine, frames=frames,
        student_teacher=StudentTeacher(records, initial, final, teacher, inputs, labels[:, 0],
                                       config.n_train, config.shared_repeats))
