"""The numpy engine's common core: a net's parameters in one flat float32
buffer, and the SGD loop over it.

The autograd run's math written out by hand: the forward pass keeps each
layer's input, the backward pass walks the uses in reverse and adds the
shared layer's gradient over its uses, as autograd does. All math is float32,
like torch's. A single run (numpy_run.RunNet, direct BLAS calls) and a stack
of many configs of one shape (numpy_stack.StackNet, batched matmuls) share
this layout and this loop.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fitlab.config import Config
from fitlab.numerics.blas import one_blas_thread
from fitlab.run import Progress, diverged


class FlatLayers:
    """The student's parameters for one or many configs of one shape, in one
    flat float32 buffer.

    `lead` is () for a single run, (C,) for a stack of C configs. Each layer
    is one block (in + 1, out): its weight transposed, then its bias as a last
    row. Every layer's input carries a trailing column of ones, so one matmul
    applies weight and bias, and one matmul gives both their gradients. With
    the weights transposed and the backward pass run on transposed deltas, no
    matmul has a transposed large right-hand side, which OpenBLAS does several
    times slower at these shapes.
    """

    def __init__(self, layer_shapes: list[tuple[int, int]], uses: list[int], lead: tuple):
        sizes = [(i + 1) * o for o, i in layer_shapes]
        self.params = np.zeros(lead + (sum(sizes),), dtype=np.float32)
        ends = np.cumsum(sizes)
        self.block_slices = [slice(end - size, end) for end, size in zip(ends, sizes)]
        self.blocks = [self.params[..., s].reshape(lead + (i + 1, o))
                       for s, (o, i) in zip(self.block_slices, layer_shapes)]
        self.weights_t = [block[..., :-1, :] for block in self.blocks]
        self.biases = [block[..., -1:, :] for block in self.blocks]
        self.use_blocks = [self.blocks[layer] for layer in uses]
        self.lead, self.uses = lead, uses
        self.input_widths = [layer_shapes[layer][1] for layer in uses]
        self._zeros: dict[tuple, np.ndarray] = {}

    def load(self, layers: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Set each distinct layer from (weight (out, in), bias (out,)), stacked
        along the lead axes if any."""
        for block, (w, b) in zip(self.blocks, layers):
            block[..., :-1, :] = w.swapaxes(-1, -2)
            block[..., -1, :] = b

    def layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Copies of each distinct layer's (weight (out, in), bias (out,))."""
        return [(b[..., :-1, :].swapaxes(-1, -2).copy(), b[..., -1, :].copy()) for b in self.blocks]

    def zeros(self, shape: tuple) -> np.ndarray:
        """Reused float32 zeros of `shape`: np.maximum against an array runs
        vectorised, against a scalar 0 it runs several times slower."""
        zeros = self._zeros.get(shape)
        if zeros is None:
            zeros = self._zeros[shape] = np.zeros(shape, dtype=np.float32)
        return zeros


def with_ones(x: np.ndarray) -> np.ndarray:
    """x with a trailing column of ones, the form a stepper takes."""
    return np.concatenate([x, np.ones(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)


def layer_uses(config: Config) -> list[int]:
    """Which distinct layer each Linear of the forward pass uses."""
    repeats = config.shared_repeats
    hidden = [1] * repeats if config.tied else list(range(1, repeats + 1))
    return [0, *hidden, (max(hidden) + 1) if hidden else 1]


def batches(config: Config) -> list[slice]:
    """The training rows of each SGD step, in order, the last possibly short."""
    return [slice(s, min(s + config.batch_size, config.n_train))
            for s in range(0, config.n_train, config.batch_size)]


def losses(outputs: np.ndarray, labels: np.ndarray, n_train: int) -> tuple:
    """(train MSE, test MSE) of the net's outputs on every row (float32 sums, as torch)."""
    squares = outputs - labels
    squares *= squares
    squares = squares[..., 0]
    return (np.add.reduce(squares[..., :n_train], axis=-1) / n_train,
            np.add.reduce(squares[..., n_train:], axis=-1) / (squares.shape[-1] - n_train))


def fit(net: FlatLayers, inputs: np.ndarray, labels: np.ndarray, config: Config, lr,
        progress: Progress | None = None,
        on_epoch: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Train `net` for config.epochs; returns the train and test losses per
    epoch, epoch 0 first (shape (epochs + 1,) + stack lead).

    A diverging fit is a result: overflow gives inf and nan losses, no
    warning, and training stops at the epoch every run of the stack has
    diverged (fitlab.run.diverged), the last one returned.
    """
    n_train = config.n_train
    lr = np.asarray(lr, dtype=np.float32)[..., None]   # broadcasts over (out, rows)
    rows = with_ones(inputs)
    steps = [net.stepper(rows[..., s, :], labels[..., s, :], lr * np.float32(2 / (s.stop - s.start)))
             for s in batches(config)]
    outputs = net.evaluator(inputs)
    train_losses, test_losses = [], []
    with np.errstate(all="ignore"), one_blas_thread():
        for epoch in range(config.epochs + 1):
            if epoch:
                for step in steps:
                    step()
                if on_epoch is not None:
                    on_epoch(epoch)
                if progress is not None:
                    progress(epoch, config.epochs)
            train, test = losses(outputs(), labels, n_train)
            train_losses.append(train)
            test_losses.append(test)
            if diverged(train, test):
                break
    return np.array(train_losses, dtype=np.float64), np.array(test_losses, dtype=np.float64)


