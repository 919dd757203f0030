"""Watch a run learn: its pictures at one epoch, each a Vega-Lite spec
whose every layer follows an epoch parameter bound to a range input, so
scrubbing redraws in the browser without asking Python for anything.

The data of each picture carries every recorded frame, one column per frame
(v0, v1, …) for each cell, edge or test row; a calculate transform picks
column `'v' + frame`, the recorded frame nearest the input's epoch. (Columns,
not a list per row: Streamlit sends data sets as Arrow tables, whose list
values Vega's expressions cannot index.) Pictures, one spec each so that a
page can lay them out in columns that stack on a phone: the losses with a
rule at the epoch, the distance to the teacher relative to epoch 0, the
predictions against the labels, the net as a diagram (widths up to
DIAGRAM_MAX_WIDTH), each layer's change since epoch 0, and the student's
weights beside the teacher's (fitlab.figures.watch_weights draws the weights).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from fitlab.figures import theme
from fitlab.figures.charts import PREDICTION_LIMIT, SPLIT_LABELS
from fitlab.figures.watch_weights import (
    AT_FRAME,
    DIAGRAM_MAX_WIDTH,
    FRAME,
    HEATMAP_MAX_UNITS,
    change_panel,
    diagram_panel,
    frame_columns,
    view,
    weight_panel,
)
from fitlab.frames import Frames
from fitlab.run import Run
from fitlab.weights import forward, use_order

__all__ = ["AT_FRAME", "DIAGRAM_MAX_WIDTH", "EPOCH", "FRAME", "FRAME_EPOCH", "HEATMAP_MAX_UNITS",
           "frame_params", "frame_scale", "layer_distances", "relative_distances", "watch_panels"]

EPOCH = "epoch"              # the parameter the range input sets
# The epoch axis: linear to 1, logarithmic beyond. At the blog's settings the
# pictures change most in the first few epochs of a hundred, which a linear
# axis crowds into its left edge.
EPOCH_SCALE = {"type": "symlog", "constant": 1}
GROWN = "datum.epoch <= frame_epoch"   # a curve drawn up to the shown epoch
FRAME_EPOCH = "frame_epoch"  # the epoch of the frame shown
PREDICTION_SIDE = 180   # px: the prediction picture's square plot (with its axes, a third of 1280 px's page)


class Datasets(dict):
    """The spec's data sets by name, as DataFrames (Streamlit sends them as
    Arrow). Altair copies a chart's data and every subchart on each
    concatenation and validates inline data value by value (seconds for this
    spec), so the pictures name their data, each picture is turned into a
    dict on its own, and watch_panels puts each picture's dict and data sets together."""

    def __call__(self, name: str, table: pd.DataFrame) -> alt.NamedData:
        """Register `table` as data set `name`; the reference to draw it from."""
        self[name] = table
        return alt.NamedData(name=name)


def frame_scale(frames: Frames, epochs: int) -> float:
    """The frame shown at epoch e is clamp(round(e × this), 0, last frame):
    the recorded frames are evenly spaced over the epochs."""
    return (len(frames.epochs) - 1) / epochs if epochs else 0.0


def frame_params(frames: Frames, epochs: int) -> list[dict]:
    """The epoch the range input sets (it starts at the end of training), and
    the recorded frame nearest it."""
    recorded = [int(e) for e in frames.epochs]
    last = len(recorded) - 1
    evenly = last > 0 and epochs % last == 0
    step = epochs // last if evenly else 1
    scale = frame_scale(frames, epochs)
    return [{"name": EPOCH, "value": epochs,
             "bind": {"input": "range", "min": 0, "max": epochs, "step": step, "name": "epoch "}},
            {"name": FRAME, "expr": f"clamp(round({EPOCH} * {scale!r}), 0, {last})"},
            {"name": FRAME_EPOCH, "expr": f"{recorded}[{FRAME}]"}]


def epoch_axis(last: int) -> alt.X:
    """The epoch axis of a picture over time: fixed from 0 to the last epoch,
    whatever epoch is shown, on EPOCH_SCALE."""
    last = max(1, last)
    ticks = [t for t in (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000) if t < last * 0.8] + [last]
    return alt.X("epoch:Q", title="epoch (log scale past 1)", axis=alt.Axis(values=ticks),
                 scale=alt.Scale(**EPOCH_SCALE, domain=[0, last], nice=False))


def fixed_domain(values, log_scale: bool = False) -> list[float] | None:
    """The [low, high] of the finite values (positive ones on a log scale),
    for an axis that stays put while the curves grow; None if there are none."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values) & ((values > 0) if log_scale else True)]
    if values.size == 0:
        return None
    low, high = float(values.min()), float(values.max())
    return [low, high] if high > low else [low / 2, high * 2] if log_scale else [low - 1, high + 1]


def _epoch_rule(data: Datasets) -> alt.Chart:
    """A vertical rule at the shown frame's epoch."""
    return (alt.Chart(data("one_row", pd.DataFrame({"one": [0]})))
            .transform_calculate(epoch=FRAME_EPOCH)
            .mark_rule(color="#444", strokeDash=[3, 3])
            .encode(x="epoch:Q"))


def watch_loss_panel(history: pd.DataFrame, data: Datasets, log_scale: bool = True) -> alt.LayerChart:
    """Train and test MSE per epoch, each curve drawn up to the shown epoch
    on axes fixed to the whole run's, with a rule at the shown epoch and
    both losses there as labelled points (needs frame_params in the spec)."""
    long = history.melt(id_vars="epoch", value_vars=list(SPLIT_LABELS), var_name="split", value_name="loss")
    long["split"] = long["split"].map(SPLIT_LABELS)
    long = long[np.isfinite(long["loss"]) & ((long["loss"] > 0) if log_scale else True)]
    domain = fixed_domain(long["loss"], log_scale)
    fixed = {} if domain is None else {"domain": domain if log_scale else [0, domain[1]], "nice": False}
    scale = alt.Scale(type="log", **fixed) if log_scale else alt.Scale(zero=True, **fixed)
    base = alt.Chart(data("losses", long.reset_index(drop=True))).encode(
        x=epoch_axis(int(history.epoch.iloc[-1])),
        y=alt.Y("loss:Q", title="mean squared error", scale=scale),
        color=alt.Color("split:N", title=None, sort=["train", "test"],
                        scale=alt.Scale(range=["#1f77b4", "#ff7f0e"]),
                        legend=alt.Legend(orient="bottom", direction="horizontal")))
    lines = base.transform_filter(GROWN).mark_line()
    now = base.transform_filter(f"datum.epoch == {FRAME_EPOCH}")
    points = now.mark_point(filled=True, size=60).encode(
        tooltip=[alt.Tooltip("split:N"), alt.Tooltip("epoch:Q"), alt.Tooltip("loss:Q", format=".6g")])
    # Both losses at the epoch, in a corner: beside the points they overlap
    # wherever the curves meet.
    labels = [now.transform_filter(f"datum.split == '{split}'")
              .transform_calculate(label=f"'{split} ' + format(datum.loss, '.4g')")
              .mark_text(align="right", fontSize=12, fontWeight="bold")
              .encode(x=alt.value("width"), y=alt.value(12 + 16 * k), text="label:N")
              for k, split in enumerate(["train", "test"])]
    return alt.layer(lines, _epoch_rule(data), points, *labels).properties(
        width="container", height=220, title=alt.Title("Loss", anchor="start"))


def layer_distances(run: Run) -> pd.DataFrame:
    """epoch, layer, raw: each layer's raw distance to the teacher, as recorded."""
    records = run.student_teacher.records
    return pd.DataFrame([{"epoch": e, "layer": name, "raw": r}
                         for e, raw in records.raw for name, r in zip(records.names, raw)])


def relative_distances(distances: pd.DataFrame) -> pd.DataFrame:
    """epoch, layer, raw, percent: each layer's raw distance to the teacher
    as a percentage of its distance at epoch 0 (finite rows only)."""
    finite = distances[np.isfinite(distances["raw"])].copy()
    start = finite[finite["epoch"] == 0].set_index("layer")["raw"]
    finite["percent"] = 100 * finite["raw"] / finite["layer"].map(start)
    return finite[np.isfinite(finite["percent"])].reset_index(drop=True)


def watch_distance_panel(distances: pd.DataFrame, data: Datasets) -> alt.LayerChart:
    """Each layer's raw distance to the teacher over training, as a
    percentage of where it started (an axis that shows a few percent), a
    rule and points at the shown epoch."""
    layers = list(dict.fromkeys(distances["layer"]))
    relative = relative_distances(distances)
    domain = fixed_domain(relative["percent"])
    base = alt.Chart(data("distances", relative)).encode(
        x=epoch_axis(int(distances["epoch"].max()) if len(distances) else 1),
        y=alt.Y("percent:Q", title="% of its distance at epoch 0",
                scale=alt.Scale(zero=False) if domain is None else alt.Scale(domain=domain)),
        color=alt.Color("layer:N", title=None, sort=layers, scale=alt.Scale(scheme="category10"),
                        legend=alt.Legend(orient="bottom", direction="horizontal")))
    points = base.transform_filter(f"datum.epoch == {FRAME_EPOCH}").mark_point(filled=True, size=50).encode(
        tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("epoch:Q"), alt.Tooltip("raw:Q", format=".4g"),
                 alt.Tooltip("percent:Q", format=".3g")])
    return alt.layer(base.transform_filter(GROWN).mark_line(), _epoch_rule(data), points).properties(
        width="container", height=220,
        title=alt.Title("Distance to the teacher", subtitle="per layer, % of epoch 0's", anchor="start"))


def prediction_series(frames: Frames, inputs: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    """Per test row its label and the student's prediction at every frame,
    in float32 as the recorded weights are: the first screen's largest data set."""
    order = use_order(len(frames.names), frames.repeats)
    predictions = np.stack([forward(frames.layers_at(i), order, inputs) for i in range(len(frames.epochs))])
    # A diverged run's predictions can pass float32's range: inf then, off the
    # chart as any past PREDICTION_LIMIT is (watch_prediction_panel's filter).
    with np.errstate(over="ignore"):
        table = frame_columns(predictions.T.astype(np.float32))
    table.insert(0, "label", labels.astype(np.float64))
    return table


def watch_prediction_panel(frames: Frames, inputs: np.ndarray, labels: np.ndarray,
                           data: Datasets) -> alt.LayerChart:
    """The student's prediction against the label of each test row at the
    shown epoch, with the y = x line of a perfect student, on fixed axes:
    both span the labels and the last frame's predictions over a square plot
    (the line at 45°), and a point beyond them, as a fresh
    student's often are, sits on the edge it is beyond. Progress reads as
    the points moving onto the line, not as the ticks changing."""
    rows = prediction_series(frames, inputs, labels)
    low, high = float(np.min(labels)), float(np.max(labels))
    last = rows[rows.columns[-1]].to_numpy()
    last = last[np.isfinite(last) & (np.abs(last) < PREDICTION_LIMIT)]
    lo, hi = min(low, float(last.min(initial=low))), max(high, float(last.max(initial=high)))
    pad = 0.05 * (hi - lo) or 1.0
    lo, hi = lo - pad, hi + pad
    axis = alt.Scale(domain=[lo, hi], nice=False, clamp=True)
    points = (alt.Chart(data("predictions", rows)).transform_calculate(prediction=AT_FRAME)
              .transform_filter(f"isValid(datum.prediction) && abs(datum.prediction) < {PREDICTION_LIMIT:g}")
              .mark_circle(size=30, opacity=0.7).encode(
                  x=alt.X("label:Q", title="true label (the teacher)",
                          scale=axis),
                  y=alt.Y("prediction:Q", title="student's prediction",
                          scale=axis),
                  tooltip=[alt.Tooltip("label:Q", format=".4g"), alt.Tooltip("prediction:Q", format=".4g")]))
    line = alt.Chart(data("diagonal", pd.DataFrame({"label": [low, high], "prediction": [low, high]}))
                     ).mark_line(color="gray", strokeDash=[4, 4]).encode(
        # The points' scale on the line too: without it Vega-Lite merged the layers'
        # scales to unequal domains (drawn slope 0.989 at the defaults, 44.7°, not 45°).
        x=alt.X("label:Q", scale=axis), y=alt.Y("prediction:Q", scale=axis))
    # A square plot, padded (not fitted) around its axes: one unit as long across as up.
    return alt.layer(line, points).properties(
        width=PREDICTION_SIDE, height=PREDICTION_SIDE, autosize=alt.AutoSizeParams(type="pad"),
        title=alt.Title("Test rows: prediction against label",
                        subtitle=["dashed: a perfect student;", "beyond the axes: on the edge"],
                        anchor="start"))


def _spec(picture: dict, data: Datasets, frames: Frames, epochs: int) -> dict:
    """A whole spec: the picture, the epoch parameters, its data sets; a
    layered picture fits its column's width (a concatenation keeps its size)."""
    sized = ({"autosize": {"type": "fit-x", "contains": "padding"}}
             if "layer" in picture and picture.get("width") == "container" else {})
    return {"$schema": alt.SCHEMA_URL, **picture, **sized, "params": frame_params(frames, epochs),
            "datasets": dict(data), "config": theme.config()}


def watch_panels(run: Run, log_scale: bool = True, names: tuple[str, ...] | None = None) -> dict[str, dict]:
    """Every picture of the run at one epoch (or those of `names`), by name,
    each a Vega-Lite spec with its data sets and the same epoch parameter:
    loss, distance, predictions, diagram (widths up to DIAGRAM_MAX_WIDTH),
    change, weights."""
    frames, config = run.frames, run.config
    kept = run.student_teacher
    n = config.n_train
    distances = layer_distances(run)
    pictures = {
        "loss": lambda data: view(watch_loss_panel(run.history, data, log_scale)),
        "distance": lambda data: view(watch_distance_panel(distances, data)),
        "predictions": lambda data: view(watch_prediction_panel(frames, kept.inputs[n:], kept.labels[n:], data)),
    }
    if config.width <= DIAGRAM_MAX_WIDTH:
        pictures["diagram"] = lambda data: view(diagram_panel(frames, config.in_features, data))
    pictures["change"] = lambda data: change_panel(frames, kept.teacher, data)
    pictures["weights"] = lambda data: weight_panel(frames, kept.teacher, data)
    specs = {}
    for name, draw in pictures.items():
        if names is not None and name not in names:
            continue
        data = Datasets()
        specs[name] = _spec(draw(data), data, frames, run.last_epoch)
    return specs
