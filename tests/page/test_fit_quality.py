"""The fit's quality on the page: the diverged run's warning, table, metrics
and chart, and the default run's R² and its warning; the training tab's notes
(fit_note, divergence_note, blog_figure_note) against the runs they word."""

import json

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pytest

from fitlab import Config, train
from fitlab.figures.charts import loss_chart
from tests.lib.test_baseline import BETTER, torch_baseline
from tests.page.helpers import loss_charts, open_page, sent_table
from ui.tabs.training import blog_figure_note, divergence_note, fit_note


def test_the_diverged_page_shows_nan_and_no_caption_that_cannot_apply(diverged):
    at = open_page(**{k: str(v) for k, v in diverged.config.changes().items()})
    assert not at.exception
    assert any("diverged at epoch 1" in w.value for w in at.warning)
    assert not any("per-batch means" in c.value for c in at.caption)
    assert not any("worse than a constant" in i.value for i in at.info)
    table = at.dataframe[1]
    student = sent_table(table)
    # NaN is sent as a number (the grid shows "NaN"); only the padding past the first layer's
    # 10 inputs (width 16) is missing, and missing cells are drawn blank, not "None".
    assert any(pc.any(pc.is_nan(student.column(c))).as_py() for c in student.column_names[:-1])
    first = student.column("__index_level_0__").to_pylist().index("first, unit 0")
    assert [student.column(f"in {c}")[first].as_py() for c in range(10, 16)] == [None] * 6
    assert student.column("bias").null_count == 0 and table.proto.placeholder == ""
    assert [m.value for m in at.metric] == ["nan", "nan", "n/a", "n/a"]
    spec = json.loads(loss_charts(at)[0].proto.spec)
    assert spec["layer"][0]["encoding"]["x"]["scale"]["domain"] == [0, 1]


def test_the_default_page_shows_r_squared_and_the_warning(trained):
    default_run = trained(Config())
    at = open_page()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Test R²"] == f"{default_run.baseline.r_squared(default_run.history.test_loss.iloc[-1], 'test'):.2f}"
    assert any("worse than a constant" in i.value for i in at.info)


@pytest.fixture
def default_run(trained):
    return trained(Config())


def test_the_default_student_does_worse_than_a_constant_and_the_page_says_so(default_run):
    ref, last = torch_baseline(default_run), default_run.history.iloc[-1]
    assert last.test_loss > ref["test_mse"] and ref["test_r2"] < 0
    text, worse = fit_note(default_run)
    assert worse and "worse than a constant" in text
    assert f"{last.test_loss / ref['test_mse']:.3g}×" in text
    assert f"{ref['test_mse']:.4g}" in text and "more epochs" in text


def test_a_student_that_beats_the_constant_is_not_called_worse():
    run = train(Config(**BETTER))
    ref, last = torch_baseline(run), run.history.iloc[-1]
    assert last.test_loss < ref["test_mse"] and ref["test_r2"] > 0
    text, worse = fit_note(run)
    assert not worse and "worse" not in text and f"{ref['test_mse'] / last.test_loss:.3g}× lower" in text


def test_the_36_times_worse_link():
    run = train(Config(width=7, lr=0.05))
    ref = torch_baseline(run)
    ratio = run.history.test_loss.iloc[-1] / ref["test_mse"]
    assert ratio > 30
    assert f"{ratio:.3g}× the constant's" in fit_note(run)[0]


def test_the_diverged_chart_shows_epoch_0_and_marks_the_divergence(diverged):
    assert diverged.diverged_at == 1
    spec = loss_chart(diverged.history, True, diverged.baseline, diverged.diverged_at).to_dict()
    lines = spec["layer"][0]
    points = pd.DataFrame(spec["datasets"][lines["data"]["name"]])
    assert list(points.epoch) == [0, 0] and np.isfinite(points.loss).all()
    # One finite epoch: a line through one point draws nothing, so the points are visible.
    assert lines["mark"]["point"] is True
    assert lines["encoding"]["x"]["scale"]["domain"] == [0, 1]
    marks = [layer for layer in spec["layer"] if layer["encoding"].get("x", {}).get("field") == "epoch"
             and layer["mark"]["type"] in ("rule", "text")]
    assert {spec["datasets"][m["data"]["name"]][0]["epoch"] for m in marks} == {1}
    assert fit_note(diverged) is None and blog_figure_note(diverged) is None


def test_the_advice_follows_what_the_student_failed_at():
    underfit = train(Config())  # worse than the constant on its own training rows too
    assert underfit.history.train_loss.iloc[-1] > underfit.baseline.train_mse
    assert "Advanced › Epochs" in fit_note(underfit)[0]
    overfit = train(Config(epochs=500))  # better on the training rows, worse on the test rows
    last = overfit.history.iloc[-1]
    assert last.train_loss < overfit.baseline.train_mse and last.test_loss > overfit.baseline.test_mse
    note, worse = fit_note(overfit)
    assert worse and "Advanced › Training rows" in note and "Advanced › Epochs" not in note


def test_a_diverging_run_is_a_result(diverged):
    history = diverged.history
    assert diverged.error is None
    finite = np.isfinite(history[["train_loss", "test_loss"]]).all(axis=1)
    assert not finite.all() and finite.iloc[0]
    # It stopped at the epoch it diverged: every epoch before is finite.
    assert list(history.epoch) == list(range(diverged.diverged_at + 1)) and diverged.config.epochs == 100
    assert finite.iloc[:-1].all()
    assert diverged.diverged_at == int(history.epoch[~finite].min())
    assert f"diverged at epoch {diverged.diverged_at}" in divergence_note(diverged)
    assert divergence_note(train(Config(epochs=3))) is None


def test_a_diverged_run_still_has_tables_and_words(diverged):
    assert len(diverged.student_params) == len(diverged.teacher_params)
    assert np.isfinite(diverged.teacher_params.value).all()
    # The blog's figure is NaN too: the sentence comparing it cannot apply, so there is none.
    assert blog_figure_note(diverged) is None


@pytest.fixture(scope="module")
def run():
    return train(Config(epochs=20))


def test_blog_figure_note_states_both_figures(run):
    note = blog_figure_note(run)
    assert f"{run.history.test_loss.iloc[-1]:.4g}" in note and f"{run.blog_test_loss:.4g}" in note
    assert "30 per-batch means" in note
