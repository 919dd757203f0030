"""A run's tables in words: the history CSV that explains itself and its
file name, a sweep's table with each cell's R², and the tables the page shows as they are (the version ledger,
the tied-gradient summary, tied against untied)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from fitlab.baseline import constant_baseline, with_fit_columns
from fitlab.config import Config
from fitlab.engines.numpy_run import draw_start
from fitlab.failure.versions import MOMENTS
from fitlab.run import Run
from fitlab.shared_layer.gradients import TiedGradients
from fitlab.shared_layer.tying import student_kind


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


def download_name(what: str, config: Config | None = None, *parts: str, leave_out: tuple[str, ...] = ()) -> str:
    """Every download's file name, in one place: fitlab-<what>, then the
    settings that differ from the defaults (but `leave_out`, e.g. a sweep's
    own axes), then `parts`: fitlab-history-width8-lr0.02.csv,
    fitlab-sweep-epochs500-lr-by-width.csv, fitlab-history.csv at the defaults."""
    changed = [] if config is None else [f"{name}{value}" for name, value in config.changes().items()
                                         if name not in leave_out]
    return "-".join(["fitlab-" + what, *changed, *parts]) + ".csv"


def history_file_name(config: Config) -> str:
    """The history CSV's file name, carrying the settings that differ from
    the defaults: fitlab-history-width8-lr0.02.csv (fitlab-history.csv at
    the defaults)."""
    return download_name("history", config)


# The version ledger's moments, in words.
MOMENT_HEADERS = dict(zip(MOMENTS, ("at the teacher's forward", "after the student's re-init",
                                    "at the failing backward"), strict=True))


def ledger_table(ledger: pd.DataFrame) -> pd.DataFrame:
    """fitlab.failure.versions.version_ledger with its headers in words and
    what the labels' graph saved of each parameter written out, e.g.
    "mat2 [5, 5] at v1, ×2 (one per use)", or "not saved"."""
    table = ledger.rename(columns={"saved": "saved by the labels' graph", **MOMENT_HEADERS})
    table["saved by the labels' graph"] = ledger.saved.map(_saved_as)
    return table


def _saved_as(saved: tuple) -> str:
    counts = Counter(saved)
    return "; ".join(f"{name} {list(shape)} at v{version}" + (f", ×{n} (one per use)" if n > 1 else "")
                     for (name, shape, version), n in counts.items()) or "not saved"


def ledger_summary(ledger: TiedGradients) -> pd.DataFrame:
    """One row per gradient column of the ledger (each use, their sum, the
    stored .grad): its norm over all entries and its largest entry."""
    columns = [c for c in ledger.table.columns if c not in ("row", "col")]
    return pd.DataFrame([{"gradient": c, "norm": float(np.linalg.norm(ledger.table[c])),
                          "largest |entry|": float(ledger.table[c].abs().max())} for c in columns])


def tying_summary(runs: list[Run]) -> pd.DataFrame:
    """One row per run: student (tied/untied), number of parameters (one
    per entry of the parameter table), final train and test MSE."""
    return pd.DataFrame([{"student": student_kind(r), "parameters": len(r.student_params),
                          "final train MSE": r.history.train_loss.iloc[-1],
                          "final test MSE": r.history.test_loss.iloc[-1]} for r in runs])


def with_test_r2(table: pd.DataFrame, configs: list[Config]) -> pd.DataFrame:
    """A sweep's table (fitlab.sweeps.final_losses, one row per config of
    `configs`, in order) with `test_r2`: each cell's final test R² against
    its own constant predictor (a seed or a width draws other labels)."""
    labels = {}
    r2 = []
    for config, mse in zip(configs, table["test_loss"], strict=True):
        task = (config.seed, config.width, config.shared_repeats, config.n_samples, config.in_features)
        if task not in labels:
            labels[task] = draw_start(config).labels[:, 0]
        r2.append(constant_baseline(labels[task], config.n_train).r_squared(float(mse), "test"))
    return table.assign(test_r2=r2)
