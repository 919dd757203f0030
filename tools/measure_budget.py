"""Refit the work-budget cost model (fitlab/config.py) on this machine.

Trains a grid of configs with the autograd engine, fits the per-epoch,
per-step, per-step-per-repeat and per-million-multiply costs by least squares,
and prints them beside the constants in config.py, with each config's
measured and estimated seconds. Run: python tools/measure_budget.py
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fitlab import Config, train  # noqa: E402
from fitlab import config as cfg  # noqa: E402

EPOCHS = 8


def grid() -> list[Config]:
    """Widths, repeats and batch shapes spanning the page's bounds."""
    return [Config(width=w, shared_repeats=r, batch_size=b, n_train=n, epochs=EPOCHS, engine="autograd")
            for w in (1, 16, 64, 128, 256) for r in (0, 2, 8)
            for b, n in ((1, 60), (5, 50), (50, 50), (20, 199))]


def features(c: Config) -> list[float]:
    """The cost model's terms, in the order of the constants."""
    steps = c.epochs * c.batches_per_epoch
    per_row = c.width * (c.in_features + c.shared_repeats * c.width + 1)
    mega = c.epochs * (3 * c.n_train + c.n_samples) * per_row / 1e6
    return [c.epochs, steps, steps * c.shared_repeats, mega]


def best_of_two(c: Config) -> float:
    """Fastest of two timings: the least disturbed by other processes."""
    times = []
    for _ in range(2):
        start = time.perf_counter()
        train(c)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    train(Config(epochs=2))  # warm up torch
    configs = grid()
    seconds = np.array([best_of_two(c) for c in configs])
    terms = np.array([features(c) for c in configs])
    fitted, *_ = np.linalg.lstsq(terms, seconds, rcond=None)
    names = ["SECONDS_PER_EPOCH", "SECONDS_PER_STEP", "SECONDS_PER_STEP_PER_REPEAT",
             "SECONDS_PER_MEGA_MULTIPLY"]
    for name, value in zip(names, fitted):
        print(f"{name:30s} fitted {value:.2e}   in config.py {getattr(cfg, name):.2e}")
    for c, measured in zip(configs, seconds):
        print(f"width={c.width:3d} repeats={c.shared_repeats} batch={c.batch_size:2d} "
              f"n_train={c.n_train:3d}: measured {measured:.3f} s, "
              f"estimated {cfg.estimated_seconds(c):.3f} s")


if __name__ == "__main__":
    main()
