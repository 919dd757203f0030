"""The Training tab: final losses, the loss chart and its CSV, the teacher's
and the student's parameters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from fitlab.charts import loss_chart
from fitlab.run import Run
from fitlab.tables import history_csv, history_file_name
from ui.charts import draw
from ui.text import blog_figure_note, divergence_note, engine_note, fit_note, r_squared_text


def loss_section(run: Run) -> None:
    """Final losses, the loss chart and its CSV; a diverged run says so first."""
    diverged = divergence_note(run)
    if diverged is not None:
        st.warning(diverged)
    last, base = run.history.iloc[-1], run.baseline
    columns = st.columns(4)
    for column, split in zip(columns[:2], ("train", "test")):
        column.metric(f"Final {split} MSE", f"{last[f'{split}_loss']:.4g}")
    for column, split in zip(columns[2:], ("train", "test")):
        column.metric(f"{split.capitalize()} R²", r_squared_text(base.r_squared(last[f"{split}_loss"], split)),
                      help=f"1 − MSE / variance of the {split} labels: 1 is a perfect fit, 0 is as good as "
                           "predicting their mean, below 0 is worse.")
    verdict = fit_note(run)
    if verdict is not None:
        text, worse = verdict
        if worse:  # not st.warning: that is the page's word for a link it could not use
            st.info(text, icon="⚠️")
        else:
            st.caption(text)
    # On by default: the loss falls by orders of magnitude and hugs zero on a linear axis.
    log_scale = st.toggle("Log scale", value=True, key="log_scale")
    with st.container(key="loss_chart"):  # a stable handle for the browser tests
        draw(loss_chart, (run.config, log_scale), run.history, log_scale, base, run.diverged_at)
    for note in (blog_figure_note(run), engine_note(run)):
        if note is not None:
            st.caption(note)
    st.download_button("Download the loss history (CSV)", data=history_csv(run),
                       file_name=history_file_name(run.config), mime="text/csv", key="download_history")


def parameter_tables(run: Run) -> None:
    """Teacher and student parameters side by side."""
    left, right = st.container(key="parameter_tables").columns(2)
    with left:
        st.subheader("Teacher")
        st.caption("The weights that made the labels.")
        st.dataframe(readable(run.teacher_params), hide_index=True, width="stretch")
    with right:
        st.subheader("Student")
        st.caption("After training, started from a fresh Kaiming init." if run.error is None
                   else "Where training stopped.")
        st.dataframe(readable(run.student_params), hide_index=True, width="stretch")


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """`table` as shown: the grid draws NaN as "None", so a table holding NaN
    or inf (a diverged run) shows its values as text, "nan", "inf", "-inf"."""
    if np.isfinite(table["value"]).all():
        return table
    return table.assign(value=[f"{v:.6g}" for v in table["value"]])
