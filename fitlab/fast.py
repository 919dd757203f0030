"""The fast engine: the autograd run's math written out by hand in numpy.

The forward pass keeps each layer's activations; the backward pass walks the
uses in reverse and adds the shared layer's gradient over its uses, as
autograd does; SGD updates the parameters in one flat buffer (a single run
through direct BLAS calls, a stack through batched numpy matmuls). All math
is float32, like torch's, so histories match the autograd engine to the
foundation's fidelity tolerance.

The arrays may carry a leading "stack" axis: a sweep trains many configs of
one shape in the same calls (batched matmul), a single run has no such axis.
The initial values still come from the run's torch.Generator (fitlab.model,
fitlab.data), so both engines start from the same draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pandas as pd
import torch
from scipy.linalg.blas import sgemm, sgemv

from fitlab.blas import gemm_arguments, one_blas_thread, product
from fitlab.config import Config
from fitlab.data import draw_inputs
from fitlab.distance import DistanceTracker
from fitlab.model import build_teacher, reinitialise_as_student, untie
from fitlab.run import Run
from fitlab.student_teacher import StudentTeacher
from fitlab.tables import parameter_table
from fitlab.weights import Layers, teacher_as_student

Progress = Callable[[int, int], None]


@dataclass
class Start:
    """One config's draws from its generator, as numpy float32 arrays."""

    teacher_params: pd.DataFrame
    teacher_layers: Layers               # the teacher's (name, W, b), distinct
    inputs: np.ndarray                   # (n_samples, in_features)
    labels: np.ndarray                   # (n_samples, 1)
    layers: Layers                       # the student's initial (name, W, b), distinct


def draw_start(config: Config) -> Start:
    """Teacher, X, labels and the student's initial weights, drawn exactly as
    the autograd engine draws them (the same functions, the same order)."""
    generator = torch.Generator().manual_seed(config.seed)
    teacher = build_teacher(config, generator)
    teacher_layers = teacher.layer_arrays()  # copies: the re-init below overwrites the teacher
    teacher_params = parameter_table(teacher_layers)
    inputs = draw_inputs(config, generator).numpy()
    # The labels by the same math in numpy: torch's forward here would cost
    # more than the fast engine's whole default run.
    teacher_stack = Stack([w.shape for _, w, _ in teacher_layers], layer_uses(replace(config, tied=True)), ())
    teacher_stack.load([(w, b) for _, w, b in teacher_layers])
    with one_blas_thread():
        labels = teacher_stack.evaluate(inputs)
    reinitialise_as_student(teacher, generator)
    student = teacher if config.tied else untie(teacher)
    return Start(teacher_params, teacher_layers, inputs, labels, student.layer_arrays())


class Stack:
    """The student's parameters for one or many configs of one shape, in one
    flat float32 buffer (so one SGD update covers them all), with a gradient
    buffer of the same layout (used by stacks).

    `lead` is () for a single run, (C,) for a stack of C configs. Each layer
    is one block (in + 1, out): its weight transposed, then its bias as a last
    row. Every layer's input carries a trailing column of ones, so one matmul
    applies weight and bias, and one matmul gives both their gradients. With
    the weights transposed and the backward pass run on transposed deltas, no
    matmul has a transposed large right-hand side, which OpenBLAS does several
    times slower at these shapes.

    A single run steps and evaluates through RunStep and RunForward (direct
    sgemm calls); a stack through batched numpy matmuls.
    """

    def __init__(self, layer_shapes: list[tuple[int, int]], uses: list[int], lead: tuple):
        sizes = [(i + 1) * o for o, i in layer_shapes]
        self.params = np.zeros(lead + (sum(sizes),), dtype=np.float32)
        self.grads = np.zeros_like(self.params)
        self.blocks, self.grad_blocks = [], []
        offset = 0
        for (o, i), size in zip(layer_shapes, sizes):
            self.blocks.append(self.params[..., offset:offset + size].reshape(lead + (i + 1, o)))
            self.grad_blocks.append(self.grads[..., offset:offset + size].reshape(lead + (i + 1, o)))
            offset += size
        self.weights_t = [block[..., :-1, :] for block in self.blocks]
        self.biases = [block[..., -1:, :] for block in self.blocks]
        self.use_blocks = [self.blocks[layer] for layer in uses]
        self.use_weights_t = [self.weights_t[layer] for layer in uses]
        self.lead, self.uses = lead, uses
        self.input_widths = [layer_shapes[layer][1] for layer in uses]
        self.wide = [layer_shapes[layer][0] > 32 for layer in uses]
        self.narrow = not any(self.wide)
        # For each distinct layer, the uses whose gradients add up into it.
        self.uses_of = {layer: [k for k, u in enumerate(uses) if u == layer] for layer in set(uses)}
        self._hidden_inputs: dict[int, list[np.ndarray]] = {}
        self._run_steps: dict[int, RunStep] = {}
        self._run_forwards: dict[int, RunForward] = {}
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
        vectorised, against a scalar 0 it took 4x as long on large arrays."""
        zeros = self._zeros.get(shape)
        if zeros is None:
            zeros = self._zeros[shape] = np.zeros(shape, dtype=np.float32)
        return zeros

    def hidden_inputs(self, rows: int) -> tuple[list, list, list, list]:
        """Reused buffers for the inputs of uses 1.. at `rows` rows, each with
        its trailing column of ones already set, with the views a step
        needs: (inputs, activations without the ones, both transposed)."""
        views = self._hidden_inputs.get(rows)
        if views is None:
            buffers = []
            for width in self.input_widths[1:]:
                buffer = np.empty(self.lead + (rows, width + 1), dtype=np.float32)
                buffer[..., -1] = 1
                buffers.append(buffer)
            views = (buffers, [b[..., :-1] for b in buffers],
                     [b.swapaxes(-1, -2) for b in buffers],
                     [b.swapaxes(-1, -2)[..., :-1, :] for b in buffers])
            self._hidden_inputs[rows] = views
        return views

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The net's output for rows x (without the ones column), a new array.

        In a stack, for many rows a bias add is cheaper than writing
        activations beside a ones column, which is a strided write. Narrow
        nets run transposed, with rows along the last axis: many rows by few
        units is the faster matmul shape there (a stacked sweep's evaluation
        runs 1.7x faster)."""
        if not self.lead:
            forward = self._run_forwards.get(x.shape[-2])
            if forward is None:
                forward = self._run_forwards[x.shape[-2]] = RunForward(self, x.shape[-2])
            return forward.evaluate(x)
        last = len(self.uses) - 1
        if self.narrow:
            a = np.ascontiguousarray(x.swapaxes(-1, -2))
            for k, layer in enumerate(self.uses):
                a = np.ascontiguousarray(self.weights_t[layer].swapaxes(-1, -2)) @ a
                a += self.biases[layer].swapaxes(-1, -2)
                if k < last:
                    np.maximum(a, self.zeros(a.shape), out=a)
            return a.swapaxes(-1, -2)
        a = x
        for k, layer in enumerate(self.uses):
            a = a @ self.weights_t[layer]
            a += self.biases[layer]
            if k < last:
                np.maximum(a, self.zeros(a.shape), out=a)
        return a

    def sgd_step(self, x: np.ndarray, y: np.ndarray, step) -> None:
        """One SGD step on the mean squared error of the rows x (with_ones())
        against y.

        `step` is lr * 2 / rows: per config in a stack, shaped to broadcast
        over (out, rows); a one-element float32 array for a single run.
        """
        if self.lead:
            self._stacked_sgd_step(x, y, step)
            return
        run_step = self._run_steps.get(x.shape[-2])
        if run_step is None:
            run_step = self._run_steps[x.shape[-2]] = RunStep(self, x.shape[-2])
        run_step(x, y, step)

    def _stacked_sgd_step(self, x: np.ndarray, y: np.ndarray, step) -> None:
        """sgd_step for a stack, in batched numpy calls. The forward pass
        keeps each use's input in reused buffers. Folding `step` into the
        loss's gradient makes every gradient below lr times the true one, so
        the update is one subtraction."""
        # Forward: each hidden input is written into its reused buffer.
        inputs, activations, inputs_t, activations_t = self.hidden_inputs(x.shape[-2])
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
        for k in range(len(blocks) - 1, -1, -1):
            delta = delta_t.swapaxes(-1, -2)
            # Wide deltas laid out in memory: OpenBLAS is slower with a
            # transposed right-hand side; narrow ones are not worth a copy.
            deltas[k] = np.ascontiguousarray(delta) if self.wide[k] else delta
            if k:
                delta_t = self.use_weights_t[k] @ delta_t
                delta_t *= activations_t[k - 1] > 0
        for layer, ks in self.uses_of.items():
            if len(ks) == 1:
                a_t, delta = uses_t[ks[0]], deltas[ks[0]]
            else:
                # The shared layer: one matmul over all its uses' rows adds
                # the gradients of its uses.
                a_t = np.concatenate([uses_t[k] for k in ks], axis=-1)
                delta = np.concatenate([deltas[k] for k in ks], axis=-2)
            np.matmul(a_t, delta, out=self.grad_blocks[layer])
        self.params -= self.grads


class RunForward:
    """A single run's forward pass over a fixed number of rows, as direct
    BLAS calls on buffers made once.

    numpy's matmul costs about a microsecond per call before any arithmetic
    and cannot add into its output; sgemm (scipy's binding) costs half that
    and computes c = alpha * a @ b + beta * c in place. Small products go
    through sgemm, large ones through numpy's matmul (fitlab.blas.product),
    whose OpenBLAS build is a little faster there. Activations are kept
    transposed, (units, rows), C-ordered: each use's output is then a
    contiguous block of the next use's input, whose last row is the ones,
    so it is written in place and its bias comes with the product.
    """

    def __init__(self, stack: Stack, rows: int):
        blocks = stack.use_blocks
        inputs = []                     # uses 1..: input transposed (in + 1, rows)
        for width in stack.input_widths[1:]:
            buffer = np.empty((width + 1, rows), dtype=np.float32)
            buffer[-1] = 1
            inputs.append(buffer)
        self.inputs_t = inputs
        self.activations = [buffer[:-1] for buffer in inputs]
        self.output = np.empty((blocks[-1].shape[-1], rows), dtype=np.float32)   # transposed
        self.zeros = [stack.zeros(a.shape) for a in self.activations]
        # evaluate's rows with their ones. Its transpose also stands in for
        # any x in the first product's arguments: x is passed per call as x.T
        # with a transpose flag (right for any C-ordered x).
        self.x = np.empty((rows, stack.input_widths[0] + 1), dtype=np.float32)
        self.x[:, -1] = 1
        outputs = [*self.activations, self.output]
        self.first = gemm_arguments(blocks[0].T, self.x.T, outputs[0])
        self.products = [product(block.T, use_t, output)
                         for block, use_t, output in zip(blocks[1:], inputs, outputs[1:])]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The output, transposed (out, rows), for rows x (with_ones(),
        C-ordered); the buffer is reused by the next call."""
        _, b, c, _, trans_b = self.first
        sgemm(1.0, x.T, b, 0.0, c, 1, trans_b, 1)
        # Each later use reads the previous use's output through its ReLU.
        for activation, zeros, use in zip(self.activations, self.zeros, self.products):
            np.maximum(activation, zeros, out=activation)
            use()
        return self.output

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The output (rows, out), a new array, for rows x without the ones."""
        self.x[:, :-1] = x
        return self(self.x).T.copy()


class RunStep:
    """Stack.sgd_step for a single run at a fixed number of rows: a
    RunForward, then the backward pass and the update in BLAS calls.

    Each use's update is one call adding -lr × its gradient straight into
    its layer's block: no gradient buffer, no concatenation for the shared
    layer (its uses add in turn), no separate update pass. lr enters only
    there, as alpha, so the deltas are the unscaled gradients of the
    squared error. Deltas are transposed like the activations, so the
    backward pass multiplies by each weight as stored, the shape BLAS does
    fastest here (the other order was several times slower at width 256).
    """

    def __init__(self, stack: Stack, rows: int):
        self.forward = forward = RunForward(stack, rows)
        blocks = stack.use_blocks
        last = len(blocks) - 1
        self.slopes = [np.empty(a.shape, dtype=np.float32) for a in forward.activations]
        self.deltas = [*(np.empty((block.shape[-1], rows), dtype=np.float32) for block in blocks[:-1]),
                       forward.output]  # the output's error, computed in place
        self.backward = [gemm_arguments(blocks[k][:-1], self.deltas[k], self.deltas[k - 1])
                         for k in range(last, 0, -1)]
        # Wide layers' deltas are copied out row by row for the update: sgemm
        # took 12 us with the (units, rows) delta there, 9 with rows along
        # the first axis, at width 256; for small blocks a copy costs more.
        x_t = forward.x.T   # stands in for x, as in RunForward
        self.copies, self.updates, self.vector_updates = [], [], []
        for use_t, delta, block in zip([x_t, *forward.inputs_t], self.deltas, blocks):
            if min(block.shape) > 32:
                self.copies.append((np.empty(delta.T.shape, dtype=np.float32), delta.T))
                delta = self.copies[-1][0].T
            if block.shape[1] == 1 and use_t is not x_t:
                # One output unit: a matrix-vector product, which sgemv does
                # in a fifth of sgemm's time at width 256.
                self.vector_updates.append((use_t.T, delta[0], block[:, 0]))
            else:
                self.updates.append(gemm_arguments(use_t, delta.T, block))

    def __call__(self, x: np.ndarray, y: np.ndarray, step) -> None:
        """One SGD step on rows x (with_ones(), C-ordered) against labels y;
        `step` is lr * 2 / rows, a one-element float32 array."""
        error = self.forward(x)
        np.subtract(error, y.T, out=error)
        # Backward: each delta through its use's weight, then its ReLU, whose
        # slope is the sign of its output (>= 0): 1 where it passed its input
        # on, 0 where it cut it. (A NaN output gives a NaN slope; the error
        # through that unit was NaN already.) Two float32 ufuncs beat a
        # boolean mask: casting or masked writes cost more.
        activations, slopes, deltas = self.forward.activations, self.slopes, self.deltas
        k = len(activations)
        for a, b, c, trans_a, trans_b in self.backward:
            sgemm(1.0, a, b, 0.0, c, trans_a, trans_b, 1)
            k -= 1
            np.sign(activations[k], out=slopes[k])
            np.multiply(deltas[k], slopes[k], out=deltas[k])
        # Updates: block -= step * (use input) @ delta.T, use by use.
        for row_major, delta_t in self.copies:
            np.copyto(row_major, delta_t)
        alpha = -step.item()
        a, _, c, trans_a, _ = self.updates[0]
        sgemm(alpha, a, x.T, 1.0, c, trans_a, 1, 1)
        for a, b, c, trans_a, trans_b in self.updates[1:]:
            sgemm(alpha, a, b, 1.0, c, trans_a, trans_b, 1)
        for a, b, c in self.vector_updates:
            sgemv(alpha, a, b, 1.0, c, 0, 1, 0, 1, 1, 1)


def with_ones(x: np.ndarray) -> np.ndarray:
    """x with a trailing column of ones, the form Stack.sgd_step takes."""
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


def losses(stack: Stack, inputs: np.ndarray, labels: np.ndarray, n_train: int) -> tuple:
    """(train MSE, test MSE) of the current parameters (float32 sums, as torch)."""
    squares = stack.evaluate(inputs) - labels
    squares *= squares
    squares = squares[..., 0]
    return (np.add.reduce(squares[..., :n_train], axis=-1) / n_train,
            np.add.reduce(squares[..., n_train:], axis=-1) / (squares.shape[-1] - n_train))


def fit(stack: Stack, inputs: np.ndarray, labels: np.ndarray, config: Config, lr,
        progress: Progress | None = None,
        on_epoch: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Train `stack` for config.epochs; returns the train and test losses per
    epoch, epoch 0 first (shape (epochs + 1,) + stack lead).

    A diverging fit is a result: overflow gives inf and nan losses, no warning.
    """
    n_train = config.n_train
    lr = np.asarray(lr, dtype=np.float32)[..., None]   # broadcasts over (out, rows)
    rows = with_ones(inputs)
    steps = [(rows[..., s, :], labels[..., s, :], lr * np.float32(2 / (s.stop - s.start)))
             for s in batches(config)]
    train_losses, test_losses = [], []
    with np.errstate(all="ignore"), one_blas_thread():
        for epoch in range(config.epochs + 1):
            if epoch:
                for x, y, step in steps:
                    stack.sgd_step(x, y, step)
                if on_epoch is not None:
                    on_epoch(epoch)
                if progress is not None:
                    progress(epoch, config.epochs)
            train, test = losses(stack, inputs, labels, n_train)
            train_losses.append(train)
            test_losses.append(test)
    return np.array(train_losses, dtype=np.float64), np.array(test_losses, dtype=np.float64)


def blog_test_figure(stack: Stack, inputs: np.ndarray, labels: np.ndarray, config: Config) -> float:
    """What the blog's test() prints: per-batch mean losses over the test rows
    summed, not averaged."""
    with one_blas_thread():
        diff = stack.evaluate(inputs[config.n_train:]) - labels[config.n_train:]
    squares = (diff * diff)[:, 0]
    starts = np.arange(0, config.n_test, config.batch_size)
    sizes = np.diff(np.append(starts, config.n_test)).astype(np.float32)
    with np.errstate(all="ignore"):
        return float(np.sum((np.add.reduceat(squares, starts) / sizes).astype(np.float64)))


def train_fast(config: Config, progress: Progress | None = None) -> Run:
    """The run of a detached config, trained by hand in numpy."""
    if not config.detach:
        raise ValueError("detach=False is not allowed in the fast engine: undetached "
                         "labels are the autograd engine's lesson")
    start = draw_start(config)
    names = [name for name, _, _ in start.layers]
    shapes, uses = [w.shape for _, w, _ in start.layers], layer_uses(config)
    stack = Stack(shapes, uses, lead=())
    stack.load([(w, b) for _, w, b in start.layers])

    def layers_now() -> Layers:
        return [(name, w, b) for name, (w, b) in zip(names, stack.layers())]

    # The teacher in the student's flat layout: each layer's raw distance is
    # then one subtraction and a dot product per layer, with no copies; in
    # float64, where the difference of two float32 is exact and its square
    # does not overflow.
    teacher = Stack(shapes, uses, lead=())
    teacher.load([(w, b) for _, w, b in teacher_as_student(start.teacher_layers, len(names))])
    difference = np.empty(stack.params.shape, dtype=np.float64)
    ends = np.cumsum([block.size for block in stack.blocks])
    pieces = [difference[end - block.size:end] for block, end in zip(stack.blocks, ends)]

    def raw_distances() -> list[float]:
        np.subtract(stack.params, teacher.params, out=difference)
        return [math.sqrt(float(piece @ piece)) for piece in pieces]

    tracker = DistanceTracker(start.teacher_layers, config.shared_repeats, config.epochs)
    tracker.record(0, start.layers)

    def record(epoch: int) -> None:
        if tracker.wants(epoch):
            tracker.record(epoch, layers_now() if tracker.matches(epoch) else None, raw_distances())

    train_losses, test_losses = fit(stack, start.inputs, start.labels, config,
                                    np.float32(config.lr), progress, record)
    history = pd.DataFrame({"epoch": np.arange(config.epochs + 1),
                            "train_loss": train_losses, "test_loss": test_losses})
    final = layers_now()
    return Run(
        config=config,
        history=history,
        teacher_params=start.teacher_params,
        student_params=parameter_table(final),
        error=None,
        blog_test_loss=blog_test_figure(stack, start.inputs, start.labels, config),
        engine="fast",
        student_teacher=StudentTeacher(tracker.records(), start.layers, final, start.teacher_layers,
                                       start.inputs, start.labels[:, 0], config.n_train,
                                       config.shared_repeats),
    )
