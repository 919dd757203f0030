"""Say when the fit is bad: the constant predictor, R², the chart's rules,
the history CSV (the page's sentence: tests/page/test_fit_quality.py)."""

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
