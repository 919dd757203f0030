"""The nearest settings within the work budget: for settings the page
refuses (fitlab.serving.budget), each costly field changed alone, as little as it
takes for the run to fit.

The cost grows with epochs, width and shared-layer uses, and falls as the
batch grows, each alone monotonically, so each field's nearest affordable
value is found by bisection over the values it may take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from fitlab.config import BOUNDS, Config
from fitlab.serving.budget import BUDGET_SECONDS, estimated_seconds

# Each costly field, and whether the cost falls as it grows.
CHEAPER_UPWARDS = {"epochs": False, "width": False, "shared_repeats": False, "batch_size": True}


def _fits(config: Config, budget: float) -> bool:
    return estimated_seconds(config) <= budget


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
        low, high = BOUNDS[field]
        if field == "batch_size":
            high = config.n_train
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
