"""The nearest settings within the work budget: for settings the page
refuses (fitlab.serving.budget), each costly field changed alone, as little as it
takes for the run to fit; and of those, the ones that, trained, train
(tried_offers).

The cost grows with epochs, width and shared-layer uses, and falls as the
batch grows, each alone monotonically, so each field's nearest affordable
value is found by bisection over the values it may take.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from fitlab.config import SETTINGS, Config
from fitlab.run import Run
from fitlab.serving.budget import BUDGET_SECONDS, run_seconds

# Each costly field, and whether the cost falls as it grows.
CHEAPER_UPWARDS = {"epochs": False, "width": False, "shared_repeats": False, "batch_size": True}


def _fits(config: Config, budget: float) -> bool:
    return run_seconds(config) <= budget


def nearest_affordable(config: Config, budget: float = BUDGET_SECONDS,
                       choices: Mapping[str, Sequence[int]] | None = None) -> list[Config]:
    """For each costly field, `config` with that field alone moved to the
    nearest value (of `choices[field]`, default every value within its
    bounds) at which the run fits `budget`; fields that cannot make it fit
    alone are left out. Ordered by how far the field moved, relatively;
    empty if `config` fits already."""
    if _fits(config, budget):
        return []
    found = []
    for field, upwards in CHEAPER_UPWARDS.items():
        now = getattr(config, field)
        low, high = SETTINGS[field].bounds_given(config.as_dict())
        values = sorted(v for v in (choices or {}).get(field, range(int(low), int(high) + 1)) if low <= v <= high)
        side = [v for v in values if v > now] if upwards else [v for v in reversed(values) if v < now]
        # side runs from nearest to farthest; the cost falls along it.
        if not side or not _fits(replace(config, **{field: side[-1]}), budget):
            continue
        near, far = -1, len(side) - 1     # side[far] fits; side[near] (the config) does not
        while far - near > 1:
            middle = (near + far) // 2
            if _fits(replace(config, **{field: side[middle]}), budget):
                far = middle
            else:
                near = middle
        found.append((abs(side[far] - now) / max(now, 1), replace(config, **{field: side[far]})))
    return [c for _, c in sorted(found, key=lambda pair: pair[0])]


PROBE_SECONDS = 1.0   # a tried run is judged by its pace once it has run this long
MARGIN = 0.8          # of the budget an offer drawn from a measured pace may use


class _OverTime(Exception):
    """A tried run whose pace would take it over the budget: stopped."""

    def __init__(self, done: int, elapsed: float):
        super().__init__(done, elapsed)
        self.done, self.elapsed = done, elapsed


def tried_offers(config: Config, budget: float = BUDGET_SECONDS,
                 choices: Mapping[str, Sequence[int]] | None = None, limit: int = 3,
                 total: float | None = None, keep: Callable[[Run], None] | None = None) -> list[Config]:
    """nearest_affordable(config)'s settings, nearest first, each trained,
    keeping those that train: no divergence, and within `budget` as
    measured here, not as estimated (issue 32 saw "epochs 2000 → 1240"
    offered at 8 s take 18 s, and "width 256 → 128" and "repeats 2 → 0"
    offered that diverge at epoch 1). At most `limit`.

    A trial stops once its pace (seconds per epoch so far, after
    PROBE_SECONDS) would take it over the budget; for the epochs field the
    offer then becomes the epochs that pace fits in MARGIN of the budget.
    No trial starts after `total` seconds of them (default twice the
    budget). `keep(run)` gets each finished trial's run, so that taking an
    offer can show it at once."""
    from fitlab.training import train

    total = 2 * budget if total is None else total
    offers: list[Config] = []
    spent = 0.0
    for offer in nearest_affordable(config, budget, choices):
        if len(offers) == limit or spent > total:
            break
        started = time.monotonic()

        def progress(done: int, epochs: int) -> None:
            elapsed = time.monotonic() - started
            if elapsed > budget or (elapsed > PROBE_SECONDS and elapsed / done * epochs > budget):
                raise _OverTime(done, elapsed)

        try:
            run = train(offer, progress)
        except _OverTime as slow:
            run = None
            paced = int(MARGIN * budget * slow.done / slow.elapsed)
            if offer.epochs != config.epochs and 1 <= paced < offer.epochs:
                offers.append(replace(offer, epochs=paced))   # its epochs so far were finite
        spent += time.monotonic() - started
        if run is not None and run.error is None and run.diverged_at is None:
            offers.append(offer)
            if keep is not None:
                keep(run)
    return offers
