"""The work budget: how long a Config's training takes, per engine, and the
policy that refuses one over budget.

A Config is valid at any size; a server should not let one request keep a
thread busy for long, so the page applies `check` to single runs and the fix
gallery, and `check_sweep` to a sweep's whole grid. The estimate is seconds per epoch (evaluation and bookkeeping), per
SGD step, per step and shared-layer use, and per million multiply-adds
(forward + backward on the training rows, forward on all rows to score each
epoch), so the cost grows as epochs × batches × width². The constants are
least-squares fits made on a loaded 2-core machine, rounded up
(`python -m tools.measure_budget` refits them): idle, runs take about half.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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

# A backward() that also walks the labels' graph (labels attached, and
# retain_graph=True, as a fix of the gallery does): each step differentiates
# the teacher's forward pass over all n_samples rows again, besides its own
# batch. Fitted like COSTS, on the same loaded machine, rounded up: width
# 256, 8 repeats took 4.2 ms per step at best and 10 ms under load
# (5e-5 s per million multiply-adds allows 10.5).
RETAINED_WALK = CostModel(per_epoch=0.0, per_step=4.0e-4, per_step_per_repeat=6.0e-5,
                          per_mega_multiply=5.0e-5)


@dataclass(frozen=True)
class SweepCostModel:
    """Seconds per unit of work of a sweep: its whole grid trains as one
    stack on the numpy engine, every cell padded to the widest, so the
    per-epoch cost is paid once and the rest once per cell."""

    per_epoch: float
    per_cell_step: float
    per_cell_mega_multiply: float
    per_cell_mega_activation: float


# Fitted like COSTS on a loaded 2-core machine (8 to 256 cells, widths 5 to
# 256) and rounded up.
SWEEP_COST = SweepCostModel(per_epoch=5.0e-3, per_cell_step=1.0e-5,
                            per_cell_mega_multiply=5.0e-5, per_cell_mega_activation=5.0e-3)

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


def walk_work(config: Config) -> tuple[float, float, float, float]:
    """The units of work (as `work` counts them) that walking the labels'
    graph again adds to `config`'s training, when every step does."""
    steps = config.epochs * config.batches_per_epoch
    per_row = config.width * (config.in_features + config.shared_repeats * config.width + 1)
    return 0, steps, steps * config.shared_repeats, steps * 2 * config.n_samples * per_row / 1e6


def estimated_seconds(config: Config, engine: str | None = None) -> float:
    """Roughly how long train(config) takes on `engine` (default: the one
    train() will use, config.runs_engine)."""
    return _seconds(COSTS[engine or config.runs_engine], work(config))


def run_seconds(config: Config, engine: str | None = None) -> float:
    """Roughly how long train(config) takes on `engine`, counting only the
    epochs it can run: with the labels attached it stops at its first
    backward() (the student's re-init wrote weights the labels' graph saved),
    so one epoch's worth at most, however many epochs it was given."""
    return estimated_seconds(config if config.detach else replace(config, epochs=1), engine)


def replay_seconds(config: Config) -> float:
    """The expected seconds of a replay of the lesson's run: one epoch's worth at most (it
    fails at its first backward(), its labels attached, detach or not)."""
    return run_seconds(replace(config, detach=False))


def walked_graph_seconds(config: Config) -> float:
    """Roughly how much longer `config`'s training on autograd takes when
    every backward() also walks the labels' graph (retain_graph=True)."""
    return _seconds(RETAINED_WALK, walk_work(config))


def _seconds(cost: CostModel, units: tuple[float, float, float, float]) -> float:
    epochs, steps, repeat_steps, mega = units
    return (epochs * cost.per_epoch + steps * cost.per_step
            + repeat_steps * cost.per_step_per_repeat + mega * cost.per_mega_multiply)


def costly_fields(config: Config) -> dict:
    """The fields the cost depends on and their values, as OverBudget names
    them (the library-only fields too, when they are set)."""
    changed = config.changes()
    costly = [*COSTLY_FIELDS, *(f for f in ("n_samples", "in_features") if f in changed)]
    return {f: getattr(config, f) for f in costly}


def sweep_work(configs: list[Config]) -> tuple[float, float, float, float]:
    """The units of work of sweeping the grid `configs`: epochs, then over
    all cells (each as wide as the widest) SGD steps, millions of
    multiply-adds and millions of activations written."""
    widest = max(configs, key=lambda c: c.width)
    epochs, steps, _, mega = work(widest)
    rows = 3 * widest.n_train + widest.n_samples
    activations = epochs * rows * widest.width * (widest.shared_repeats + 2) / 1e6
    cells = len(configs)
    return epochs, cells * steps, cells * mega, cells * activations


def sweep_seconds(configs: list[Config]) -> float:
    """Roughly how long fitlab.sweep takes to train the grid `configs`."""
    epochs, steps, mega, activations = sweep_work(configs)
    return (epochs * SWEEP_COST.per_epoch + steps * SWEEP_COST.per_cell_step
            + mega * SWEEP_COST.per_cell_mega_multiply
            + activations * SWEEP_COST.per_cell_mega_activation)


class OverBudget(ValueError):
    """Training that would take longer than the budget.

    seconds  the estimate
    budget   the budget it exceeds
    fields   the costly fields and their values, e.g. {"epochs": 2000, ...}
             (of a sweep: its widest cell's)
    cells    how many configs train: 1 for a run, the grid's size for a sweep
    """

    def __init__(self, seconds: float, budget: float, fields: dict, cells: int = 1):
        self.seconds, self.budget, self.fields, self.cells = seconds, budget, fields, cells
        named = ", ".join(f"{k}={v}" for k, v in fields.items())
        what = "per run" if cells == 1 else f"for a sweep, here of {cells} configs"
        super().__init__(
            f"{named} is too much work: about {seconds:.0f} s of training, over the budget of "
            f"{budget:g} s {what} (the cost grows as epochs × batches × width²"
            f"{'' if cells == 1 else ' × configs'}). Lower epochs, width or shared_repeats, "
            f"or raise batch_size{'' if cells == 1 else ', or sweep fewer values'}.")


def check(config: Config, engine: str | None = None, budget: float = BUDGET_SECONDS) -> None:
    """Raise OverBudget if train(config) on `engine` would take longer than
    `budget` (run_seconds)."""
    seconds = run_seconds(config, engine)
    if seconds > budget:
        raise OverBudget(seconds, budget, costly_fields(config))


def check_sweep(configs: list[Config], budget: float = BUDGET_SECONDS) -> None:
    """Raise OverBudget if sweeping the grid `configs` would take longer than `budget`."""
    seconds = sweep_seconds(configs)
    if seconds > budget:
        widest = max(configs, key=lambda c: c.width)
        raise OverBudget(seconds, budget, costly_fields(widest), cells=len(configs))
