"""The run log keeps where a person stopped and every value on screen a second,
not every step a slider passed through with the arrow keys; a step of any
other setting is kept however quick (RunLog(settle=…, passing=…); times are
given: `now` is when a run was asked for, `shown` when the page had drawn it)."""

import pytest

from fitlab import Config, train
from fitlab.compare import STEP_SETTLE, RunLog


@pytest.fixture(scope="module")
def widths():
    return {w: train(Config(width=w, epochs=2)) for w in (5, 6, 7, 8, 9)}


def labels(log: RunLog) -> list[str]:
    return [r.label for r in log.runs]


def step(log: RunLog, run, asked: float, drawn: float) -> None:
    log.add(run, now=asked)
    log.shown(drawn)


def test_quick_steps_of_one_setting_keep_only_where_it_stopped(widths):
    log = RunLog(settle=STEP_SETTLE)
    step(log, widths[5], 0.0, 1.0)
    for i, w in enumerate((6, 7, 8)):
        step(log, widths[w], 10.0 + 0.4 * i, 10.3 + 0.4 * i)   # a key press every 0.4 s
    assert labels(log) == ["#1 epochs=2", "#2 width=8, epochs=2"]
    step(log, widths[9], 11.2 + STEP_SETTLE, 12.0 + STEP_SETTLE)   # width 8 looked at, then a step on
    assert labels(log) == ["#1 epochs=2", "#2 width=8, epochs=2", "#3 width=9, epochs=2"]


def test_a_busy_server_that_draws_late_does_not_turn_quick_steps_into_stops(widths):
    log = RunLog(settle=STEP_SETTLE)
    step(log, widths[5], 0.0, 1.0)
    step(log, widths[6], 10.0, 13.0)                     # drawn 3 s after the key press
    step(log, widths[7], 13.2, 16.0)                     # the next press was waiting
    assert labels(log) == ["#1 epochs=2", "#2 width=7, epochs=2"]


def test_a_step_never_drawn_whole_was_passed_through(widths):
    log = RunLog(settle=STEP_SETTLE)
    step(log, widths[5], 0.0, 1.0)
    log.add(widths[6], now=10.0)                         # the next press cut its page short
    log.add(widths[7], now=30.0)
    assert labels(log) == ["#1 epochs=2", "#2 width=7, epochs=2"]


def test_a_quick_change_of_another_setting_keeps_the_step_before_it(widths):
    log = RunLog(settle=STEP_SETTLE)
    step(log, widths[5], 0.0, 1.0)
    step(log, widths[6], 10.0, 10.3)
    step(log, train(Config(width=6, epochs=2, lr=0.05)), 10.4, 10.7)   # width, then lr: both kept
    assert labels(log) == ["#1 epochs=2", "#2 width=6, epochs=2", "#3 width=6, lr=0.05, epochs=2"]


def test_a_run_logged_before_or_pinned_is_never_passed_through(widths):
    log = RunLog(settle=STEP_SETTLE)
    for t, w in enumerate((5, 6, 7)):
        step(log, widths[w], 10.0 * t, 10.0 * t + 1)
    step(log, widths[6], 30.0, 30.1)                     # width 6 again: logged before, as #2
    step(log, widths[5], 30.2, 30.3)                     # a quick step on: #2 stays
    assert [r.number for r in log.runs] == [3, 2, 1]
    step(log, widths[8], 40.0, 41.0)
    log.pin(["#4 width=8, epochs=2"])
    step(log, widths[9], 41.1, 41.2)                     # the pinned #4 stays
    assert [r.number for r in log.runs] == [3, 2, 1, 4, 5]


def test_stepping_back_to_a_logged_run_frees_the_passed_number(widths):
    log = RunLog(settle=STEP_SETTLE)
    step(log, widths[5], 0.0, 1.0)
    step(log, widths[6], 10.0, 10.2)
    step(log, widths[5], 10.4, 10.6)                     # there and back: width 6 was on the way
    assert labels(log) == ["#1 epochs=2"]
    step(log, widths[7], 20.0, 20.2)
    assert labels(log) == ["#1 epochs=2", "#2 width=7, epochs=2"]


def test_the_page_running_again_on_a_run_means_the_person_stopped_there(widths):
    log = RunLog(settle=STEP_SETTLE)
    step(log, widths[5], 0.0, 1.0)
    step(log, widths[6], 10.0, 10.2)
    assert log.add(widths[6], now=10.3) is log.runs[-1]  # e.g. the smoothing slider moved
    log.shown(10.4)
    step(log, widths[7], 10.5, 10.7)
    assert [r.number for r in log.runs] == [1, 2, 3]


def test_without_settle_every_run_is_kept(widths):
    log = RunLog()
    for i, w in enumerate((5, 6, 7, 8)):
        log.add(widths[w], now=0.1 * i)
    assert [r.number for r in log.runs] == [1, 2, 3, 4]


def test_a_slider_value_on_screen_a_second_stays_and_one_passed_quickly_does_not(widths):
    # Issue 44: a width paused on for a second was dropped (the old rule wanted 2 s).
    log = RunLog(settle=STEP_SETTLE, passing=frozenset({"width"}))
    step(log, widths[5], 0.0, 1.0)
    step(log, widths[6], 10.0, 10.3)                     # width 6: on screen for 1.1 s
    step(log, widths[7], 11.4, 11.5)                     # widths 7, 8: each step 0.2 s after
    step(log, widths[8], 11.7, 11.9)                     # the last was drawn
    step(log, widths[9], 12.1, 12.3)
    assert labels(log) == ["#1 epochs=2", "#2 width=6, epochs=2", "#3 width=9, epochs=2"]


def test_quick_steps_of_a_setting_that_is_not_passing_are_each_kept(widths):
    # The page's number boxes (+ clicks, arrow keys) are not `passing`: each step
    # was chosen (issue 32), on screen 1.1 s or 0.2 s alike.
    runs = [train(Config(epochs=2, batch_size=b)) for b in (5, 6, 7, 8, 9)]
    log = RunLog(settle=STEP_SETTLE, passing=frozenset({"width"}))
    step(log, runs[0], 0.0, 1.0)
    step(log, runs[1], 10.0, 10.3)
    step(log, runs[2], 11.4, 11.5)
    step(log, runs[3], 11.7, 11.9)
    step(log, runs[4], 12.1, 12.3)
    assert labels(log) == ["#1 epochs=2", "#2 batch_size=6, epochs=2", "#3 batch_size=7, epochs=2",
                           "#4 batch_size=8, epochs=2", "#5 batch_size=9, epochs=2"]
    for i, w in enumerate((5, 6, 7)):                    # back to #1, then the slider's quick
        step(log, widths[w], 20.0 + 0.4 * i, 20.3 + 0.4 * i)   # steps: width 6 passes through
    assert labels(log)[-2:] == ["#1 epochs=2", "#6 width=7, epochs=2"] and len(log.runs) == 6
