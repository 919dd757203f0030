"""fitlab.outcome: the facts a run's notes word, checked against the run's own numbers."""

import math

import numpy as np
import pytest

from fitlab import Config, train
from fitlab.outcome import NEAR_CONSTANT_SPREAD, label_spread, outcome


def test_label_spread_is_std_over_root_mean_square():
    assert label_spread(np.array([1.0, 1.0, 1.0])) == 0
    assert label_spread(np.array([-2.0, 2.0])) == pytest.approx(1.0)
    assert label_spread(np.array([1.0, 3.0])) == pytest.approx(1 / math.sqrt(5))
    assert math.isnan(label_spread(np.zeros(3)))


@pytest.mark.parametrize("overrides,near", [
    (dict(width=1), True), (dict(shared_repeats=8), True),
    ({}, False), (dict(width=2), False), (dict(shared_repeats=5), False)])
def test_the_teachers_at_width_1_and_8_repeats_give_near_constant_labels(overrides, near):
    run = train(Config(epochs=1, **overrides))
    facts = outcome(run)
    labels = run.student_teacher.labels.astype(np.float64)
    assert facts.label_spread == pytest.approx(labels.std() / np.sqrt(np.mean(labels ** 2)))
    assert facts.near_constant_labels is near is (facts.label_spread < NEAR_CONSTANT_SPREAD)


def test_at_lr_1_the_loss_rose_and_at_the_defaults_it_fell_but_did_not_fit():
    rose, fell = outcome(train(Config(lr=1.0))), outcome(train(Config()))
    assert rose.loss_rose and not rose.loss_fell and rose.end_loss > 100 * rose.start_loss
    assert rose.loss_ratio == pytest.approx(rose.end_loss / rose.start_loss)
    assert fell.loss_fell and not fell.loss_rose
    assert fell.loss_ratio == pytest.approx(fell.start_loss / fell.end_loss)
    # The defaults' student ends above the constant's train MSE (0.000511 against 0.000324).
    assert not fell.fits_training_rows and fell.end_loss > fell.constant_mse


def test_a_diverged_run_rose_and_a_failed_one_trained_no_epoch():
    blown = outcome(train(Config(lr=10.0, epochs=5)))
    assert blown.diverged_at == 2 and blown.loss_rose and not blown.loss_fell and blown.loss_ratio == math.inf
    failed = outcome(train(Config(detach=False, epochs=1)))
    assert failed.epochs_trained == 0 and not failed.trained
    assert not failed.loss_fell and not failed.loss_rose
