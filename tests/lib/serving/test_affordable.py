"""The nearest settings within the work budget: each fits, one step nearer
does not, and only one field moved."""

from dataclasses import fields, replace

import pytest

from fitlab import Config
from fitlab.serving.affordable import nearest_affordable
from fitlab.serving.budget import OverBudget, check

WIDTHS = (*range(1, 17), 24, 32, 48, 64, 96, 128, 192, 256)


@pytest.mark.parametrize("config", [Config(width=256, epochs=2000, batch_size=1),
                                    Config(width=192, epochs=1500, batch_size=2, detach=False),
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
