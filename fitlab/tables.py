"""Tables and CSV files built from a run, ready to show or download."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from fitlab.baseline import with_fit_columns
from fitlab.config import Config
from fitlab.weights import Layers, use_counts

if TYPE_CHECKING:  # run.py builds its tables here
    from fitlab.run import Run

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
    layers = params.assign(layer=params.parameter.astype(str).str.rsplit(".", n=1).str[0],
                           kind=params.parameter.astype(str).str.rsplit(".", n=1).str[1])
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


def history_csv(run: Run) -> str:
    """The loss history as CSV text that explains itself (docs/library.md,
    "The history CSV"): epoch, train_loss and test_loss (the MSE over all
    training, and all test, rows after that epoch; epoch 0 before training),
    each epoch's train_r2 and test_r2, the constant predictor's
    constant_train_mse and constant_test_mse, then one column per Config
    field, trained_by (the engine that ran) and torch_version, so the file
    says which run made it.

    NaN and inf (a diverged run) are written as `nan` and `inf`, which
    pandas.read_csv reads back as the same values.
    """
    import torch  # the run's own version: only a trained run gets here

    table = with_fit_columns(run.history, run.baseline)
    for name, value in run.config.as_dict().items():
        table[name] = value
    table["trained_by"] = run.engine
    table["torch_version"] = torch.__version__
    return table.to_csv(index=False, na_rep="nan")


def history_file_name(config: Config) -> str:
    """The history CSV's file name, carrying the settings that differ from
    the defaults: fitlab-history-width8-lr0.02.csv (fitlab-history.csv at
    the defaults)."""
    default = Config().as_dict()
    changed = [f"{name}{value}" for name, value in config.as_dict().items() if value != default[name]]
    return "-".join(["fitlab-history", *changed]) + ".csv"
