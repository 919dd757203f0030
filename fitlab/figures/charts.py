"""Altair charts of runs, built here so tests and notebooks can use them without a page:
a run's losses, a sweep, runs overlaid, the student against its teacher."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from fitlab.baseline import Baseline
from fitlab.compare import LoggedRun, overlay_long
from fitlab.run import Run
from fitlab.shared_layer.tying import student_kind

SPLIT_LABELS = {"train_loss": "train", "test_loss": "test"}
EPOCH_AXIS = alt.Axis(tickMinStep=1, format="d")   # whole epochs: "0 1 2", never "0.0 0.5 1.0"
DIVERGING = "redblue"  # the weights' colour scheme: red negative, blue positive, white 0
# Its dark red and blue (ColorBrewer RdBu's #b2182b, #2166ac) as RGB: a table
# cell's tint (diverging_tint).
DIVERGING_ENDS = {"negative": "178, 24, 43", "positive": "33, 102, 172"}


def diverging_tint(value: float, bound: float) -> str | None:
    """A CSS colour for `value` on the diverging scale [-bound, bound]: the
    end of its sign, as opaque as |value| is near `bound`; None for NaN or
    inf (no colour says anything true of them)."""
    if not np.isfinite(value):
        return None
    alpha = min(abs(value) / bound, 1.0)
    return f"rgba({DIVERGING_ENDS['positive' if value > 0 else 'negative']}, {alpha:.2f})"


def loss_long(history: pd.DataFrame, log_scale: bool = False) -> pd.DataFrame:
    """History in long form (epoch, split, loss), only the points a chart can
    draw: finite values, and positive ones on a log axis (which would drop the
    rest silently)."""
    long = history.melt(id_vars="epoch", value_vars=list(SPLIT_LABELS),
                        var_name="split", value_name="loss")
    long["split"] = long["split"].map(SPLIT_LABELS)
    drawable = np.isfinite(long["loss"]) & ((long["loss"] > 0) if log_scale else True)
    return long[drawable].reset_index(drop=True)


def loss_chart(history: pd.DataFrame, log_scale: bool = False, baseline: Baseline | None = None,
               diverged_at: int | None = None) -> alt.LayerChart:
    """Train and test MSE per epoch, one line each, with tooltips; with a
    `baseline`, the constant predictor's MSE as a dashed rule per split; with
    `diverged_at`, that epoch marked, and the x axis ending there (every later
    loss is NaN or inf, and a log axis would stretch to the last epoch with
    nothing to draw)."""
    data = loss_long(history, log_scale)
    scale = alt.Scale(type="log") if log_scale else alt.Scale(zero=True)
    x_scale = alt.Scale(domain=[0, diverged_at]) if diverged_at is not None else alt.Undefined
    # Points only where a line has too few of them to be seen: a line through
    # a single finite epoch draws nothing.
    many = data["epoch"].nunique() > 60
    lines = alt.Chart(data).mark_line(
        point=alt.OverlayMarkDef(size=12, opacity=0) if many else True
    ).encode(
        x=alt.X("epoch:Q", title="epoch", scale=x_scale, axis=EPOCH_AXIS),
        y=alt.Y("loss:Q", title="mean squared error", scale=scale),
        tooltip=[alt.Tooltip("epoch:Q"), alt.Tooltip("split:N"), alt.Tooltip("loss:Q", format=".6g")],
    )
    layers = [lines.interactive(bind_y=False)]
    if baseline is not None:
        rules = constant_rules(baseline, log_scale)
        base = alt.Chart(rules).encode(y=alt.Y("loss:Q"))
        layers.append(base.mark_rule(strokeDash=[5, 4], opacity=0.8).encode(
            tooltip=[alt.Tooltip("label:N", title="constant predictor"),
                     alt.Tooltip("loss:Q", title="MSE", format=".6g")]))
        for above in (True, False):  # the two labels apart, however close the rules
            layers.append(base.transform_filter(alt.datum.above == above).mark_text(
                align="right", baseline="bottom" if above else "top", dx=-4, dy=-2 if above else 2,
                fontSize=11).encode(x=alt.value("width"), text="label:N"))
    if diverged_at is not None:
        mark = pd.DataFrame({"epoch": [diverged_at], "label": [f"diverged at epoch {diverged_at}"]})
        base = alt.Chart(mark).encode(x=alt.X("epoch:Q"), color=alt.value(DIVERGED_COLOUR))
        layers.append(base.mark_rule(strokeWidth=2))
        layers.append(base.mark_text(align="right", baseline="top", dx=-4, y=4, fontSize=11).encode(
            text="label:N"))
    return alt.layer(*layers).encode(
        color=alt.Color("split:N", title=None, sort=["train", "test"],
                        scale=alt.Scale(domain=["train", "test"], range=["#1f77b4", "#ff7f0e"])),
    ).properties(height=320)


DIVERGED_COLOUR = "#d62728"


def constant_rules(baseline: Baseline, log_scale: bool = False) -> pd.DataFrame:
    """split, loss, label, above: the constant predictor's MSE per split, as
    the loss chart's rules draw them (on a log axis, only positive ones);
    `above` puts the higher rule's label above it, the other's below."""
    rules = pd.DataFrame({"split": ["train", "test"],
                          "loss": [baseline.train_mse, baseline.test_mse]})
    rules["label"] = "constant predictor: " + rules["split"]
    rules["above"] = rules["loss"] >= rules["loss"].max()
    return rules[np.isfinite(rules["loss"]) & ((rules["loss"] > 0) if log_scale else True)]


# A cell's label ("0.0012", bold) needs about this many pixels across; in
# narrower cells (a phone's) it would overprint its neighbours, so it is not
# drawn and the tooltip and the legend tell the loss.
LABEL_MIN_CELL_PX = 64
# A cell is a tap target: 44 px each way is a finger's (Apple's and WCAG's target size).
CELL_MIN_PX = 48


def sweep_heatmap(table: pd.DataFrame, x: str, y: str) -> alt.LayerChart:
    """Final test loss of each sweep config as a heatmap over two axes, each
    cell labelled with its loss in a colour that contrasts with it while the
    cells are LABEL_MIN_CELL_PX wide; a diverged config (non-finite loss) is
    marked in words. The colour legend lies below the grid, so on a phone
    the grid keeps the width. A click selects a cell (the point selection
    "cell", on the two axes' fields).

    Colour is the cell's test R² (`test_r2`: 1 minus its test MSE over the
    constant predictor's), on a diverging scale centred on 0, "as good as a
    constant": blue beats it, red does worse, white is no better; the scale
    stops at ±1 (R² is at most 1, and a cell 40 times worse than a constant
    is as red as one 2 times worse). So the deepest blue is the best cell,
    and is one that beats a constant wherever any does."""
    finite = np.isfinite(table["test_loss"]) & np.isfinite(table["test_r2"])
    drawn = table[finite]
    base = alt.Chart(drawn).encode(
        x=alt.X(f"{x}:O", title=x, axis=alt.Axis(labelAngle=0)),
        y=alt.Y(f"{y}:O", title=y, sort="descending"))
    picked = alt.selection_point(name="cell", fields=[x, y], on="click")
    cells = base.mark_rect(cursor="pointer", stroke="#31333F", strokeWidth=0.5).encode(
        color=alt.Color("test_r2:Q", title=R2_LEGEND,
                        scale=alt.Scale(scheme=DIVERGING, domain=[-1, 1], domainMid=0, clamp=True),
                        legend=alt.Legend(orient="bottom", direction="horizontal", titleLimit=600,
                                          values=[-1, -0.5, 0, 0.5, 1])),
        tooltip=[alt.Tooltip(f"{x}:O"), alt.Tooltip(f"{y}:O"),
                 alt.Tooltip("test_loss:Q", title="final test MSE", format=".4g"),
                 alt.Tooltip("test_r2:Q", title="test R² (0: a constant)", format=".3f"),
                 alt.Tooltip("train_loss:Q", title="final train MSE", format=".4g")],
    ).add_params(picked)
    # White text on the deep ends of the scale, dark on the pale middle.
    columns = max(1, table[x].nunique())
    shown = alt.ExprRef(f"width / {columns} >= {LABEL_MIN_CELL_PX} ? 1 : 0")   # `width`: the plot's, as drawn
    labels = base.mark_text(fontSize=14, fontWeight="bold", opacity=shown).encode(
        text=alt.Text("test_loss:Q", format=".2g"),
        color=alt.condition("abs(datum.test_r2) > 0.6", alt.value("white"), alt.value("black")))
    diverged = alt.Chart(table[~finite].assign(note="diverged")).mark_text(
        color="#d62728", fontSize=14, fontWeight="bold").encode(
        x=alt.X(f"{x}:O"), y=alt.Y(f"{y}:O", sort="descending"), text="note:N")
    # Rows of a fixed step, tall enough for a finger (a cell opens its run), however many rows.
    return alt.layer(cells, labels, diverged).properties(height=alt.Step(CELL_MIN_PX))


R2_LEGEND = "test R²: blue beats a constant, white is as good as one (0), red is worse"


# Solid versus dashed is said in the page's captions: Streamlit's theme draws
# no symbol in a stroke-dash legend.


# Kelly's colours of maximum contrast (without white, black and the greys
# that read as disabled): up to 18 runs, each its own hue and lightness.
# tableau20 and category20 come in light/dark pairs of one hue, which two
# runs then seem to share.
DISTINCT_COLOURS = ("#0067A5", "#F38400", "#008856", "#BE0032", "#875692", "#F3C300", "#A1CAF1", "#882D17",
                    "#8DB600", "#E68FAC", "#2B3D26", "#F99379", "#604E97", "#C2B280", "#B3446C", "#DCD300",
                    "#654522", "#E25822")


def overlay_chart(runs: list[LoggedRun], weight: float = 0.0, log_scale: bool = True) -> alt.Chart:
    """The picked runs' losses on one chart: colour by run (the legend says
    what differs; click an entry to bring its run forward), train solid and
    test dashed, smoothed by `weight` with the raw value in the tooltip.

    The plot keeps its height however many runs there are: the legend is
    laid out below it and the chart grows by the legend's height (fit-x),
    where Streamlit's default (fit) would shrink the plot to make room."""
    data = overlay_long(runs, weight, log_scale)
    scale = alt.Scale(type="log") if log_scale else alt.Scale(zero=True)
    picked = alt.selection_point(fields=["run"], bind="legend")
    return (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=12, opacity=0))
        .encode(
            x=alt.X("epoch:Q", title="epoch", axis=EPOCH_AXIS),
            y=alt.Y("loss:Q", title="mean squared error" + (" (smoothed)" if weight else ""), scale=scale),
            color=alt.Color("run:N", title="run (click to bring one forward)", sort=[r.label for r in runs],
                            scale=alt.Scale(range=list(DISTINCT_COLOURS)),
                            legend=alt.Legend(orient="bottom", direction="vertical", columns=1,
                                              labelLimit=600, titleLimit=600, symbolLimit=0)),
            strokeDash=alt.StrokeDash("split:N", title=None, sort=["train", "test"], legend=None),
            opacity=alt.condition(picked, alt.value(1.0), alt.value(0.15)),
            tooltip=[alt.Tooltip("run:N"), alt.Tooltip("split:N"), alt.Tooltip("epoch:Q"),
                     alt.Tooltip("loss:Q", title="smoothed" if weight else "loss", format=".6g"),
                     alt.Tooltip("raw_loss:Q", title="raw", format=".6g")],
        )
        .add_params(picked)
        .properties(height=360, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
        .interactive(bind_y=False)
    )


def distance_long(distances: pd.DataFrame) -> pd.DataFrame:
    """epoch, layer, measure ("raw" or "matched"), distance, and relative:
    the distance as a fraction of the layer's raw distance at the first
    recorded epoch. Finite points only."""
    long = distances.melt(id_vars=["epoch", "layer"], value_vars=["raw", "matched"],
                          var_name="measure", value_name="distance")
    start = distances.sort_values("epoch").groupby("layer", sort=False)["raw"].first()
    long["relative"] = long["distance"] / long["layer"].map(start)
    return long[np.isfinite(long["relative"])].reset_index(drop=True)


def distance_chart(distances: pd.DataFrame) -> alt.LayerChart:
    """Each layer's distance to the teacher over training, relative to where
    it started (a zoomed axis: the weights move a few percent while the loss
    falls by orders of magnitude): raw as lines, after matching hidden units
    as open diamonds at the epochs matching was computed (a line through
    those sparser points would cut the raw curve's bend and run above it);
    the tooltip gives the distance itself."""
    layers = list(dict.fromkeys(distances["layer"]))
    raw = (alt.Chart().mark_line(point=alt.OverlayMarkDef(size=12, opacity=0))
           .transform_filter("datum.measure == 'raw'"))
    matched = (alt.Chart().mark_point(shape="diamond", filled=False, size=45, strokeWidth=1.5)
               .transform_filter("datum.measure == 'matched'"))
    return alt.LayerChart(data=distance_long(distances), layer=[raw, matched]).encode(
        x=alt.X("epoch:Q", title="epoch", axis=EPOCH_AXIS),
        y=alt.Y("relative:Q", title="distance to the teacher (% of the start)",
                scale=alt.Scale(zero=False), axis=alt.Axis(format="%")),
        color=alt.Color("layer:N", title="layer", sort=layers, scale=alt.Scale(scheme="category10")),
        tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("measure:N"), alt.Tooltip("epoch:Q"),
                 alt.Tooltip("distance:Q", format=".4g"),
                 alt.Tooltip("relative:Q", title="of the start's", format=".1%")],
    ).properties(height=300)


PREDICTION_PX = 320   # the prediction chart's plot, square: one unit as long across as up
# Largest |prediction| drawn: a diverged student's would squash the rest.
PREDICTION_LIMIT = 1e6


def prediction_chart(predictions: pd.DataFrame) -> alt.LayerChart:
    """The final student's prediction against the true label for each test
    row, with the y = x line a perfect student would sit on: a square plot,
    both axes over the same range (the labels' and the drawn predictions'),
    so the line is the diagonal at 45°. Predictions past PREDICTION_LIMIT
    or not finite (a diverged run's) are left off, and the chart says how
    many."""
    drawable = np.isfinite(predictions).all(axis=1) & (predictions["prediction"].abs() < PREDICTION_LIMIT)
    finite = predictions[drawable]
    values = np.concatenate([predictions["label"].to_numpy(), finite["prediction"].to_numpy()])
    values = values[np.isfinite(values)]
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    pad = 0.05 * (high - low) or 1.0
    domain = alt.Scale(domain=[low - pad, high + pad], nice=False)
    diagonal = pd.DataFrame({"label": [low - pad, high + pad], "prediction": [low - pad, high + pad]})
    points = alt.Chart(finite).mark_circle(size=36, opacity=0.7).encode(
        x=alt.X("label:Q", title="true label (the teacher)", scale=domain),
        y=alt.Y("prediction:Q", title="student's prediction", scale=domain),
        tooltip=[alt.Tooltip("label:Q", format=".4g"), alt.Tooltip("prediction:Q", format=".4g")],
    )
    line = alt.Chart(diagonal).mark_line(color="gray", strokeDash=[4, 4]).encode(
        x=alt.X("label:Q", scale=domain), y=alt.Y("prediction:Q", scale=domain))
    layers = [line, points]
    off = len(predictions) - len(finite)
    if off:
        note = pd.DataFrame({"text": [f"{off} of {len(predictions)} predictions off the chart: the run diverged"]})
        layers.append(alt.Chart(note).mark_text(fontSize=14, color=DIVERGED_COLOUR, baseline="top").encode(
            x=alt.value(PREDICTION_PX / 2), y=alt.value(8), text="text:N"))
    # "pad": the plot itself is the square (Streamlit's theme fits axes and all into the size).
    return alt.layer(*layers).properties(width=PREDICTION_PX, height=PREDICTION_PX,
                                         autosize=alt.AutoSizeParams(type="pad"))


# Train solid, test dashed: what the captions say.
SPLIT_DASHES = {"train": [1, 0], "test": [6, 4]}


def slice_chart(slices: pd.DataFrame) -> alt.Chart:
    """Loss along the straight lines to the teacher, t = 0 at the student:
    train solid, test dashed (a legend says which), on a log axis: the line
    from the final student starts a thousand times lower than the one from
    the initial student, and on a linear axis lies flat at 0. The loss at the
    teacher itself (t = 1) is 0 up to float rounding (1.6e-17 at the defaults,
    twelve decades below t = 29/30): it is left off, as it would squeeze the
    lines into the top of the axis."""
    slices = slices[slices["t"] < 1]
    long = slices.melt(id_vars=["path", "t"], value_vars=["train_loss", "test_loss"],
                       var_name="split", value_name="loss")
    long["split"] = long["split"].map({"train_loss": "train", "test_loss": "test"})
    long = long[np.isfinite(long["loss"]) & (long["loss"] > 0)]
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("t:Q", title="t (0 = the student, 1 = the teacher)"),
            y=alt.Y("loss:Q", title="mean squared error (log)", scale=alt.Scale(type="log")),
            # Legends drawn as short lines: a path's in its own colour, a
            # split's in grey with its own dash (the theme's default is a
            # black dot, which matches no line); each a column, side by side,
            # so both fit half a page's width (in one row "train" was cut).
            color=alt.Color("path:N", title=None, sort=list(dict.fromkeys(slices["path"])),
                            scale=alt.Scale(scheme="category10"),
                            legend=alt.Legend(orient="bottom", direction="vertical", columns=1, symbolType="stroke",
                                              symbolStrokeWidth=3, labelLimit=400)),
            strokeDash=alt.StrokeDash("split:N", title=None,
                                      scale=alt.Scale(domain=list(SPLIT_DASHES), range=list(SPLIT_DASHES.values())),
                                      legend=alt.Legend(orient="bottom", direction="vertical", symbolType="stroke",
                                                        symbolStrokeColor="gray", symbolStrokeWidth=2,
                                                        symbolSize=300)),
            tooltip=[alt.Tooltip("path:N"), alt.Tooltip("split:N"), alt.Tooltip("t:Q", format=".3f"),
                     alt.Tooltip("loss:Q", format=".4g")],
        )
        .properties(height=300)
    )


def tying_curves(runs: list[Run], log_scale: bool = True) -> pd.DataFrame:
    """The runs' drawable losses in long form: epoch, split, loss, student."""
    return pd.concat([loss_long(r.history, log_scale).assign(student=student_kind(r)) for r in runs],
                     ignore_index=True)


def tying_chart(runs: list[Run], log_scale: bool = True) -> alt.Chart:
    """Train and test MSE per epoch, colour by split, dash by student; a log
    axis by default, as every loss chart of the page."""
    scale = alt.Scale(type="log") if log_scale else alt.Scale(zero=True)
    return (
        alt.Chart(tying_curves(runs, log_scale))
        .mark_line()
        .encode(
            x=alt.X("epoch:Q", axis=EPOCH_AXIS),
            y=alt.Y("loss:Q", title="mean squared error", scale=scale),
            color=alt.Color("split:N", title=None, sort=["train", "test"],
                            scale=alt.Scale(range=["#1f77b4", "#ff7f0e"])),
            strokeDash=alt.StrokeDash("student:N", title="student", sort=["tied", "untied"]),
            tooltip=["epoch:Q", "student:N", "split:N", alt.Tooltip("loss:Q", format=".6g")],
        )
        .properties(height=280)
        .interactive(bind_y=False)
    )
