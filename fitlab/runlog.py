"""Comparing runs: the session's run log, loss smoothing, and the combined CSVs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fitlab.config import Config
from fitlab.run import Run
from fitlab.weights import PARAM_COLUMNS

LOG_LIMIT = 12


def describe_changes(config: Config) -> str:
    """The settings that differ from the defaults, e.g. "width=7, lr=0.05",
    or "defaults"."""
    changes = config.changes()
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in changes.items()) or "defaults"


@dataclass(frozen=True, eq=False)
class LoggedRun:
    """One run of the session: its number (in order of first run), its
    Config and its loss history. `stopped` is torch's error type, if any."""

    number: int
    config: Config
    history: pd.DataFrame
    stopped: str | None

    @property
    def label(self) -> str:
        """How charts, lists and files name the run: number, what differs,
        and whether training stopped on an error."""
        stopped = f" (stopped: {self.stopped})" if self.stopped else ""
        return f"#{self.number} {describe_changes(self.config)}{stopped}"


class RunLog:
    """The runs made in one session, least recently made first, at most
    `limit`: past it the oldest unpinned run is dropped. A Config made again
    moves to the end and keeps its number. Holds only Config and history: the
    rest of a run stays in the training cache."""

    def __init__(self, limit: int = LOG_LIMIT):
        self.limit = limit
        self.runs: list[LoggedRun] = []
        self.pinned: set[int] = set()  # numbers of the runs the limit and clear() keep
        self._made = 0

    def add(self, run: Run) -> LoggedRun:
        """Log `run` as the most recent and return its entry."""
        earlier = next((r for r in self.runs if r.config == run.config), None)
        if earlier is not None:
            self.runs.remove(earlier)
            entry = earlier
        else:
            self._made += 1
            entry = LoggedRun(self._made, run.config, run.history,
                              run.error.type if run.error else None)
        self.runs.append(entry)
        while len(self.runs) > self.limit:
            # The newest run is the one on screen: it stays, pinned or not.
            droppable = [r for r in self.runs[:-1] if r.number not in self.pinned]
            self.runs.remove(droppable[0] if droppable else self.runs[0])
        self.pinned &= {r.number for r in self.runs}
        return entry

    def pin(self, labels: list[str]) -> None:
        """Pin exactly the runs with these labels (unpinning the others)."""
        self.pinned = {r.number for r in self.find(labels)}

    def clear(self) -> None:
        """Drop every run that is neither pinned nor the most recent."""
        self.runs = [r for i, r in enumerate(self.runs)
                     if r.number in self.pinned or i == len(self.runs) - 1]

    def find(self, labels: list[str]) -> list[LoggedRun]:
        """The logged runs with these labels, in log order."""
        wanted = set(labels)
        return [r for r in self.runs if r.label in wanted]


def smooth(values: pd.Series, weight: float) -> pd.Series:
    """Exponential moving average s_t = w·s_(t−1) + (1 − w)·x_t, bias-corrected
    at the start as TensorBoard does (pandas' adjusted ewm). weight 0 returns
    the values; non-finite values are skipped and stay non-finite."""
    if weight == 0:
        return values.astype(float)
    finite = values.where(np.isfinite(values))
    smoothed = finite.ewm(alpha=1 - weight, adjust=True, ignore_na=True).mean()
    return smoothed.where(finite.notna(), values)


def overlay_long(runs: list[LoggedRun], weight: float = 0.0, log_scale: bool = False) -> pd.DataFrame:
    """run, epoch, split, loss (smoothed), raw_loss for every picked run,
    only the points a chart can draw (finite; positive on a log axis)."""
    frames = []
    for run in runs:
        for column, split in (("train_loss", "train"), ("test_loss", "test")):
            frames.append(pd.DataFrame({
                "run": run.label, "epoch": run.history.epoch, "split": split,
                "loss": smooth(run.history[column], weight), "raw_loss": run.history[column]}))
    if not frames:
        return pd.DataFrame(columns=["run", "epoch", "split", "loss", "raw_loss"])
    long = pd.concat(frames, ignore_index=True)
    drawable = np.isfinite(long["loss"]) & ((long["loss"] > 0) if log_scale else True)
    return long[drawable].reset_index(drop=True)


def _with_config(table: pd.DataFrame, label: str, config: Config) -> pd.DataFrame:
    """`table` prefixed with the run's label and one column per Config field."""
    front = pd.DataFrame({"run": label, **config.as_dict()}, index=table.index)
    return pd.concat([front, table], axis=1)


def runs_csv(runs: list[LoggedRun]) -> str:
    """One long CSV of all the runs: run, the Config columns, epoch,
    train_loss, test_loss. NaN and inf are written as `nan` and `inf`."""
    frames = [_with_config(r.history[["epoch", "train_loss", "test_loss"]], r.label, r.config)
              for r in runs]
    columns = ["run", *Config().as_dict(), "epoch", "train_loss", "test_loss"]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    return table[columns].to_csv(index=False, na_rep="nan")


def parameters_csv(runs: list[tuple[str, Run]]) -> str:
    """One long CSV of the teacher's and the final student's parameters of
    each (label, run): run, the Config columns, net, parameter, uses, row, col,
    value."""
    frames = [_with_config(params.assign(net=net)[["net", *PARAM_COLUMNS]], label, run.config)
              for label, run in runs
              for net, params in (("teacher", run.teacher_params), ("student", run.student_params))]
    columns = ["run", *Config().as_dict(), "net", *PARAM_COLUMNS]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    return table[columns].to_csv(index=False, na_rep="nan")
