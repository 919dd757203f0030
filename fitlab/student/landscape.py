"""The loss along a straight line in weight space: a 1-D slice of the landscape."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fitlab.weights import (
    Layers,
    forward,
    mean_squared_error,
    teacher_as_student,
    use_order,
)

N_POINTS = 31
SLICE_COLUMNS = ["path", "t", "train_loss", "test_loss"]


def blend(start: Layers, end: Layers, ts: np.ndarray) -> Layers:
    """The points (1 − t)·start + t·end for each t of `ts`, layer by layer,
    as one stack of nets (leading axis t; names from start)."""
    t_w, t_b = ts[:, None, None], ts[:, None]
    return [(name, (1 - t_w) * w + t_w * ew, (1 - t_b) * b + t_b * eb)
            for (name, w, b), (_, ew, eb) in zip(start, end)]


def loss_along_line(start: Layers, end: Layers, repeats: int, inputs: np.ndarray,
                    labels: np.ndarray, n_train: int, n_points: int = N_POINTS) -> pd.DataFrame:
    """t, train_loss, test_loss at n_points evenly spaced t from 0 (start) to
    1 (end); the first n_train rows train, the rest test, as in training."""
    ts = np.linspace(0.0, 1.0, n_points)
    out = forward(blend(start, end, ts), use_order(len(start), repeats), inputs)  # (t, rows)
    return pd.DataFrame({"t": ts,
                         "train_loss": [mean_squared_error(o[:n_train], labels[:n_train]) for o in out],
                         "test_loss": [mean_squared_error(o[n_train:], labels[n_train:]) for o in out]},
                        columns=SLICE_COLUMNS[1:])


def teacher_slices(initial: Layers, final: Layers, teacher: Layers, repeats: int,
                   inputs: np.ndarray, labels: np.ndarray, n_train: int,
                   n_points: int = N_POINTS) -> pd.DataFrame:
    """path, t, train_loss, test_loss along the two lines that end at the
    teacher: from the student's initial weights, and from its final ones.
    An untied student's line ends at the teacher with every copy equal to the
    teacher's shared layer."""
    target = teacher_as_student(teacher, len(initial))
    frames = [loss_along_line(start, target, repeats, inputs, labels, n_train, n_points)
              .assign(path=path)
              for path, start in (("initial student → teacher", initial),
                                  ("final student → teacher", final))]
    return pd.concat(frames, ignore_index=True)[SLICE_COLUMNS]
