"""Compare runs: each run's final losses and R² as torch trained them, a
colour of its own per run, and the log saying which runs it dropped."""

import numpy as np
import pytest

from fitlab import Config, train
from fitlab.compare import LOG_LIMIT, RunLog, final_scores
from fitlab.figures.charts import DISTINCT_COLOURS, overlay_chart


def test_final_scores_are_each_runs_last_losses_and_their_r_squared():
    runs = [("a", train(Config())), ("b", train(Config(width=7, lr=0.05)))]
    table = final_scores(runs)
    assert list(table.run) == ["a", "b"]
    for (_, run), row in zip(runs, table.itertuples(index=False)):
        last = run.history.iloc[-1]
        assert row[1] == last.train_loss and row[2] == last.test_loss
        labels = run.student_teacher.labels
        test = labels[run.config.n_train:].astype(np.float64)
        assert row[4] == pytest.approx(1 - last.test_loss / test.var(), rel=1e-6)


def test_every_run_has_its_own_colour_up_to_the_logs_limit():
    assert len(set(DISTINCT_COLOURS)) == len(DISTINCT_COLOURS) >= LOG_LIMIT
    log = RunLog()
    for width in range(1, LOG_LIMIT + 1):
        log.add(train(Config(width=width, epochs=2)))
    spec = overlay_chart(log.runs).to_dict()
    assert spec["encoding"]["color"]["scale"]["range"][:LOG_LIMIT] == list(DISTINCT_COLOURS[:LOG_LIMIT])
    assert spec["encoding"]["strokeDash"]["field"] == "split"


def test_a_run_dropped_from_the_log_is_named():
    log = RunLog(limit=3)
    for width in (1, 2, 3):
        log.add(train(Config(width=width, epochs=2)))
    assert log.dropped == []
    first = log.runs[0].label
    log.add(train(Config(width=4, epochs=2)))
    assert log.dropped == [first] and first not in [r.label for r in log.runs]
