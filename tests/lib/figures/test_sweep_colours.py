"""The sweep heatmap colours each cell against the constant predictor: its
test R² on a diverging scale centred on 0 ("as good as a constant"), which
the legend says; the deepest good colour goes to the best cell."""

from dataclasses import replace

import numpy as np
import pandas as pd

from fitlab import Config, train
from fitlab.figures.charts import sweep_heatmap
from fitlab.figures.tables import with_test_r2


def test_each_cells_r2_is_its_own_runs_against_its_own_constant():
    base = Config(epochs=3)
    configs = [replace(base, seed=s, width=w) for s in (0, 1) for w in (3, 5)]
    runs = [train(c) for c in configs]
    table = pd.DataFrame({"seed": [c.seed for c in configs], "width": [c.width for c in configs],
                          "train_loss": [r.history.train_loss.iloc[-1] for r in runs],
                          "test_loss": [r.history.test_loss.iloc[-1] for r in runs]})
    r2 = with_test_r2(table, configs).test_r2
    expected = [r.baseline.r_squared(r.history.test_loss.iloc[-1], "test") for r in runs]
    np.testing.assert_allclose(r2, expected, rtol=1e-9)
    assert len(set(np.round(expected, 6))) == 4     # each cell its own labels: four constants


def test_the_colour_is_r2_centred_on_a_constant_and_the_legend_says_so():
    table = pd.DataFrame({"lr": [0.01, 0.1, 1.0, 5.0], "seed": [0, 0, 0, 0],
                          "train_loss": [1.0, 0.1, 0.5, np.inf], "test_loss": [2.0, 0.2, 0.9, np.inf],
                          "test_r2": [-1.5, 0.6, -0.1, np.nan]})
    spec = sweep_heatmap(table, "lr", "seed").to_dict()
    rect = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "rect")
    colour = rect["encoding"]["color"]
    assert colour["field"] == "test_r2"
    assert colour["scale"]["domainMid"] == 0 and colour["scale"]["domain"] == [-1, 1]
    assert "constant" in colour["title"] and "worse" in colour["title"]
    # The lowest MSE is the only cell beating a constant, and the highest R²: the deepest blue.
    drawn = spec["datasets"][rect["data"]["name"]]
    best = max(drawn, key=lambda row: row["test_r2"])
    assert best["test_loss"] == min(row["test_loss"] for row in drawn) and best["test_r2"] > 0
    assert not any(row["lr"] == 5.0 for row in drawn)     # a diverged cell is words, not a colour
