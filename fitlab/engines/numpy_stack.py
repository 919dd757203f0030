"""A sweep's engine: many configs of one shape trained in the same batched
numpy calls, their parameters stacked along a leading axis."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from fitlab.engines.numpy_net import FlatLayers


class StackNet(FlatLayers):
    """FlatLayers with lead (C,): C configs, one gradient buffer of the same
    layout, every step one batched numpy call per operation."""

    def __init__(self, layer_shapes: list[tuple[int, int]], uses: list[int], configs: int):
        super().__init__(layer_shapes, uses, (configs,))
        self.grads = np.zeros_like(self.params)
        self.grad_blocks = [self.grads[..., block_slice].reshape(block.shape)
                            for block_slice, block in zip(self.block_slices, self.blocks)]
        self.use_weights_t = [self.weights_t[layer] for layer in uses]
        self.wide = [layer_shapes[layer][0] > 32 for layer in uses]
        self.narrow = not any(self.wide)
        # For each distinct layer, the uses whose gradients add up into it.
        self.uses_of = {layer: [k for k, u in enumerate(uses) if u == layer] for layer in set(uses)}
        self._hidden_inputs: dict[int, tuple] = {}

    def hidden_inputs(self, rows: int) -> tuple:
        """Reused buffers for the inputs of uses 1.. at `rows` rows, each with
        its trailing column of ones already set, with the views a step
        needs: (inputs, activations without the ones, the inputs transposed,
        the ReLU masks buffer, each activation's mask transposed, and the
        shared layer's buffers for its uses' inputs and deltas side by side)."""
        views = self._hidden_inputs.get(rows)
        if views is None:
            # Uses 1.. all read `width` units (the blog's net): their inputs are
            # slices of one buffer, so one ufunc call covers every ReLU's mask.
            width = self.input_widths[-1]
            hidden = np.empty((len(self.uses) - 1,) + self.lead + (rows, width + 1), dtype=np.float32)
            hidden[..., -1] = 1
            buffers = list(hidden)
            masks = np.empty(hidden.shape, dtype=np.float32)
            shared = {layer: (np.empty(self.lead + (self.blocks[layer].shape[-2], rows * len(ks)), dtype=np.float32),
                              np.empty(self.lead + (rows * len(ks), self.blocks[layer].shape[-1]), dtype=np.float32))
                      for layer, ks in self.uses_of.items() if len(ks) > 1}
            views = (buffers, [b[..., :-1] for b in buffers], [b.swapaxes(-1, -2) for b in buffers],
                     (hidden, masks), [m[..., :-1].swapaxes(-1, -2) for m in masks], shared)
            self._hidden_inputs[rows] = views
        return views

    def evaluator(self, x: np.ndarray) -> Callable[[], np.ndarray]:
        """A call giving the net's output for rows x (without the ones
        column) with the parameters as they are when it is made, a new array.

        For many rows a bias add is cheaper than writing activations beside a
        ones column, which is a strided write. Narrow nets run transposed,
        with rows along the last axis: many rows by few units is the faster
        matmul shape there; x is transposed once, here (a fit evaluates the
        same rows every epoch)."""
        if self.narrow:
            return partial(self._evaluate_transposed, np.ascontiguousarray(x.swapaxes(-1, -2)))
        return partial(self._evaluate, x)

    def _evaluate_transposed(self, x_t: np.ndarray) -> np.ndarray:
        last = len(self.uses) - 1
        a = x_t
        for k, layer in enumerate(self.uses):
            a = np.ascontiguousarray(self.weights_t[layer].swapaxes(-1, -2)) @ a
            a += self.biases[layer].swapaxes(-1, -2)
            if k < last:
                np.maximum(a, self.zeros(a.shape), out=a)
        return a.swapaxes(-1, -2)

    def _evaluate(self, x: np.ndarray) -> np.ndarray:
        last = len(self.uses) - 1
        a = x
        for k, layer in enumerate(self.uses):
            a = a @ self.weights_t[layer]
            a += self.biases[layer]
            if k < last:
                np.maximum(a, self.zeros(a.shape), out=a)
        return a

    def stepper(self, x: np.ndarray, y: np.ndarray, step) -> Callable[[], None]:
        """A call that makes sgd_step(x, y, step) each time it is made."""
        return partial(self.sgd_step, x, y, step)

    def sgd_step(self, x: np.ndarray, y: np.ndarray, step) -> None:
        """One SGD step on the mean squared error of the rows x (with_ones())
        against y, per config; `step` is lr * 2 / rows per config, shaped to
        broadcast over (out, rows). The forward pass keeps each use's input in
        reused buffers. Folding `step` into the
        loss's gradient makes every gradient below lr times the true one, so
        the update is one subtraction."""
        # Forward: each hidden input is written into its reused buffer.
        inputs, activations, inputs_t, (hidden, masks), masks_t, shared = self.hidden_inputs(x.shape[-2])
        blocks = self.use_blocks
        a = x
        for k in range(len(blocks) - 1):
            np.maximum(a @ blocks[k], self.zeros(activations[k].shape), out=activations[k])
            a = inputs[k]
        out = a @ blocks[-1]
        # delta_t: lr × d loss / d (layer output), transposed to (out, rows).
        delta_t = (out - y).swapaxes(-1, -2)
        delta_t *= step
        # Per use: its input transposed (in + 1, rows) and its delta (rows, out).
        uses_t, deltas = [x.swapaxes(-1, -2), *inputs_t], [None] * len(blocks)
        # Each ReLU's slope, 1 where its output is > 0 and 0 elsewhere (NaN
        # included), for every use in one call over the contiguous buffer
        # (the ones too): per use, a comparison of the transposed activations
        # cast in the multiply took several times as long.
        np.greater(hidden, 0, out=masks)
        for k in range(len(blocks) - 1, -1, -1):
            delta = delta_t.swapaxes(-1, -2)
            # Wide deltas laid out in memory: OpenBLAS is slower with a
            # transposed right-hand side; narrow ones are not worth a copy.
            deltas[k] = np.ascontiguousarray(delta) if self.wide[k] else delta
            if k:
                delta_t = self.use_weights_t[k] @ delta_t
                delta_t *= masks_t[k - 1]
        for layer, ks in self.uses_of.items():
            if len(ks) == 1:
                a_t, delta = uses_t[ks[0]], deltas[ks[0]]
            else:
                # The shared layer: one matmul over all its uses' rows adds
                # the gradients of its uses.
                a_t, delta = shared[layer]
                np.concatenate([uses_t[k] for k in ks], axis=-1, out=a_t)
                np.concatenate([deltas[k] for k in ks], axis=-2, out=delta)
            np.matmul(a_t, delta, out=self.grad_blocks[layer])
        self.params -= self.grads


