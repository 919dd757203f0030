"""What a run's numbers say, as facts: did it train at all, did its loss fall
or rise, did it blow up, do its labels carry a signal to learn. The page
words these; a sentence that holds only at the defaults cannot come from them.

Near-constant labels. A teacher can map every input to almost the same
output: at width 1, or with the shared layer used 8 times, its labels vary
by 1e-5 to 3e-5 of their size (std over root mean square). R² divides the
error by that variation, so it then judges digits the labels barely have: a
student whose every prediction is within a fraction a of the labels' size
scores R² around 1 − (a / spread)², below 0 as soon as a exceeds the spread.
The threshold, spread < 1e-3 (predictions right to one part in a thousand
still score R² below 0), lies between what the settings give at seed 0:
3.2e-5 or less for the two teachers above, 1.46e-3 or more for every other
setting measured (the defaults 0.22, width 2 0.024, 4 repeats 0.0082,
5 repeats 0.00146, width 64 with 8 repeats 0.0033).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:   # the annotation only: outcome() reads a Run, it needs none of its imports
    from fitlab.run import Run

NEAR_CONSTANT_SPREAD = 1e-3


def label_spread(labels: np.ndarray) -> float:
    """The labels' standard deviation over their root mean square (float64):
    0 for labels all equal, 1 for labels centred on 0. NaN for all zeros."""
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    rms = math.sqrt(float(np.mean(y * y)))
    return float(y.std()) / rms if rms > 0 else math.nan


@dataclass(frozen=True)
class Outcome:
    """The facts of one run that its notes word.

    epochs_trained  passes that finished (0 when backward() failed at once)
    diverged_at     the first epoch whose loss is NaN or inf, or None
    start_loss      train MSE at epoch 0 (the fresh student)
    end_loss        train MSE after the last finished epoch
    label_spread    std / root mean square of all labels (see label_spread)
    constant_mse    the constant predictor's train MSE (fitlab.baseline)
    """

    epochs_trained: int
    diverged_at: int | None
    start_loss: float
    end_loss: float
    label_spread: float
    constant_mse: float

    @property
    def trained(self) -> bool:
        """At least one epoch finished."""
        return self.epochs_trained > 0

    @property
    def loss_fell(self) -> bool:
        """The train loss ended strictly below where it started (finite both)."""
        return math.isfinite(self.end_loss) and self.end_loss < self.start_loss

    @property
    def loss_rose(self) -> bool:
        """The train loss ended strictly above where it started, or blew up."""
        return not math.isfinite(self.end_loss) or self.end_loss > self.start_loss

    @property
    def loss_ratio(self) -> float:
        """How many times the start the loss fell to (> 1) or rose to (> 1):
        the larger of start/end and end/start; inf if it blew up or hit 0."""
        start, end = self.start_loss, self.end_loss
        if not math.isfinite(end) or end == 0:
            return math.inf
        return max(start / end, end / start)

    @property
    def fits_training_rows(self) -> bool:
        """The final train MSE is below the constant predictor's."""
        return self.end_loss < self.constant_mse

    @property
    def constant_fits_exactly(self) -> bool:
        """The training labels are all equal (one training row, say), so
        predicting their mean fits them exactly: no student does better
        there, and fits_training_rows cannot hold."""
        return self.constant_mse == 0

    @property
    def near_constant_labels(self) -> bool:
        """The labels vary by less than NEAR_CONSTANT_SPREAD of their size:
        almost nothing to learn, and R² means little (module docstring)."""
        return self.label_spread < NEAR_CONSTANT_SPREAD


def outcome(run: Run) -> Outcome:
    """The facts of `run`."""
    history = run.history
    return Outcome(epochs_trained=int(history.epoch.iloc[-1]), diverged_at=run.diverged_at,
                   start_loss=float(history.train_loss.iloc[0]), end_loss=float(history.train_loss.iloc[-1]),
                   label_spread=label_spread(run.student_teacher.labels),
                   constant_mse=run.baseline.train_mse)
