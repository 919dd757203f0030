"""Say when the fit is bad: the constant predictor, R², the sentence, the
chart's rules, the history CSV; and the diverged run's chart and tables."""

import io
import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from fitlab import Config, train
from fitlab.figures.charts import constant_rules, loss_chart
from fitlab.figures.tables import history_csv, history_file_name
from ui.tabs.training import blog_figure_note, fit_note

BETTER = dict(shared_repeats=0, lr=0.1, epochs=500)  # a student that beats the constant


def torch_baseline(run):
    """The constant predictor and R², computed by torch from the run's labels."""
    y = torch.tensor(run.student_teacher.labels, dtype=torch.float64)
    n = run.config.n_train
    constant = y[:n].mean()
    mse = nn.MSELoss()
    last = run.history.iloc[-1]
    return dict(constant=constant.item(),
                train_mse=mse(constant.expand(n), y[:n]).item(),
                test_mse=mse(constant.expand(len(y) - n), y[n:]).item(),
                train_r2=1 - last.train_loss / y[:n].var(unbiased=False).item(),
                test_r2=1 - last.test_loss / y[n:].var(unbiased=False).item())


@pytest.fixture
def default_run(trained):
    return trained(Config())


@pytest.mark.parametrize("overrides", [{}, dict(width=7, lr=0.05), BETTER, dict(seed=3, n_train=20)])
def test_baseline_and_r_squared_agree_with_torch(overrides):
    run = train(Config(**overrides))
    ref, base, last = torch_baseline(run), run.baseline, run.history.iloc[-1]
    assert base.constant == pytest.approx(ref["constant"], rel=1e-12)
    assert base.train_mse == pytest.approx(ref["train_mse"], rel=1e-9)
    assert base.test_mse == pytest.approx(ref["test_mse"], rel=1e-9)
    assert base.r_squared(last.train_loss, "train") == pytest.approx(ref["train_r2"], rel=1e-9)
    assert base.r_squared(last.test_loss, "test") == pytest.approx(ref["test_r2"], rel=1e-9)


def test_r_squared_is_undefined_for_one_row_and_for_nan():
    run = train(Config(n_train=1, batch_size=1, epochs=2))
    assert math.isnan(run.baseline.r_squared(0.1, "train"))
    assert math.isnan(run.baseline.r_squared(math.nan, "test"))


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


def test_the_loss_chart_draws_a_labelled_rule_per_split(default_run):
    spec = loss_chart(default_run.history, True, default_run.baseline).to_dict()
    rules = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rule"]
    assert len(rules) == 1
    drawn = pd.DataFrame(spec["datasets"][rules[0]["data"]["name"]]).set_index("split")
    assert drawn.loss.to_dict() == pytest.approx({"train": default_run.baseline.train_mse,
                                                  "test": default_run.baseline.test_mse})
    assert set(drawn.label) == {"constant predictor: train", "constant predictor: test"}
    assert spec["encoding"]["color"]["field"] == "split"  # rules coloured as their split's line
    assert len(constant_rules(default_run.baseline)) == 2


def test_the_history_csv_explains_itself_and_reads_back(default_run):
    table = pd.read_csv(io.StringIO(history_csv(default_run)))
    assert list(table.columns[:7]) == ["epoch", "train_loss", "test_loss", "train_r2", "test_r2",
                                       "constant_train_mse", "constant_test_mse"]
    ref = torch_baseline(default_run)
    assert table.test_r2.iloc[-1] == pytest.approx(ref["test_r2"], rel=1e-9)
    assert np.allclose(table.constant_test_mse, ref["test_mse"], rtol=1e-9, atol=0)
    assert (table.torch_version == torch.__version__).all() and (table.trained_by == "fast").all()
    assert history_file_name(Config()) == "fitlab-history.csv"
    assert history_file_name(Config(width=8, lr=0.02)) == "fitlab-history-width8-lr0.02.csv"


# ---- the diverged run ---------------------------------------------------------

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
