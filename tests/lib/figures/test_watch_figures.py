"""The scrubbed view: its specs, that what each picture draws at a frame
is what torch's student was at that epoch, and that the change since epoch 0
fills each layer's own colour scale."""

import warnings
from dataclasses import replace

import altair as alt
import numpy as np
import pytest

from fitlab import Config, train
from fitlab.figures.watch_charts import (
    AT_FRAME,
    EPOCH,
    FRAME,
    FRAME_EPOCH,
    HEATMAP_MAX_UNITS,
    frame_params,
    watch_panels,
)
from fitlab.figures.watch_weights import change_bounds, layer_movement


@pytest.fixture(scope="module")
def run():
    return train(Config(epochs=40, engine="autograd"))


def frame_values(table, index):
    return table[f"v{index}"].to_numpy()


def frames_of(table):
    """A data set's frame columns (v0, v1, …), without its other columns."""
    return table.filter(regex=r"^v\d+$")


def datasets_of(run):
    """Every picture's data sets, by name (the pictures share a name only for the same data)."""
    return {name: table for spec in watch_panels(run).values() for name, table in spec["datasets"].items()}


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
def test_each_picture_is_valid_vega_lite_with_the_same_epoch_input(run):
    specs = watch_panels(run)
    assert list(specs) == ["loss", "distance", "predictions", "diagram", "change", "weights"]
    for spec in specs.values():
        spec = dict(spec)
        datasets = spec.pop("datasets")
        kind = alt.LayerChart if "layer" in spec else alt.VConcatChart
        kind.from_dict(spec, validate=True)   # raises on an invalid spec
        params = {p["name"]: p for p in spec["params"]}
        assert params[EPOCH]["bind"] == {"input": "range", "min": 0, "max": 40, "step": 1, "name": "epoch "}
        assert params[EPOCH]["value"] == 40     # opens on the trained student
        assert datasets
    assert set(datasets_of(run)) >= {"losses", "distances", "predictions", "edges", "weights_0", "biases_2"}


def nearest_frame(params, epoch):
    """Evaluate the spec's frame expression in Python for an epoch."""
    expr = {p["name"]: p for p in params}[FRAME]["expr"]
    scale, last = expr.removeprefix(f"clamp(round({EPOCH} * ").removesuffix(")").split("), 0, ")
    return min(max(round(epoch * float(scale)), 0), int(last))


@pytest.mark.parametrize("epochs", [40, 150, 2000])
def test_the_input_picks_the_recorded_frame_nearest_its_epoch(epochs):
    from fitlab.frames import FrameRecorder
    layers = [("first", np.zeros((5, 10)), np.zeros(5)), ("last", np.zeros((1, 5)), np.zeros(1))]
    recorder = FrameRecorder(layers, epochs)
    for epoch in recorder.epochs:
        recorder.record(epoch, layers)
    frames = recorder.frames(0)
    params = frame_params(frames, epochs)
    recorded = [int(e) for e in frames.epochs]
    assert {p["name"]: p for p in params}[FRAME_EPOCH]["expr"] == f"{recorded}[{FRAME}]"
    for epoch in range(0, epochs + 1, max(1, epochs // 97)):
        shown = recorded[nearest_frame(params, epoch)]
        assert abs(shown - epoch) == min(abs(e - epoch) for e in recorded)
    step = {p["name"]: p for p in params}[EPOCH]["bind"]["step"]
    assert all(e % step == 0 for e in recorded)


def test_each_frame_draws_the_student_torch_trained_for_that_many_epochs(run):
    datasets = datasets_of(run)
    fresh = run.frames.layers_at(0)
    assert np.array_equal(frame_values(datasets["weights_0"], 0), fresh[0][1].ravel())
    for index in (7, 40):
        epoch = int(run.frames.epochs[index])
        shorter = train(replace(run.config, epochs=epoch))
        assert np.allclose(frame_values(datasets["predictions"], index),
                           shorter.test_predictions.prediction, rtol=1e-4, atol=1e-6)
        first = shorter.student_params[shorter.student_params.parameter == "first.weight"]
        assert np.allclose(frame_values(datasets["weights_0"], index), first.value, rtol=1e-4, atol=1e-6)
    teacher = run.teacher_params[run.teacher_params.parameter == "shared.bias"]
    assert np.array_equal(datasets["biases_1"]["t"].to_numpy(), teacher.value.to_numpy())
    # Sent as torch recorded them, float32: the predictions are the first screen's largest data.
    assert all(set(frames_of(datasets[name]).dtypes) == {np.dtype(np.float32)} for name in ("predictions", "weights_0"))


def colour_scales(spec):
    """The colour scale of every heatmap or edge in `spec`, with the data set it draws."""
    found = []

    def walk(node, data=None):
        if isinstance(node, dict):
            data = node.get("data", {}).get("name", data)
            colour = node.get("encoding", {}).get("color", {})
            if colour.get("field") == "value":
                found.append((data, colour["scale"], node.get("transform", [])))
            for value in node.values():
                walk(value, data)
        elif isinstance(node, list):
            for value in node:
                walk(value, data)

    walk(spec)
    return found


def test_one_colour_scale_centred_at_zero_for_teacher_and_student(run):
    scales = [scale for _, scale, _ in colour_scales(watch_panels(run)["weights"])]
    assert len(scales) == 3 * 4     # 3 layers × (teacher, student) × (weight, bias)
    low, high = scales[0]["domain"]
    assert low == -high and high >= np.abs(run.teacher_params.value).max()
    assert all(s == scales[0] for s in scales) and scales[0]["domainMid"] == 0


def test_the_change_since_epoch_0_fills_each_layers_own_symmetric_scale(run):
    drawn = colour_scales(watch_panels(run)["change"])
    assert len(drawn) == 3 * 2      # 3 layers × (weight, bias)
    datasets = datasets_of(run)
    last = len(run.frames.epochs) - 1
    for layer in range(3):
        moved = np.concatenate([frame_values(datasets[f"{kind}_{layer}"], last)
                                - frame_values(datasets[f"{kind}_{layer}"], 0) for kind in ("weights", "biases")])
        scales = [scale for data, scale, _ in drawn if data.endswith(f"_{layer}")]
        assert len(scales) == 2 and scales[0] == scales[1] and scales[0]["domainMid"] == 0
        low, high = scales[0]["domain"]
        assert low == -high
        # The layer's move by the end fills most of its scale, not a sliver of it.
        assert 0.5 * high <= np.abs(moved).max()
    assert len({scale["domain"][1] for _, scale, _ in drawn}) == 3     # a scale per layer
    assert all("datum.v0" in str(transforms) for _, _, transforms in drawn)


def test_layer_movement_is_the_relative_change_torch_made():
    run = train(Config(epochs=30, engine="autograd"))
    kept = run.student_teacher      # torch's student before and after training
    moved = layer_movement(run.frames)
    for (_, w0, b0), (_, w1, b1), share in zip(kept.initial, kept.final, moved):
        before, after = np.concatenate([w0.ravel(), b0.ravel()]), np.concatenate([w1.ravel(), b1.ravel()])
        assert share == pytest.approx(np.linalg.norm(after - before) / np.linalg.norm(before), rel=1e-4)
    assert all(m > 0 for m in moved) and len(change_bounds(run.frames)) == len(moved)


def test_the_diagram_draws_each_use_of_the_tied_layer_with_the_same_weights():
    run = train(Config(shared_repeats=3, epochs=5))
    edges = datasets_of(run)["edges"]
    assert len(edges) == 10 * 5 + 3 * 5 * 5 + 5
    uses = [edges[edges.x == step].drop(columns=["x", "x2"]).reset_index(drop=True) for step in (1, 2, 3)]
    assert uses[0].equals(uses[1]) and uses[1].equals(uses[2])
    untied = datasets_of(train(replace(run.config, tied=False)))["edges"]
    one, two = (untied[untied.x == s].drop(columns=["x", "x2"]).reset_index(drop=True) for s in (1, 2))
    assert one["v0"].equals(two["v0"]) and not one["v5"].equals(two["v5"])   # same start, trained apart
    assert AT_FRAME in str(watch_panels(run)["diagram"])


def test_wide_nets_show_a_corner_of_each_matrix_and_no_diagram():
    run = train(Config(width=40, epochs=3))
    datasets = datasets_of(run)
    assert "edges" not in datasets
    assert len(datasets["weights_1"]) == HEATMAP_MAX_UNITS ** 2
    assert datasets["weights_1"].row.max() == HEATMAP_MAX_UNITS - 1


def test_a_diverged_run_keeps_its_frames_and_a_finite_colour_scale():
    run = train(Config(lr=1.0, width=64, epochs=15))   # NaN at epoch 1, where it stops
    specs = watch_panels(run)
    assert not np.isfinite(run.frames.values[-1]).all()
    assert np.isfinite(specs["predictions"]["datasets"]["predictions"]["v0"]).all()
    for name in ("weights", "change"):
        assert all(np.isfinite(scale["domain"]).all() for _, scale, _ in colour_scales(specs[name]))


def test_predictions_past_float32s_range_are_sent_as_inf_off_the_chart_and_warn_nothing():
    # The lecture's movers (the class link's lr 0.05 at a heavy width) diverged at epoch 6
    # with predictions of 1e50 and more: a warning in the server's log.
    run = train(Config(width=256, shared_repeats=3, lr=0.05, batch_size=199, n_train=199, epochs=10, seed=1001))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = watch_panels(run, names=("predictions",))["predictions"]
    assert np.isinf(frames_of(spec["datasets"]["predictions"]).to_numpy()).any()
    drawn = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "circle")
    assert any("abs(datum.prediction) < " in step.get("filter", "") for step in drawn["transform"])
