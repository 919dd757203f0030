"""The Training tab: final losses, the loss chart and its CSV, the teacher's
and the student's parameters."""

from __future__ import annotations

import streamlit as st

from fitlab.charts import loss_chart
from fitlab.run import Run
from fitlab.tables import history_csv
from ui.charts import draw
from ui.text import blog_figure_note, divergence_note, engine_note, student_caption


def loss_section(run: Run) -> None:
    """Final losses, the loss chart and its CSV; a diverged run says so first."""
    diverged = divergence_note(run)
    if diverged is not None:
        st.warning(diverged)
    last = run.history.iloc[-1]
    left, right = st.columns(2)
    left.metric("Final train MSE", f"{last.train_loss:.4g}")
    right.metric("Final test MSE", f"{last.test_loss:.4g}")
    # On by default: the loss falls by orders of magnitude and hugs zero on a linear axis.
    log_scale = st.toggle("Log scale", value=True, key="log_scale")
    with st.container(key="loss_chart"):  # a stable handle for the browser tests
        draw(loss_chart, (run.config, log_scale), run.history, log_scale)
    st.caption(blog_figure_note(run))
    st.caption(engine_note(run))
    st.download_button("Download the loss history (CSV)", data=history_csv(run),
                       file_name="fitlab-history.csv", mime="text/csv", key="download_history")


def parameter_tables(run: Run) -> None:
    """Teacher and student parameters side by side."""
    left, right = st.container(key="parameter_tables").columns(2)
    with left:
        st.subheader("Teacher")
        st.caption("The weights that made the labels.")
        st.dataframe(run.teacher_params, hide_index=True, width="stretch")
    with right:
        st.subheader("Student")
        st.caption(student_caption(run))
        st.dataframe(run.student_params, hide_index=True, width="stretch")
