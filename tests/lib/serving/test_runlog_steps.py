"""The run log keeps every run the person saw, and not the steps a page
replaced before drawing them (RunLog(only_seen=True): the page calls shown()
once a run's result is on its way to the browser; a page run ended early by
a newer change never does)."""

import pytest

from fitlab import Config, train
from fitlab.serving.runlog import RunLog


@pytest.fixture(scope="module")
def widths():
    return {w: train(Config(width=w, epochs=2)) for w in (5, 6, 7, 8, 9)}


def labels(log: RunLog) -> list[str]:
    return [r.label for r in log.runs]


def seen(log: RunLog, run) -> None:
    log.add(run)
    log.shown()


def test_steps_replaced_before_they_were_drawn_are_not_kept(widths):
    log = RunLog(only_seen=True)
    seen(log, widths[5])
    for w in (6, 7):
        log.add(widths[w])                               # a held arrow key: the next step cut its page short
    seen(log, widths[8])
    assert labels(log) == ["#1 epochs=2", "#2 width=8, epochs=2"]


def test_every_run_that_was_drawn_is_kept_however_quick_the_next_change(widths):
    # Three quick clicks, each as soon as its chart was drawn: four runs (a
    # settle time of 2 s kept two). No clock: drawn is what counts.
    log = RunLog(only_seen=True)
    for w in (5, 6, 7, 8):
        seen(log, widths[w])
    assert [r.number for r in log.runs] == [1, 2, 3, 4]


def test_a_run_replaced_by_a_change_of_another_setting_was_not_seen_either(widths):
    log = RunLog(only_seen=True)
    seen(log, widths[5])
    log.add(widths[6])                                   # width, then lr before width 6 was drawn
    seen(log, train(Config(width=6, epochs=2, lr=0.05)))
    assert labels(log) == ["#1 epochs=2", "#2 width=6, lr=0.05, epochs=2"]


def test_a_run_logged_before_or_pinned_is_never_passed_through(widths):
    log = RunLog(only_seen=True)
    for w in (5, 6, 7):
        seen(log, widths[w])
    log.add(widths[6])                                   # width 6 again, logged before as #2
    seen(log, widths[5])                                 # replaced at once: #2 stays, seen before
    assert [r.number for r in log.runs] == [3, 2, 1]
    seen(log, widths[8])
    log.pin(["#4 width=8, epochs=2"])
    log.add(widths[8])                                   # a rerun on #4 (the pin's), not drawn
    log.add(widths[9])                                   # …replaced: the pinned #4 stays
    assert [r.number for r in log.runs] == [3, 2, 1, 4, 5]


def test_a_step_passed_through_frees_its_number(widths):
    log = RunLog(only_seen=True)
    seen(log, widths[5])
    log.add(widths[6])
    seen(log, widths[5])                                 # there and back before width 6 was drawn
    assert labels(log) == ["#1 epochs=2"]
    seen(log, widths[7])
    assert labels(log) == ["#1 epochs=2", "#2 width=7, epochs=2"]


def test_the_page_running_again_on_a_run_keeps_it_once_that_run_is_drawn(widths):
    log = RunLog(only_seen=True)
    seen(log, widths[5])
    log.add(widths[6])                                   # cut short by a tab's click…
    assert log.add(widths[6]) is log.runs[-1]            # …whose page run is on the same run
    log.shown()
    seen(log, widths[7])
    assert [r.number for r in log.runs] == [1, 2, 3]


def test_by_default_every_run_is_kept(widths):
    log = RunLog()
    for w in (5, 6, 7, 8):
        log.add(widths[w])
    assert [r.number for r in log.runs] == [1, 2, 3, 4]
