"""The Student vs teacher tab: how close the student came to the teacher."""

from __future__ import annotations

import streamlit as st

from fitlab.charts import distance_chart, prediction_chart, slice_chart
from fitlab.run import Run
from ui.charts import draw
from ui.text import WHY_RAW_STAYS_LARGE, approach_note, recording_note


def student_section(run: Run) -> None:
    """How close the student came to the teacher: weights, outputs, and the
    loss on the way."""
    st.header("Student versus teacher")
    st.subheader("Distance from the teacher's weights")
    draw(distance_chart, run.config, run.distances)
    st.caption(f"Solid: raw distance per layer; dashed: after matching the student's hidden "
               f"units to the teacher's. {approach_note(run.distances, run.history)} "
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
                   "and from its final ones. Solid: train loss; dashed: test loss. At t = 1 "
                   "the loss is zero: the labels are the teacher's outputs.")
