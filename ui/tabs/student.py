"""The Student vs teacher tab: how close the student came to the teacher."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from fitlab.charts import distance_chart, prediction_chart, slice_chart
from fitlab.run import Run
from ui.charts import draw

# Why raw distance is the wrong yardstick.
WHY_RAW_STAYS_LARGE = (
    "Relabelling the hidden units of a ReLU net, with the weights into and out of them, "
    "does not change what the net computes, so the student can reproduce the teacher's "
    "outputs (loss near zero) at a relabelled copy of its weights, far away in raw "
    "distance; the matched distance removes that relabelling, and what remains shows "
    "that the training rows are also fitted by weights that are not the teacher's.")


def approach_note(distances: pd.DataFrame, history: pd.DataFrame) -> str:
    """How far the student came toward the teacher, in numbers, against how
    far its loss fell; and whether matching hidden units changed anything.
    Empty for a run whose weights did not stay finite (the Training tab says why)."""
    raw = distances.pivot(index="epoch", columns="layer", values="raw")
    total = np.sqrt((raw ** 2).sum(axis=1, min_count=raw.shape[1]))
    loss = history.train_loss
    if not (np.isfinite(total).all() and np.isfinite(loss).all() and loss.iloc[-1] > 0):
        return ""
    moved = 1 - total.iloc[-1] / total.iloc[0]
    closer = "closer to" if moved >= 0 else "further from"
    note = (f"Over training the student's weights came {abs(moved):.1%} {closer} the teacher's "
            f"(all layers, raw) while its train loss fell {loss.iloc[0] / loss.iloc[-1]:,.0f}-fold: "
            "fitting the labels does not take the teacher's weights, hence the zoomed axis.")
    matched = distances.dropna(subset=["matched"])
    if np.allclose(matched["matched"], matched["raw"], rtol=1e-9, atol=0):
        note += (" Matched equals raw at every epoch it was computed: the matching found no "
                 "relabelling of the hidden units that brings this student nearer, so each "
                 "diamond sits on its line.")
    return note


def recording_note(distances: pd.DataFrame, epochs: int) -> str:
    """In words, at which epochs a run's distances were recorded."""
    raw = distances["epoch"].nunique()
    matched = distances.dropna(subset=["matched"])["epoch"].nunique()
    where = "every epoch" if raw == epochs + 1 else f"{raw} evenly spaced epochs"
    return (f"Raw distance recorded at {where}, matched at {matched} of them (matching "
            f"costs linear assignments, so wide nets get fewer).")


def student_section(run: Run) -> None:
    """How close the student came to the teacher: weights, outputs, and the
    loss on the way."""
    st.header("Student versus teacher")
    st.subheader("Distance from the teacher's weights")
    draw(distance_chart, run.config, run.distances)
    st.caption(f"Lines: raw distance per layer; open diamonds: after matching the student's hidden "
               f"units to the teacher's, at the epochs matching was computed. "
               f"{approach_note(run.distances, run.history)} {WHY_RAW_STAYS_LARGE} "
               f"{recording_note(run.distances, run.config.epochs)}")
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
