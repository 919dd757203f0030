"""Comparing runs: the session's run log, smoothing, the overlay and the CSVs."""

import io
import math

import numpy as np
import pandas as pd
import pytest

from fitlab import Config, train
from fitlab.compare import RunLog, describe_changes, overlay_long, parameters_csv, runs_csv, smooth
from fitlab.figures.charts import overlay_chart


@pytest.fixture(scope="module")
def two():
    return train(Config(epochs=3)), train(Config(epochs=3, width=7, lr=0.05))


def test_runs_are_described_by_what_differs_from_the_defaults():
    assert describe_changes(Config()) == "defaults"
    assert describe_changes(Config(width=7, lr=0.05, detach=False)) == "width=7, lr=0.05, detach=False"


def test_run_log_numbers_runs_and_drops_the_oldest_past_its_limit(two):
    a, b = two
    c = train(Config(epochs=2))
    log = RunLog(limit=2)
    assert log.add(a).label == "#1 epochs=3"
    assert log.add(b).label == "#2 width=7, lr=0.05, epochs=3"
    log.add(c)
    assert [r.number for r in log.runs] == [2, 3]       # #1 was the oldest
    assert log.add(b).number == 2                         # made again: same number, now newest
    assert [r.number for r in log.runs] == [3, 2]
    assert log.runs[-1].history is b.history             # the run's own table, not a copy


def test_a_pinned_run_outlives_the_limit_and_clear():
    runs = [train(Config(epochs=1, width=w)) for w in (2, 3, 4, 5)]
    log = RunLog(limit=2)
    log.add(runs[0])
    log.pin(["#1 width=2, epochs=1"])
    for run in runs[1:3]:
        log.add(run)
    assert [r.number for r in log.runs] == [1, 3]       # #2, unpinned, went first
    log.add(runs[3])
    log.clear()
    assert [r.number for r in log.runs] == [1, 4]       # pinned, and the one on screen
    log.pin([])
    log.clear()
    assert [r.number for r in log.runs] == [4] and log.pinned == set()


def test_run_log_remembers_a_failed_run_as_stopped():
    log = RunLog()
    entry = log.add(train(Config(detach=False)))
    assert entry.stopped == "RuntimeError" and list(entry.history.epoch) == [0]
    assert entry.label == "#1 detach=False (stopped: RuntimeError)"


def test_smoothing_is_the_bias_corrected_ema():
    values = pd.Series([4.0, 2.0, 1.0, 3.0])
    w = 0.6
    expected, num, den = [], 0.0, 0.0
    for x in values:
        num, den = w * num + x, w * den + 1
        expected.append(num / den)
    assert np.allclose(smooth(values, w), expected)
    assert smooth(values, 0.0).equals(values)


def test_smoothing_skips_and_keeps_non_finite_values():
    values = pd.Series([1.0, math.inf, 3.0, math.nan])
    out = smooth(values, 0.5)
    assert out[0] == 1.0 and math.isinf(out[1]) and math.isnan(out[3])
    assert out[2] == pytest.approx((0.5 * 1 + 3) / 1.5)


def test_overlay_keeps_every_picked_run_with_its_raw_loss(two):
    log = RunLog()
    for run in two:
        log.add(run)
    long = overlay_long(log.runs, weight=0.9)
    assert set(long.run) == {r.label for r in log.runs}
    train_a = long[(long.run == log.runs[0].label) & (long.split == "train")]
    assert np.allclose(train_a.raw_loss, two[0].history.train_loss)
    assert not np.allclose(train_a.loss, train_a.raw_loss)
    spec = overlay_chart(log.runs, 0.9, log_scale=True).to_dict()
    assert spec["encoding"]["color"]["field"] == "run"
    assert spec["encoding"]["y"]["scale"]["type"] == "log"
    assert {"raw_loss", "loss"} <= {t["field"] for t in spec["encoding"]["tooltip"]}
    # The plot keeps its height; the legend below it adds to the chart's.
    assert spec["autosize"]["type"] == "fit-x" and spec["height"] == 360
    assert overlay_chart(log.runs).to_dict()["encoding"]["y"]["scale"]["type"] == "log"


def test_overlay_on_a_log_axis_drops_points_it_cannot_draw():
    log = RunLog()
    entry = log.add(train(Config(epochs=2)))
    entry.history.loc[1, "train_loss"] = 0.0
    assert len(overlay_long(log.runs, log_scale=True)) == len(overlay_long(log.runs)) - 1


def test_runs_csv_is_long_with_both_runs_and_their_config(two):
    log = RunLog()
    for run in two:
        log.add(run)
    table = pd.read_csv(io.StringIO(runs_csv(log.runs)))
    assert list(table.columns) == ["run", *Config().as_dict(), "epoch", "train_loss", "test_loss"]
    assert list(table.run.unique()) == [r.label for r in log.runs]
    second = table[table.run == log.runs[1].label]
    assert (second.width == 7).all() and (second.lr == 0.05).all()
    assert np.allclose(second.train_loss, two[1].history.train_loss, rtol=1e-12)
    assert len(table) == sum(len(r.history) for r in two)


def test_parameters_csv_has_teacher_and_student_of_each_run(two):
    table = pd.read_csv(io.StringIO(parameters_csv([("a", two[0]), ("b", two[1])])))
    assert list(table.columns) == ["run", *Config().as_dict(), "net", "parameter", "uses", "row", "col", "value"]
    for label, run in zip("ab", two):
        rows = table[table.run == label]
        assert set(rows.net) == {"teacher", "student"}
        student = rows[rows.net == "student"]
        assert np.allclose(student.value, run.student_params.value)
        assert (rows.width == run.config.width).all()
