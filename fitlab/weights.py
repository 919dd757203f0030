"""A net's weights as plain numpy arrays, and the forward pass on them.

Engine-agnostic: whatever trains the student hands over its layers as
`Layers`, a list of (name, weight, bias) in `TiedNet.named_layers()` order,
and the quantities that compare student and teacher are computed from these.
"""

from __future__ import annotations

import numpy as np

Layers = list[tuple[str, np.ndarray, np.ndarray]]


def use_order(n_layers: int, repeats: int) -> list[int]:
    """The index into a Layers list of the layer applied at each step.

    A tied net lists the shared layer once and applies it `repeats` times
    (n_layers == 3 with repeats >= 1); an untied net lists one copy per use.
    """
    if n_layers == 2:
        return [0, 1]
    if n_layers == 3:
        return [0, *[1] * repeats, 2]
    return list(range(n_layers))


def use_counts(n_layers: int, repeats: int) -> list[int]:
    """How often each layer of a Layers list is applied: the tied shared
    layer `repeats` times, every other layer (and each untied copy) once."""
    order = use_order(n_layers, repeats)
    return [order.count(index) for index in range(n_layers)]


def teacher_as_student(teacher: Layers, n_student_layers: int) -> Layers:
    """The teacher's layers in the student's shape: an untied student holds a
    copy per use, so the teacher's one shared layer stands in for every copy."""
    if len(teacher) == n_student_layers:
        return teacher
    first, shared, last = teacher
    return [first, *[shared] * (n_student_layers - 2), last]


def forward(layers: Layers, order: list[int], inputs: np.ndarray) -> np.ndarray:
    """The net's outputs, shape (rows,), in float64: ReLU after every layer
    but the last. Overflow in a diverged net gives inf/nan, not a warning.

    Weights and biases may carry leading axes (a stack of nets, shapes
    (..., out, in) and (..., out)); the outputs then have shape (..., rows)."""
    out = inputs.astype(np.float64)
    with np.errstate(all="ignore"):
        for step, index in enumerate(order):
            _, weight, bias = layers[index]
            out = out @ np.swapaxes(weight, -1, -2).astype(np.float64) + bias[..., None, :].astype(np.float64)
            if step < len(order) - 1:
                out = np.maximum(out, 0.0)
    return out[..., 0]


def mean_squared_error(predictions: np.ndarray, labels: np.ndarray) -> float:
    """Mean of squared differences, as torch's MSELoss; inf/nan pass through."""
    with np.errstate(all="ignore"):
        return float(np.mean((predictions - labels) ** 2))
