"""The fast engine for a single run: the autograd run's math by hand in
numpy (fitlab.engines.numpy_net), each product a direct BLAS call on buffers
made once.

The initial values still come from the run's torch.Generator through
fitlab.blog.setup, so both engines start from the same draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pandas as pd
from scipy.linalg.blas import sgemm, sgemv

from fitlab.blog import blog_test_figure, no_labels, setup
from fitlab.config import Config
from fitlab.engines.numpy_net import FlatLayers, fit, layer_uses
from fitlab.frames import FrameRecorder
from fitlab.numerics.blas import gemm_arguments, one_blas_thread, product
from fitlab.run import Progress, Run, make_run
from fitlab.student.distance import DistanceTracker
from fitlab.weights import Layers, teacher_as_student


@dataclass(frozen=True, eq=False)
class NumpyStart:
    """One config's start (fitlab.blog.setup) as numpy float32 arrays."""

    teacher_layers: Layers               # the teacher's (name, W, b), distinct
    inputs: np.ndarray                   # (n_samples, in_features)
    labels: np.ndarray                   # (n_samples, 1)
    layers: Layers                       # the student's initial (name, W, b), distinct


def draw_start(config: Config) -> NumpyStart:
    """The blog's setup for `config`, with the labels computed in numpy:
    torch's forward pass would cost more than this engine's whole default run."""
    start = setup(config, no_labels)
    inputs = start.inputs.numpy()
    teacher = RunNet([w.shape for _, w, _ in start.teacher_layers], layer_uses(replace(config, tied=True)))
    teacher.load([(w, b) for _, w, b in start.teacher_layers])
    with one_blas_thread():
        labels = teacher.evaluate(inputs)
    return NumpyStart(start.teacher_layers, inputs, labels, start.student.layer_arrays())


class RunNet(FlatLayers):
    """FlatLayers of a single run (no lead axis), stepped and evaluated
    through RunStep and RunForward, one of each per number of rows."""

    def __init__(self, layer_shapes: list[tuple[int, int]], uses: list[int]):
        super().__init__(layer_shapes, uses, ())
        self._steps: dict[int, RunStep] = {}
        self._forwards: dict[int, RunForward] = {}

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The net's output (rows, out) for rows x without the ones, a new array."""
        forward = self._forwards.get(x.shape[-2])
        if forward is None:
            forward = self._forwards[x.shape[-2]] = RunForward(self, x.shape[-2])
        return forward.evaluate(x)

    def evaluator(self, x: np.ndarray) -> Callable[[], np.ndarray]:
        """A call giving the net's output (rows, out) for rows x without the
        ones, with the parameters as they are when it is made: a view of a
        buffer the next call overwrites. x is copied in once (a fit
        evaluates the same rows every epoch)."""
        forward = RunForward(self, x.shape[-2])
        forward.x[:, :-1] = x
        return lambda: forward(forward.x).T

    def stepper(self, x: np.ndarray, y: np.ndarray, step) -> Callable[[], None]:
        """A call that makes one SGD step on rows x (with_ones()) against y,
        each time it is made; `step` is lr * 2 / rows, a one-element float32
        array."""
        run_step = self._steps.get(x.shape[-2])
        if run_step is None:
            run_step = self._steps[x.shape[-2]] = RunStep(self, x.shape[-2])
        return run_step.program(x, y, step)


class RunForward:
    """A single run's forward pass over a fixed number of rows, as direct
    BLAS calls on buffers made once.

    numpy's matmul has a fixed cost per call before any arithmetic and
    cannot add into its output; sgemm (scipy's binding) costs less and
    computes c = alpha * a @ b + beta * c in place. Small products go
    through sgemm, large ones through numpy's matmul (fitlab.numerics.blas.product),
    whose OpenBLAS build is a little faster there. Activations are kept
    transposed, (units, rows), C-ordered: each use's output is then a
    contiguous block of the next use's input, whose last row is the ones,
    so it is written in place and its bias comes with the product.
    """

    def __init__(self, net: RunNet, rows: int):
        blocks = net.use_blocks
        # Uses 1.. all read `width` units (the blog's net): their inputs,
        # transposed (width + 1, rows), are slices of one buffer, so one ufunc
        # call can cover every activation (RunStep's slopes).
        self.hidden = np.empty((len(blocks) - 1, net.input_widths[-1] + 1, rows), dtype=np.float32)
        self.hidden[:, -1] = 1
        self.inputs_t = inputs = list(self.hidden)
        self.activations = [buffer[:-1] for buffer in inputs]
        self.output = np.empty((blocks[-1].shape[-1], rows), dtype=np.float32)   # transposed
        # evaluate's rows with their ones. Its transpose also stands in for
        # any x in the first product's arguments: x is passed per call as x.T
        # with a transpose flag (right for any C-ordered x).
        self.x = np.empty((rows, net.input_widths[0] + 1), dtype=np.float32)
        self.x[:, -1] = 1
        outputs = [*self.activations, self.output]
        self.first = gemm_arguments(blocks[0].T, self.x.T, outputs[0])
        self.later = [(activation, net.zeros(activation.shape), product(block.T, use_t, output))
                      for activation, block, use_t, output in zip(self.activations, blocks[1:], inputs, outputs[1:])]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The output, transposed (out, rows), for rows x (with_ones(),
        C-ordered); the buffer is reused by the next call."""
        _, b, c, _, trans_b = self.first
        sgemm(1.0, x.T, b, 0.0, c, 1, trans_b, 1)
        # Each later use reads the previous use's output through its ReLU.
        maximum = np.maximum
        for activation, zeros, use in self.later:
            maximum(activation, zeros, out=activation)
            use()
        return self.output

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The output (rows, out), a new array, for rows x without the ones."""
        self.x[:, :-1] = x
        return self(self.x).T.copy()


class RunStep:
    """RunNet's SGD step at a fixed number of rows: a
    RunForward, then the backward pass and the update in BLAS calls.

    Each use's update is one call adding -lr × its gradient straight into
    its layer's block: no gradient buffer, no concatenation for the shared
    layer (its uses add in turn), no separate update pass. lr enters only
    there, as alpha, so the deltas are the unscaled gradients of the
    squared error. Deltas are transposed like the activations, so the
    backward pass multiplies by each weight as stored, the shape BLAS does
    fastest here.
    """

    def __init__(self, net: RunNet, rows: int):
        self.forward = forward = RunForward(net, rows)
        blocks = net.use_blocks
        last = len(blocks) - 1
        # Every activation's slope in one buffer, shaped as forward.hidden
        # without its ones: one sign call per step for all of them.
        self.activations = forward.hidden[:, :-1]
        self.slopes = np.empty(self.activations.shape, dtype=np.float32)
        self.deltas = [*(np.empty((block.shape[-1], rows), dtype=np.float32) for block in blocks[:-1]),
                       forward.output]  # the output's error, computed in place
        # Per use from the last: its delta's product with the weight, which
        # gives the previous use's delta, and that delta's slope.
        self.backward = [(gemm_arguments(blocks[k][:-1], self.deltas[k], self.deltas[k - 1]),
                          self.deltas[k - 1], self.slopes[k - 1])
                         for k in range(last, 0, -1)]
        # Wide layers' deltas are copied out row by row for the update: sgemm
        # runs faster with rows along the first axis there; for small blocks
        # the copy costs more than it saves.
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

    def program(self, x: np.ndarray, y: np.ndarray, step) -> Callable[[], None]:
        """One SGD step on rows x (with_ones(), C-ordered) against labels y,
        `step` being lr * 2 / rows (a one-element float32 array), as a call
        that makes it: every BLAS and ufunc call of the step with its
        arguments bound. A fit's batches are the same rows every epoch, so
        each batch's calls are bound once and a step only makes them: at the
        default net, unpacking and rebuilding the arguments every step cost
        more than the arithmetic."""
        _, b, c, _, trans_b = self.forward.first
        calls = [partial(sgemm, 1.0, x.T, b, 0.0, c, 1, trans_b, 1)]
        # Each later use reads the previous use's output through its ReLU.
        for activation, zeros, use in self.forward.later:
            calls += [partial(np.maximum, activation, zeros, out=activation), use]
        error = self.forward.output
        calls.append(partial(np.subtract, error, y.T, out=error))
        # Backward: each delta through its use's weight, then its ReLU, whose
        # slope is the sign of its output (>= 0): 1 where it passed its input
        # on, 0 where it cut it. (A NaN output gives a NaN slope; the error
        # through that unit was NaN already.) Two float32 ufuncs beat a
        # boolean mask: casting or masked writes cost more. The slopes of
        # every use come in one call.
        calls.append(partial(np.sign, self.activations, out=self.slopes))
        for (a, b, c, trans_a, trans_b), delta, slope in self.backward:
            calls += [partial(sgemm, 1.0, a, b, 0.0, c, trans_a, trans_b, 1),
                      partial(np.multiply, delta, slope, out=delta)]
        # Updates: block -= step * (use input) @ delta.T, use by use.
        calls += [partial(np.copyto, row_major, delta_t) for row_major, delta_t in self.copies]
        alpha = -step.item()
        a, _, c, trans_a, _ = self.updates[0]
        calls.append(partial(sgemm, alpha, a, x.T, 1.0, c, trans_a, 1, 1))
        calls += [partial(sgemm, alpha, a, b, 1.0, c, trans_a, trans_b, 1)
                  for a, b, c, trans_a, trans_b in self.updates[1:]]
        calls += [partial(sgemv, alpha, a, b, 1.0, c, 0, 1, 0, 1, 1, 1) for a, b, c in self.vector_updates]

        def run() -> None:
            for call in calls:
                call()
        return run


def blog_figure(net: RunNet, inputs: np.ndarray, labels: np.ndarray, config: Config) -> float:
    """What the blog's test() prints (fitlab.blog.blog_test_figure), from the
    per-batch mean losses over the test rows computed here."""
    with one_blas_thread():
        diff = net.evaluate(inputs[config.n_train:]) - labels[config.n_train:]
    starts = np.arange(0, config.n_test, config.batch_size)
    sizes = np.diff(np.append(starts, config.n_test)).astype(np.float32)
    with np.errstate(all="ignore"):  # a diverged net's outputs overflow: inf, as torch gives
        squares = (diff * diff)[:, 0]
        return blog_test_figure(np.add.reduceat(squares, starts) / sizes, config.n_test)


def table_order(net: RunNet, flat: np.ndarray) -> np.ndarray:
    """Copies of the net's flat buffer, stacked (frames, size), rearranged in
    parameter_table's order: per layer its weight (out, in) row by row, then
    its bias (the buffer holds each layer as its weight transposed, then the
    bias as a last row)."""
    pieces = []
    for block_slice, block in zip(net.block_slices, net.blocks):
        rows, outs = block.shape
        stacked = flat[:, block_slice].reshape(len(flat), rows, outs)
        pieces += [stacked[:, :-1, :].transpose(0, 2, 1).reshape(len(flat), -1), stacked[:, -1, :]]
    return np.concatenate(pieces, axis=1)


def train_numpy(config: Config, progress: Progress | None = None) -> Run:
    """The run of a detached config, trained by hand in numpy."""
    if not config.detach:
        raise ValueError("detach=False is not allowed in the fast engine: undetached "
                         "labels are the autograd engine's lesson")
    start = draw_start(config)
    names = [name for name, _, _ in start.layers]
    shapes, uses = [w.shape for _, w, _ in start.layers], layer_uses(config)
    net = RunNet(shapes, uses)
    net.load([(w, b) for _, w, b in start.layers])

    def layers_now() -> Layers:
        return [(name, w, b) for name, (w, b) in zip(names, net.layers())]

    # The teacher in the student's flat layout: each layer's raw distance is
    # then one subtraction and a dot product per layer, with no copies; in
    # float64, where the difference of two float32 is exact and its square
    # does not overflow.
    teacher = RunNet(shapes, uses)
    teacher.load([(w, b) for _, w, b in teacher_as_student(start.teacher_layers, len(names))])
    difference = np.empty(net.params.shape, dtype=np.float64)
    pieces = [difference[s] for s in net.block_slices]

    def raw_distances() -> list[float]:
        np.subtract(net.params, teacher.params, out=difference)
        return [math.sqrt(float(piece @ piece)) for piece in pieces]

    tracker = DistanceTracker(start.teacher_layers, config.shared_repeats, config.epochs,
                              tied=config.tied)
    tracker.record(0, start.layers)
    recorder = FrameRecorder(start.layers, config.epochs)
    recorder.record(0, start.layers)
    # Frames are kept as copies of the flat buffer, turned into layers all at
    # once after training: one copy per frame in the loop, not six.
    snapshots: list[tuple[int, np.ndarray]] = []

    def record(epoch: int) -> None:
        if tracker.wants(epoch):
            tracker.record(epoch, layers_now() if tracker.matches(epoch) else None, raw_distances())
        if recorder.wants(epoch):
            snapshots.append((epoch, net.params.copy()))

    train_losses, test_losses = fit(net, start.inputs, start.labels, config,
                                    np.float32(config.lr), progress, record)
    last = len(train_losses) - 1
    if last and not recorder.wants(last):   # stopped early, diverged: its last epoch is a frame too
        snapshots.append((last, net.params.copy()))
    if snapshots:
        for (epoch, _), values in zip(snapshots, table_order(net, np.stack([v for _, v in snapshots]))):
            recorder.record_values(epoch, values)
    history = pd.DataFrame({"epoch": np.arange(len(train_losses)),   # fewer if it diverged
                            "train_loss": train_losses, "test_loss": test_losses})
    return make_run(
        config, engine="fast", history=history, error=None,
        blog_test_loss=blog_figure(net, start.inputs, start.labels, config),
        teacher=start.teacher_layers, initial=start.layers, final=layers_now(),
        records=tracker.records(), frames=recorder.frames(config.shared_repeats),
        inputs=start.inputs, labels=start.labels)
