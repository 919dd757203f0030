"""Tables, CSV, chart and the run cache."""

import io
import math
import threading

import numpy as np
import pandas as pd
import pytest

from fitlab import Config, train
from fitlab.figures.charts import loss_chart, loss_long
from fitlab.figures.tables import history_csv
from fitlab.serving.cache import RunCache, run_nbytes


@pytest.fixture(scope="module")
def run():
    return train(Config(epochs=20))


def test_parameter_tables_list_the_shared_layer_once_with_its_uses(run):
    names = list(dict.fromkeys(run.student_params.parameter))
    assert names == ["first.weight", "first.bias", "shared.weight",
                     "shared.bias", "last.weight", "last.bias"]
    assert list(run.teacher_params.columns) == ["parameter", "uses", "row", "col", "value"]
    assert len(run.teacher_params) == 5 * 10 + 5 + 5 * 5 + 5 + 5 + 1
    uses = run.student_params.groupby("parameter", observed=True).uses.unique()
    assert {name: list(u) for name, u in uses.items()} == {
        "first.weight": [1], "first.bias": [1], "shared.weight": [2], "shared.bias": [2],
        "last.weight": [1], "last.bias": [1]}
    bias = run.student_params[run.student_params.parameter == "first.bias"]
    assert (bias.col == 0).all() and list(bias.row) == list(range(5))
    # The student started from zero biases and trained, so they moved.
    assert not np.allclose(bias.value, 0)


def test_untied_copies_are_each_used_once_and_the_teacher_shares_its_layer():
    r = train(Config(shared_repeats=3, tied=False, epochs=1))
    student = r.student_params.drop_duplicates("parameter").set_index("parameter").uses
    assert student["shared copy 3.weight"] == 1 and student["shared copy 1.bias"] == 1
    teacher = r.teacher_params.drop_duplicates("parameter").set_index("parameter").uses
    assert teacher["shared.weight"] == 3 and teacher["first.weight"] == 1


def test_repeats_zero_has_no_shared_layer_in_the_tables():
    r = train(Config(shared_repeats=0, epochs=1))
    assert not r.teacher_params.parameter.str.startswith("shared").any()


def test_history_csv_reads_back_with_config_columns(run):
    table = pd.read_csv(io.StringIO(history_csv(run)))
    assert list(table.columns[:3]) == ["epoch", "train_loss", "test_loss"]
    assert set(Config().as_dict()) <= set(table.columns)
    assert np.allclose(table.train_loss, run.history.train_loss, rtol=1e-12)
    assert (table.width == 5).all() and (table.detach == True).all()  # noqa: E712


def test_loss_chart_draws_both_splits_with_tooltips(run):
    # A layer: the lines first, then (when given) the constant predictor's rules.
    spec = loss_chart(run.history).to_dict()["layer"][0]
    assert spec["mark"]["type"] == "line"
    assert {t["field"] for t in spec["encoding"]["tooltip"]} == {"epoch", "split", "loss"}
    log_spec = loss_chart(run.history, log_scale=True).to_dict()["layer"][0]
    assert log_spec["encoding"]["y"]["scale"]["type"] == "log"
    long = loss_long(run.history)
    assert len(long) == 2 * len(run.history) and set(long.split) == {"train", "test"}


def test_loss_long_keeps_only_drawable_points():
    history = pd.DataFrame({"epoch": [0, 1, 2], "train_loss": [1.0, 0.0, math.nan],
                            "test_loss": [2.0, math.inf, 0.5]})
    assert len(loss_long(history)) == 4
    assert len(loss_long(history, log_scale=True)) == 3


def test_cache_trains_each_config_once_and_stays_bounded():
    calls = []

    def make(c):
        calls.append(c)
        return train(c)

    cache = RunCache(max_entries=2)
    a, b, c = Config(epochs=1), Config(epochs=2), Config(epochs=3)
    assert cache.get(a, make) is cache.get(a, make)
    cache.get(b, make), cache.get(c, make)
    assert calls == [a, b, c] and len(cache) == 2
    cache.get(b, make)  # b, asked for once, went before a, asked for twice
    assert calls == [a, b, c, b]


def test_a_link_a_class_opened_outlives_a_burst_of_runs_each_opened_once():
    # The lecture's late student (tests/e2e/test_lecture.py): least recently
    # used, the class's link went once the burst outweighed the cache.
    link = Config(epochs=3)
    cache = RunCache(max_entries=4)
    for _ in range(10):  # ten students on one link
        cache.get(link, train)
    for seed in range(1, 9):  # then eight settings of their own
        cache.get(Config(epochs=3, seed=seed), train)
    assert cache.peek(link) is not None and len(cache) == 4


def test_cache_bounds_bytes():
    one = run_nbytes(train(Config(epochs=3)))
    cache = RunCache(max_entries=100, max_bytes=int(2.5 * one))
    for seed in (1, 2, 3, 4):
        cache.get(Config(epochs=3, seed=seed), train)
    assert len(cache) == 2 and cache.nbytes <= cache.max_bytes


def test_concurrent_requests_for_one_config_train_once():
    calls, gate = [], threading.Barrier(4)
    cache = RunCache()

    def make(c):
        calls.append(c)
        return train(c)

    def worker(out):
        gate.wait()
        out.append(cache.get(Config(epochs=5), make))

    results = []
    threads = [threading.Thread(target=worker, args=(results,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(r is results[0] for r in results)


def test_parameter_matrix_shows_each_layer_as_its_matrix(run):
    from fitlab.weights import parameter_matrix

    matrix = parameter_matrix(run.student_params)
    assert list(matrix.columns) == [f"in {c}" for c in range(10)] + ["bias"]
    assert len(matrix) == 5 + 5 + 1
    layers = {name: (w, b) for name, w, b in run.frames.layers_at(len(run.frames.epochs) - 1)}
    shared = matrix.loc[[f"shared (used 2×), unit {r}" for r in range(5)]]
    assert np.allclose(shared[[f"in {c}" for c in range(5)]].to_numpy(), layers["shared"][0])
    assert shared[[f"in {c}" for c in range(5, 10)]].isna().all().all()
    assert np.allclose(matrix.loc["last, unit 0", "bias"], layers["last"][1][0])


@pytest.mark.parametrize("config", [Config(), Config(lr=0.1, shared_repeats=0, epochs=300)])
def test_the_straight_line_charts_legends_and_dashes_say_what_the_caption_says(config):
    """Train solid, test dashed, as the caption says; legend symbols are lines
    in their line's colour (not the theme's black dots); no point sits decades
    below the rest (the teacher's own ~1e-16 loss is left off)."""
    from fitlab.figures.charts import slice_chart
    spec = slice_chart(train(config).loss_slices).to_dict()
    dash = spec["encoding"]["strokeDash"]
    assert dict(zip(dash["scale"]["domain"], dash["scale"]["range"], strict=True)) == {
        "train": [1, 0], "test": [6, 4]}
    assert spec["encoding"]["color"]["legend"]["symbolType"] == "stroke"
    assert dash["legend"]["symbolType"] == "stroke"
    losses = [row["loss"] for row in next(iter(spec["datasets"].values()))]
    assert min(losses) > 1e-9
