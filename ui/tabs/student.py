"""The Student vs teacher tab: how close the student came to the teacher."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from fitlab.figures.charts import distance_chart, prediction_chart, slice_chart
from fitlab.outcome import outcome
from fitlab.run import Run
from ui.charts import draw
from ui.tabs.training import exact_constant_note
from ui.words import loss_change

# Why raw distance is the wrong yardstick.
WHY_RAW_STAYS_LARGE = (
    "Relabelling the hidden units of a ReLU net, with the weights into and out of them, "
    "does not change what the net computes, so a student could reproduce the teacher's "
    "outputs exactly at a relabelled copy of its weights, far away in raw distance; the "
    "matched distance takes that relabelling out.")


def matched_above_note(distances: pd.DataFrame) -> str:
    """Why some diamonds lie above their layer's line, naming those layers,
    or that none do."""
    finite = distances.dropna(subset=["raw", "matched"])
    above = list(dict.fromkeys(finite.layer[finite.matched > finite.raw * (1 + 1e-9)]))
    if not above:
        return "Every diamond lies at or below its layer's line."
    named = " and ".join(f"the {layer} layer's" for layer in above)
    lines = "its line" if len(above) == 1 else "their lines"
    return (f"Some of {named} diamonds lie above {lines}: the relabelling is chosen to bring the whole "
            "net closest to the teacher, so one layer may end farther off while the total never does.")


def approach_note(run: Run) -> str:
    """How far the student came toward the teacher, in numbers, against what
    its train loss did; whether it fits its training rows; and what the
    matched distance is (exact or an upper bound) and whether it differs."""
    facts = outcome(run)
    if not facts.trained:
        return "No epoch finished: the student is where it started."
    distances = run.distances
    raw = distances.pivot(index="epoch", columns="layer", values="raw")
    total = np.sqrt((raw ** 2).sum(axis=1, min_count=raw.shape[1]))
    if facts.diverged_at is not None or not np.isfinite(total).all():
        return divergence_words(run, raw)
    moved = 1 - total.iloc[-1] / total.iloc[0]
    if moved == 0:
        came = "Over training the student's weights came no nearer the teacher's"
    else:
        came = (f"Over training the student's weights came {abs(moved):.1%} "
                f"{'closer to' if moved > 0 else 'further from'} the teacher's")
    note = f"{came} (all layers, raw) while its train loss {loss_change(facts)}"
    if facts.near_constant_labels:
        note += (": the teacher's labels are nearly constant here, so fitting them says little "
                 "about the weights.")
    elif facts.constant_fits_exactly:
        note += f". {exact_constant_note(run)}"
    elif facts.fits_training_rows:
        final = distances[distances.epoch == distances.epoch.max()].matched
        reached = bool(np.sqrt((final ** 2).sum()) < 1e-3 * total.iloc[0])
        note += (": it fits its training rows better than the constant predictor"
                 + (", at the teacher's own weights up to a relabelling." if reached else
                    " without reaching the teacher's weights."))
    else:
        note += (f", yet it has not fitted its training rows (train MSE {facts.end_loss:.4g}, above "
                 f"the constant predictor's {facts.constant_mse:.4g}).")
    matched = distances.dropna(subset=["matched"])
    same = np.allclose(matched["matched"], matched["raw"], rtol=1e-9, atol=0)
    if run.student_teacher.records.exact:
        note += (" Diamonds: the nearest relabelling, found by trying every one that matters at this "
                 "width" + (": none brings this student nearer, so each diamond sits on its "
                            "line." if same else "."))
    else:
        note += (" Diamonds: the nearest relabelling weight matching found, an upper bound of the "
                 "matched distance (trying every one is too costly at this width)"
                 + ("; it found none nearer, though a better one may exist." if same else "."))
    return note


def divergence_words(run: Run, raw: pd.DataFrame) -> str:
    """Where a run diverged, as its loss and its distances (`raw`: each
    layer's raw distance by recorded epoch) say: the loss can leave the
    numbers epochs before the weights do, and one layer's before another's."""
    facts = outcome(run)
    finite = np.isfinite(raw.to_numpy())
    if finite.all():
        weights = "every distance from the teacher stayed a number, and is drawn"
    else:
        gone = raw.index[~finite.all(axis=1)].min()
        drawn = (f"each layer's distance is drawn while it is a number, the last to epoch "
                 f"{raw.index[finite.any(axis=1)].max()}" if finite.any() else "no distance is drawn")
        weights = f"the distances from the teacher stop being numbers from epoch {gone}; {drawn}"
    if facts.diverged_at is None:
        return f"Training diverged: {weights}."
    loss = run.history.set_index("epoch").train_loss.loc[facts.diverged_at]
    became = "infinite" if np.isinf(loss) else "NaN"
    return f"Training diverged at epoch {facts.diverged_at}, where the train loss became {became}; {weights}."


def recording_note(distances: pd.DataFrame, epochs: int, exact: bool | None = None) -> str:
    """In words, at which epochs a run's distances were recorded; `exact`
    says how the matching was found (None: not said)."""
    raw = distances["epoch"].nunique()
    matched = distances.dropna(subset=["matched"])["epoch"].nunique()
    where = "every epoch" if raw == epochs + 1 else f"{raw} evenly spaced epochs"
    how = ("" if exact is None else ": here by trying every relabelling that matters" if exact
           else ": here by weight matching, about width³ work each")
    return (f"Raw distance recorded at {where}, matched at {matched} of them (a matching costs far more "
            f"than a raw distance{how}; the costlier one matching is, the fewer epochs get one).")


def slice_note(slices: pd.DataFrame) -> str:
    """The caption of the loss on the straight line to the teacher, with the
    loss at the teacher itself (t = 1), which the chart leaves off."""
    at_teacher = slices.loc[slices["t"] == 1, ["train_loss", "test_loss"]].to_numpy()
    largest = float(np.abs(at_teacher).max()) if at_teacher.size else float("nan")
    there = ("exactly 0, off the log axis" if largest == 0 else
             f"0 up to float rounding (at most {largest:.2g}), left off the axis")
    return ("Weights (1 − t)·student + t·teacher: from the student's initial weights, and from its "
            "final ones, on a log axis. Solid: train loss; dashed: test loss. At t = 1, the teacher "
            f"itself, the loss is {there}: the labels are the teacher's outputs.")


def student_section(run: Run) -> None:
    """How close the student came to the teacher: weights, outputs, and the
    loss on the way."""
    st.header("Student versus teacher")
    st.subheader("Distance from the teacher's weights")
    draw(distance_chart, run.config, run.distances)
    st.caption(f"Lines: raw distance per layer; open diamonds: after matching the student's hidden "
               f"units to the teacher's, at the epochs matching was computed. {approach_note(run)} "
               f"{WHY_RAW_STAYS_LARGE} {matched_above_note(run.distances)} "
               f"{recording_note(run.distances, run.config.epochs, run.student_teacher.records.exact)}")
    left, right = st.columns(2)
    with left:
        st.subheader("Predicted versus true labels")
        # Its own size, a square (its axes at one scale): not stretched to the column.
        with st.container(key="prediction_chart"):   # a handle for the browser tests
            st.altair_chart(prediction_chart(run.test_predictions), width="content")
        st.caption(f"The final student on the {len(run.test_predictions)} test rows; "
                   "a perfect student sits on the dashed line.")
    with right:
        st.subheader("Loss on the straight line to the teacher")
        draw(slice_chart, run.config, run.loss_slices)
        st.caption(slice_note(run.loss_slices))
