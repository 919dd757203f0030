"""The nearest settings within the work budget: each fits, one step nearer
does not, and only one field moved."""

from dataclasses import fields, replace

import pytest

from fitlab import Config, train
from fitlab.config import SETTINGS
from fitlab.serving.affordable import nearest_affordable, tried_offers
from fitlab.serving.budget import OverBudget, check

WIDTHS = SETTINGS["width"].stops


@pytest.mark.parametrize("config", [Config(width=256, epochs=2000, batch_size=1),
                                    # autograd; with detach off it would stop at its first backward
                                    # and fit (fitlab.serving.budget.run_seconds)
                                    Config(width=192, epochs=1500, batch_size=2, engine="autograd"),
                                    Config(width=128, shared_repeats=8, epochs=2000)])
def test_each_offer_fits_and_is_the_nearest_value_of_its_one_field(config):
    with pytest.raises(OverBudget):
        check(config)
    offers = nearest_affordable(config, choices={"width": WIDTHS})
    assert offers
    for offer in offers:
        check(offer)        # fits
        moved = [f.name for f in fields(Config) if getattr(offer, f.name) != getattr(config, f.name)]
        assert len(moved) == 1
        field = moved[0]
        value, before = getattr(offer, field), getattr(config, field)
        if field == "width":
            assert value in WIDTHS
            nearer = [w for w in WIDTHS if value < w < before]
        else:
            nearer = [value + (1 if value < before else -1)]
        for v in nearer:
            with pytest.raises(OverBudget):
                check(replace(config, **{field: v}))


def test_settings_within_the_budget_are_offered_nothing():
    assert nearest_affordable(Config()) == [] and nearest_affordable(Config(width=64, epochs=500)) == []


@pytest.mark.slow  # trains each offer for real, up to the budget: 3-6 s of CPU
def test_tried_offers_are_only_settings_that_train():
    # Issue 32: of this link's nearest settings, width 128 and repeats 0
    # diverge at epoch 1 (torch says so here), and were offered.
    config = Config(width=256, epochs=2000, batch_size=1)
    nearest = nearest_affordable(config, choices={"width": WIDTHS})
    diverging = [o for o in nearest if o.width != config.width or o.shared_repeats != config.shared_repeats]
    assert diverging and all(train(replace(o, epochs=2)).diverged_at == 1 for o in diverging)
    kept = []
    offers = tried_offers(config, choices={"width": WIDTHS}, keep=kept.append)
    assert offers and not set(offers) & set(diverging)
    for offer in offers:
        check(offer)
        moved = [f.name for f in fields(Config) if getattr(offer, f.name) != getattr(config, f.name)]
        assert len(moved) == 1
    # The runs it finished are the offers' own, and none diverged.
    assert all(run.config in offers and run.diverged_at is None for run in kept)

