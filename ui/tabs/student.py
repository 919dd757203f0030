"""The Student vs teacher tab: how close the student came to the teacher."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from fitlab.figures.charts import distance_chart, prediction_chart, slice_chart
from fitlab.outcome import outcome
from fitlab.run import Run
from ui.charts import draw
from ui.words import loss_change

# Why raw distance is the wrong yardstick.
WHY_RAW_STAYS_LARGE = (
    "Relabelling the hidden units of a ReLU net, with the weights into and out of them, "
    "does not change what the net computes, so a student could reproduce the teacher's "
    "outputs exactly at a relabelled copy of its weights, far away in raw distance; the "
    "matched distance takes that relabelling out.")


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
        return (f"Training diverged at epoch {facts.diverged_at}: the weights stopped being numbers, "
                "so the distances after it are not drawn.")
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


def recording_note(distances: pd.DataFrame, epochs: int) -> str:
    """In words, at which epochs a run's distances were recorded."""
    raw = distances["epoch"].nunique()
    matched = distances.dropna(subset=["matched"])["epoch"].nunique()
    where = "every epoch" if raw == epochs + 1 else f"{raw} evenly spaced epochs"
    return (f"Raw distance recorded at {where}, matched at {matched} of them (matching costs "
            f"far more than the raw distance, so wide nets get fewer).")


def student_section(run: Run) -> None:
    """How close the student came to the teacher: weights, outputs, and the
    loss on the way."""
    st.header("Student versus teacher")
    st.subheader("Distance from the teacher's weights")
    draw(distance_chart, run.config, run.distances)
    st.caption(f"Lines: raw distance per layer; open diamonds: after matching the student's hidden "
               f"units to the teacher's, at the epochs matching was computed. {approach_note(run)} "
               f"{WHY_RAW_STAYS_LARGE} {recording_note(run.distances, run.config.epochs)}")
    left, right = st.columns(2)
    with left:
        st.subheader("Predicted versus true labels")
        draw(prediction_chart, run.config, run.test_predictions)
        st.caption(f"The final student on the {len(run.test_predictions)} test rows; "
                   "a perfect student sits on the dashed line.")
    with right:
        st.subheader("Loss on the straight line to the teacher")
        draw(slice_chart, run.config, run.loss_slices)
        st.caption("Weights (1 − t)·student + t·teacher: from the student's initial weights, "
                   "and from its final ones, on a log axis. Solid: train loss; dashed: test loss. At t = 1 "
                   "the loss is zero (off a log axis): the labels are the teacher's outputs.")
