"""The Run fields that compare the student with the teacher, built from
plain arrays, so that every engine fills them the same way."""

from __future__ import annotations

import numpy as np

from fitlab.config import Config
from fitlab.distance import DistanceTracker
from fitlab.landscape import teacher_slices
from fitlab.predictions import prediction_table
from fitlab.weights import Layers


def student_teacher_fields(config: Config, tracker: DistanceTracker, initial: Layers, final: Layers,
                           teacher: Layers, inputs: np.ndarray, labels: np.ndarray) -> dict:
    """Run's distances, test_predictions and loss_slices.

    `initial`, `final` and `teacher` are (name, weight, bias) per distinct
    layer; `inputs` are all rows of X and `labels` their (n_samples, 1) labels.
    """
    n_train, repeats, y = config.n_train, config.shared_repeats, labels[:, 0]
    return {
        "distances": tracker.table(),
        "test_predictions": prediction_table(final, repeats, inputs[n_train:], y[n_train:]),
        "loss_slices": teacher_slices(initial, final, teacher, repeats, inputs, y, n_train),
    }
