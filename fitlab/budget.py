"""The work budget: how long a Config's training takes, per engine, and the
policy that refuses one over budget.

A Config is valid at any size; a server should not let one request keep a
thread busy for long, so the page (single runs, the fix gallery) applies
`check`. The estimate is seconds per epoch (evaluation and bookkeeping), per
SGD step, per step and shared-layer use, and per million multiply-adds
(forward + backward on the training rows, forward on all rows to score each
epoch), so the cost grows as epochs × batches × width². The constants are
least-squares fits made on a loaded 2-core machine, rounded up
(`python -m tools.measure_budget` refits them): idle, runs take about half.
"""

from __future__ import annotations

from dataclasses import dataclass

from fitlab.config import Config

BUDGET_SECONDS = 8.0


@dataclass(frozen=True)
class CostModel:
    """Seconds per unit of work of one engine."""

    per_epoch: float
    per_step: float
    per_step_per_repeat: float
    per_mega_multiply: float


COSTS = {
    "autograd": CostModel(per_epoch=1.5e-3, per_step=4.0e-4, per_step_per_repeat=6.0e-5,
                          per_mega_multiply=1.0e-4),
    "fast": CostModel(per_epoch=2.0e-4, per_step=3.0e-5, per_step_per_repeat=1.0e-5,
                      per_mega_multiply=8.0e-5),
}

# The fields the cost depends on, as the message names them.
COSTLY_FIELDS = ("epochs", "batch_size", "n_train", "width", "shared_repeats")


def work(config: Config) -> tuple[float, float, float, float]:
    """The units of work of `config`'s training: epochs, SGD steps, steps ×
    shared-layer uses, and millions of multiply-adds."""
    steps = config.epochs * config.batches_per_epoch
    per_row = config.width * (config.in_features + config.shared_repeats * config.width + 1)
    rows = 3 * config.n_train + config.n_samples  # train forward + backward, then scoring
    return (config.epochs, steps, steps * config.shared_repeats,
            config.epochs * rows * per_row / 1e6)


def estimated_seconds(config: Config, engine: str | None = None) -> float:
    """Roughly how long train(config) takes on `engine` (default: the one
    train() will use, config.runs_engine)."""
    cost = COSTS[engine or config.runs_engine]
    epochs, steps, repeat_steps, mega = work(config)
    return (epochs * cost.per_epoch + steps * cost.per_step
            + repeat_steps * cost.per_step_per_repeat + mega * cost.per_mega_multiply)


class OverBudget(ValueError):
    """A Config whose training would take longer than the budget.

    seconds  the estimate
    budget   the budget it exceeds
    fields   the costly fields and their values, e.g. {"epochs": 2000, ...}
    """

    def __init__(self, seconds: float, budget: float, fields: dict):
        self.seconds, self.budget, self.fields = seconds, budget, fields
        named = ", ".join(f"{k}={v}" for k, v in fields.items())
        super().__init__(
            f"{named} is too much work: about {seconds:.0f} s of training, over the budget of "
            f"{budget:g} s per run (the cost grows as epochs × batches × width²). Lower epochs, "
            f"width or shared_repeats, or raise batch_size.")


def check(config: Config, engine: str | None = None, budget: float = BUDGET_SECONDS) -> None:
    """Raise OverBudget if `config` on `engine` would take longer than `budget`."""
    seconds = estimated_seconds(config, engine)
    if seconds > budget:
        # The library-only fields too, when they are set.
        costly = [*COSTLY_FIELDS, *(f for f in ("n_samples", "in_features")
                                    if getattr(config, f) != Config.__dataclass_fields__[f].default)]
        raise OverBudget(seconds, budget, {f: getattr(config, f) for f in costly})
