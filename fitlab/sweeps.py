"""sweep(config, **axes): every config of a grid trained at once.

The grid's configs differ only in lr, seed and width, so they share one
shape once narrower nets are padded with zero units up to the widest. A zero
unit stays zero (its weights in and out get zero gradients: its input to the
ReLU is 0, and ReLU passes no gradient at 0), so each config's history is
its single run's. The fast engine's StackNet then trains them all in the same
batched numpy calls.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from fitlab.config import SETTINGS, Config
from fitlab.run import Progress

AXES = ("lr", "seed", "width")
# A grid's size is bounded: every config's weights, data and activations sit
# in memory at once (2**26 float32 activations are 256 MiB).
MAX_CONFIGS = 256
MAX_ACTIVATIONS = 2**26


def grid(config: Config, **axes) -> list[Config]:
    """Every combination of the axes' values, the first axis varying slowest.

    Each axis is one of AXES with a list of values; every config is
    validated, so a bad value raises Config's ValueError.
    """
    for name, values in axes.items():
        if name not in AXES:
            raise ValueError(f"{name}= is not a sweep axis: allowed {', '.join(AXES)}")
        if len(values) == 0:
            raise ValueError(f"{name}=[] is not allowed: an axis needs at least one value")
    if not config.detach:
        raise ValueError("detach=False is not allowed in a sweep: a sweep runs the fast "
                         "engine, which trains on detached labels")
    size = math.prod(len(v) for v in axes.values())
    if size > MAX_CONFIGS:
        raise ValueError(f"a sweep of {size} configs is too large: allowed 1 to {MAX_CONFIGS}")
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


def sweep(config: Config, progress: Progress | None = None, **axes) -> dict[Config, pd.DataFrame]:
    """Train every config of grid(config, **axes) in one batched computation.

    Returns {config: history} in grid order, each history (epoch, train_loss,
    test_loss) equal to train(config).history to the engines' tolerance.
    `progress(done, total)` is called after each epoch.
    """
    # Imported here, not at module load: it imports torch, and the page
    # imports this module for AXES and parse_axis before anything trains.
    from fitlab.engines.numpy_net import fit, layer_uses
    from fitlab.engines.numpy_run import draw_start
    from fitlab.engines.numpy_stack import StackNet

    configs = grid(config, **axes)
    width = max(c.width for c in configs)
    activations = len(configs) * config.n_samples * (width + 1) * (config.shared_repeats + 2)
    if activations > MAX_ACTIVATIONS:
        raise ValueError(f"a sweep of {len(configs)} configs of width up to {width} over "
                         f"{config.n_samples} rows is too large: it needs {activations:,} "
                         f"activations, allowed up to {MAX_ACTIVATIONS:,}")
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
    epochs = np.arange(len(train_losses))   # fewer if every config diverged
    return {c: pd.DataFrame({"epoch": epochs, "train_loss": train_losses[:, i],
                             "test_loss": test_losses[:, i]})
            for i, c in enumerate(configs)}


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
