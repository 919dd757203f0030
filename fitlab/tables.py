"""Tables and CSV files built from a run, ready to show or download."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from fitlab.baseline import with_fit_columns
from fitlab.config import Config
from fitlab.weights import Layers

if TYPE_CHECKING:  # run.py builds its tables here
    from fitlab.run import Run

PARAM_COLUMNS = ["parameter", "row", "col", "value"]


def parameter_table(layers: Layers) -> pd.DataFrame:
    """Tidy table of every weight and bias: parameter, row, col, value.

    `layers` is (name, weight, bias) per distinct layer (TiedNet.layer_arrays()
    or an engine's arrays); a weight's row is its output unit and col its
    input, a bias has col 0. Each layer is listed once, so the shared layer
    appears once however often it is used. The parameter column is
    categorical: a wide net has tens of thousands of rows and a handful of
    names, which a column of strings would copy row by row.
    """
    names, sizes, rows, cols, values = [], [], [], [], []
    for name, weight, bias in layers:
        for kind, array in (("weight", weight), ("bias", bias)):
            grid = array.reshape(array.shape[0], -1)
            row, col = np.indices(grid.shape)
            names.append(f"{name}.{kind}")
            sizes.append(grid.size)
            rows.append(row.ravel())
            cols.append(col.ravel())
            values.append(grid.ravel().astype(float))
    codes = np.repeat(np.arange(len(names)), sizes)
    return pd.DataFrame({"parameter": pd.Categorical.from_codes(codes, categories=names),
                         "row": np.concatenate(rows), "col": np.concatenate(cols),
                         "value": np.concatenate(values)})


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
