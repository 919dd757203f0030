"""fitlab.fit_that_works: nearby settings whose student beats the constant,
checked against train() itself."""

from dataclasses import replace

import pytest

from fitlab import Config, train
from fitlab.fit_that_works import SEARCH_SECONDS, fit_that_works, search_seconds
from fitlab.serving.budget import BUDGET_SECONDS, estimated_seconds


def test_r2(run) -> float:
    return run.baseline.r_squared(run.history.test_loss.iloc[-1], "test")


test_r2.__test__ = False   # a helper, not a test


@pytest.mark.parametrize("config", [Config(), Config(width=8, seed=3)], ids=["defaults", "width 8 seed 3"])
def test_the_fit_it_finds_trains_and_beats_the_constant_as_torch_says(config):
    found = fit_that_works(config)
    assert found is not None
    run = train(found.config)
    assert run.diverged_at is None
    assert found.test_r2 == pytest.approx(test_r2(run), abs=1e-4)
    assert test_r2(run) > 0.3   # the scatter closes onto the diagonal
    assert found.start_r2 == pytest.approx(test_r2(train(config)), abs=1e-4) and found.start_r2 < 0
    # The same task: only the fields a learner tries moved; it fits the page's budget.
    assert set(found.changes(config)) <= {"shared_repeats", "lr", "epochs"} and found.changes(config)
    assert replace(found.config, shared_repeats=config.shared_repeats, lr=config.lr,
                   epochs=config.epochs) == config
    assert estimated_seconds(found.config) <= BUDGET_SECONDS
    assert search_seconds(config) <= SEARCH_SECONDS


def test_the_lesson_has_no_fit_to_find():
    assert fit_that_works(Config(detach=False)) is None
