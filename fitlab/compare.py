"""Comparing runs: the session's run log, loss smoothing, and the combined CSVs."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fitlab.config import Config
from fitlab.run import Run
from fitlab.weights import PARAM_COLUMNS

LOG_LIMIT = 12
# Seconds a slider's value must have been on screen to count as looked at (issue
# 44): arrow keys on a slider ask for the next run a few tenths of a second after
# the last was drawn (or before); a person who stops to look stays a second or more.
STEP_SETTLE = 1.0


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
    # The one setting that changed from the run logged before it (None: several or none).
    stepped: str | None

    @property
    def label(self) -> str:
        """How charts, lists and files name the run: number, what differs,
        and whether training stopped on an error."""
        stopped = f" (stopped: {self.stopped})" if self.stopped else ""
        return f"#{self.number} {describe_changes(self.config)}{stopped}"


DROPPED_KEPT = 5  # how many dropped runs' labels a log remembers, to say so


class RunLog:
    """The runs made in one session, least recently made first, at most
    `limit`: past it the oldest unpinned run is dropped. A Config made again
    moves to the end and keeps its number. Holds only Config and history: the
    rest of a run stays in the training cache.

    With `settle` > 0, steps passed through are not kept: the newest run, if it
    was made by changing one of the `passing` settings (by default any; the
    page's sliders, whose thumb passes through values on the way) and the
    next run changes that same setting again less than `settle` seconds
    after the newest was on screen whole (`shown`), or before, was a step on
    the way (a slider moved with the arrow keys), and the next run takes its
    place and number: a slider's value on screen `settle` seconds or more is
    kept. Timed from the drawing, not from the request, so that a busy
    server, which draws late, does not make quick steps look like stops. A
    step of any other setting (a + click or an arrow key on a number box, a
    ticked box) was chosen: it is kept however quickly the next follows. A
    run logged again (the page ran on it once more: the person did something
    there), pinned, or logged before, is never a step on the way; nor is one
    followed by a change of another setting (where that setting's steps stopped).
    """

    def __init__(self, limit: int = LOG_LIMIT, settle: float = 0.0, passing: frozenset[str] | None = None):
        self.limit = limit
        self.settle = settle
        self.passing = passing
        self.runs: list[LoggedRun] = []
        self.pinned: set[int] = set()  # numbers of the runs the limit and clear() keep
        self.dropped: list[str] = []  # labels of the runs the limit dropped, the latest last (DROPPED_KEPT)
        self._made = 0
        self._fresh = False  # whether the newest entry was new when logged (not a run made again)
        self._shown_at: float | None = None  # when the newest entry was last on screen whole

    def add(self, run: Run, now: float | None = None) -> LoggedRun:
        """Log `run` as the most recent and return its entry; `now` is the
        time.monotonic() it was asked for at (by default, the time of the call)."""
        now = time.monotonic() if now is None else now
        if self.runs and self.runs[-1].config == run.config:
            self._fresh = False  # the page ran again on the same run: the person stopped here
            return self.runs[-1]
        stepped = self._stepped(run.config)
        if stepped is not None and self._passed_through(stepped, now):
            gone = self.runs.pop()
            if gone.number == self._made:
                self._made -= 1  # the next new run takes its number
            stepped = self._stepped(run.config)
        earlier = next((r for r in self.runs if r.config == run.config), None)
        self._fresh, self._shown_at = earlier is None, None
        if earlier is not None:
            self.runs.remove(earlier)
            entry = LoggedRun(earlier.number, earlier.config, earlier.history, earlier.stopped, stepped)
        else:
            self._made += 1
            entry = LoggedRun(self._made, run.config, run.history,
                              run.error.type if run.error else None, stepped)
        self.runs.append(entry)
        while len(self.runs) > self.limit:
            # The newest run is the one on screen: it stays, pinned or not.
            droppable = [r for r in self.runs[:-1] if r.number not in self.pinned]
            gone = droppable[0] if droppable else self.runs[0]
            self.runs.remove(gone)
            self.dropped = [*self.dropped, gone.label][-DROPPED_KEPT:]
        self.pinned &= {r.number for r in self.runs}
        return entry

    def shown(self, now: float | None = None) -> None:
        """The newest run is on screen whole at `now` (time.monotonic(), by default the time of the call)."""
        self._shown_at = time.monotonic() if now is None else now

    def _stepped(self, config: Config) -> str | None:
        """The one field in which `config` differs from the newest run's, if just one."""
        if not self.runs:
            return None
        newest = self.runs[-1].config.as_dict()
        changed = [k for k, v in config.as_dict().items() if newest[k] != v]
        return changed[0] if len(changed) == 1 else None

    def _passed_through(self, stepped: str, now: float) -> bool:
        """Whether the newest run was a step on the way to a run that steps `stepped` again."""
        if self.settle <= 0 or (self.passing is not None and stepped not in self.passing):
            return False
        newest = self.runs[-1]
        looked = self._shown_at is not None and now - self._shown_at >= self.settle
        return self._fresh and newest.stepped == stepped and newest.number not in self.pinned and not looked

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


def final_scores(runs: list[tuple[str, Run]]) -> pd.DataFrame:
    """Per (label, run): its final train and test MSE and their R² (1 − MSE /
    variance of that split's labels), one row each, in the given order."""
    rows = []
    for label, run in runs:
        last = run.history.iloc[-1]
        rows.append({"run": label,
                     **{f"final {split} MSE": float(last[f"{split}_loss"]) for split in ("train", "test")},
                     **{f"{split} R²": run.baseline.r_squared(float(last[f"{split}_loss"]), split)
                        for split in ("train", "test")}})
    return pd.DataFrame(rows, columns=["run", "final train MSE", "final test MSE", "train R²", "test R²"])
