"""fitlab.sweep: one batched computation, one history per config, each its single run's."""

import math

import numpy as np
import pandas as pd
import pytest

import fitlab
from fitlab import Config, train
from fitlab.figures.charts import sweep_heatmap
from fitlab.figures.tables import with_test_r2
from fitlab.sweeps import MAX_CONFIGS, final_losses, grid, parse_axis


def assert_history_is_single_runs(config, history):
    single = train(config).history
    assert list(history.epoch) == list(single.epoch)
    for column in ("train_loss", "test_loss"):
        for a, b in zip(history[column], single[column]):
            assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-7), (config, column, a, b)


@pytest.mark.parametrize("base,axes", [
    (Config(epochs=30), dict(lr=[0.003, 0.01, 0.05], seed=[0, 1, 2])),
    # Narrower nets padded with zero units up to width 9.
    (Config(epochs=30, seed=4), dict(width=[1, 4, 9], lr=[0.01, 0.04])),
    (Config(epochs=20, tied=False, shared_repeats=3, batch_size=7, n_train=40),
     dict(width=[2, 6], seed=[3, 5])),
    (Config(epochs=10, shared_repeats=0, batch_size=1, n_train=9), dict(seed=[0, 1], width=[3, 5])),
], ids=["lr x seed", "width x lr", "untied partial batches", "repeats 0, batch 1"])
def test_each_sweep_history_equals_its_single_run(base, axes):
    results = fitlab.sweep(base, **axes)
    assert list(results) == grid(base, **axes)
    for config, history in results.items():
        assert_history_is_single_runs(config, history)


def test_grid_varies_the_first_axis_slowest_and_keeps_the_rest():
    configs = grid(Config(epochs=3, width=8), lr=[0.1, 0.2], seed=[5, 6, 7])
    assert [(c.lr, c.seed) for c in configs] == [(0.1, 5), (0.1, 6), (0.1, 7), (0.2, 5), (0.2, 6), (0.2, 7)]
    assert all(c.width == 8 and c.epochs == 3 for c in configs)


def test_sweep_reports_progress_per_epoch():
    seen = []
    fitlab.sweep(Config(epochs=4), progress=lambda done, total: seen.append((done, total)), lr=[0.01, 0.1])
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_a_diverging_config_does_not_disturb_the_others():
    results = fitlab.sweep(Config(epochs=20, width=16), lr=[10.0, 0.01])
    diverged, fine = results.values()
    assert not np.isfinite(diverged.train_loss.iloc[-1])
    assert_history_is_single_runs(Config(epochs=20, width=16, lr=0.01), fine)


@pytest.mark.parametrize("axes,message", [
    (dict(epochs=[1, 2]), "^epochs= is not a sweep axis"),
    (dict(lr=[]), r"^lr=\[\] is not allowed"),
    (dict(width=[5, 300]), "^width=300 is out of range"),
    (dict(lr=list(np.linspace(0.001, 0.1, 17)), seed=list(range(17))), f"too large: allowed 1 to {MAX_CONFIGS}"),
])
def test_bad_axes_are_value_errors(axes, message):
    with pytest.raises(ValueError, match=message):
        grid(Config(), **axes)


def test_a_sweep_too_large_for_memory_is_refused_before_training():
    with pytest.raises(ValueError, match="is too large: it needs"):
        fitlab.sweep(Config(n_samples=20_000, n_train=100, batch_size=100, epochs=1, shared_repeats=8),
                     width=[200, 256], seed=list(range(10)))


def test_a_sweep_needs_detached_labels():
    with pytest.raises(ValueError, match="^detach=False"):
        grid(Config(detach=False), lr=[0.1])


def test_parse_axis_reads_typed_values_once_each():
    assert parse_axis("lr", "0.1, 0.01,0.1") == [0.1, 0.01]
    assert parse_axis("seed", "3,1") == [3, 1] and all(type(v) is int for v in parse_axis("width", "2, 4"))
    with pytest.raises(ValueError, match="^width values '2.5' are not allowed"):
        parse_axis("width", "2.5")
    with pytest.raises(ValueError, match="^lr values ' , ' are not allowed"):
        parse_axis("lr", " , ")


def test_final_losses_and_heatmap():
    results = fitlab.sweep(Config(epochs=5), lr=[0.01, 10.0], seed=[0, 1])
    table = final_losses(results, ["lr", "seed"])
    assert list(table.columns) == ["lr", "seed", "train_loss", "test_loss"] and len(table) == 4
    assert table.test_loss.iloc[0] == results[Config(epochs=5)].test_loss.iloc[-1]
    spec = sweep_heatmap(with_test_r2(table, list(results)), "lr", "seed").to_dict()
    cells, labels, diverged = spec["layer"]
    assert cells["mark"]["type"] == "rect" and cells["encoding"]["color"]["field"] == "test_r2"
    assert diverged["encoding"]["text"]["field"] == "note"
    # Readable: upright x labels, and each number in a colour that contrasts with its cell.
    assert cells["encoding"]["x"]["axis"]["labelAngle"] == 0
    assert labels["mark"]["fontSize"] >= 14
    colour = labels["encoding"]["color"]
    assert {colour["value"], colour["condition"]["value"]} == {"black", "white"}
    assert "abs(datum.test_r2) > 0.6" in colour["condition"]["test"]
    # A click selects a cell by its two axes, for the page's on_select.
    (selection,) = spec["params"]
    assert selection["name"] == "cell" and selection["select"]["fields"] == ["lr", "seed"]
    assert selection["views"] == [cells["name"]]


def test_one_outlier_cell_leaves_the_others_their_own_colours():
    """A cell at 5e-13 among losses near 1e-3 does not move the others'
    colours (a log scale of the loss squashed them into one): the scale is
    R² on a fixed domain."""
    table = pd.DataFrame({"lr": [0.01, 0.02, 0.05, 0.1] * 4, "seed": sorted([0, 1, 2, 3] * 4),
                          "train_loss": 1e-3, "test_loss": [5e-13, *np.linspace(1e-3, 2e-3, 15)]})
    table["test_r2"] = 1 - table.test_loss / 2e-3
    for cells in (table, table.iloc[1:]):
        spec = sweep_heatmap(cells, "lr", "seed").to_dict()
        assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == [-1, 1]
