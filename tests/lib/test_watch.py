"""The scrubbed view: its spec, and that what each picture draws at a frame
is what torch's student was at that epoch."""

from dataclasses import replace

import altair as alt
import numpy as np
import pytest

from fitlab import Config, train
from fitlab.watch_charts import AT_FRAME, EPOCH, FRAME, FRAME_EPOCH, HEATMAP_MAX_UNITS, frame_params, watch_spec


@pytest.fixture(scope="module")
def run():
    return train(Config(epochs=40, engine="autograd"))


def frame_values(table, index):
    return table[f"v{index}"].to_numpy()


def test_spec_is_valid_vega_lite_with_one_epoch_input(run):
    spec = watch_spec(run)
    datasets = spec.pop("datasets")
    alt.VConcatChart.from_dict(spec, validate=True)   # raises on an invalid spec
    params = {p["name"]: p for p in spec["params"]}
    assert params[EPOCH]["bind"] == {"input": "range", "min": 0, "max": 40, "step": 1, "name": "epoch "}
    assert params[EPOCH]["value"] == 40     # opens on the trained student
    assert set(datasets) >= {"losses", "distances", "predictions", "edges", "weights_0", "biases_2"}


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
    datasets = watch_spec(run)["datasets"]
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


def test_one_colour_scale_centred_at_zero_for_teacher_and_student(run):
    spec = watch_spec(run)
    scales = []

    def walk(node):
        if isinstance(node, dict):
            colour = node.get("encoding", {}).get("color", {})
            if colour.get("field") == "value":
                scales.append(colour["scale"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    assert len(scales) == 3 * 4 + 1    # 3 layers × (teacher, student) × (weight, bias), and the diagram
    low, high = scales[0]["domain"]
    assert low == -high and high >= np.abs(run.teacher_params.value).max()
    assert all(s == scales[0] for s in scales) and scales[0]["domainMid"] == 0


def test_the_diagram_draws_each_use_of_the_tied_layer_with_the_same_weights():
    run = train(Config(shared_repeats=3, epochs=5))
    edges = watch_spec(run)["datasets"]["edges"]
    assert len(edges) == 10 * 5 + 3 * 5 * 5 + 5
    uses = [edges[edges.x == step].drop(columns=["x", "x2"]).reset_index(drop=True) for step in (1, 2, 3)]
    assert uses[0].equals(uses[1]) and uses[1].equals(uses[2])
    untied = watch_spec(train(replace(run.config, tied=False)))["datasets"]["edges"]
    one, two = (untied[untied.x == s].drop(columns=["x", "x2"]).reset_index(drop=True) for s in (1, 2))
    assert one["v0"].equals(two["v0"]) and not one["v5"].equals(two["v5"])   # same start, trained apart
    assert AT_FRAME in str(watch_spec(run))


def test_wide_nets_show_a_corner_of_each_matrix_and_no_diagram():
    run = train(Config(width=40, epochs=3))
    datasets = watch_spec(run)["datasets"]
    assert "edges" not in datasets
    assert len(datasets["weights_1"]) == HEATMAP_MAX_UNITS ** 2
    assert datasets["weights_1"].row.max() == HEATMAP_MAX_UNITS - 1


def test_a_diverged_run_keeps_its_frames_and_a_finite_colour_scale():
    run = train(Config(lr=10.0, epochs=15))
    spec = watch_spec(run)
    assert not np.isfinite(run.frames.values[-1]).all()
    assert np.isfinite(spec["datasets"]["predictions"]["v0"]).all()
    assert np.isfinite(spec["vconcat"][-1]["vconcat"][0]["hconcat"][0]["encoding"]["color"]["scale"]["domain"]).all()
