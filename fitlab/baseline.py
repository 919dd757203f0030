"""The constant predictor: the yardstick a fit has to beat.

Predicting the training labels' mean for every row needs no training at
all. A student whose MSE is above that constant's has learnt less than
nothing; R² says the same on a scale where 1 is a perfect fit, 0 is the
split's own mean, and below 0 is worse than that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Baseline:
    """What constants score on one run's rows (float64, from float32 labels).

    constant        the training labels' mean: the constant predictor
    train_mse       its MSE on the training rows
    test_mse        its MSE on the test rows
    train_variance  the training labels' variance (the MSE of their own mean)
    test_variance   the test labels' variance: R²'s yardstick on the test rows
    """

    constant: float
    train_mse: float
    test_mse: float
    train_variance: float
    test_variance: float

    def mse(self, split: str) -> float:
        """The constant's MSE on "train" or "test"."""
        return {"train": self.train_mse, "test": self.test_mse}[split]

    def r_squared(self, mse: float, split: str) -> float:
        """R² of a model whose MSE on `split` is `mse`: 1 − mse / variance of
        that split's labels (as sklearn's r2_score). NaN when the labels do
        not vary (one row) or the MSE is not finite."""
        variance = {"train": self.train_variance, "test": self.test_variance}[split]
        if variance == 0 or not math.isfinite(mse):
            return math.nan
        return 1 - mse / variance

    def times_constant(self, mse: float, split: str) -> float:
        """How many times the constant's MSE on `split` the given MSE is."""
        return mse / self.mse(split) if self.mse(split) > 0 else math.nan


def constant_baseline(labels: np.ndarray, n_train: int) -> Baseline:
    """The Baseline of labels (n_samples,) whose first n_train rows train."""
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    train, test = y[:n_train], y[n_train:]
    constant = float(train.mean())
    return Baseline(constant=constant,
                    train_mse=float(np.mean((train - constant) ** 2)),
                    test_mse=float(np.mean((test - constant) ** 2)),
                    train_variance=float(train.var()), test_variance=float(test.var()))


def with_fit_columns(history: pd.DataFrame, baseline: Baseline) -> pd.DataFrame:
    """History with each epoch's R² per split, and the constant predictor's
    MSE per split (the same on every row): train_r2, test_r2,
    constant_train_mse, constant_test_mse."""
    table = history.copy()
    for split in ("train", "test"):
        table[f"{split}_r2"] = [baseline.r_squared(m, split) for m in history[f"{split}_loss"]]
    table["constant_train_mse"] = baseline.train_mse
    table["constant_test_mse"] = baseline.test_mse
    return table
