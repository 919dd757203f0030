"""Refit the work-budget cost model (fitlab/serving/budget.py) on this machine.

Trains a grid of configs with each engine, fits the per-epoch, per-step,
per-step-per-repeat and per-million-multiply costs by non-negative least
squares, and prints them beside the constants in budget.py, with each
config's measured and estimated seconds. Then the same for RETAINED_WALK:
the fix gallery's retain_graph variant against its detached twin, whose
difference is the walk through the teacher's graph at every step;
then the same for sweeps (the numpy stack, SWEEP_COST).
Run: python -m tools.measure_budget
"""

import time
from dataclasses import astuple, replace

import numpy as np
from scipy.optimize import nnls

import fitlab
from fitlab import Config, train
from fitlab.failure.fixes import DETACH, VARIANTS, run_variant
from fitlab.serving.budget import (
    COSTS,
    RETAINED_WALK,
    SWEEP_COST,
    estimated_seconds,
    sweep_seconds,
    sweep_work,
    walk_work,
    walked_graph_seconds,
    work,
)
from fitlab.sweeps import grid as sweep_grid

EPOCHS = 8


def grid() -> list[Config]:
    """Widths, repeats and batch shapes spanning the page's bounds."""
    return [Config(width=w, shared_repeats=r, batch_size=b, n_train=n, epochs=EPOCHS)
            for w in (1, 16, 64, 128, 256) for r in (0, 2, 8)
            for b, n in ((1, 60), (5, 50), (50, 50), (20, 199))]


def best_of_two(c: Config) -> float:
    """Fastest of two timings: the least disturbed by other processes."""
    times = []
    for _ in range(2):
        start = time.perf_counter()
        train(c)
        times.append(time.perf_counter() - start)
    return min(times)


def best_variant_of_two(c: Config, variant) -> float:
    """Fastest of two timings of one fix of the gallery."""
    times = []
    for _ in range(2):
        start = time.perf_counter()
        run_variant(c, variant)
        times.append(time.perf_counter() - start)
    return min(times)


def sweeps() -> list[list[Config]]:
    """Grids of 8 to 256 cells over widths, repeats and batch shapes."""
    return [sweep_grid(Config(width=w, shared_repeats=r, batch_size=b, n_train=n, epochs=EPOCHS),
                       lr=[0.001 * (i + 1) for i in range(cells)])
            for w in (5, 64, 256) for r in (0, 3) for b, n in ((5, 50), (199, 199))
            for cells in (8, 64 if w == 256 else 256)]


def best_sweep_of_two(configs: list[Config]) -> float:
    """Fastest of two timings of one sweep."""
    times = []
    for _ in range(2):
        start = time.perf_counter()
        fitlab.sweep(configs[0], lr=[c.lr for c in configs])
        times.append(time.perf_counter() - start)
    return min(times)


def fit_retained_walk() -> None:
    """Fit and print RETAINED_WALK: retain_graph's extra seconds over detached labels."""
    retained = next(v for v in VARIANTS if v.retain_graph)
    configs = [Config(width=w, shared_repeats=r, batch_size=b, n_train=n, epochs=2, detach=False)
               for w in (16, 64, 128, 256) for r in (0, 2, 8) for b, n in ((1, 60), (5, 50), (20, 199))]
    extra = np.array([max(0.0, best_variant_of_two(c, retained) - best_variant_of_two(c, DETACH))
                      for c in configs])
    fitted, _ = nnls(np.array([walk_work(c) for c in configs]), extra)
    print("retained walk:")
    for name, value, now in zip(RETAINED_WALK.__dataclass_fields__, fitted, astuple(RETAINED_WALK)):
        print(f"  {name:22s} fitted {value:.2e}   in budget.py {now:.2e}")
    for c, measured in zip(configs, extra):
        print(f"  width={c.width:3d} repeats={c.shared_repeats} batch={c.batch_size:2d} "
              f"n_train={c.n_train:3d}: measured {measured:.3f} s, estimated {walked_graph_seconds(c):.3f} s")


def fit_sweeps() -> None:
    """Fit and print the sweep's constants."""
    fitlab.sweep(Config(epochs=2), lr=[0.1, 0.01])  # warm up
    grids = sweeps()
    seconds = np.array([best_sweep_of_two(g) for g in grids])
    fitted, _ = nnls(np.array([sweep_work(g) for g in grids]), seconds)
    print("sweep:")
    for name, value, now in zip(SWEEP_COST.__dataclass_fields__, fitted, astuple(SWEEP_COST)):
        print(f"  {name:22s} fitted {value:.2e}   in budget.py {now:.2e}")
    for g, measured in zip(grids, seconds):
        c = g[0]
        print(f"  {len(g):3d} cells width={c.width:3d} repeats={c.shared_repeats} batch={c.batch_size:3d} "
              f"n_train={c.n_train:3d}: measured {measured:.3f} s, estimated {sweep_seconds(g):.3f} s")


def main() -> None:
    """Fit and print each engine's constants, then the retained walk's and the sweep's."""
    for engine, cost in COSTS.items():
        train(Config(epochs=2, engine=engine))  # warm up
        configs = [replace(c, engine=engine) for c in grid()]
        seconds = np.array([best_of_two(c) for c in configs])
        fitted, _ = nnls(np.array([work(c) for c in configs]), seconds)
        print(f"{engine}:")
        for name, value, now in zip(cost.__dataclass_fields__, fitted, astuple(cost)):
            print(f"  {name:22s} fitted {value:.2e}   in budget.py {now:.2e}")
        for c, measured in zip(configs, seconds):
            print(f"  width={c.width:3d} repeats={c.shared_repeats} batch={c.batch_size:2d} "
                  f"n_train={c.n_train:3d}: measured {measured:.3f} s, "
                  f"estimated {estimated_seconds(c):.3f} s")
    fit_retained_walk()
    fit_sweeps()


if __name__ == "__main__":
    main()
