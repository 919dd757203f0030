"""The student's parameters recorded over training: the frames a learner
scrubs and plays through.

A frame is every parameter of the student at one epoch, flattened in
parameter_table's order (each distinct layer's weight row by row, then its
bias), so a frame's values line up with the rows of run.student_params.
Frames are taken at up to MAX_FRAMES evenly spaced epochs, always the first
(0, the fresh student) and the last; a wide net gets fewer, so that the
frames of one run stay within FRAME_BYTES.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fitlab.student.distance import recorded_epochs
from fitlab.weights import Layers, parameter_table

MAX_FRAMES = 101
MIN_FRAMES = 2
FRAME_BYTES = 4 * 2**20   # float32 values of one run's frames, at most


def frame_count(n_parameters: int) -> int:
    """How many frames a student of n_parameters gets."""
    return max(MIN_FRAMES, min(MAX_FRAMES, FRAME_BYTES // (4 * n_parameters)))


def flatten(layers: Layers) -> np.ndarray:
    """The layers' values as one float32 vector, in parameter_table's order."""
    return np.concatenate([a.ravel() for _, w, b in layers for a in (w, b)]).astype(np.float32)


class FrameRecorder:
    """Takes the frames of one run: call record(epoch, layers) for each epoch
    wants() accepts (epoch 0 is the fresh student); frames() then gives them."""

    def __init__(self, initial: Layers, epochs: int):
        self.names = tuple(name for name, _, _ in initial)
        self.shapes = tuple((w.shape, b.shape) for _, w, b in initial)
        size = sum(w.size + b.size for _, w, b in initial)
        self.epochs = recorded_epochs(epochs, frame_count(size))
        self._wanted = set(self.epochs)
        self._taken: list[tuple[int, np.ndarray]] = []

    def wants(self, epoch: int) -> bool:
        """Whether a frame is taken at this epoch."""
        return epoch in self._wanted

    def record(self, epoch: int, layers: Layers) -> None:
        """Keep a copy of the student's `layers` at `epoch`."""
        self._taken.append((epoch, flatten(layers)))

    def record_values(self, epoch: int, values: np.ndarray) -> None:
        """Keep `values`, the student at `epoch` already flattened as
        flatten() does (not copied)."""
        self._taken.append((epoch, values))

    def frames(self, repeats: int) -> Frames:
        """The frames taken; a run stopped by an error has only the epochs it reached."""
        epochs = np.array([e for e, _ in self._taken], dtype=np.int64)
        values = np.stack([v for _, v in self._taken])
        return Frames(epochs, values, self.names, self.shapes, repeats)


@dataclass(frozen=True, eq=False)
class Frames:
    """A run's frames: values[i] is the student at epochs[i].

    names and shapes are the distinct layers' (TiedNet.named_layers() order)
    and their (weight shape, bias shape); repeats says how often the shared
    layer is used (fitlab.weights.use_order).
    """

    epochs: np.ndarray          # (n_frames,) int, increasing, epochs[0] == 0
    values: np.ndarray          # (n_frames, n_parameters) float32
    names: tuple[str, ...]
    shapes: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    repeats: int

    @property
    def nbytes(self) -> int:
        """Bytes held by the frames."""
        return self.values.nbytes + self.epochs.nbytes

    def layers_at(self, index: int) -> Layers:
        """The student of frame `index` as (name, weight, bias) per layer."""
        out, start = [], 0
        for name, (w_shape, b_shape) in zip(self.names, self.shapes):
            w_size, b_size = int(np.prod(w_shape)), int(np.prod(b_shape))
            row = self.values[index]
            out.append((name, row[start:start + w_size].reshape(w_shape),
                        row[start + w_size:start + w_size + b_size].reshape(b_shape)))
            start += w_size + b_size
        return out

    def table(self) -> pd.DataFrame:
        """Tidy: epoch, parameter, uses, row, col, value; one row per frame and parameter."""
        one = parameter_table(self.layers_at(0), self.repeats)
        n = len(self.epochs)
        tiled = pd.concat([one.drop(columns="value")] * n, ignore_index=True)
        tiled.insert(0, "epoch", np.repeat(self.epochs, len(one)))
        tiled["value"] = self.values.astype(np.float64).ravel()
        return tiled
