"""Watch a run learn: one Vega-Lite spec whose every picture follows an
epoch parameter bound to a range input, so scrubbing redraws in the
browser without asking Python for anything.

The data of each picture carries every recorded frame, one column per frame
(v0, v1, …) for each cell, edge or test row; a calculate transform picks
column `'v' + frame`, the recorded frame nearest the input's epoch. (Columns,
not a list per row: Streamlit sends data sets as Arrow tables, whose list
values Vega's expressions cannot index.) Pictures: the losses with a rule at
the epoch, the distance to the teacher, the predictions against the labels,
the net as a diagram (widths up to DIAGRAM_MAX_WIDTH) and each layer's
weight and bias as heatmaps, teacher beside student, on one diverging colour
scale centred at 0.
"""

from __future__ import annotations

import functools
import json

import altair as alt
import numpy as np
import pandas as pd

from fitlab.charts import DIVERGING, SPLIT_LABELS
from fitlab.frames import Frames
from fitlab.run import Run
from fitlab.weights import Layers, forward, teacher_as_student, use_counts, use_order

EPOCH = "epoch"              # the parameter the range input sets
FRAME = "frame"              # index of the recorded frame nearest EPOCH
FRAME_EPOCH = "frame_epoch"  # the epoch of that frame
DIAGRAM_MAX_WIDTH = 16
HEATMAP_MAX_UNITS = 32       # wider matrices are shown by their top-left corner
PANEL_WIDTH = 320


class Datasets(dict):
    """The spec's data sets by name, as DataFrames (Streamlit sends them as
    Arrow). Altair copies a chart's data and every subchart on each
    concatenation and validates inline data value by value (seconds for this
    spec), so the pictures name their data, each picture is turned into a
    dict on its own, and watch_spec puts the dicts and the data sets together."""

    def __call__(self, name: str, table: pd.DataFrame) -> alt.NamedData:
        """Register `table` as data set `name`; the reference to draw it from."""
        self[name] = table
        return alt.NamedData(name=name)


def frame_columns(series: np.ndarray) -> pd.DataFrame:
    """(rows, frames) values as columns v0, v1, …, one per frame."""
    return pd.DataFrame(series, columns=[f"v{i}" for i in range(series.shape[1])])


AT_FRAME = f"datum['v' + {FRAME}]"


def frame_params(frames: Frames, epochs: int) -> list[dict]:
    """The epoch the range input sets (it starts at the end of training), and
    the recorded frame nearest it."""
    recorded = [int(e) for e in frames.epochs]
    last = len(recorded) - 1
    evenly = last > 0 and epochs % last == 0
    step = epochs // last if evenly else 1
    scale = last / epochs if epochs else 0
    return [{"name": EPOCH, "value": epochs,
             "bind": {"input": "range", "min": 0, "max": epochs, "step": step, "name": "epoch "}},
            {"name": FRAME, "expr": f"clamp(round({EPOCH} * {scale!r}), 0, {last})"},
            {"name": FRAME_EPOCH, "expr": f"{recorded}[{FRAME}]"}]


def view(chart: alt.TopLevelMixin) -> dict:
    """A picture as a dict to concatenate: its spec without the top-level
    keys ($schema, config, datasets) that only the whole spec carries. Not
    validated here: tests validate the assembled spec (watch_spec_is_valid)."""
    spec = chart.to_dict(validate=False)
    for key in ("$schema", "config", "datasets"):
        spec.pop(key, None)
    return spec


def _epoch_rule(data: Datasets) -> alt.Chart:
    """A vertical rule at the shown frame's epoch."""
    return (alt.Chart(data("one_row", pd.DataFrame({"one": [0]})))
            .transform_calculate(epoch=FRAME_EPOCH)
            .mark_rule(color="#444", strokeDash=[3, 3])
            .encode(x="epoch:Q"))


def watch_loss_panel(history: pd.DataFrame, data: Datasets, log_scale: bool = True) -> alt.LayerChart:
    """Train and test MSE per epoch, with a rule at the shown epoch and both
    losses there as labelled points (needs frame_params in the spec)."""
    long = history.melt(id_vars="epoch", value_vars=list(SPLIT_LABELS), var_name="split", value_name="loss")
    long["split"] = long["split"].map(SPLIT_LABELS)
    long = long[np.isfinite(long["loss"]) & ((long["loss"] > 0) if log_scale else True)]
    scale = alt.Scale(type="log") if log_scale else alt.Scale(zero=True)
    base = alt.Chart(data("losses", long.reset_index(drop=True))).encode(
        x=alt.X("epoch:Q", title="epoch"),
        y=alt.Y("loss:Q", title="mean squared error", scale=scale),
        color=alt.Color("split:N", title=None, sort=["train", "test"],
                        scale=alt.Scale(range=["#1f77b4", "#ff7f0e"]),
                        legend=alt.Legend(orient="bottom", direction="horizontal")))
    lines = base.mark_line()
    now = base.transform_filter(f"datum.epoch == {FRAME_EPOCH}")
    points = now.mark_point(filled=True, size=60).encode(
        tooltip=[alt.Tooltip("split:N"), alt.Tooltip("epoch:Q"), alt.Tooltip("loss:Q", format=".6g")])
    # Both losses at the epoch, in a corner: beside the points they overlap
    # wherever the curves meet.
    labels = [now.transform_filter(f"datum.split == '{split}'")
              .transform_calculate(label=f"'{split} ' + format(datum.loss, '.4g')")
              .mark_text(align="right", fontSize=12, fontWeight="bold")
              .encode(x=alt.value(PANEL_WIDTH - 4), y=alt.value(12 + 16 * k), text="label:N")
              for k, split in enumerate(["train", "test"])]
    return alt.layer(lines, _epoch_rule(data), points, *labels).properties(
        width=PANEL_WIDTH, height=220, title="Loss")


def watch_distance_panel(distances: pd.DataFrame, data: Datasets) -> alt.LayerChart:
    """Each layer's raw distance to the teacher over training, a rule and
    points at the shown epoch."""
    finite = distances[np.isfinite(distances["raw"])]
    layers = list(dict.fromkeys(distances["layer"]))
    base = alt.Chart(data("distances", finite.reset_index(drop=True))).encode(
        x=alt.X("epoch:Q", title="epoch"),
        y=alt.Y("raw:Q", title="distance to the teacher", scale=alt.Scale(zero=True)),
        color=alt.Color("layer:N", title=None, sort=layers, scale=alt.Scale(scheme="category10"),
                        legend=alt.Legend(orient="bottom", direction="horizontal")))
    nearest = (f"abs(datum.epoch - {FRAME_EPOCH}) == 0")
    points = base.transform_filter(nearest).mark_point(filled=True, size=50).encode(
        tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("epoch:Q"), alt.Tooltip("raw:Q", format=".4g")])
    return alt.layer(base.mark_line(), _epoch_rule(data), points).properties(
        width=PANEL_WIDTH, height=220, title="Raw distance to the teacher, per layer")


def prediction_series(frames: Frames, inputs: np.ndarray, labels: np.ndarray) -> tuple[pd.DataFrame, float, float]:
    """Per test row its label and the student's prediction at every frame;
    and the range of the finite values, for axes that stay put."""
    order = use_order(len(frames.names), frames.repeats)
    predictions = np.stack([forward(frames.layers_at(i), order, inputs) for i in range(len(frames.epochs))])
    values = np.concatenate([labels, predictions.ravel()])
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    table = frame_columns(predictions.T)
    table.insert(0, "label", labels.astype(np.float64))
    return table, low, high


def watch_prediction_panel(frames: Frames, inputs: np.ndarray, labels: np.ndarray,
                           data: Datasets) -> alt.LayerChart:
    """The student's prediction against the label of each test row at the
    shown epoch, with the y = x line of a perfect student."""
    rows, low, high = prediction_series(frames, inputs, labels)
    low, high = max(low, -1e6), min(high, 1e6)
    domain = alt.Scale(domain=[low, high], clamp=True)
    points = (alt.Chart(data("predictions", rows)).transform_calculate(prediction=AT_FRAME)
              .transform_filter("isValid(datum.prediction)")
              .mark_circle(size=30, opacity=0.7).encode(
                  x=alt.X("label:Q", title="true label (the teacher)", scale=domain),
                  y=alt.Y("prediction:Q", title="student's prediction", scale=domain),
                  tooltip=[alt.Tooltip("label:Q", format=".4g"), alt.Tooltip("prediction:Q", format=".4g")]))
    line = alt.Chart(data("diagonal", pd.DataFrame({"label": [low, high], "prediction": [low, high]}))
                     ).mark_line(color="gray", strokeDash=[4, 4]).encode(x="label:Q", y="prediction:Q")
    return alt.layer(line, points).properties(width=240, height=220,
                                              title="Test rows: prediction against label")


def colour_bound(teacher: Layers, frames: Frames) -> float:
    """The half-width m of the shared colour scale [-m, m]: the largest
    teacher value or the 99.5th percentile of the student's finite values,
    whichever is larger (a diverged student would wash everything white)."""
    teacher_max = max(float(np.abs(a).max()) for _, w, b in teacher for a in (w, b))
    student = np.abs(frames.values[np.isfinite(frames.values)])
    student_max = float(np.quantile(student, 0.995)) if student.size else 0.0
    return max(teacher_max, student_max, 1e-6)


def _colour(bound: float, title: str | None = None) -> alt.Color:
    """The one diverging scale of weights: equal colours mean equal values in
    every picture; the legend (titled) is drawn once."""
    return alt.Color("value:Q", title=title, legend=alt.Legend(orient="left") if title else None,
                     scale=alt.Scale(scheme=DIVERGING, domain=[-bound, bound], domainMid=0, clamp=True))


def _cells(teacher: np.ndarray, student: np.ndarray) -> pd.DataFrame:
    """One row per cell of a (rows, cols) matrix, its top-left corner if
    wider than HEATMAP_MAX_UNITS: row, col, its teacher value t and its
    student value at each frame; student has shape (frames, rows, cols)."""
    corner = HEATMAP_MAX_UNITS
    teacher, student = teacher[:corner, :corner], student[:, :corner, :corner]
    rows, cols = np.indices(teacher.shape)
    table = frame_columns(student.reshape(len(student), -1).T)
    table.insert(0, "row", rows.ravel())
    table.insert(1, "col", cols.ravel())
    table.insert(2, "t", teacher.ravel().astype(np.float64))
    return table


def layer_titles(frames: Frames) -> list[str]:
    """Each distinct layer's name as the pictures label it: the tied shared
    layer with its use count."""
    counts = use_counts(len(frames.names), frames.repeats)
    return [f"{name} (used {n}×)" if n > 1 else name for name, n in zip(frames.names, counts)]


@functools.lru_cache(maxsize=16)
def _heatmap_template(net: str, legend: bool, x_labels: bool, y_labels: bool) -> str:
    """A heatmap's spec as JSON, built by Altair once per kind: the weight
    panels hold a dozen heatmaps, and Altair's encode and validation cost
    about 15 ms each. _heatmap fills in its data, size, title and scale."""
    chart = alt.Chart(alt.NamedData(name="cells"))
    if net == "teacher":
        chart = chart.transform_calculate(value="datum.t")
    else:
        chart = chart.transform_calculate(value=AT_FRAME, teacher="datum.t")
    tooltip = [alt.Tooltip("row:O", title="row (output unit)"), alt.Tooltip("col:O", title="col (input)"),
               alt.Tooltip("value:Q", format=".4g")]
    if net == "student":
        tooltip.append(alt.Tooltip("teacher:Q", format=".4g"))
    return json.dumps(view(chart.mark_rect().encode(
        x=alt.X("col:O", title=None, axis=alt.Axis(labels=x_labels, ticks=False)),
        y=alt.Y("row:O", title=None, axis=alt.Axis(labels=y_labels, ticks=False)),
        color=_colour(1.0, "weight or bias" if legend else None), tooltip=tooltip,
    ).properties(width=1, height=1, title="title")))


def _heatmap(cells: alt.NamedData, net: str, bound: float, n_rows: int, n_cols: int, title: str,
             legend: bool = False) -> dict:
    """A (rows, cols) matrix as coloured cells: the teacher's values, or the
    student's at the shown frame (with the teacher's in the tooltip)."""
    spec = json.loads(_heatmap_template(net, legend, n_cols <= 16, n_rows <= 16))
    cell = 14 if max(n_rows, n_cols) <= 16 else 7
    spec.update(data={"name": cells.name}, width=cell * n_cols, height=cell * n_rows, title=title)
    spec["encoding"]["color"]["scale"]["domain"] = [-bound, bound]
    return spec


def watch_weight_panels(frames: Frames, teacher: Layers, data: Datasets) -> dict:
    """Per distinct layer of the student: teacher weight and bias beside the
    student's at the shown epoch, one colour scale for all."""
    bound = colour_bound(teacher, frames)
    as_student = teacher_as_student(teacher, len(frames.names))
    per_frame = [frames.layers_at(i) for i in range(len(frames.epochs))]
    rows = []
    for index, title in enumerate(layer_titles(frames)):
        _, t_weight, t_bias = as_student[index]
        s_weight = np.stack([layers[index][1] for layers in per_frame])
        s_bias = np.stack([layers[index][2] for layers in per_frame])[:, :, None]
        n_rows, n_cols = min(t_weight.shape[0], HEATMAP_MAX_UNITS), min(t_weight.shape[1], HEATMAP_MAX_UNITS)
        weights = data(f"weights_{index}", _cells(t_weight, s_weight))
        biases = data(f"biases_{index}", _cells(t_bias[:, None], s_bias))
        rows.append({"hconcat": [
            _heatmap(weights, "teacher", bound, n_rows, n_cols, f"teacher {title}.weight", legend=index == 0),
            _heatmap(biases, "teacher", bound, n_rows, 1, "bias"),
            _heatmap(weights, "student", bound, n_rows, n_cols, f"student {title}.weight"),
            _heatmap(biases, "student", bound, n_rows, 1, "bias")], "spacing": 12,
            "resolve": {"scale": {"color": "independent"}}})
    return {"vconcat": rows, "spacing": 14, "resolve": {"scale": {"color": "independent"}}}


def diagram_data(frames: Frames, in_features: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The net drawn as columns of nodes: input, the activation after each
    use, the output. Edges: one row per weight of each use (a tied shared
    layer's weights once per use), with its value at every frame; nodes; and
    a label per use saying which layer it applies."""
    order = use_order(len(frames.names), frames.repeats)
    titles = layer_titles(frames)
    per_frame = [frames.layers_at(i) for i in range(len(frames.epochs))]
    widths = [in_features] + [frames.shapes[layer][0][0] for layer in order]
    nodes = pd.DataFrame([{"x": x, "y": j - (n - 1) / 2} for x, n in enumerate(widths) for j in range(n)])
    edges, uses = [], []
    seen: dict[int, int] = {}
    for step, layer in enumerate(order):
        seen[layer] = seen.get(layer, 0) + 1
        weights = np.stack([layers[layer][1] for layers in per_frame])   # (frames, out, in)
        n_out, n_in = weights.shape[1:]
        outs, ins = np.indices((n_out, n_in))
        table = frame_columns(weights.reshape(len(weights), -1).T)
        table.insert(0, "x", step)
        table.insert(1, "y", ins.ravel() - (n_in - 1) / 2)
        table.insert(2, "x2", step + 1)
        table.insert(3, "y2", outs.ravel() - (n_out - 1) / 2)
        edges.append(table)
        count = use_counts(len(frames.names), frames.repeats)[layer]
        label = titles[layer] if count == 1 else f"{frames.names[layer]}: use {seen[layer]} of {count}"
        uses.append({"x": step + 0.5, "label": label})
    return pd.concat(edges, ignore_index=True), nodes, pd.DataFrame(uses)


def watch_diagram_panel(frames: Frames, in_features: int, teacher: Layers, data: Datasets) -> alt.LayerChart:
    """The student as a diagram at the shown epoch: edges coloured by weight
    (the weight colour scale) and thicker for larger magnitudes."""
    edges, nodes, uses = diagram_data(frames, in_features)
    bound = colour_bound(teacher, frames)
    top = float(nodes["y"].abs().max()) + 1
    x = alt.X("x:Q", axis=None)
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[-top, top + 0.5]))
    lines = (alt.Chart(data("edges", edges)).transform_calculate(value=AT_FRAME)
             .transform_filter("isValid(datum.value)")
             .transform_calculate(strength=f"min(abs(datum.value) / {bound!r}, 1)")
             .mark_rule().encode(
                 x=x, y=y, x2="x2:Q", y2="y2:Q", color=_colour(bound),
                 strokeWidth=alt.StrokeWidth("strength:Q", scale=alt.Scale(domain=[0, 1], range=[0.3, 4]),
                                             legend=None),
                 tooltip=[alt.Tooltip("value:Q", title="weight", format=".4g")]))
    dots = alt.Chart(data("nodes", nodes)).mark_circle(size=40, color="#333", opacity=1).encode(x=x, y=y)
    labels = (alt.Chart(data("uses", uses)).transform_calculate(y=f"{top}")
              .mark_text(fontSize=10, angle=0).encode(x=x, y=y, text="label:N"))
    return alt.layer(lines, dots, labels).properties(width=PANEL_WIDTH + 120, height=220,
                                                    title="The student as a net: each use's weights")


def watch_spec(run: Run, log_scale: bool = True) -> dict:
    """Every picture of the run at one epoch, moved by one range input: the
    Vega-Lite spec (validated by Altair), its data sets added."""
    frames, config, kept = run.frames, run.config, run.student_teacher
    n = config.n_train
    data = Datasets()
    records = kept.records
    distances = pd.DataFrame([{"epoch": e, "layer": name, "raw": r}
                              for e, raw in records.raw for name, r in zip(records.names, raw)])
    independent = {"scale": {"color": "independent"}}
    rows = [{"hconcat": [view(watch_loss_panel(run.history, data, log_scale)),
                         view(watch_distance_panel(distances, data))], "resolve": independent},
            {"hconcat": [view(watch_prediction_panel(frames, kept.inputs[n:], kept.labels[n:], data))],
             "resolve": independent}]
    if config.width <= DIAGRAM_MAX_WIDTH:
        rows[1]["hconcat"].append(view(watch_diagram_panel(frames, config.in_features, kept.teacher, data)))
    rows.append(watch_weight_panels(frames, kept.teacher, data))
    return {"$schema": alt.SCHEMA_URL,
            "title": {"text": {"expr": f"'Epoch ' + {FRAME_EPOCH} + ' of {config.epochs}'"},
                      "anchor": "start", "fontSize": 16},
            "params": frame_params(frames, config.epochs),
            "vconcat": rows, "spacing": 24,
            "resolve": independent,
            "datasets": dict(data)}
