"""The student's predictions next to the true labels."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fitlab.weights import Layers, forward, use_order


def prediction_table(student: Layers, repeats: int, inputs: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    """label, prediction: one row per input row, the student's output beside
    the teacher's label for it."""
    predictions = forward(student, use_order(len(student), repeats), inputs)
    return pd.DataFrame({"label": labels.astype(np.float64), "prediction": predictions})
