"""A lesson (detach off) is budgeted for the epochs it can run: it stops at
its first backward (issue 33: epochs=2000 was refused as 13 s of training)."""

import pytest

from fitlab import Config, train
from fitlab.config import BOUNDS
from fitlab.serving.affordable import nearest_affordable
from fitlab.serving.budget import BUDGET_SECONDS, OverBudget, check, estimated_seconds, run_seconds


def test_an_attached_run_is_estimated_for_the_epochs_it_can_run():
    config = Config(detach=False, epochs=BOUNDS["epochs"][1])
    run = train(config)
    assert (run.error.epoch, run.error.batch) == (1, 1)   # what the estimate relies on
    assert len(run.history) == 1                          # epoch 0 only
    assert estimated_seconds(config) > BUDGET_SECONDS >= run_seconds(config)
    check(config)   # the lesson is not refused
    assert nearest_affordable(config) == []
    widest = Config(detach=False, epochs=2000, width=256, shared_repeats=8, batch_size=1, n_train=199)
    check(widest)
    with pytest.raises(OverBudget):
        check(Config(detach=True, epochs=2000, width=256, shared_repeats=8, batch_size=1, n_train=199))

