"""A run's CSV exports: its history as a file that explains itself, and its name."""

from __future__ import annotations

from fitlab.baseline import with_fit_columns
from fitlab.config import Config
from fitlab.run import Run


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
    changed = [f"{name}{value}" for name, value in config.changes().items()]
    return "-".join(["fitlab-history", *changed]) + ".csv"
