"""sweep(config, **axes): every config of a grid trained at once.

The grid's configs differ only in lr, seed and width, so they share one
shape once narrower nets are padded with zero units up to the widest. A zero
unit stays zero (its weights in and out get zero gradients: its input to the
ReLU is 0, and ReLU passes no gradient at 0), so each config's history is
its single run's. The fast engine's StackNet then trains them all in the same
batched numpy calls.

A grid bigger than one process should hold (thousands of configs) goes to an
existing engine: `sweep(config, executor=pool, **axes)` splits it into
chunks of `chunk` configs, each one batched computation, submitted to any
`concurrent.futures.Executor` (a ProcessPoolExecutor here, dask.distributed's
`Client.get_executor()` or Ray's pool across machines). The chunks are
padded to the grid's widest net as one process pads them, so the histories
are those of one process, bit for bit (tests/lib/test_sweep_executor.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from concurrent.futures import Executor, as_completed
from dataclasses import replace

import numpy as np
import pandas as pd

from fitlab.config import SETTINGS, Config
from fitlab.run import Progress

AXES = ("lr", "seed", "width")
SWEEP_ENGINE = "fast"   # every cell trains on it, whatever config.engine says
# A batched computation's size is bounded: every config's weights, data and
# activations sit in memory at once (2**26 float32 activations are 256 MiB).
# In one process that bounds the grid; with an executor, each chunk.
MAX_CONFIGS = 256
MAX_ACTIVATIONS = 2**26
# A grid handed to an executor: at most this many configs in all, and the
# configs of one chunk by default (a chunk of the default net trains in about
# as long as its submission takes to reach a remote worker).
MAX_DISTRIBUTED_CONFIGS = 100_000
CHUNK = 64


def grid(config: Config, max_configs: int = MAX_CONFIGS, **axes) -> list[Config]:
    """Every combination of the axes' values, the first axis varying slowest.

    Each axis is one of AXES with a list of values; every config is
    validated, so a bad value raises Config's ValueError, and so does a grid
    of more than `max_configs`.
    """
    for name, values in axes.items():
        if name not in AXES:
            raise ValueError(f"{name}= is not a sweep axis: allowed {', '.join(AXES)}")
        if len(values) == 0:
            raise ValueError(f"{name}=[] is not allowed: an axis needs at least one value")
    if not config.detach:
        raise ValueError(f"detach=False is not allowed in a sweep: a sweep runs the {SWEEP_ENGINE} "
                         "engine, which trains on detached labels")
    size = math.prod(len(v) for v in axes.values())
    if size > max_configs:
        raise ValueError(f"a sweep of {size} configs is too large: allowed 1 to {max_configs}")
    names = list(axes)
    return [replace(config, **dict(zip(names, values)))
            for values in itertools.product(*(axes[n] for n in names))]


def parse_axis(name: str, text: str) -> list:
    """The values of axis `name` typed as a comma-separated list, as numbers
    of the field's type (lr a float, seed and width whole numbers)."""
    kind = float if SETTINGS[name].kind == "float" else int
    try:
        values = [kind(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise ValueError(f"{name} values {text!r} are not allowed: give comma-separated "
                         f"{'numbers' if kind is float else 'whole numbers'}") from None
    if not values:
        raise ValueError(f"{name} values {text!r} are not allowed: give at least one value")
    return list(dict.fromkeys(values))


def sweep(config: Config, progress: Progress | None = None, executor: Executor | None = None,
          chunk: int = CHUNK, **axes) -> dict[Config, pd.DataFrame]:
    """Train every config of grid(config, **axes).

    Returns {config: history} in grid order, each history (epoch, train_loss,
    test_loss) equal to train(config).history to the engines' tolerance.

    Without `executor`: one batched computation in this process, of at most
    MAX_CONFIGS configs; `progress(done, total)` is called after each epoch.
    With one: chunks of `chunk` configs (each at most MAX_CONFIGS and within
    the memory bound), each a batched computation submitted to `executor`,
    up to MAX_DISTRIBUTED_CONFIGS in all; `progress(done, total)` counts the
    configs trained, called as each chunk's result arrives.
    """
    if executor is None:
        configs = grid(config, **axes)
        _check_memory(configs)
        return dict(zip(configs, train_together(configs, progress)))
    if not 1 <= chunk <= MAX_CONFIGS:
        raise ValueError(f"chunk={chunk} is out of range: allowed 1 to {MAX_CONFIGS}")
    configs = grid(config, max_configs=MAX_DISTRIBUTED_CONFIGS, **axes)
    chunks = [configs[i:i + chunk] for i in range(0, len(configs), chunk)]
    # Every chunk padded to the grid's widest net, as one process pads them:
    # the same shapes give the same sums, bit for bit (a chunk padded to its
    # own widest came out up to 2e-6 apart).
    width = max(c.width for c in configs)
    for part in chunks:
        _check_memory(part, width)
    futures = {executor.submit(train_together, part, None, width): part for part in chunks}
    results: dict[Config, pd.DataFrame] = {}
    try:
        for future in as_completed(futures):
            results.update(zip(futures[future], future.result()))
            if progress is not None:
                progress(len(results), len(configs))
    finally:
        for future in futures:
            future.cancel()  # a failed chunk stops the others that have not started
    return {c: results[c] for c in configs}


def _check_memory(configs: list[Config], width: int | None = None) -> None:
    """Raise ValueError if the configs' batched computation, padded to
    `width` (default: their widest), would not fit the memory bound."""
    width = max(c.width for c in configs) if width is None else width
    base = configs[0]
    activations = len(configs) * base.n_samples * (width + 1) * (base.shared_repeats + 2)
    if activations > MAX_ACTIVATIONS:
        raise ValueError(f"a sweep of {len(configs)} configs of width up to {width} over "
                         f"{base.n_samples} rows is too large: it needs {activations:,} "
                         f"activations, allowed up to {MAX_ACTIVATIONS:,}")


def train_together(configs: list[Config], progress: Callable[[int, int], None] | None = None,
                   width: int | None = None) -> list[pd.DataFrame]:
    """The histories of `configs` (a grid's, differing only in lr, seed and
    width), trained in one batched computation, every net padded to `width`
    hidden units (default: the widest of them); `progress(done, total)`
    after each epoch. A module-level function of picklable values: an
    executor's worker process runs it."""
    # Imported here, not at module load: it imports torch, and the page
    # imports this module for AXES and parse_axis before anything trains.
    from fitlab.engines.numpy_net import fit, layer_uses
    from fitlab.engines.numpy_run import draw_start
    from fitlab.engines.numpy_stack import StackNet

    config = configs[0]
    width = max(c.width for c in configs) if width is None else width
    # lr does not change the draws: draw once per (seed, width).
    drawn: dict[Config, object] = {}
    starts = []
    for c in configs:
        key = replace(c, lr=config.lr)
        if key not in drawn:
            drawn[key] = draw_start(key)
        starts.append(drawn[key])
    padded = [_padded_layers(start.layers, width) for start in starts]
    shapes = [w.shape for w, _ in padded[0]]
    stack = StackNet(shapes, layer_uses(config), len(configs))
    stack.load([(np.stack([p[k][0] for p in padded]), np.stack([p[k][1] for p in padded]))
                for k in range(len(shapes))])
    inputs = np.stack([start.inputs for start in starts])
    labels = np.stack([start.labels for start in starts])
    lr = np.array([[c.lr] for c in configs], dtype=np.float32)
    train_losses, test_losses = fit(stack, inputs, labels, config, lr, progress)
    # Each config's history ends at the epoch it diverged, as its own run's
    # does (fitlab.run.diverged); the stack itself stops once all have, so
    # the cells do not depend on which others share their chunk.
    epochs = np.arange(len(train_losses))
    finite = np.isfinite(train_losses) & np.isfinite(test_losses)
    ends = np.where(finite.all(axis=0), len(epochs), np.argmin(finite, axis=0) + 1)
    # Columns as views, not copies: 64 histories' copies and block merging
    # were about a tenth of the default 8x8 sweep.
    return [pd.DataFrame({"epoch": epochs[:end], "train_loss": train_losses[:end, i],
                          "test_loss": test_losses[:end, i]}, copy=False)
            for i, end in enumerate(ends.tolist())]


def _padded_layers(layers, width: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each (weight, bias) grown with zero units to `width` hidden units."""
    padded = []
    last = len(layers) - 1
    for k, (_, w, b) in enumerate(layers):
        rows = 1 if k == last else width
        cols = w.shape[1] if k == 0 else width
        grown_w = np.zeros((rows, cols), dtype=np.float32)
        grown_w[:w.shape[0], :w.shape[1]] = w
        grown_b = np.zeros(rows, dtype=np.float32)
        grown_b[:b.shape[0]] = b
        padded.append((grown_w, grown_b))
    return padded


def final_losses(results: dict[Config, pd.DataFrame], axes: list[str]) -> pd.DataFrame:
    """One row per config: the axes' values, the final train and test loss."""
    return pd.DataFrame([{**{a: getattr(c, a) for a in axes},
                          "train_loss": h.train_loss.iloc[-1], "test_loss": h.test_loss.iloc[-1]}
                         for c, h in results.items()])
