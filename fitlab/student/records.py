"""What a run keeps to compare the student with the teacher, and the views
computed from it: distances, test predictions and loss slices.

Training records only what cannot be had later (raw distances per epoch, the
student at the epochs to be matched); the views are computed on first use.
Matching hidden units and the loss slices cost more than a default run's
whole training, and most runs are never looked at that way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from fitlab.student.distance import DistanceRecords
from fitlab.student.landscape import teacher_slices
from fitlab.student.predictions import prediction_table
from fitlab.weights import Layers


@dataclass(frozen=True, eq=False)
class StudentTeacher:
    """Plain arrays, engine-agnostic: every engine fills it the same way.

    `initial`, `final` and `teacher` are (name, weight, bias) per distinct
    layer; `inputs` are all rows of X, `labels` their labels (n_samples,);
    the first n_train rows are the training rows.
    """

    records: DistanceRecords
    initial: Layers
    final: Layers
    teacher: Layers
    inputs: np.ndarray
    labels: np.ndarray
    n_train: int
    repeats: int

    @cached_property
    def distances(self) -> pd.DataFrame:
        """epoch, layer, raw, matched (see fitlab.student.distance)."""
        return self.records.table()

    @cached_property
    def test_predictions(self) -> pd.DataFrame:
        """label, prediction: the final student on the test rows."""
        n = self.n_train
        return prediction_table(self.final, self.repeats, self.inputs[n:], self.labels[n:])

    @cached_property
    def loss_slices(self) -> pd.DataFrame:
        """path, t, train_loss, test_loss along the lines to the teacher."""
        return teacher_slices(self.initial, self.final, self.teacher, self.repeats,
                              self.inputs, self.labels, self.n_train)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held (the views are a few hundred rows)."""
        arrays = [a for layers in (self.initial, self.final, self.teacher) for _, w, b in layers
                  for a in (w, b)] + [self.inputs, self.labels]
        return sum(a.nbytes for a in arrays) + self.records.nbytes
