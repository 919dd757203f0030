"""A net's weights as plain numpy arrays: the forward pass on them, and the
tables that show them.

Engine-agnostic: whatever trains the student hands over its layers as
`Layers`, a list of (name, weight, bias) in `TiedNet.named_layers()` order,
and the quantities that compare student and teacher are computed from these.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

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


PARAM_COLUMNS = ["parameter", "uses", "row", "col", "value"]


def parameter_table(layers: Layers, repeats: int) -> pd.DataFrame:
    """Tidy table of every weight and bias: parameter, uses, row, col, value.

    `layers` is (name, weight, bias) per distinct layer (TiedNet.layer_arrays()
    or an engine's arrays), of a net whose shared layer is used `repeats`
    times; a weight's row is its output unit and col its input, a bias has
    col 0. Each layer is listed once, so the tied shared layer appears once,
    `uses` saying how often the forward pass applies it. The parameter column is
    categorical: a wide net has tens of thousands of rows and a handful of
    names, which a column of strings would copy row by row.
    """
    names, sizes, rows, cols, values, uses = [], [], [], [], [], []
    for (name, weight, bias), count in zip(layers, use_counts(len(layers), repeats)):
        for kind, array in (("weight", weight), ("bias", bias)):
            grid = array.reshape(array.shape[0], -1)
            row, col = np.indices(grid.shape)
            names.append(f"{name}.{kind}")
            sizes.append(grid.size)
            uses.append(count)
            rows.append(row.ravel())
            cols.append(col.ravel())
            values.append(grid.ravel().astype(float))
    codes = np.repeat(np.arange(len(names)), sizes)
    return pd.DataFrame({"parameter": pd.Categorical.from_codes(codes, categories=names),
                         "uses": np.repeat(uses, sizes),
                         "row": np.concatenate(rows), "col": np.concatenate(cols),
                         "value": np.concatenate(values)})


def parameter_matrix(params: pd.DataFrame) -> pd.DataFrame:
    """A tidy parameter table (parameter_table) as one matrix per layer,
    stacked: a row per output unit of each layer, labelled "layer, unit";
    its weights in columns "in 0", "in 1", … (NaN past the layer's inputs)
    and its bias in column "bias". The tied shared layer's label carries its
    use count."""
    # Split the few names, not every row's: a wide net has tens of thousands of rows.
    parameter = params.parameter.astype("category")
    split = [str(name).rsplit(".", 1) for name in parameter.cat.categories]
    codes = parameter.cat.codes.to_numpy()
    layers = params.assign(layer=np.array([layer for layer, _ in split], dtype=object)[codes],
                           kind=np.array([kind for _, kind in split], dtype=object)[codes])
    n_inputs = int(layers[layers.kind == "weight"].col.max()) + 1
    blocks = []
    for name, layer in layers.groupby("layer", sort=False):
        uses = int(layer.uses.iloc[0])
        label = f"{name} (used {uses}×)" if uses > 1 else name
        weight = layer[layer.kind == "weight"].pivot(index="row", columns="col", values="value")
        weight = weight.reindex(columns=range(n_inputs))
        weight.columns = [f"in {c}" for c in weight.columns]
        weight["bias"] = layer[layer.kind == "bias"].set_index("row").value
        weight.index = [f"{label}, unit {r}" for r in weight.index]
        blocks.append(weight)
    return pd.concat(blocks)


def padding_mask(params: pd.DataFrame) -> pd.DataFrame:
    """True where parameter_matrix(params) pads a layer past its inputs: the
    cells that hold no parameter."""
    return parameter_matrix(params.assign(value=0.0)).isna()
