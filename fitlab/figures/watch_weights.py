"""The scrubbed view's pictures of the weights: how far each moved since
epoch 0, the student beside the teacher, and the net as a diagram.

At the defaults SGD moves the weights by a few percent of their size in 100
epochs: drawn on the one colour scale the teacher and the student share
(needed so that equal colours mean equal values), 0.4% of the pixels change
between the first and the last epoch. So the change gets its own pictures:
W_t − W_0 per layer, on that layer's own symmetric scale [−m, m], m the
largest change of its weights and biases over the whole run, so that
whatever a layer moves fills its colours.

Data of each picture: one column per recorded frame (see fitlab.figures.watch_charts).
"""

from __future__ import annotations

import functools
import json

import altair as alt
import numpy as np
import pandas as pd

from fitlab.figures.charts import DIVERGING
from fitlab.frames import Frames
from fitlab.weights import Layers, teacher_as_student, use_counts, use_order

FRAME = "frame"               # the spec's parameter: index of the frame shown
AT_FRAME = f"datum['v' + {FRAME}]"
CHANGE = f"{AT_FRAME} - datum.v0"
DIAGRAM_MAX_WIDTH = 16
HEATMAP_MAX_UNITS = 32       # wider matrices are shown by their top-left corner
# A layer's row of heatmaps fits a phone's 358 px: cells shrink for wide layers.
ROW_PIXELS = 160   # a matrix row at most this wide: readable across a room at 1280×720


def frame_columns(series: np.ndarray) -> pd.DataFrame:
    """(rows, frames) values as columns v0, v1, …, one per frame."""
    return pd.DataFrame(series, columns=[f"v{i}" for i in range(series.shape[1])])


def _bound(values: np.ndarray) -> float:
    """Half-width of a symmetric colour scale for `values`: the 99.5th
    percentile of their finite magnitudes (a diverged run would wash
    everything white), at least 1e-12."""
    finite = np.abs(values[np.isfinite(values)])
    return max(float(np.quantile(finite, 0.995)) if finite.size else 0.0, 1e-12)


def colour_bound(teacher: Layers, frames: Frames) -> float:
    """The half-width m of the shared colour scale [-m, m]: the largest
    teacher value or the 99.5th percentile of the student's finite values,
    whichever is larger."""
    teacher_max = max(float(np.abs(a).max()) for _, w, b in teacher for a in (w, b))
    return max(teacher_max, _bound(frames.values), 1e-6)


def beyond_colour_scale(teacher: Layers, frames: Frames) -> tuple[float, int, int]:
    """(m, beyond, recorded): the shared colour scale's half-width
    (colour_bound), how many of the student's finite recorded values lie
    past ±m (drawn in the scale's end colour: the scale clamps), and how many
    finite values were recorded."""
    bound = colour_bound(teacher, frames)
    finite = frames.values[np.isfinite(frames.values)]
    return bound, int((np.abs(finite) > bound).sum()), int(finite.size)


def change_bounds(frames: Frames) -> list[float]:
    """Per distinct layer, the half-width of its change scale: the largest
    |value at a frame − value at epoch 0| of its weights and biases."""
    per_frame = [frames.layers_at(i) for i in range(len(frames.epochs))]
    bounds = []
    for k in range(len(frames.names)):
        weights = np.stack([f[k][1] for f in per_frame])
        biases = np.stack([f[k][2] for f in per_frame])
        bounds.append(_bound(np.concatenate([(weights - weights[0]).ravel(), (biases - biases[0]).ravel()])))
    return bounds


def layer_movement(frames: Frames) -> list[float]:
    """Per distinct layer, how far its weights and bias moved from epoch 0 to
    the last recorded frame, relative to their size at epoch 0:
    ‖θ_last − θ_0‖ / ‖θ_0‖ (nan if a value diverged, inf for a zero start)."""
    first, last = frames.layers_at(0), frames.layers_at(len(frames.epochs) - 1)
    moved = []
    for (_, w0, b0), (_, w1, b1) in zip(first, last):
        start = np.concatenate([w0.ravel(), b0.ravel()]).astype(np.float64)
        end = np.concatenate([w1.ravel(), b1.ravel()]).astype(np.float64)
        size = float(np.linalg.norm(start))
        moved.append(float(np.linalg.norm(end - start)) / size if size else float("inf"))
    return moved


def layer_titles(frames: Frames) -> list[str]:
    """Each distinct layer's name as the pictures label it: the tied shared
    layer with its use count."""
    counts = use_counts(len(frames.names), frames.repeats)
    return [f"{name} (used {n}×)" if n > 1 else name for name, n in zip(frames.names, counts)]


def _colour(bound: float, title: str | None = None) -> alt.Color:
    """A diverging scale centred at 0 on [-bound, bound]; a legend if titled."""
    return alt.Color("value:Q", title=title,
                     legend=alt.Legend(orient="right", gradientLength=60) if title else None,
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


@functools.lru_cache(maxsize=32)
def _heatmap_template(kind: str, legend: str | None, x_labels: bool, y_labels: bool) -> str:
    """A heatmap's spec as JSON, built by Altair once per kind ("teacher",
    "student", "change"): the panels hold a dozen heatmaps, and Altair's
    encode and validation cost about 15 ms each."""
    chart = alt.Chart(alt.NamedData(name="cells"))
    tooltip = [alt.Tooltip("row:O", title="row (output unit)"), alt.Tooltip("col:O", title="col (input)")]
    if kind == "teacher":
        chart = chart.transform_calculate(value="datum.t")
        tooltip.append(alt.Tooltip("value:Q", format=".4g"))
    elif kind == "student":
        chart = chart.transform_calculate(value=AT_FRAME, teacher="datum.t")
        tooltip += [alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("teacher:Q", format=".4g")]
    else:
        chart = chart.transform_calculate(value=CHANGE, now=AT_FRAME, start="datum.v0")
        tooltip += [alt.Tooltip("value:Q", title="change since epoch 0", format=".3g"),
                    alt.Tooltip("start:Q", title="at epoch 0", format=".4g"),
                    alt.Tooltip("now:Q", title="now", format=".4g")]
    return json.dumps(view(chart.mark_rect().encode(
        x=alt.X("col:O", title=None, axis=alt.Axis(labels=x_labels, ticks=False)),
        y=alt.Y("row:O", title=None, axis=alt.Axis(labels=y_labels, ticks=False)),
        color=_colour(1.0, legend), tooltip=tooltip,
    ).properties(width=1, height=1, title="title")))


def view(chart: alt.TopLevelMixin) -> dict:
    """A picture as a dict to concatenate: its spec without the top-level
    keys ($schema, config, datasets) that only a whole spec carries."""
    spec = chart.to_dict(validate=False)
    for key in ("$schema", "config", "datasets"):
        spec.pop(key, None)
    return spec


def cell_pixels(n_cols: int) -> int:
    """Side of a heatmap cell: 32 px, smaller for wide matrices."""
    return max(2, min(32, ROW_PIXELS // max(n_cols, 1)))


def _heatmap(data_name: str, kind: str, bound: float, n_rows: int, n_cols: int, title: str,
             legend: str | None = None) -> dict:
    """A (rows, cols) matrix as coloured cells: the teacher's values, the
    student's at the shown frame, or its change since epoch 0."""
    spec = json.loads(_heatmap_template(kind, legend, n_cols <= 16, n_rows <= 16))
    cell = cell_pixels(max(n_rows, n_cols))
    spec.update(data={"name": data_name}, width=cell * n_cols, height=cell * n_rows, title=title)
    spec["encoding"]["color"]["scale"]["domain"] = [-bound, bound]
    return spec


def _layer_cells(frames: Frames, teacher: Layers, data) -> list[tuple[str, str, int, int, str]]:
    """Registers each distinct layer's weight and bias cells as data sets;
    per layer (weights name, biases name, rows, cols, title)."""
    as_student = teacher_as_student(teacher, len(frames.names))
    per_frame = [frames.layers_at(i) for i in range(len(frames.epochs))]
    layers = []
    for index, title in enumerate(layer_titles(frames)):
        _, t_weight, t_bias = as_student[index]
        s_weight = np.stack([f[index][1] for f in per_frame])
        s_bias = np.stack([f[index][2] for f in per_frame])[:, :, None]
        n_rows, n_cols = min(t_weight.shape[0], HEATMAP_MAX_UNITS), min(t_weight.shape[1], HEATMAP_MAX_UNITS)
        weights = data(f"weights_{index}", _cells(t_weight, s_weight)).name
        biases = data(f"biases_{index}", _cells(t_bias[:, None], s_bias)).name
        layers.append((weights, biases, n_rows, n_cols, title))
    return layers


_INDEPENDENT = {"scale": {"color": "independent"}}


def change_panel(frames: Frames, teacher: Layers, data) -> dict:
    """Per distinct layer: how far each weight and bias has moved from epoch
    0 at the shown epoch, on the layer's own symmetric colour scale."""
    rows = []
    cells = zip(_layer_cells(frames, teacher, data), change_bounds(frames), frames.names)
    for (weights, biases, n_rows, n_cols, _), bound, name in cells:
        rows.append({"hconcat": [
            _heatmap(weights, "change", bound, n_rows, n_cols, f"{name}.weight"),
            _heatmap(biases, "change", bound, n_rows, 1, "bias", legend="change")],
            "spacing": 8, "resolve": _INDEPENDENT})
    return {"vconcat": rows, "spacing": 12, "resolve": _INDEPENDENT,
            "title": {"text": "Change since epoch 0", "subtitle": "each layer on its own scale", "anchor": "start"}}


def weight_panel(frames: Frames, teacher: Layers, data) -> dict:
    """Per distinct layer: the teacher's weight and bias beside the
    student's at the shown epoch, one colour scale for all."""
    bound = colour_bound(teacher, frames)
    rows = []
    cells = _layer_cells(frames, teacher, data)
    for index, ((weights, biases, n_rows, n_cols, _), name) in enumerate(zip(cells, frames.names)):
        rows.append({"hconcat": [
            _heatmap(weights, "teacher", bound, n_rows, n_cols, f"teacher {name}"),
            _heatmap(biases, "teacher", bound, n_rows, 1, "bias"),
            _heatmap(weights, "student", bound, n_rows, n_cols, "student"),
            _heatmap(biases, "student", bound, n_rows, 1, "bias", legend="value" if index == 0 else None)],
            "spacing": 8, "resolve": _INDEPENDENT})
    return {"vconcat": rows, "spacing": 12, "resolve": _INDEPENDENT,
            "title": {"text": "Teacher and student", "subtitle": "one colour scale for both", "anchor": "start"}}


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
        label = titles[layer] if count == 1 else f"{frames.names[layer]} {seen[layer]}/{count}"
        uses.append({"x": step + 0.5, "label": label})
    return pd.concat(edges, ignore_index=True), nodes, pd.DataFrame(uses)


def diagram_panel(frames: Frames, in_features: int, data) -> alt.LayerChart:
    """The student as a diagram at the shown epoch: each edge coloured by its
    weight's change since epoch 0 (one symmetric scale for the net), thicker
    for larger weights."""
    edges, nodes, uses = diagram_data(frames, in_features)
    changes = edges.filter(like="v").to_numpy()
    bound, size = _bound(changes - changes[:, :1]), _bound(changes)
    top = float(nodes["y"].abs().max()) + 1
    x = alt.X("x:Q", axis=None)
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[-top, top + 0.5]))
    lines = (alt.Chart(data("edges", edges)).transform_calculate(value=CHANGE, weight=AT_FRAME)
             .transform_filter("isValid(datum.value)")
             .transform_calculate(strength=f"min(abs(datum.weight) / {size!r}, 1)")
             .mark_rule().encode(
                 x=x, y=y, x2="x2:Q", y2="y2:Q", color=_colour(bound, "change"),
                 strokeWidth=alt.StrokeWidth("strength:Q", scale=alt.Scale(domain=[0, 1], range=[0.3, 4]),
                                             legend=None),
                 tooltip=[alt.Tooltip("weight:Q", format=".4g"),
                          alt.Tooltip("value:Q", title="change since epoch 0", format=".3g")]))
    dots = alt.Chart(data("nodes", nodes)).mark_circle(size=40, color="#333", opacity=1).encode(x=x, y=y)
    labels = (alt.Chart(data("uses", uses)).transform_calculate(y=f"{top}")
              .mark_text(fontSize=10, angle=0).encode(x=x, y=y, text="label:N"))
    return alt.layer(lines, dots, labels).properties(
        width="container", height=220,
        title=alt.Title("The student as a net", subtitle=["colour: change since epoch 0;", "thickness: |weight|"],
                        anchor="start"))
